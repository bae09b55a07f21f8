package engine

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestCallUsages checks that the usage of each proxied call comes back
// with its model, in order, and adds up to the session's own total.
func TestCallUsages(t *testing.T) {
	dir, log := newData(t)
	var c clock
	interleaveWAL(t, log, &c, 0, toolLoop("s1", 3), toolLoop("s2", 2))
	e := open(t, dir, log, nil)
	catchUp(t, e)
	got := map[string][]CallUsage{}
	err := e.CallUsages(context.Background(), SessionFilter{}, func(s *Session, calls []CallUsage) error {
		got[s.ID] = append([]CallUsage(nil), calls...)
		var sum Usage
		for i, cu := range calls {
			sum.Add(cu.Usage)
			if cu.Model != "claude-sonnet-4-5" || cu.Time == 0 || (i > 0 && (cu.Time < calls[i-1].Time || cu.Seq <= calls[i-1].Seq)) {
				t.Errorf("%s call %d: %+v", s.ID, i, cu)
			}
		}
		if sum != s.Usage {
			t.Errorf("%s: calls add up to %+v, the session says %+v", s.ID, sum, s.Usage)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got["s1"]) != 3 || len(got["s2"]) != 2 {
		t.Fatalf("calls: s1 %d, s2 %d, want 3 and 2", len(got["s1"]), len(got["s2"]))
	}
	if u := got["s1"][0].Usage; u.Input != 100+1000 || u.CacheRead != 1000 || u.Output != 20 {
		t.Errorf("s1's first call %+v", u)
	}
	// The filter and the callback's error.
	n := 0
	stop := errors.New("stop")
	err = e.CallUsages(context.Background(), SessionFilter{Agent: "codex"}, func(*Session, []CallUsage) error { n++; return nil })
	if err != nil || n != 0 {
		t.Errorf("agent codex: %d sessions, %v", n, err)
	}
	if err := e.CallUsages(context.Background(), SessionFilter{}, func(*Session, []CallUsage) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("the callback's error: %v", err)
	}

	// SessionCallUsages reads the sessions given alone, with the same
	// calls as CallUsages.
	s2, err := e.Session("s2")
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	err = e.SessionCallUsages(context.Background(), []Session{s2}, func(s *Session, calls []CallUsage) error {
		seen = append(seen, s.ID)
		if !slices.Equal(calls, got[s.ID]) {
			t.Errorf("%s: %+v, CallUsages gave %+v", s.ID, calls, got[s.ID])
		}
		return nil
	})
	if err != nil || !slices.Equal(seen, []string{"s2"}) {
		t.Errorf("SessionCallUsages of s2: sessions %v, %v", seen, err)
	}
}
