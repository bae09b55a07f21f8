package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/bbengine/bbengine/internal/memtext"
)

// projectIDs returns the artifact ids the project index has under kind
// and term.
func projectIDs(t *testing.T, e *Engine, project string, kind byte, term string) []string {
	t.Helper()
	es, err := e.ProjectIndex(project, kind, term)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, pe := range es {
		ids = append(ids, pe.Artifact)
	}
	return ids
}

// TestProjectIndex: the project index holds the active decisions of every
// session of a project under their terms, drops a decision once it is
// superseded (also when the session's miner is loaded again from the
// store), and equals a rebuild.
func TestProjectIndex(t *testing.T) {
	dir := t.TempDir()
	e, log := memoryEngine(t, dir)
	defer log.Close()
	defer e.Close()

	// Session one states a decision; its log grows later.
	one := newClaudeLog("11111111-0000-4000-8000-000000000001")
	one.User("Add a cache to the session store.")
	one.Reply(textBlock("We decided to use an LRU cache for the session store because lookups repeat."))
	p1 := filepath.Join(dir, "one.jsonl")
	if err := os.WriteFile(p1, one.Data(), 0o644); err != nil {
		t.Fatal(err)
	}
	importPath(t, e, "claude", p1)
	decs, err := e.Artifacts("claude:" + one.Session)
	if err != nil {
		t.Fatal(err)
	}
	lru := byType(decs, ArtifactDecision)
	if len(lru) != 1 {
		t.Fatalf("%d decisions, want 1", len(lru))
	}
	for _, term := range memtext.Terms(lru[0].Decision.Statement) {
		if ids := projectIDs(t, e, "/repo", ProjectTerm, term); !slices.Contains(ids, lru[0].ID) {
			t.Errorf("term %q: %v lacks the active decision %s", term, ids, lru[0].ID)
		}
	}

	// Session two, same project: its own entries join.
	two := newClaudeLog("22222222-0000-4000-8000-000000000002")
	two.User("Which queue?")
	two.Reply(textBlock("We decided to use a ring buffer for the event queue because it never allocates."))
	p2 := filepath.Join(dir, "two.jsonl")
	if err := os.WriteFile(p2, two.Data(), 0o644); err != nil {
		t.Fatal(err)
	}
	importPath(t, e, "claude", p2)
	if ids := projectIDs(t, e, "/repo", ProjectTerm, "ring"); len(ids) != 1 {
		t.Errorf("ring: %v, want session two's decision", ids)
	}

	// Session one grows: the LRU decision is superseded. A re-import
	// loads the miner again from the store, so the entries to delete come
	// from the stored artifacts.
	one.User("Scans evict hot entries.")
	one.Reply(textBlock("We decided to use an ARC cache instead of an LRU cache, since scans evict hot entries."))
	if err := os.WriteFile(p1, one.Data(), 0o644); err != nil {
		t.Fatal(err)
	}
	importPath(t, e, "claude", p1)
	a, err := e.Artifact(lru[0].ID)
	if err != nil || a.Status != "superseded" {
		t.Fatalf("LRU decision: %s, %v", a.Status, err)
	}
	for _, term := range memtext.Terms(lru[0].Decision.Statement) {
		if ids := projectIDs(t, e, "/repo", ProjectTerm, term); slices.Contains(ids, lru[0].ID) {
			t.Errorf("term %q still lists the superseded decision %s", term, lru[0].ID)
		}
	}
	if ids := projectIDs(t, e, "/repo", ProjectTerm, "arc"); len(ids) != 1 {
		t.Errorf("arc: %v, want the ARC decision", ids)
	}
	if ids := projectIDs(t, e, "/elsewhere", ProjectTerm, "arc"); len(ids) != 0 {
		t.Errorf("another project has entries: %v", ids)
	}

	before := dump(t, e)
	sameAfterRebuild(t, e, before, "the project index differs after a rebuild")
	if _, err := e.RebuildMemory(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := dump(t, e); after != before {
		t.Errorf("RebuildMemory differs:\n%s", firstDiff(before, after))
	}
}

// TestProjectNewSessionCost: deriving a new session of a project with 200
// earlier sessions derives and writes only the new session's memory.
func TestProjectNewSessionCost(t *testing.T) {
	dir := t.TempDir()
	e, log := memoryEngine(t, dir)
	defer log.Close()
	defer e.Close()
	session := func(i int) string {
		l := newClaudeLog(fmt.Sprintf("33333333-0000-4000-8000-%012d", i))
		l.User(fmt.Sprintf("Pick a store for part %d.", i))
		l.Reply(textBlock(fmt.Sprintf("We decided to use SQLite for part %d because it is one file. TODO: vacuum part %d weekly.", i, i)))
		path := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", i))
		if err := os.WriteFile(path, l.Data(), 0o644); err != nil {
			t.Fatal(err)
		}
		fi, err := ReadImport("claude", path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := AppendImport(e.WAL(), fi.Records); err != nil {
			t.Fatal(err)
		}
		return "claude:" + l.Session
	}
	for i := range 200 {
		session(i)
	}
	catchUp(t, e)
	if ids := projectIDs(t, e, "/repo", ProjectTerm, "sqlite"); len(ids) != 200 {
		t.Fatalf("sqlite: %d project entries, want 200", len(ids))
	}
	id := session(200)
	p := catchUp(t, e)
	st, err := e.MemoryState(id)
	if err != nil {
		t.Fatal(err)
	}
	if p.Memory != 1 || p.Artifacts != len(st.Artifacts) {
		t.Errorf("the new session's pass derived %d sessions and wrote %d artifacts, want 1 and its own %d", p.Memory, p.Artifacts, len(st.Artifacts))
	}
	if ids := projectIDs(t, e, "/repo", ProjectTerm, "sqlite"); len(ids) != 201 {
		t.Errorf("sqlite: %d project entries, want 201", len(ids))
	}
}
