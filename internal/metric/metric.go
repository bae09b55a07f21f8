package metric

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Histogram counts durations into fixed buckets.
type Histogram struct {
	v      *Vec
	labels []string
	// counts[i] counts observations in (bounds[i-1], bounds[i]];
	// counts[len(bounds)] those above the last bound.
	counts []atomic.Uint64
	sum    atomic.Int64 // nanoseconds
}

// Observe counts one observation of d. It allocates nothing.
func (h *Histogram) Observe(d time.Duration) { h.ObserveN(d, 1) }

// ObserveN counts n observations of d each: the frames of one batch,
// when only the batch was timed. It allocates nothing.
func (h *Histogram) ObserveN(d time.Duration, n uint64) {
	if n == 0 {
		return
	}
	b := h.v.bounds
	i := 0
	for i < len(b) && int64(d) > b[i] {
		i++
	}
	h.counts[i].Add(n)
	h.sum.Add(int64(d) * int64(n))
}

// Count returns the number of observations so far.
func (h *Histogram) Count() uint64 {
	var n uint64
	for i := range h.counts {
		n += h.counts[i].Load()
	}
	return n
}

// Sum returns the sum of the observations so far.
func (h *Histogram) Sum() time.Duration { return time.Duration(h.sum.Load()) }

// Vec is a family of Histograms with the same name, help, buckets and
// label names. It is a prometheus.Collector.
type Vec struct {
	desc   *prometheus.Desc
	upper  []float64 // bucket upper bounds in seconds, ascending
	bounds []int64   // the same in nanoseconds
	nlabel int
	mu     sync.Mutex
	hs     []*Histogram
}

// NewVec returns a family of duration histograms named name, with
// buckets the upper bounds in seconds (sorted here) and the given label
// names.
func NewVec(name, help string, buckets []float64, labels ...string) *Vec {
	up := slices.Clone(buckets)
	slices.Sort(up)
	up = slices.Compact(up)
	v := &Vec{desc: prometheus.NewDesc(name, help, labels, nil), upper: up, nlabel: len(labels)}
	for _, s := range up {
		v.bounds = append(v.bounds, int64(s*float64(time.Second)))
	}
	return v
}

// With returns the histogram of the given label values, creating it on
// first use. Call it when setting up, not on a hot path: it allocates.
// It panics when the number of values is not the number of label names.
func (v *Vec) With(values ...string) *Histogram {
	if len(values) != v.nlabel {
		panic(fmt.Sprintf("metric: %d label values for %d labels", len(values), v.nlabel))
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, h := range v.hs {
		if slices.Equal(h.labels, values) {
			return h
		}
	}
	h := &Histogram{v: v, labels: slices.Clone(values), counts: make([]atomic.Uint64, len(v.bounds)+1)}
	v.hs = append(v.hs, h)
	return h
}

// Describe implements prometheus.Collector.
func (v *Vec) Describe(ch chan<- *prometheus.Desc) { ch <- v.desc }

// Collect implements prometheus.Collector: one constant histogram per
// label values, with cumulative bucket counts.
func (v *Vec) Collect(ch chan<- prometheus.Metric) {
	v.mu.Lock()
	hs := slices.Clone(v.hs)
	v.mu.Unlock()
	for _, h := range hs {
		buckets := make(map[float64]uint64, len(v.upper))
		var n uint64
		for i, up := range v.upper {
			n += h.counts[i].Load()
			buckets[up] = n
		}
		n += h.counts[len(v.upper)].Load()
		ch <- prometheus.MustNewConstHistogram(v.desc, n, h.Sum().Seconds(), buckets, h.labels...)
	}
}

// Snapshot is a histogram's counts at one moment, for a reader that
// draws or summarizes them (the web UI's health page) without going
// through Prometheus. The caller owns its slices.
type Snapshot struct {
	// Upper are the bucket upper bounds in seconds, ascending.
	Upper []float64
	// Counts[i] counts the observations in (Upper[i-1], Upper[i]];
	// Counts[len(Upper)] those above the last bound. They are not
	// cumulative.
	Counts []uint64
	// Sum is the sum of the observations.
	Sum time.Duration
}

// Snapshot returns the histogram's counts now. The buckets are read one
// by one while observers may add: a snapshot taken under load may hold
// an observation in one bucket whose sum is not in Sum yet, as a scrape
// may.
func (h *Histogram) Snapshot() Snapshot {
	s := Snapshot{Upper: slices.Clone(h.v.upper), Counts: make([]uint64, len(h.counts))}
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
	}
	s.Sum = h.Sum()
	return s
}

// Count returns the number of observations.
func (s Snapshot) Count() uint64 {
	var n uint64
	for _, c := range s.Counts {
		n += c
	}
	return n
}

// Mean returns the mean observation, 0 when there is none.
func (s Snapshot) Mean() time.Duration {
	n := s.Count()
	if n == 0 {
		return 0
	}
	return s.Sum / time.Duration(n)
}

// Quantile estimates the q-quantile (0 ≤ q ≤ 1) of the observations in
// seconds, as Prometheus's histogram_quantile does: it finds the bucket
// that holds the rank q·count and interpolates linearly inside it (from
// 0 for the first bucket). It returns NaN when there is no observation
// or q is out of range, and +Inf when the rank falls above the last
// bound, where the buckets say nothing of how far.
func (s Snapshot) Quantile(q float64) float64 {
	n := s.Count()
	if n == 0 || !(q >= 0 && q <= 1) || len(s.Counts) != len(s.Upper)+1 {
		return math.NaN()
	}
	rank := q * float64(n)
	var below uint64
	for i, up := range s.Upper {
		c := s.Counts[i]
		if c > 0 && float64(below+c) >= rank {
			lo := 0.0
			if i > 0 {
				lo = s.Upper[i-1]
			}
			return lo + (up-lo)*max(rank-float64(below), 0)/float64(c)
		}
		below += c
	}
	return math.Inf(1)
}
