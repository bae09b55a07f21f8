package proxy

import (
	"testing"
	"time"
)

// TestObserveAdded checks the arithmetic of the added latency: the
// client-facing times minus the upstream's own, and the fallbacks for a
// response without a body.
func TestObserveAdded(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name                 string
		x                    *exch
		end                  time.Duration
		wantFirst, wantTotal time.Duration
	}{
		{"stream", &exch{complete: true, upSend: 1 * ms, upHead: 20 * ms, upFirst: 51 * ms, upEnd: 100 * ms, clientFirst: 52 * ms}, 103 * ms, 2 * ms, 4 * ms},
		{"no body", &exch{complete: true, upSend: 3 * ms, upHead: 13 * ms}, 15 * ms, 5 * ms, 5 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMetrics()
			m.observeAdded(tt.x, tt.end)
			if got := m.addedFirst.Sum(); got != tt.wantFirst || m.addedFirst.Count() != 1 {
				t.Errorf("first byte: sum %v over %d, want %v over 1", got, m.addedFirst.Count(), tt.wantFirst)
			}
			if got := m.addedTotal.Sum(); got != tt.wantTotal || m.addedTotal.Count() != 1 {
				t.Errorf("total: sum %v over %d, want %v over 1", got, m.addedTotal.Count(), tt.wantTotal)
			}
		})
	}
	// Exchanges that did not complete, or never reached the upstream,
	// are not counted.
	m := newMetrics()
	m.observeAdded(&exch{upSend: ms, upHead: 2 * ms, upEnd: 3 * ms}, 4*ms)
	m.observeAdded(&exch{complete: true}, 4*ms)
	if n := m.addedTotal.Count() + m.addedFirst.Count(); n != 0 {
		t.Errorf("%d observations of exchanges that must not count", n)
	}
}

// TestObserveAddedAllocs: timing every exchange allocates nothing.
func TestObserveAddedAllocs(t *testing.T) {
	m := newMetrics()
	x := &exch{complete: true, upSend: time.Millisecond, upHead: 2 * time.Millisecond, upFirst: 3 * time.Millisecond, upEnd: 9 * time.Millisecond, clientFirst: 4 * time.Millisecond}
	if n := testing.AllocsPerRun(1000, func() { m.observeAdded(x, 10*time.Millisecond) }); n != 0 {
		t.Fatalf("observeAdded allocates %v times", n)
	}
}
