package engine

import (
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
