package wal

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
)

// TestCopyWhileAppending copies a log that grows and rotates meanwhile:
// the copy is a prefix of the log, ends at a frame boundary, verifies,
// and reads back as the frames the log held up to its end.
func TestCopyWhileAppending(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, &Options{SegmentSize: 4 << 10, Sync: SyncInterval})
	defer l.Close()
	appendN(t, l, 0, 200)
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 200; !stop.Load(); i++ {
			appendN(t, l, i, 1)
		}
	}()
	var copies []*Copied
	var dsts []string
	for i := range 5 {
		dst := filepath.Join(t.TempDir(), "wal")
		c, err := l.Copy(dst)
		if err != nil {
			t.Fatalf("copy %d: %v", i, err)
		}
		copies, dsts = append(copies, c), append(dsts, dst)
	}
	stop.Store(true)
	wg.Wait()
	all := readAll(t, l)
	for i, c := range copies {
		if len(c.Segments) < 2 || c.First != 0 {
			t.Fatalf("copy %d: %+v, want several segments from 0", i, c)
		}
		infos, err := Check(dsts[i])
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range infos {
			if in.Err != nil || in.Gap != nil || in.Torn {
				t.Fatalf("copy %d: segment %s: %+v", i, in.Path, in)
			}
		}
		cl := mustOpen(t, dsts[i], &Options{ReadOnly: true})
		end, _ := cl.End()
		if end != c.End {
			t.Fatalf("copy %d ends at %d, reported %d", i, end, c.End)
		}
		got := readAll(t, cl)
		cl.Close()
		if len(got) < 200 || len(got) > len(all) {
			t.Fatalf("copy %d holds %d frames, the log %d", i, len(got), len(all))
		}
		for j := range got {
			if got[j] != all[j] {
				t.Fatalf("copy %d: frame %d is %d, the log's %d", i, j, got[j], all[j])
			}
		}
	}
}

// TestCopyReadOnlyTornTail copies, through a read-only view, a log whose
// last frame is half written: the copy stops at the last whole frame.
func TestCopyReadOnlyTornTail(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, &Options{SegmentSize: 4 << 10})
	appendN(t, l, 0, 100)
	end, _ := l.End()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := listSegments(dir)
	last := filepath.Join(dir, segName(segs[len(segs)-1].base))
	f, err := os.OpenFile(last, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("half a frame"))
	f.Close()
	ro := mustOpen(t, dir, &Options{ReadOnly: true})
	defer ro.Close()
	dst := filepath.Join(t.TempDir(), "copy")
	c, err := ro.Copy(dst)
	if err != nil {
		t.Fatal(err)
	}
	if c.End != end {
		t.Fatalf("copy ends at %d, want %d (the last whole frame)", c.End, end)
	}
	if got := readAll(t, mustOpen(t, dst, &Options{ReadOnly: true})); len(got) != 100 {
		t.Fatalf("copy holds %d frames, want 100", len(got))
	}
}

// TestCopyCorruptSegment refuses to copy a log whose sealed segment has
// a bad frame, naming the source segment and the offset.
func TestCopyCorruptSegment(t *testing.T) {
	dir := t.TempDir()
	l := mustOpen(t, dir, &Options{SegmentSize: 4 << 10})
	appendN(t, l, 0, 100)
	l.Close()
	segs, _ := listSegments(dir)
	bad := filepath.Join(dir, segName(segs[1].base))
	b, _ := os.ReadFile(bad)
	b[headerFrameLen+60] ^= 0xff
	os.WriteFile(bad, b, 0o600)
	ro := mustOpen(t, dir, &Options{ReadOnly: true})
	defer ro.Close()
	_, err := ro.Copy(filepath.Join(t.TempDir(), "copy"))
	var ce *CorruptionError
	if !errors.As(err, &ce) || ce.Segment != bad || ce.Offset != segs[1].base+uint64(headerFrameLen) {
		t.Fatalf("got %v, want a corruption of %s at %d", err, bad, segs[1].base+uint64(headerFrameLen))
	}
	// A non-empty destination is refused.
	dst := t.TempDir()
	os.WriteFile(filepath.Join(dst, "x"), nil, 0o600)
	if _, err := ro.Copy(dst); err == nil {
		t.Fatal("copied into a directory that is not empty")
	}
}
