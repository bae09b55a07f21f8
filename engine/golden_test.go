package engine

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/bbengine/bbengine/wal"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current output")

// timeline derives a recorded scenario (testdata/wire/<name>) and returns
// the engine and, per session in order, its events.
func timeline(t *testing.T, name string) (*Engine, []Session, map[string][]Event, string) {
	t.Helper()
	log, err := wal.Open(filepath.Join("testdata", "wire", name), &wal.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	data := t.TempDir()
	e := open(t, data, log, nil)
	catchUp(t, e)
	ss, err := e.Sessions(SessionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	evs := map[string][]Event{}
	for _, s := range ss {
		if evs[s.ID], err = e.Events(s.ID, EventFilter{}); err != nil {
			t.Fatal(err)
		}
	}
	return e, ss, evs, data
}

// TestGoldenTimelines renders every recorded scenario as JSON events and
// compares them with testdata/golden (go test -update rewrites them). A
// rebuild must give the same state. (Package export renders the same
// scenarios as bbox/1: TestGoldenBBox.)
func TestGoldenTimelines(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "wire", "*"))
	n := 0
	for _, d := range dirs {
		if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
			continue
		}
		name := filepath.Base(d)
		n++
		t.Run(name, func(t *testing.T) {
			e, ss, evs, _ := timeline(t, name)
			var js []byte
			for _, s := range ss {
				b, err := json.MarshalIndent(struct {
					Session Session `json:"session"`
					Events  []Event `json:"events"`
				}{s, evs[s.ID]}, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				js = append(append(js, b...), '\n')
			}
			golden(t, filepath.Join("testdata", "golden", name+".json"), string(js))
			sameAfterRebuild(t, e, dump(t, e), "rebuild differs")
		})
	}
	if n == 0 {
		t.Fatal("no recordings under testdata/wire")
	}
}

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
		t.Fatalf("%v (run go test ./engine -run TestGoldenTimelines -update)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the output (go test ./engine -run TestGoldenTimelines -update rewrites it):\n%s", path, diffLines(string(want), got))
	}
}
