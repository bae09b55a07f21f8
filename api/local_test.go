package api

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/index"
	"github.com/bbengine/bbengine/wal"
)

// openLocal opens the WAL, the engine and the index of dir and a Local
// over them, closed when the test ends.
func openLocal(t *testing.T, dir string) (*Local, *engine.Engine, *wal.Log, *index.Index) {
	t.Helper()
	log, err := wal.Open(filepath.Join(dir, "wal"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	e, err := engine.Open(dir, &engine.Options{WAL: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ix, err := index.Open(IndexDir(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return NewLocal(e, &LocalOptions{Index: ix, WAL: log}), e, log, ix
}

// TestNoteLocal: with no proxy running, Note writes the frame and
// applies it before returning.
func TestNoteLocal(t *testing.T) {
	dir := t.TempDir()
	m, e, log, ix := openLocal(t, dir)
	n, err := m.Note(exchange.Note{Op: "outcome", Session: "l1", TaskID: "t1", Status: "success", Text: "Wrote the cache.", Source: "run"})
	if err != nil || n.Artifact != engine.OutcomeID("l1", "t1") {
		t.Fatalf("Note = %+v, %v", n, err)
	}
	cards, err := m.Search(SearchRequest{Text: "wrote cache", Session: "l1"})
	if err != nil || len(cards) != 1 || cards[0].ID != n.Artifact {
		t.Errorf("search after a local note: %+v, %v", cards, err)
	}
	if _, err := m.Note(exchange.Note{Op: "goal", Session: "l1", Text: "x", Source: "header"}); err == nil || !strings.Contains(err.Error(), `bad request: goal note: source "header"`) {
		t.Errorf("Note with a header source: %v", err)
	}
	// A secret in a note never reaches the WAL.
	secret := "sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	if n, err = m.Note(exchange.Note{Op: "checkpoint", Session: "l1", Text: "rotated " + secret, Source: "run"}); err != nil || strings.Contains(n.Note.Text, secret) {
		t.Fatalf("Note with a secret = %+v, %v", n, err)
	}
	if err := log.Sync(); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(dir, "wal", "*"))
	for _, seg := range segs {
		if b, _ := os.ReadFile(seg); bytes.Contains(b, []byte(secret)) {
			t.Errorf("the secret is in %s", seg)
		}
	}
	if b, _ := e.Brief("l1"); b.Checkpoint != "rotated [redacted:anthropic_key]" {
		t.Errorf("checkpoint %q", b.Checkpoint)
	}
	ro := NewLocal(e, &LocalOptions{Index: ix})
	if _, err := ro.Note(exchange.Note{Op: "goal", Session: "l1", Text: "x", Source: "run"}); err == nil {
		t.Error("a read-only memory took a note")
	}
}

// TestSyncReadsChangedStates: after the first sync, a sync reads only
// the memory states of the sessions the engine logged as changed, and
// leaves the index as a full sync would (a full one then finds nothing
// to do); a rebuild makes the next sync a full one.
func TestSyncReadsChangedStates(t *testing.T) {
	dir := t.TempDir()
	m, e, _, ix := openLocal(t, dir)
	note := func(session, task, text string) {
		t.Helper()
		if _, err := m.Note(exchange.Note{Op: "outcome", Session: session, TaskID: task, Status: "success", Text: text, Source: "run"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"s1", "s2", "s3"} {
		note(s, "t1", "Wrote the cache of "+s+".")
	}
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	if ids, _, all := e.MemoryChanges(m.memSeq); all || len(ids) != 0 {
		t.Fatalf("after a sync: changes %v, all %v; want none", ids, all)
	}
	seq := m.memSeq
	note("s2", "t2", "Rotated the pebble keys.")
	ids, _, all := e.MemoryChanges(seq)
	if all || len(ids) != 1 {
		t.Fatalf("after a note to s2: changes %v, all %v; want s2's session alone", ids, all)
	}
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	cards, err := m.Search(SearchRequest{Text: "rotated pebble keys"})
	if err != nil || len(cards) != 1 {
		t.Fatalf("search after an incremental sync: %+v, %v", cards, err)
	}
	st, err := ix.Sync(e)
	if err != nil || st.Applied != 0 || st.Removed != 0 || st.Unchanged != 3 {
		t.Errorf("a full sync after the incremental one: %+v, %v; want 3 unchanged, nothing else", st, err)
	}
	if _, err := e.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, _, all := e.MemoryChanges(m.memSeq); !all {
		t.Error("after a rebuild the next sync is not a full one")
	}
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	if st, err := ix.Sync(e); err != nil || st.Applied != 0 || st.Removed != 0 {
		t.Errorf("a full sync after the rebuild's: %+v, %v", st, err)
	}
}
