package api

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/internal/claudelog"
)

// TestRetainMemory: memory retention forgets the memory of sessions last
// active before the age, by forget corrections in the WAL (a rebuild
// keeps them forgotten); pinned sessions and those of a pinned artifact
// stay; a dry run lists them and writes nothing; a negative age is a bad
// request.
func TestRetainMemory(t *testing.T) {
	dir := t.TempDir()
	m, e, log, _ := openLocal(t, dir)
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for i, age := range []time.Duration{400, 300, 200, 10} {
		l := claudelog.New("77777777-0000-4000-8000-00000000000" + string(rune('1'+i)))
		l.T = now.Add(-age * 24 * time.Hour)
		l.User("Use goose for the migrations of service " + string(rune('a'+i)) + ".")
		l.Reply(claudelog.Text("Done."))
		path := filepath.Join(dir, l.Session+".jsonl")
		if err := os.WriteFile(path, l.Data(), 0o600); err != nil {
			t.Fatal(err)
		}
		fi, err := engine.ReadImport("claude", path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := engine.AppendImport(log, fi.Records); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Correct(exchange.Correction{Op: "pin", ID: "claude:77777777-0000-4000-8000-000000000002"}); err != nil {
		t.Fatal(err)
	}
	req := RetainRequest{Retention: engine.Retention{MemoryAge: 250 * 24 * time.Hour}, Now: now, DryRun: true}
	want := []string{"claude:77777777-0000-4000-8000-000000000001"} // 400 days; 300 is pinned; 200 and 10 are young
	dry, err := m.Retain(req)
	if err != nil || !slices.Equal(dry.Forgotten, want) || !dry.MemoryBefore.Equal(now.Add(-250*24*time.Hour)) {
		t.Fatalf("dry run: %+v, %v", dry, err)
	}
	cs, _ := e.Corrections()
	if len(cs) != 1 {
		t.Fatalf("a dry run wrote corrections: %+v", cs)
	}
	req.DryRun = false
	got, err := m.Retain(req)
	if err != nil || !slices.Equal(got.Forgotten, want) {
		t.Fatalf("Retain: %+v, %v", got, err)
	}
	for _, id := range []string{"claude:77777777-0000-4000-8000-000000000001", "claude:77777777-0000-4000-8000-000000000003"} {
		cards, err := m.Search(SearchRequest{Text: "goose migrations", Session: id, K: 20})
		if err != nil {
			t.Fatal(err)
		}
		mine := 0
		for _, c := range cards {
			if c.Session == id {
				mine++
			}
		}
		if forgotten := id == want[0]; forgotten != (mine == 0) {
			t.Errorf("%s: %d cards in search, forgotten %v", id, mine, forgotten)
		}
	}
	if again, err := m.Retain(req); err != nil || len(again.Forgotten) != 0 {
		t.Errorf("a second run forgets again: %+v, %v", again, err)
	}
	if _, err := m.Retain(RetainRequest{Retention: engine.Retention{MemoryAge: -time.Hour}}); err == nil {
		t.Error("a negative age is accepted")
	}
}
