package metric

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestHistogramBuckets(t *testing.T) {
	v := NewVec("test_seconds", "A test.", []float64{0.001, 0.0001, 0.01}, "op")
	h := v.With("search")
	if v.With("search") != h {
		t.Fatal("With returned a second histogram for the same labels")
	}
	h.Observe(50 * time.Microsecond)  // le 0.0001
	h.Observe(100 * time.Microsecond) // le 0.0001 (upper bound inclusive)
	h.Observe(101 * time.Microsecond) // le 0.001
	h.ObserveN(5*time.Millisecond, 3) // le 0.01
	h.Observe(2 * time.Second)        // +Inf only
	v.With("get").Observe(time.Millisecond)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(v)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			line := fmt.Sprintf("%s{op=%s}", mf.GetName(), m.GetLabel()[0].GetValue())
			for _, b := range m.GetHistogram().GetBucket() {
				line += fmt.Sprintf(" le%g:%d", b.GetUpperBound(), b.GetCumulativeCount())
			}
			line += fmt.Sprintf(" sum:%.6f count:%d", m.GetHistogram().GetSampleSum(), m.GetHistogram().GetSampleCount())
			got = append(got, line)
		}
	}
	want := []string{
		"test_seconds{op=get} le0.0001:0 le0.001:1 le0.01:1 sum:0.001000 count:1",
		"test_seconds{op=search} le0.0001:2 le0.001:3 le0.01:6 sum:2.015251 count:7",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("gathered\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := h.Count(); got != 7 {
		t.Fatalf("Count = %d, want 7", got)
	}
}

func TestHistogramObserveAllocs(t *testing.T) {
	h := NewVec("alloc_seconds", "A test.", []float64{.0001, .001, .01, .1, 1}).With()
	d := 3 * time.Millisecond
	if n := testing.AllocsPerRun(1000, func() {
		h.Observe(d)
		h.ObserveN(d, 4)
	}); n != 0 {
		t.Fatalf("Observe allocates %v times", n)
	}
}

func TestWithWrongLabels(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("With with a missing label value did not panic")
		}
	}()
	NewVec("x_seconds", "A test.", []float64{1}, "a", "b").With("a")
}

func TestSnapshotQuantile(t *testing.T) {
	h := NewVec("q_seconds", "A test.", []float64{0.001, 0.01, 0.1}).With()
	empty := h.Snapshot()
	if !math.IsNaN(empty.Quantile(0.5)) || empty.Count() != 0 || empty.Mean() != 0 {
		t.Fatalf("empty: p50 %v, count %d, mean %v; want NaN, 0, 0", empty.Quantile(0.5), empty.Count(), empty.Mean())
	}
	h.ObserveN(500*time.Microsecond, 2) // le 0.001
	h.ObserveN(5*time.Millisecond, 6)   // le 0.01
	h.ObserveN(50*time.Millisecond, 2)  // le 0.1
	s := h.Snapshot()
	if got, want := s.Counts, []uint64{2, 6, 2, 0}; !slices.Equal(got, want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	if got, want := s.Mean(), (2*500*time.Microsecond+6*5*time.Millisecond+2*50*time.Millisecond)/10; got != want {
		t.Errorf("mean %v, want %v", got, want)
	}
	for _, tt := range []struct {
		q, want float64
	}{
		{0, 0},                    // the first bucket's bottom
		{0.1, 0.0005},             // rank 1 of 2 in (0, 0.001]
		{0.2, 0.001},              // rank 2: the first bucket's top
		{0.5, 0.001 + 0.009*3/6},  // rank 5: 3 of 6 in (0.001, 0.01]
		{0.99, 0.01 + 0.09*1.9/2}, // rank 9.9: 1.9 of 2 in (0.01, 0.1]
		{1, 0.1},                  // the last observation's bucket top
		{1.5, math.NaN()},         // out of range
		{math.NaN(), math.NaN()},  // no quantile at all
	} {
		got := s.Quantile(tt.q)
		if math.IsNaN(tt.want) != math.IsNaN(got) || !math.IsNaN(got) && math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Quantile(%v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	h.Observe(2 * time.Second) // above the last bound
	if got := h.Snapshot().Quantile(0.99); !math.IsInf(got, 1) {
		t.Errorf("p99 with one of 11 above the last bound = %v, want +Inf", got)
	}
}
