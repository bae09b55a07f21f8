package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The "lines" importer makes one user message per record, so the tests
// here see exactly which records the engine derived a session from.
func init() {
	registerImporter("lines", func(session string, files []ImportFile) (*Imported, error) {
		im := &Imported{Session: Session{Agent: "lines", Import: &ImportInfo{Source: "lines"}}}
		for _, f := range files {
			for _, r := range f.Records {
				im.Session.Import.Records++
				im.Events = append(im.Events, Event{Kind: KindMessage, Role: "user", Text: string(r.Data),
					UUID: fmt.Sprintf("%s@%d", filepath.Base(f.Path), r.Offset),
					Prov: Provenance{Side: "import", First: r.WAL, Last: r.WAL, File: f.Path, Line: r.Line}})
			}
		}
		return im, nil
	})
}

// importFile reads path for import against the engine's state and
// appends its records; it returns what ReadImport found.
func importPath(t testing.TB, e *Engine, source, path string) *FileImport {
	t.Helper()
	catchUp(t, e)
	st, ok, err := e.ImportState(strings.TrimSuffix(path, ".zst"))
	if err != nil {
		t.Fatal(err)
	}
	var sp *ImportFileState
	if ok {
		sp = &st
	}
	fi, err := ReadImport(source, path, sp)
	if err != nil {
		t.Fatal(err)
	}
	if err := AppendImport(e.WAL(), fi.Records); err != nil {
		t.Fatal(err)
	}
	catchUp(t, e)
	return fi
}

func texts(t *testing.T, e *Engine, session string) string {
	t.Helper()
	evs, err := e.Events(session, EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, ev := range evs {
		fmt.Fprintf(&b, "%d:%s|", ev.Seq, ev.Text)
	}
	return b.String()
}

func TestImportIncremental(t *testing.T) {
	dir, log := newData(t)
	e := open(t, dir, log, nil)
	src := filepath.Join(t.TempDir(), "s1.jsonl")
	write := func(s string) {
		if err := os.WriteFile(src, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("{\"n\":1}\n{\"n\":2}\nnot json\n{\"n\":")
	fi := importPath(t, e, "lines", src)
	// The line that is not JSON is skipped, and named.
	if len(fi.Records) != 2 || fi.Tail != 5 || len(fi.Problems) != 1 || fi.Problems[0].Line != 3 || fi.Problems[0].Col != 2 || fi.Unreadable != 1 {
		t.Fatalf("first import: %d records, tail %d, problems %v", len(fi.Records), fi.Tail, fi.Problems)
	}
	if got, want := texts(t, e, "lines:s1"), `1:{"n":1}|2:{"n":2}|`; got != want {
		t.Fatalf("events = %s, want %s", got, want)
	}
	// Importing again adds nothing.
	if fi := importPath(t, e, "lines", src); len(fi.Records) != 0 {
		t.Fatalf("re-import of an unchanged file wrote %d records", len(fi.Records))
	}
	// The file grew: the finished line and a new one, and a complete
	// last line without its line ending.
	write("{\"n\":1}\n{\"n\":2}\nnot json\n{\"n\":3}\n{\"n\":4}\n{\"n\":5}")
	if fi := importPath(t, e, "lines", src); len(fi.Records) != 3 || fi.Replaced {
		t.Fatalf("grown file: %d records, replaced %v", len(fi.Records), fi.Replaced)
	}
	want := `1:{"n":1}|2:{"n":2}|3:{"n":3}|4:{"n":4}|5:{"n":5}|`
	if got := texts(t, e, "lines:s1"); got != want {
		t.Fatalf("events = %s, want %s", got, want)
	}
	// Its line ending arrives: nothing new.
	write("{\"n\":1}\n{\"n\":2}\nnot json\n{\"n\":3}\n{\"n\":4}\n{\"n\":5}\n")
	if fi := importPath(t, e, "lines", src); len(fi.Records) != 0 {
		t.Fatalf("line ending: %d records", len(fi.Records))
	}
	// The same records appended twice (two imports racing) derive once.
	st, _, _ := e.ImportState(src)
	dup, err := ReadImport("lines", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	dup.Records[0].Gen = st.Gen
	if err := AppendImport(e.WAL(), dup.Records); err != nil {
		t.Fatal(err)
	}
	catchUp(t, e)
	if got := texts(t, e, "lines:s1"); got != want {
		t.Fatalf("after duplicates: %s", got)
	}
	before := dump(t, e)
	sameAfterRebuild(t, e, before, "rebuild after incremental imports")

	// A replaced file is a new generation: only its records count.
	write("{\"m\":1}\n")
	fi = importPath(t, e, "lines", src)
	if !fi.Replaced || fi.Gen != 1 || len(fi.Records) != 1 {
		t.Fatalf("replaced file: replaced %v gen %d records %d", fi.Replaced, fi.Gen, len(fi.Records))
	}
	if got := texts(t, e, "lines:s1"); got != `1:{"m":1}|` {
		t.Fatalf("after replacement: %s", got)
	}
	s, err := e.Session("s1")
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != "lines:s1" || s.Source != "import:lines" || s.Import == nil || len(s.Import.Files) != 1 || s.Events != 1 {
		t.Fatalf("session = %+v", s)
	}
	sameAfterRebuild(t, e, dump(t, e), "rebuild after a replaced file")
}

// An import interrupted between batches (the pending set is committed,
// the derivation is not) derives on the next pass.
func TestImportPendingSurvivesReopen(t *testing.T) {
	dir, log := newData(t)
	e := open(t, dir, log, &Options{BatchBytes: 1})
	src := filepath.Join(t.TempDir(), "s2.jsonl")
	var b strings.Builder
	for i := range 50 {
		fmt.Fprintf(&b, "{\"i\":%d}\n", i)
	}
	if err := os.WriteFile(src, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := ReadImport("lines", src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := AppendImport(log, fi.Records); err != nil {
		t.Fatal(err)
	}
	catchUp(t, e)
	want := texts(t, e, "lines:s2")
	if !strings.HasPrefix(want, `1:{"i":0}|`) || !strings.HasSuffix(want, `50:{"i":49}|`) {
		t.Fatalf("events = %s", want)
	}
	before := dump(t, e)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = open(t, dir, log, nil)
	catchUp(t, e)
	if got := dump(t, e); got != before {
		t.Fatalf("reopen changed the state:\n%s", diffLines(before, got))
	}
}

// A session whose files are imported in two passes is derived again
// whole in the second, its subagent's lines merged into the middle of
// its timeline: its memory must be derived from the new timeline, as a
// rebuild derives it, not by folding the events after the old count
// into the memory of the old one.
func TestImportSecondPassMemory(t *testing.T) {
	root := filepath.Join("..", "..", "shared", "agentlogs-golden", "claude", "daaain-claude-code-log", "-experiments-worktrees")
	main := filepath.Join(root, "ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl")
	if _, err := os.Stat(main); err != nil {
		t.Skipf("golden agent logs not present: %v", err)
	}
	subs, err := filepath.Glob(filepath.Join(root, "ef958aa1-0e93-49f0-bb71-150f63befcd1", "subagents", "*.jsonl"))
	if err != nil || len(subs) == 0 {
		t.Fatalf("no subagent logs: %v", err)
	}
	dir, log := newData(t)
	e := open(t, dir, log, nil)
	importPath(t, e, "claude", main)
	first, err := e.Session("claude:ef958aa1-0e93-49f0-bb71-150f63befcd1")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range subs {
		importPath(t, e, "claude", p)
	}
	s, err := e.Session(first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s.Events <= first.Events || s.Threads <= 1 {
		t.Fatalf("the subagents added nothing: %d events, %d threads (was %d events)", s.Events, s.Threads, first.Events)
	}
	sameAfterRebuild(t, e, dump(t, e), "rebuild after a session imported in two passes")
}

// registerImporter sets the importer of source once (RegisterImporter
// panics when called twice).
func registerImporter(source string, fn Importer) {
	if !slices.Contains(ImportSources(), source) {
		RegisterImporter(source, fn)
	}
}

// TestImportMemoryRebuilt checks that the memory an import derives from
// the events it hands over is the memory RebuildMemory derives from the
// stored events.
func TestImportMemoryRebuilt(t *testing.T) {
	sessions := goldenClaude(t)
	dir, log := newData(t)
	e := open(t, dir, log, nil)
	for _, s := range sessions {
		for _, f := range s.files {
			importPath(t, e, "claude", f.Path)
		}
	}
	before := dump(t, e)
	if !strings.Contains(before, `"builder"`) {
		t.Fatal("no memory state derived")
	}
	if _, err := e.RebuildMemory(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := dump(t, e); after != before {
		t.Fatalf("RebuildMemory changed the memory the import derived:\n%s", diffLines(before, after))
	}
}
