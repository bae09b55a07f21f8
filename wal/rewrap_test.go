package wal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bbengine/bbengine/codec/frame"
)

// rewrapLog writes an encrypted log of several segments under
// generation 1 of the "rewrap" key set and returns its directory.
func rewrapLog(t *testing.T) string {
	dir := t.TempDir()
	l := mustOpen(t, dir, &Options{Keys: seededKeys(t, "rewrap", 1, 1, 2), SegmentSize: 1024})
	appendN(t, l, 0, 30)
	l.Close()
	return dir
}

func keyGens(t *testing.T, dir string) []uint32 {
	t.Helper()
	infos, err := Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	var gens []uint32
	for _, in := range infos {
		if in.Err != nil || !in.Encrypted {
			t.Fatalf("segment %+v", in)
		}
		gens = append(gens, in.KeyGen)
	}
	return gens
}

// TestRewrap: re-wrapping generation 1 to 2 rewrites only the header
// frames, after which a key set without generation 1 reads every frame;
// it is idempotent and refused while a writer holds the log.
func TestRewrap(t *testing.T) {
	dir := rewrapLog(t)
	segs, _ := listSegments(dir)
	before := map[string][]byte{}
	for _, s := range segs {
		before[segName(s.base)] = read(t, filepath.Join(dir, segName(s.base)))
	}
	next := seededKeys(t, "rewrap", 2, 1, 2)
	if _, err := Rewrap(dir, next, 2); err == nil {
		t.Fatal("Rewrap of the active generation succeeded")
	}
	l := mustOpen(t, dir, &Options{Keys: next})
	if _, err := Rewrap(dir, next, 1); !errors.Is(err, ErrLocked) {
		t.Fatalf("Rewrap while open = %v, want ErrLocked", err)
	}
	l.Close()
	n, err := Rewrap(dir, next, 1)
	if err != nil || n != len(segs) {
		t.Fatalf("Rewrap = %d, %v; want %d segments", n, err, len(segs))
	}
	for i, g := range keyGens(t, dir) {
		if g != 2 {
			t.Fatalf("segment %d is wrapped by generation %d after Rewrap", i, g)
		}
	}
	for name, b := range before {
		after := read(t, filepath.Join(dir, name))
		if len(after) != len(b) || !bytes.Equal(after[headerFrameLenEnc:], b[headerFrameLenEnc:]) {
			t.Fatalf("%s: Rewrap changed more than the header frame", name)
		}
		if bytes.Equal(after[:headerFrameLenEnc], b[:headerFrameLenEnc]) {
			t.Fatalf("%s: header unchanged", name)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, rewrapJournal)); !os.IsNotExist(err) {
		t.Fatalf("journal left behind: %v", err)
	}
	if n, err := Rewrap(dir, next, 1); err != nil || n != 0 {
		t.Fatalf("Rewrap again = %d, %v; want nothing to do", n, err)
	}
	retired := seededKeys(t, "rewrap", 2, 2)
	l = mustOpen(t, dir, &Options{Keys: retired})
	defer l.Close()
	appendN(t, l, 30, 1)
	if got := readAll(t, l); len(got) != 31 {
		t.Fatalf("read %d frames with generation 1 retired, want 31", len(got))
	}
}

// TestRewrapCrash: a crash that tore a header rewrite is finished from
// the journal by Open and by Repair; a torn journal is dropped and the
// segment, not yet touched, keeps its old wrap.
func TestRewrapCrash(t *testing.T) {
	next := seededKeys(t, "rewrap", 2, 1, 2)
	// The header Rewrap writes, taken from a copy of the log.
	newHeader := func(t *testing.T, dir string) []byte {
		cp := t.TempDir()
		for _, s := range mustList(t, dir) {
			write(t, filepath.Join(cp, segName(s.base)), read(t, filepath.Join(dir, segName(s.base))))
		}
		if _, err := Rewrap(cp, next, 1); err != nil {
			t.Fatal(err)
		}
		return read(t, filepath.Join(cp, segName(0)))[:headerFrameLenEnc]
	}
	tear := func(t *testing.T, dir string, hdr []byte) {
		write(t, filepath.Join(dir, rewrapJournal), hdr)
		path := filepath.Join(dir, segName(0))
		b := read(t, path)
		copy(b[40:80], hdr[40:80]) // part of the new key block, with the old CRC
		write(t, path, b)
		if infos, _ := Check(dir); infos[0].Err == nil {
			t.Fatal("the torn header passes Check")
		}
	}
	t.Run("open replays", func(t *testing.T) {
		dir := rewrapLog(t)
		tear(t, dir, newHeader(t, dir))
		l := mustOpen(t, dir, &Options{Keys: next})
		if got := readAll(t, l); len(got) != 30 {
			t.Fatalf("read %d frames, want 30", len(got))
		}
		l.Close()
		if g := keyGens(t, dir); g[0] != 2 || g[1] != 1 {
			t.Fatalf("generations %v, want the first segment re-wrapped only", g)
		}
		if n, err := Rewrap(dir, next, 1); err != nil || n != len(mustList(t, dir))-1 {
			t.Fatalf("Rewrap after the crash = %d, %v", n, err)
		}
	})
	t.Run("repair replays", func(t *testing.T) {
		dir := rewrapLog(t)
		tear(t, dir, newHeader(t, dir))
		fixed, err := Repair(dir)
		if err != nil || len(fixed) != 0 {
			t.Fatalf("Repair = %+v, %v; want the journal replayed and nothing cut", fixed, err)
		}
		if g := keyGens(t, dir); g[0] != 2 {
			t.Fatalf("generations %v", g)
		}
	})
	t.Run("torn journal", func(t *testing.T) {
		dir := rewrapLog(t)
		hdr := newHeader(t, dir)
		write(t, filepath.Join(dir, rewrapJournal), hdr[:50])
		l := mustOpen(t, dir, &Options{Keys: next})
		if got := readAll(t, l); len(got) != 30 {
			t.Fatalf("read %d frames, want 30", len(got))
		}
		l.Close()
		if g := keyGens(t, dir); g[0] != 1 {
			t.Fatalf("generations %v, want the first segment untouched", g)
		}
		if _, err := os.Stat(filepath.Join(dir, rewrapJournal)); !os.IsNotExist(err) {
			t.Fatalf("torn journal left behind: %v", err)
		}
	})
}

func mustList(t *testing.T, dir string) []segment {
	t.Helper()
	segs, err := listSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	return segs
}

// TestLogRewrap: Log.Rewrap re-wraps the segments of a log open for
// writing while appends and a Reader go on; every frame reads back, and
// after a reopen a key set without the old generation reads them all.
func TestLogRewrap(t *testing.T) {
	dir := t.TempDir()
	keys := seededKeys(t, "rewrap", 1, 1, 2)
	l := mustOpen(t, dir, &Options{Keys: keys, SegmentSize: 1024})
	appendN(t, l, 0, 30)
	if _, err := l.Rewrap(1); err == nil {
		t.Fatal("Log.Rewrap of the active generation succeeded")
	}
	setActive(t, keys, 2)
	done := make(chan struct{})
	var appendErr, readErr error
	go func() {
		defer close(done)
		for i := 30; i < 60; i++ {
			if _, err := l.Append(Record{Kind: frame.KindResponseBody, Exchange: uint64(i), Payload: payloadFor(i)}); err != nil {
				appendErr = err
				return
			}
			r := l.NewReader()
			for r.Next() {
				if _, err := r.Payload(); err != nil {
					readErr = err
				}
			}
			if r.Err() != nil {
				readErr = r.Err()
			}
			r.Close()
		}
	}()
	n, err := l.Rewrap(1)
	<-done
	if err != nil || n == 0 {
		t.Fatalf("Log.Rewrap = %d, %v", n, err)
	}
	if appendErr != nil || readErr != nil {
		t.Fatalf("during Rewrap: append %v, read %v", appendErr, readErr)
	}
	if got := readAll(t, l); len(got) != 60 {
		t.Fatalf("read %d frames, want 60", len(got))
	}
	l.Close()
	for i, g := range keyGens(t, dir) {
		if g != 2 {
			t.Fatalf("segment %d is still wrapped by generation %d", i, g)
		}
	}
	l = mustOpen(t, dir, &Options{Keys: seededKeys(t, "rewrap", 2, 2)})
	defer l.Close()
	if got := readAll(t, l); len(got) != 60 {
		t.Fatalf("with generation 1 retired read %d frames, want 60", len(got))
	}
}
