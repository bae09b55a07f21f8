package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/internal/crypt"
)

// rewrapJournal is the file through which Rewrap rewrites a segment
// header: the new header frame, synced before the segment is touched.
const rewrapJournal = "rewrap.journal"

// Rewrap re-wraps, to the active generation of keys, the data key of
// every segment of the log in dir whose key generation gen wrapped. The
// frames are not rewritten: only each such segment's header frame, in
// place. `bbengine key retire` runs it before it drops generation gen.
// It takes the writer's lock, so it fails with ErrLocked while a writer
// has the log open (use Log.Rewrap then), and returns how many segments
// it re-wrapped. It is idempotent: run again, it finds nothing wrapped
// by gen.
//
// A header is rewritten through a journal, dir/rewrap.journal: the new
// header frame is written there and synced, then written over the
// segment's header with one pwrite and synced, then the journal is
// removed. A crash that tears the pwrite leaves the journal, whose
// header frame (it carries its own CRC and offset, so a torn journal is
// recognised and ignored) Open, Repair and the next Rewrap write again
// before anything else. Without it a torn header would leave the
// segment unreadable (its data key lost) and Repair would cut it away:
// a single-sector write is not atomic on every device.
func Rewrap(dir string, keys *crypt.Keys, gen uint32) (int, error) {
	if err := checkRewrap(dir, keys, gen); err != nil {
		return 0, err
	}
	lock, err := lockDir(dir)
	if err != nil {
		return 0, err
	}
	defer lock.Close()
	if err := replayRewrap(dir); err != nil {
		return 0, err
	}
	segs, err := listSegments(dir)
	if err != nil {
		return 0, fmt.Errorf("wal: rewrap: list %s: %w", dir, err)
	}
	return rewrapSegments(dir, segs, keys, gen, nil)
}

// Rewrap is the package's Rewrap for a log this process has open for
// writing (the proxy's), with its keys, while appends and reads go on.
// Readers of this Log never see half a header; a Reader of a read-only
// Log in another process may, and then reports a checksum error at the
// segment's first offset until it reads the header again. A segment
// removed by retention meanwhile is skipped.
func (l *Log) Rewrap(gen uint32) (int, error) {
	if l.readOnly {
		return 0, ErrReadOnly
	}
	if err := checkRewrap(l.dir, l.opts.Keys, gen); err != nil {
		return 0, err
	}
	l.rwMu.Lock()
	defer l.rwMu.Unlock()
	segs, err := l.view()
	if err != nil {
		return 0, err
	}
	return rewrapSegments(l.dir, segs, l.opts.Keys, gen, l.hdrMu)
}

func checkRewrap(dir string, keys *crypt.Keys, gen uint32) error {
	if keys == nil {
		return fmt.Errorf("wal: rewrap %s: %w", dir, ErrNoKey)
	}
	if gen == keys.Active() {
		return fmt.Errorf("wal: rewrap %s: generation %d is the active one; rotate to a new generation first", dir, gen)
	}
	return nil
}

// rewrapSegments re-wraps the segments of segs wrapped by gen. hdrMu,
// if not nil, is held while a header is written.
func rewrapSegments(dir string, segs []segment, keys *crypt.Keys, gen uint32, hdrMu *sync.RWMutex) (int, error) {
	n := 0
	for _, s := range segs {
		path := filepath.Join(dir, segName(s.base))
		hdr, err := readHeader(path)
		if errors.Is(err, os.ErrNotExist) {
			continue // removed by retention
		}
		if err != nil {
			return n, err
		}
		f, err := decodeAt(hdr, s.base, 0)
		if err != nil {
			return n, &CorruptionError{Segment: path, Offset: s.base, Err: err}
		}
		v, k, err := parseHeaderFrame(&f)
		if err != nil {
			return n, &CorruptionError{Segment: path, Offset: s.base, Err: err}
		}
		if v != VersionEncrypted || k.gen != gen {
			continue
		}
		// The generation is bound by crypt, not by the wrap's AAD
		// (payload[0:12]), so the AAD stays the same.
		ngen, wrapped, err := keys.Rewrap(k.gen, k.wrapped[:], k.ad[:])
		if err != nil {
			return n, &KeyError{Segment: path, Gen: k.gen, Err: err}
		}
		p := keyHeaderPayload(ngen, wrapped[:])
		nh := frame.AppendFrame(nil, f.Header, p[:], false)
		if err := rewriteHeader(dir, path, nh, hdrMu); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // removed by retention meanwhile
			}
			return n, err
		}
		n++
	}
	return n, nil
}

// readHeader reads the header frame bytes of a segment (fewer for a
// short segment).
func readHeader(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("wal: open segment %s: %w", path, err)
	}
	defer f.Close()
	hdr := make([]byte, headerFrameLenEnc)
	n, _ := f.ReadAt(hdr, 0)
	return hdr[:n], nil
}

// rewriteHeader writes the header frame hdr over the segment at path
// through the journal, holding hdrMu (if not nil) for the write. A
// segment removed meanwhile is an error wrapping os.ErrNotExist, and the
// journal is removed.
func rewriteHeader(dir, path string, hdr []byte, hdrMu *sync.RWMutex) error {
	jpath := filepath.Join(dir, rewrapJournal)
	if err := writeSynced(jpath, hdr); err != nil {
		return fmt.Errorf("wal: rewrap: write journal %s: %w", jpath, err)
	}
	if err := syncDir(dir); err != nil {
		return err
	}
	if hdrMu != nil {
		hdrMu.Lock()
	}
	err := pwriteSync(path, hdr)
	if hdrMu != nil {
		hdrMu.Unlock()
	}
	if errors.Is(err, os.ErrNotExist) {
		os.Remove(jpath)
		return err
	}
	if err != nil {
		return fmt.Errorf("wal: rewrap: rewrite the header of %s: %w (%s holds it; the next Open writes it again)", path, err, jpath)
	}
	if err := os.Remove(jpath); err != nil {
		return fmt.Errorf("wal: rewrap: %w", err)
	}
	return syncDir(dir)
}

// replayRewrap finishes a header rewrite a crash interrupted: a journal
// holding a whole header frame is written over its segment's header; a
// torn journal (the segment was not touched yet) is removed.
func replayRewrap(dir string) error {
	jpath := filepath.Join(dir, rewrapJournal)
	b, err := os.ReadFile(jpath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("wal: read %s: %w", jpath, err)
	}
	f, err := frame.Decode(b)
	if err == nil && f.Size() == len(b) {
		if v, _, perr := parseHeaderFrame(&f); perr == nil && v == VersionEncrypted {
			path := filepath.Join(dir, segName(f.Offset))
			if _, err := os.Stat(path); err == nil {
				if err := pwriteSync(path, b); err != nil {
					return fmt.Errorf("wal: replay %s onto %s: %w", jpath, path, err)
				}
			}
		}
	}
	if err := os.Remove(jpath); err != nil {
		return fmt.Errorf("wal: remove %s: %w", jpath, err)
	}
	return syncDir(dir)
}

// writeSynced writes b to a new or truncated file at path and syncs it.
func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = fdatasync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// pwriteSync writes b at the start of the existing file at path and
// syncs it.
func pwriteSync(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(b, 0)
	if err == nil {
		err = fdatasync(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
