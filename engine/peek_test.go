package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestPeek reads the applied offset of derived state closed after a
// catch-up, read-only: the same offset the engine had, and no file of
// the store changes. A directory with no derived state is an error
// wrapping fs.ErrNotExist, and nothing is created.
func TestPeek(t *testing.T) {
	dir, log := newData(t)
	var c clock
	writeWAL(t, log, &c, 0, toolLoop("s1", 2))
	e := open(t, dir, log, nil)
	catchUp(t, e)
	want, err := e.Applied()
	if err != nil || want == 0 {
		t.Fatalf("applied %d, %v", want, err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	before := storeStamps(t, filepath.Join(dir, "db"))
	p, err := OpenPeek(dir, suiteKeys(t))
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Applied()
	if err != nil || got != want {
		t.Errorf("Peek.Applied = %d, %v; want %d", got, err, want)
	}
	if _, ok, err := p.ImportState("/no/such/log.jsonl"); ok || err != nil {
		t.Errorf("ImportState of a file never imported: %v %v", ok, err)
	}
	if err := errors.Join(p.Close(), p.Close()); err != nil {
		t.Errorf("Close twice: %v", err)
	}
	if after := storeStamps(t, filepath.Join(dir, "db")); after != before {
		t.Errorf("Peek changed the store:\nbefore %s\nafter  %s", before, after)
	}

	empty := t.TempDir()
	if _, err := OpenPeek(empty, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenPeek of a directory without derived state: %v, want fs.ErrNotExist", err)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("OpenPeek created %v", ents)
	}
}

// TestPeekWhileOpen opens the engine (a writer, as a proxy starting
// while doctor reads) around a Peek: OpenPeek of a held directory, and
// every read of a Peek once a writer holds the directory, is a
// *LockedError naming the holder, never an offset behind the writer's;
// a Peek opened before the writer sees the state as it found it once
// the writer is gone. The rounds write and compact while peeked.
func TestPeekWhileOpen(t *testing.T) {
	dir, log := newData(t)
	var c clock
	writeWAL(t, log, &c, 0, toolLoop("s1", 2))
	e := open(t, dir, log, nil)
	catchUp(t, e)
	defer func() { e.Close() }()
	for i := 0; i < 10; i++ {
		writeWAL(t, log, &c, 0, toolLoop(fmt.Sprint("s", i+2), 3))
		catchUp(t, e)
		want, _ := e.Applied()
		p, err := OpenPeek(dir, suiteKeys(t))
		var le *LockedError
		if !errors.As(err, &le) || le.Holder.PID != os.Getpid() || !errors.Is(err, ErrLocked) {
			t.Fatalf("round %d: OpenPeek of a held directory: %v, want a LockedError naming pid %d", i, err, os.Getpid())
		}
		if p != nil {
			got, err := p.Applied()
			t.Errorf("round %d: OpenPeek returned a Peek; Applied %d (engine %d), %v", i, got, want, err)
			p.Close()
		}
	}
	before, _ := e.Applied()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	p, err := OpenPeek(dir, suiteKeys(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if got, err := p.Applied(); err != nil || got != before {
		t.Fatalf("Peek.Applied of a free directory = %d, %v; want %d", got, err, before)
	}
	// A writer opens the directory under the Peek, derives and compacts.
	e = open(t, dir, log, nil)
	for i := 0; i < 5; i++ {
		writeWAL(t, log, &c, 0, toolLoop(fmt.Sprint("w", i), 3))
		catchUp(t, e)
		if err := e.db.Compact(context.Background(), []byte{0}, []byte{0xff}, true); err != nil {
			t.Fatal(err)
		}
		want, _ := e.Applied()
		got, err := p.Applied()
		if !errors.Is(err, ErrLocked) {
			t.Errorf("round %d: Peek.Applied with a writer = %d, %v; want ErrLocked (engine has %d)", i, got, err, want)
		}
		if _, _, err := p.ImportState("/no/such/log.jsonl"); !errors.Is(err, ErrLocked) {
			t.Errorf("round %d: Peek.ImportState with a writer: %v, want ErrLocked", i, err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// The writer's compactions may have removed a table the Peek had
	// not read yet: an error then, but never another offset.
	if got, err := p.Applied(); err == nil && got != before {
		t.Errorf("Peek.Applied once the writer closed = %d; want %d as the Peek found it", got, before)
	}
}

// storeFiles lists the files of dir with their sizes and times.
func storeStamps(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var s string
	for _, d := range ents {
		info, err := d.Info()
		if err != nil {
			t.Fatal(err)
		}
		s += fmt.Sprintf("%s %d %v; ", d.Name(), info.Size(), info.ModTime().UnixNano())
	}
	return s
}
