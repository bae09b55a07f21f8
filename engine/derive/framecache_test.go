package derive_test

// TestFrameCacheRecords checks the pipeline's cache of import frames
// against reading them back from the WAL, on the import states a real
// engine derives: a test of package derive that needs the engine above
// it, so it is an external test (export_test.go lends it the cache).

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/engine/derive"
	"github.com/bbengine/bbengine/wal"
)

// newData, open, writeLines and importPath are the engine tests' helpers
// of the same names.
func newData(t testing.TB) (string, *wal.Log) {
	t.Helper()
	dir := t.TempDir()
	log, err := wal.Open(filepath.Join(dir, "wal"), &wal.Options{Sync: wal.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	return dir, log
}

func open(t testing.TB, dir string, log *wal.Log) *engine.Engine {
	t.Helper()
	e, err := engine.Open(dir, &engine.Options{WAL: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func writeLines(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func importPath(t testing.TB, e *engine.Engine, source, path string) {
	t.Helper()
	if _, err := e.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	st, ok, err := e.ImportState(strings.TrimSuffix(path, ".zst"))
	if err != nil {
		t.Fatal(err)
	}
	var sp *engine.ImportFileState
	if ok {
		sp = &st
	}
	fi, err := engine.ReadImport(source, path, sp)
	if err != nil {
		t.Fatal(err)
	}
	if err := engine.AppendImport(e.WAL(), fi.Records); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A frame cache of the whole WAL gives every file what reading it back
// from the WAL gives: grown files, duplicate records inside a run, a
// whole-file record imported twice, a replaced generation.
func TestFrameCacheRecords(t *testing.T) {
	dir, log := newData(t)
	e := open(t, dir, log)
	write := func(p, data string) {
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// same checks that a frame cache of the whole WAL gives each path
	// what reading back from the WAL gives.
	same := func(paths ...string) *derive.FrameCache {
		t.Helper()
		fc := &derive.FrameCache{}
		r := log.NewReader()
		defer r.Close()
		for r.Next() {
			if r.Header().Kind != frame.KindImport {
				continue
			}
			p, err := r.Payload()
			if err != nil {
				t.Fatal(err)
			}
			if rec, err := exchange.DecodeImport(p); err == nil {
				fc.Add(r.Offset(), rec)
			}
		}
		if err := r.Err(); err != nil {
			t.Fatal(err)
		}
		wr := log.NewReader()
		defer wr.Close()
		for _, p := range paths {
			st, ok, err := e.ImportState(p)
			if err != nil || !ok {
				t.Fatalf("state of %s: %v %v", p, ok, err)
			}
			want, err := derive.ReadImportRecords(wr, &st)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := fc.Records(&st)
			if !ok {
				t.Fatalf("%s: the cache of the whole WAL does not cover it", p)
			}
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
				t.Errorf("%s: from the cache\n%+v\nfrom the WAL\n%+v", p, got, want)
			}
			if len(want) == 0 {
				t.Errorf("%s: no records", p)
			}
		}
		return fc
	}
	a := writeLines(t, "a.jsonl", "{\"n\":1}\n{\"n\":2}\n")
	importPath(t, e, "lines", a)
	b := writeLines(t, "b.jsonl", "{\"n\":9}\n")
	importPath(t, e, "lines", b)
	write(a, "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n")
	importPath(t, e, "lines", a)
	dup, err := engine.ReadImport("lines", a, nil) // appended again: duplicates
	if err != nil {
		t.Fatal(err)
	}
	if err := engine.AppendImport(e.WAL(), dup.Records); err != nil {
		t.Fatal(err)
	}
	write(a, "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n{\"n\":4}\n") // a line after them
	importPath(t, e, "lines", a)
	meta := filepath.Join(t.TempDir(), "agent-x.meta.json")
	for _, v := range []string{`{"v":1}`, `{"v":2}`} {
		write(meta, v)
		importPath(t, e, "lines", meta)
	}
	fc := same(a, b, meta)
	write(a, "{\"m\":1}\n") // a new generation
	importPath(t, e, "lines", a)
	same(a, b, meta)

	// A cache that starts after a file's first run does not cover it.
	late := fc.Last()
	st, _, _ := e.ImportState(b)
	if _, ok := late.Records(&st); ok {
		t.Error("a cache of the last frame covers b.jsonl")
	}
}
