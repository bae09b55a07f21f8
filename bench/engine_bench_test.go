package bench

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/bbengine/bbengine/engine"
)

// BenchmarkCanonicalLag measures, under back-to-back streaming requests
// through the bbengine proxy (50 SSE events each), how long after the
// client read a response's last byte its exchange is derived and
// queryable: the proxy's recorder writes the end frame, the WAL commits
// it, and the canonicalizer (following the WAL in its own goroutine, as in
// bbengine proxy) commits the exchange's events. It reports lag-p50-µs,
// lag-p99-µs, lag/request (the p50 lag as a fraction of the p50 request
// time measured in the same run) and derived-at-eof, the fraction of
// exchanges already derived when the client read the last byte.
func BenchmarkCanonicalLag(b *testing.B) {
	rg, err := NewRig(Config{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer rg.Close()
	e, err := engine.Open(b.TempDir(), &engine.Options{WAL: rg.Log(BBEngine)})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- e.Follow(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()
	for i := 0; i < 50; i++ {
		if _, err := rg.Do(BBEngine, StreamBurst); err != nil {
			b.Fatal(err)
		}
	}
	var lags, totals []time.Duration
	first := 0
	b.ReportAllocs()
	for b.Loop() {
		s, err := rg.Do(BBEngine, StreamBurst)
		if err != nil {
			b.Fatal(err)
		}
		id := rg.LastExchange()
		t0 := time.Now()
		for tries := 0; ; tries++ {
			if _, err := e.Exchange(id); err == nil {
				if tries == 0 {
					first++
				}
				break
			}
			if time.Since(t0) > 10*time.Second {
				b.Fatalf("exchange %d not derived after 10 s", id)
			}
			time.Sleep(20 * time.Microsecond)
		}
		lags = append(lags, time.Since(t0))
		totals = append(totals, s.Total)
	}
	slices.Sort(lags)
	slices.Sort(totals)
	p50 := Percentile(lags, 50)
	b.ReportMetric(Micros(p50), "lag-p50-µs")
	b.ReportMetric(Micros(Percentile(lags, 99)), "lag-p99-µs")
	b.ReportMetric(float64(p50)/float64(Percentile(totals, 50)), "lag/request")
	b.ReportMetric(float64(first)/float64(len(lags)), "derived-at-eof")
}
