package api

import (
	"bytes"
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
