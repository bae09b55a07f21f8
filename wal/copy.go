package wal

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"github.com/bbengine/bbengine/internal/private"
)

// Copied describes a copy of a log made by Copy: the frames of
// [First, End), in the segments listed, and the hole records that cover
// the ranges removed on purpose inside it.
type Copied struct {
	First    uint64          `json:"first"`
	End      uint64          `json:"end"`
	Segments []CopiedSegment `json:"segments"`
	Holes    []string        `json:"holes,omitempty"`
	Bytes    int64           `json:"bytes"`
}

// CopiedSegment is one segment file of a copy and its size.
type CopiedSegment struct {
	Name string `json:"name"`
	Base uint64 `json:"base"`
	Size int64  `json:"size"`
}

// copyPinN numbers the pins of copies under way, so that two at once do
// not replace each other's.
var copyPinN atomic.Uint64

// Copy copies the log to the directory dst, which must be empty or
// absent, while appends go on: the sealed segments whole, and the active
// one up to the end of the last whole frame that is durable when Copy
// starts. For a log open for writing that is End, synced before anything
// is copied; a read-only log (another process may be writing it) is
// copied as it is on disk and the copy is cut at its last whole frame.
// Retention keeps every segment until the copy is done (a pin). The copy
// is verified with Check before Copy returns: a frame that is invalid in
// a segment, or a segment missing between two others, is a
// *CorruptionError or a *GapError naming the segment of this log.
func (l *Log) Copy(dst string) (*Copied, error) {
	id := "copy-" + strconv.FormatUint(copyPinN.Add(1), 10)
	l.Pin(id, 0, ^uint64(0))
	defer l.Unpin(id)
	end := ^uint64(0)
	if !l.readOnly {
		var err error
		if end, err = l.End(); err != nil {
			return nil, err
		}
		// Everything before end is written; the sync makes it durable.
		if err := l.Sync(); err != nil {
			return nil, fmt.Errorf("wal: sync before copying: %w", err)
		}
	}
	segs, err := l.view()
	if err != nil {
		return nil, err
	}
	if ents, err := os.ReadDir(dst); err == nil && len(ents) > 0 {
		return nil, fmt.Errorf("wal: copy to %s: the directory is not empty", dst)
	}
	if err := private.MkdirAll(dst); err != nil {
		return nil, fmt.Errorf("wal: copy: %w", err)
	}
	c := &Copied{}
	for i, s := range segs {
		if s.base >= end {
			break
		}
		n := s.size
		if uint64(n) > end-s.base {
			n = int64(end - s.base)
		}
		name := segName(s.base)
		if err := copyPrefix(l.path(s.base), filepath.Join(dst, name), n); err != nil {
			if os.IsNotExist(err) && i == 0 && l.readOnly {
				continue // removed by the writer's retention before the pin could hold it
			}
			return nil, fmt.Errorf("wal: copy segment %s: %w", l.path(s.base), err)
		}
		c.Segments = append(c.Segments, CopiedSegment{Name: name, Base: s.base, Size: n})
	}
	if len(c.Segments) > 0 {
		first, last := c.Segments[0].Base, c.Segments[len(c.Segments)-1].Base
		for from, to := range readHoles(l.dir) {
			if to <= first || from > last {
				continue
			}
			if err := writeHole(dst, from, to); err != nil {
				return nil, err
			}
			c.Holes = append(c.Holes, fmt.Sprintf("%016x%s", from, holeExt))
		}
	}
	infos, err := Check(dst)
	if err != nil {
		return nil, err
	}
	for i, in := range infos {
		src := l.path(in.Base)
		if in.Gap != nil {
			g := in.Gap.(*GapError)
			return nil, &GapError{Prev: l.path(infos[i-1].Base), End: g.End, Next: src, Base: g.Base}
		}
		if in.Torn && l.readOnly && i == len(infos)-1 {
			// A frame being written when the copy was made.
			if err := truncateSync(in.Path, in.ValidEnd); err != nil {
				return nil, fmt.Errorf("wal: cut the copy of %s at its last whole frame: %w", src, err)
			}
			c.Segments[i].Size = in.ValidEnd
			continue
		}
		if in.Torn {
			in.Err = &CorruptionError{Segment: in.Path, Offset: in.Base + uint64(in.ValidEnd), Err: in.TornErr}
		}
		if ce, ok := in.Err.(*CorruptionError); ok {
			return nil, &CorruptionError{Segment: src, Offset: ce.Offset, Err: ce.Err}
		}
		if in.Err != nil {
			return nil, in.Err
		}
	}
	if len(c.Segments) > 0 {
		last := c.Segments[len(c.Segments)-1]
		c.First, c.End = c.Segments[0].Base, last.Base+uint64(last.Size)
	}
	for _, s := range c.Segments {
		c.Bytes += s.Size
	}
	if err := syncDir(dst); err != nil {
		return nil, fmt.Errorf("wal: copy: sync %s: %w", dst, err)
	}
	return c, nil
}

// copyPrefix copies the first n bytes of src to a new file dst, synced.
func copyPrefix(src, dst string, n int64) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
	}()
	m, err := io.Copy(out, io.LimitReader(in, n))
	if err != nil {
		return err
	}
	if m < n {
		return fmt.Errorf("%w: %d bytes, %d expected", io.ErrUnexpectedEOF, m, n)
	}
	return fdatasync(out)
}
