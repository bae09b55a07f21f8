package api

import (
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
)

// TestUnforgetOutlivesRetention: mem unforget brings back the memory
// retention forgot, and later runs leave it.
func TestUnforgetOutlivesRetention(t *testing.T) {
	dir := t.TempDir()
	m, e, _, _ := openLocal(t, dir)
	if _, err := m.Note(exchange.Note{Op: "outcome", Session: "l1", TaskID: "t1", Status: "success", Text: "Wrote the cache.", Source: "run"}); err != nil {
		t.Fatal(err)
	}
	if ss, _ := e.Sessions(engine.SessionFilter{}); len(ss) != 1 {
		t.Fatalf("%d sessions", len(ss))
	}
	later := time.Now().Add(48 * time.Hour)
	r := engine.Retention{MemoryAge: time.Hour}
	res, err := m.Retain(RetainRequest{Retention: r, Now: later})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Forgotten) != 1 {
		t.Fatalf("first run forgot %v, want l1", res.Forgotten)
	}
	if _, err := m.Correct(exchange.Correction{Op: "unforget", ID: res.Forgotten[0]}); err != nil {
		t.Fatal(err)
	}
	res, err = m.Retain(RetainRequest{Retention: r, Now: later.Add(10 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Forgotten) > 0 {
		t.Fatalf("the run after mem unforget forgot %v again", res.Forgotten)
	}
}
