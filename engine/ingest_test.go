package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/engine/schema"
)

// writeLines writes a "lines" source file and returns its path.
func writeLines(t *testing.T, name, data string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// The events of new imported sessions go to an event table that Pebble
// ingests, not through the batch; what is stored is what the batch
// path stores (a rebuild on a store without those tables).
func TestIngestEvents(t *testing.T) {
	dir, log := newData(t)
	e := open(t, dir, log, nil)
	importPath(t, e, "lines", writeLines(t, "a.jsonl", "{\"n\":1}\n{\"n\":2}\n"))
	importPath(t, e, "lines", writeLines(t, "b.jsonl", "{\"n\":3}\n"))
	if n := e.db.Metrics().Ingest.Count; n != 2 {
		t.Fatalf("%d event tables ingested, want 2", n)
	}
	if got, want := texts(t, e, "lines:a"), `1:{"n":1}|2:{"n":2}|`; got != want {
		t.Fatalf("events = %s, want %s", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "db", ingestName)); !os.IsNotExist(err) {
		t.Fatalf("the event table's file is left: %v", err)
	}
	sameAfterRebuild(t, e, dump(t, e), "rebuild differs from an import through event tables")
}

// A crash after an event table was ingested and before the batch that
// counts its sessions committed leaves events the store does not count.
// The pass that derives those sessions again must drop them, not add to
// them.
func TestIngestOrphanEvents(t *testing.T) {
	dir, log := newData(t)
	e := open(t, dir, log, nil)
	src := writeLines(t, "s.jsonl", "{\"n\":1}\n{\"n\":2}\n")
	fi, err := ReadImport("lines", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := AppendImport(e.WAL(), fi.Records); err != nil {
		t.Fatal(err)
	}
	// The session will be the store's first: ordinal 1. The lost pass
	// had derived more events than this one will.
	for seq := uint64(1); seq <= 5; seq++ {
		if err := e.db.Set(schema.EventKey(nil, 1, seq), []byte(`{"kind":"message","text":"lost"}`), nil); err != nil {
			t.Fatal(err)
		}
	}
	catchUp(t, e)
	if got, want := texts(t, e, "lines:s"), `1:{"n":1}|2:{"n":2}|`; got != want {
		t.Fatalf("events = %s, want %s", got, want)
	}
	sameAfterRebuild(t, e, dump(t, e), "orphan events survived")
}

// A table a killed import left behind is removed when the store opens.
func TestIngestLeftover(t *testing.T) {
	dir, log := newData(t)
	e := open(t, dir, log, nil)
	e.Close()
	p := filepath.Join(dir, "db", ingestName)
	if err := os.WriteFile(p, []byte("half a table"), 0o600); err != nil {
		t.Fatal(err)
	}
	open(t, dir, log, nil)
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("leftover event table: %v", err)
	}
}

// CatchUpTo derives only the frames before its offset; the next pass
// goes on from there.
func TestCatchUpTo(t *testing.T) {
	dir, log := newData(t)
	e := open(t, dir, log, nil)
	appendFile := func(name, data string) {
		fi, err := ReadImport("lines", writeLines(t, name, data), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := AppendImport(e.WAL(), fi.Records); err != nil {
			t.Fatal(err)
		}
	}
	appendFile("a.jsonl", "{\"n\":1}\n{\"n\":2}\n")
	end, err := log.End()
	if err != nil {
		t.Fatal(err)
	}
	appendFile("b.jsonl", "{\"n\":3}\n")
	if _, err := e.CatchUpTo(context.Background(), end); err != nil {
		t.Fatal(err)
	}
	if applied, _ := e.Applied(); applied != end {
		t.Fatalf("applied %d, want %d", applied, end)
	}
	if got := texts(t, e, "lines:a"); got != `1:{"n":1}|2:{"n":2}|` {
		t.Fatalf("a: %s", got)
	}
	if _, err := e.Session("lines:b"); err == nil {
		t.Fatal("b derived past the limit")
	}
	catchUp(t, e)
	if got := texts(t, e, "lines:b"); got != `1:{"n":3}|` {
		t.Fatalf("b: %s", got)
	}
	sameAfterRebuild(t, e, dump(t, e), "rebuild differs after CatchUpTo")
}

// No table Pebble writes holds both events and keys of other families.
func TestEventSpanTables(t *testing.T) {
	dir, log := newData(t)
	e := open(t, dir, log, nil)
	b := e.db.NewBatch()
	for i := range 200 {
		for _, p := range []byte{schema.PrefixConvo, schema.PrefixEvent, schema.PrefixImportFile} {
			b.Set(schema.AppendU64Key(nil, p, uint64(i)), []byte("v"), nil)
		}
	}
	if err := b.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if err := e.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := e.db.Compact(context.Background(), []byte{0}, []byte{0xff}, false); err != nil {
		t.Fatal(err)
	}
	levels, err := e.db.SSTables()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tables := range levels {
		for _, tb := range tables {
			n++
			lo, hi := tb.Smallest.UserKey[0], tb.Largest.UserKey[0]
			if lo != hi && (lo == schema.PrefixEvent || hi == schema.PrefixEvent || lo < schema.PrefixEvent && hi > schema.PrefixEvent) {
				t.Errorf("table %s holds keys from %q to %q", tb.FileNum, lo, hi)
			}
		}
	}
	if n < 3 {
		t.Fatalf("%d tables, want one per family at least", n)
	}
}

// TestImportCrashResume kills a process deriving imported sessions
// (ingesting event tables, committing), resumes, and compares the result
// with a clean rebuild.
func TestImportCrashResume(t *testing.T) {
	if dir := os.Getenv("BBENGINE_IMPORT_CRASH_DIR"); dir != "" {
		e, err := Open(dir, suite(t, &Options{BatchBytes: 4096}))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		e.CatchUp(context.Background())
		os.Exit(0)
	}
	if testing.Short() {
		t.Skip("short")
	}
	dir, log := newData(t)
	src := t.TempDir()
	for i := range 40 {
		var b strings.Builder
		for n := range 300 {
			fmt.Fprintf(&b, "{\"s\":%d,\"n\":%d,\"text\":%q}\n", i, n, strings.Repeat("words ", 20))
		}
		p := filepath.Join(src, fmt.Sprintf("s%02d.jsonl", i))
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		fi, err := ReadImport("lines", p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := AppendImport(log, fi.Records); err != nil {
			t.Fatal(err)
		}
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	killRounds(t, "TestImportCrashResume", "BBENGINE_IMPORT_CRASH_DIR", dir, []time.Duration{20 * time.Millisecond, 60 * time.Millisecond, 120 * time.Millisecond, 250 * time.Millisecond})
	for _, s := range resumeAfterKills(t, dir, 40) {
		if s.Events != 300 {
			t.Errorf("session %s has %d events, want 300", s.ID, s.Events)
		}
	}
}
