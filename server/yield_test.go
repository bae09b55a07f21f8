package server

import (
	"context"
	"testing"
	"time"
)

// TestYieldNeverStarves: derivation pauses while the proxy serves
// exchanges, but after a pause it is owed a run, so under constant load
// it still makes progress.
func TestYieldNeverStarves(t *testing.T) {
	pe := &proxyEngine{}
	pe.yield(context.Background()) // no proxy yet: returns at once
	pe.setBusy(func() int64 { return 1 })
	pe.yield(context.Background())
	if !pe.runUntil.After(time.Now().Add(-time.Hour)) || pe.runUntil.IsZero() {
		t.Fatal("a pause did not earn derivation a run")
	}
	owed := pe.runUntil
	pe.yield(context.Background())
	if pe.runUntil != owed {
		t.Error("derivation paused again before its run was over")
	}
	pe.setBusy(func() int64 { return 0 })
	pe.runUntil = time.Time{}
	pe.yield(context.Background())
	if !pe.runUntil.IsZero() {
		t.Error("derivation paused while the proxy was idle")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	pe.setBusy(func() int64 { return 1 })
	pe.yield(ctx) // a cancelled context ends the pause
}
