package export

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/wal"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current output")

// wireDir holds the engine's recorded scenarios: real WAL directories
// that the engine's own tests derive too. The formats are tested on what
// the engine derives from them.
var wireDir = filepath.Join("..", "engine", "testdata", "wire")

// wireNames lists the recorded scenarios, and fails when there are none
// (a test over no scenario would pass without testing anything).
func wireNames(t *testing.T) []string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(wireDir, "*"))
	var names []string
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			names = append(names, filepath.Base(d))
		}
	}
	if len(names) == 0 {
		t.Fatalf("no recordings under %s", wireDir)
	}
	return names
}

// timeline derives a recorded scenario (wireDir/<name>) with a real
// engine and returns the engine and, per session in order, its events.
// The last result is the engine's data directory (its blob store).
func timeline(t *testing.T, name string) (*engine.Engine, []engine.Session, map[string][]engine.Event, string) {
	t.Helper()
	log, err := wal.Open(filepath.Join(wireDir, name), &wal.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	data := t.TempDir()
	e, err := engine.Open(data, &engine.Options{WAL: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if _, err := e.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	ss, err := e.Sessions(engine.SessionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	evs := map[string][]engine.Event{}
	for _, s := range ss {
		if evs[s.ID], err = e.Events(s.ID, engine.EventFilter{}); err != nil {
			t.Fatal(err)
		}
	}
	return e, ss, evs, data
}

// golden compares got with the file at path (go test -update rewrites
// it).
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./export -run %s -update)", err, t.Name())
	}
	if string(want) != got {
		t.Errorf("%s differs from the output (go test ./export -run %s -update rewrites it):\n%s", path, t.Name(), diffLines(string(want), got))
	}
}

// diffLines shows the first line where a (the golden file) and b (the
// output) differ.
func diffLines(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n - %s\n + %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d lines", len(al), len(bl))
}
