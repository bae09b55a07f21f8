package api

import (
	"errors"
	"testing"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
)

// TestCorrectTarget: a correction that names its target resolves its id
// as that kind alone; one that names none takes an artifact, else a
// session, as `bbengine mem forget ID` does.
func TestCorrectTarget(t *testing.T) {
	m, _, _, _ := openLocal(t, t.TempDir())
	n, err := m.Note(exchange.Note{Op: "outcome", Session: "s1", TaskID: "t1", Status: "success", Text: "Wrote the cache.", Source: "run"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		target, id string
		want       string // the target corrected, or "" for not found
	}{
		{"artifact", "s1", ""},
		{"session", n.Artifact, ""},
		{"session", "s1", "session"},
		{"artifact", n.Artifact, "artifact"},
		{"", "s1", "session"},
		{"", n.Artifact, "artifact"},
	} {
		out, err := m.Correct(exchange.Correction{Op: "pin", Target: tc.target, ID: tc.id})
		switch {
		case tc.want == "" && !errors.Is(err, engine.ErrNotFound):
			t.Errorf("target %q, id %s: %+v, %v; want not found", tc.target, tc.id, out, err)
		case tc.want != "" && (err != nil || out.Correction.Target != tc.want):
			t.Errorf("target %q, id %s: %+v, %v; want a %s corrected", tc.target, tc.id, out, err, tc.want)
		}
	}
	if _, err := m.Correct(exchange.Correction{Op: "pin", Target: "project", ID: "s1"}); !errors.Is(err, ErrBadQuery) {
		t.Errorf("target project: %v, want a bad query", err)
	}
}
