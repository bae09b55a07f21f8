package wal

import (
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/bbengine/bbengine/codec/frame"
)

// diskFull is a FaultWrite that fails every write while full is set,
// as a disk with no space left does.
type diskFull struct{ full atomic.Bool }

func (d *diskFull) fault(path string, n int) error {
	if d.full.Load() && n > 0 {
		return &pathError{path, syscall.ENOSPC}
	}
	return nil
}

type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return "write " + e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

// TestResumeAfterDiskFull: a write that fails with ENOSPC makes the log
// fail every append until Resume, which refuses while the disk is still
// full and afterwards lets appends go on at the end of the last whole
// frame, so the log reads back with no gap and no junk, before and after
// a reopen.
func TestResumeAfterDiskFull(t *testing.T) {
	var d diskFull
	dir := t.TempDir()
	l := mustOpen(t, dir, &Options{FaultWrite: d.fault})
	appendN(t, l, 0, 5)
	d.full.Store(true)
	_, err := l.Append(Record{Kind: frame.KindResponseBody, Exchange: 5, Payload: payloadFor(5)})
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: %v, want ENOSPC", err)
	}
	if !errors.Is(l.Failed(), syscall.ENOSPC) {
		t.Fatalf("Failed() = %v", l.Failed())
	}
	if err := l.Resume(); err == nil || !strings.Contains(err.Error(), "still failing") {
		t.Fatalf("Resume on a full disk: %v", err)
	}
	if _, err := l.Append(Record{Kind: frame.KindResponseBody, Exchange: 6, Payload: payloadFor(6)}); err == nil {
		t.Fatal("append after a failed Resume succeeded")
	}
	d.full.Store(false)
	if err := l.Resume(); err != nil {
		t.Fatalf("Resume with space back: %v", err)
	}
	if l.Failed() != nil {
		t.Fatalf("Failed() after Resume = %v", l.Failed())
	}
	appendN(t, l, 5, 5)
	want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	if got := readAll(t, l); !equalInts(got, want) {
		t.Fatalf("after resume read %v, want %v", got, want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = mustOpen(t, dir, nil)
	defer l.Close()
	if l.Recovery() != nil {
		t.Errorf("reopen had to recover: %v", l.Recovery())
	}
	if got := readAll(t, l); !equalInts(got, want) {
		t.Fatalf("after reopen read %v, want %v", got, want)
	}
}

// TestResumeAfterTornWrite: a write that put only part of a group on
// disk before it failed leaves junk after the last whole frame; Resume
// cuts it off.
func TestResumeAfterTornWrite(t *testing.T) {
	var fail atomic.Bool
	dir := t.TempDir()
	var l *Log
	l = mustOpen(t, dir, &Options{FaultWrite: func(path string, n int) error {
		if fail.Load() && n > 0 {
			// Half the bytes land, then the disk is full.
			l.f.WriteAt(make([]byte, n/2+1), l.pos)
			return syscall.ENOSPC
		}
		return nil
	}})
	appendN(t, l, 0, 3)
	fail.Store(true)
	if _, err := l.Append(Record{Kind: frame.KindResponseBody, Exchange: 3, Payload: payloadFor(3)}); err == nil {
		t.Fatal("torn append succeeded")
	}
	fail.Store(false)
	if err := l.Resume(); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 3, 2)
	if got := readAll(t, l); !equalInts(got, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("read %v", got)
	}
	l.Close()
}

// TestResumeRotation: the disk fills as a new segment is created.
func TestResumeRotation(t *testing.T) {
	var d diskFull
	dir := t.TempDir()
	l := mustOpen(t, dir, &Options{SegmentSize: 4 << 10, FaultWrite: d.fault, NoCompression: true})
	appendN(t, l, 0, 20)
	d.full.Store(true)
	for i := 20; i < 40; i++ {
		l.Append(Record{Kind: frame.KindResponseBody, Exchange: uint64(i), Payload: payloadFor(i)})
	}
	d.full.Store(false)
	if err := l.Resume(); err != nil {
		t.Fatal(err)
	}
	appendN(t, l, 20, 60)
	want := make([]int, 80)
	for i := range want {
		want[i] = i
	}
	if got := readAll(t, l); !equalInts(got, want) {
		t.Fatalf("read %d frames %v…, want 80", len(got), got[:min(len(got), 30)])
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Check(dir); err != nil {
		t.Fatalf("check after resume across segments: %v", err)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
