package wal

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/bbengine/bbengine/internal/private"
)

// Repaired describes what Repair did to one segment.
type Repaired struct {
	Segment string // path of the segment file
	Offset  uint64 // logical offset at which it was truncated
	Dropped int64  // bytes removed
	Copy    string // path of the copy of the damaged segment; "" for a torn tail
	Err     error  // what was wrong at Offset
	// Gap reports an accepted gap: Dropped bytes before Segment, from
	// Offset on, were missing (a *GapError in Err). Nothing was changed
	// but a record that the gap is known, so it is no longer reported.
	Gap bool
}

// Repair makes the log in dir openable again. A corrupt segment is first
// copied to "<name>.damaged-<UTC time>" (kept for forensics, never read by
// the log) and then truncated at the first invalid frame: the frames after
// it are lost from the log but remain in the copy. A torn tail of the last
// segment is truncated without a copy. Repair takes the writer's lock, so
// it fails with ErrLocked while a writer has the log open. It returns what
// it did, nothing if the log was sound.
//
// A gap between segments (a segment deleted or renamed) cannot be filled:
// Repair records it as accepted, after which readers go on past it and
// Check, Open and Log.Damage no longer report it. The same record marks
// the bytes cut from a sealed segment, so readers go on to the next one.
func Repair(dir string) ([]Repaired, error) {
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	// A header rewrite a crash interrupted is finished first: the torn
	// header would otherwise look like a corrupt segment to cut away.
	if err := replayRewrap(dir); err != nil {
		return nil, err
	}
	infos, err := Check(dir)
	if err != nil {
		return nil, err
	}
	var done []Repaired
	stamp := time.Now().UTC().Format("20060102T150405Z")
	for i, info := range infos {
		if g, ok := info.Gap.(*GapError); ok {
			if err := writeHole(dir, g.End, g.Base); err != nil {
				return done, err
			}
			done = append(done, Repaired{Segment: info.Path, Offset: g.End, Dropped: int64(g.Base - g.End), Err: g, Gap: true})
		}
		if info.Err == nil && !info.Torn {
			continue
		}
		r := Repaired{Segment: info.Path, Offset: info.Base + uint64(info.ValidEnd), Dropped: info.Size - info.ValidEnd, Err: info.TornErr}
		if info.Err != nil {
			r.Err = info.Err
			if ce, ok := info.Err.(*CorruptionError); ok {
				r.Err = ce.Err
			}
			r.Copy = info.Path + ".damaged-" + stamp
			if err := copyFile(info.Path, r.Copy); err != nil {
				return done, fmt.Errorf("wal: repair: keep a copy of %s: %w (nothing was truncated)", info.Path, err)
			}
		}
		if i < len(infos)-1 {
			// The bytes cut from a sealed segment leave a gap before
			// the next segment: record it as known first.
			if err := writeHole(dir, r.Offset, info.Base+uint64(info.Size)); err != nil {
				return done, err
			}
		}
		if i < len(infos)-1 && info.ValidEnd == 0 {
			// Nothing valid is left of a sealed segment: remove it
			// (the copy keeps its bytes; the hole record explains it).
			if err := os.Remove(info.Path); err != nil {
				return done, fmt.Errorf("wal: repair: remove %s: %w", info.Path, err)
			}
			done = append(done, r)
			continue
		}
		if err := truncateSync(info.Path, info.ValidEnd); err != nil {
			return done, fmt.Errorf("wal: repair: truncate %s at offset %d: %w", info.Path, r.Offset, err)
		}
		done = append(done, r)
	}
	if len(done) > 0 {
		if err := syncDir(dir); err != nil {
			return done, err
		}
	}
	return done, nil
}

func truncateSync(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	if err := fdatasync(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, private.FileMode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
