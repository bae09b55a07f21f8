package engine

import (
	"testing"
	"time"
)

// TestOnDerived checks that Options.OnDerived is told of every frame the
// canonicalizer reads, across the commits of a pass split by BatchBytes.
func TestOnDerived(t *testing.T) {
	dir, log := newData(t)
	var c clock
	writeWAL(t, log, &c, 0, toolLoop("s", 4))
	var frames, calls int
	var took time.Duration
	e := open(t, dir, log, &Options{BatchBytes: 1, OnDerived: func(n int, d time.Duration) {
		calls++
		frames += n
		took += d
	}})
	p := catchUp(t, e)
	if p.Frames == 0 || frames != p.Frames {
		t.Fatalf("OnDerived told of %d frames, the pass read %d", frames, p.Frames)
	}
	if calls < 2 {
		t.Errorf("%d calls for a pass committed frame by frame (BatchBytes 1)", calls)
	}
	if took <= 0 {
		t.Errorf("OnDerived took %v in all", took)
	}
	// A pass with nothing new derives nothing and says nothing.
	before := calls
	catchUp(t, e)
	if calls != before {
		t.Errorf("an empty pass called OnDerived %d times", calls-before)
	}
}
