package server

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/internal/bytesize"
	"github.com/bbengine/bbengine/proxy"
)

// retentionEvery is how often the proxy runs the user's retention.
const retentionEvery = 10 * time.Minute

// retainer runs the retention the user set (Config.Retention) beside the
// proxy: once the engine is open and then every Config.RetentionEvery,
// on the engine's low-priority goroutine side, after waiting for the
// proxy to be idle. It never runs on the request path. Its state shows
// on /_bb/health and its counts on /_bb/metrics.
type retainer struct {
	r     engine.Retention
	every time.Duration
	// status is the /_bb/health line.
	status atomic.Pointer[string]
	// Counters since the proxy started, and the last run (unix s).
	runs, failures, segments, bytes, forgotten atomic.Uint64
	waiting                                    atomic.Int64
	last                                       atomic.Int64
}

func newRetainer(r engine.Retention, every time.Duration) *retainer {
	rt := &retainer{r: r, every: every}
	if rt.every <= 0 {
		rt.every = retentionEvery
	}
	s := "keeps " + describeRetention(r) + "; first run once the engine is open"
	rt.status.Store(&s)
	return rt
}

// describeRetention says what r keeps, in words.
func describeRetention(r engine.Retention) string {
	var parts []string
	if r.RawAge > 0 {
		parts = append(parts, "raw frames for "+days(r.RawAge))
	}
	if r.RawBytes > 0 {
		parts = append(parts, "at most "+bytesize.Format(r.RawBytes)+" of WAL")
	}
	if r.MemoryAge > 0 {
		parts = append(parts, "memory for "+days(r.MemoryAge))
	}
	if len(parts) == 0 {
		return "everything"
	}
	return strings.Join(parts, ", ")
}

func days(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		n := int(d / (24 * time.Hour))
		if n == 1 {
			return "1 day"
		}
		return fmt.Sprintf("%d days", n)
	}
	return d.String()
}

// Status is the /_bb/health line.
func (rt *retainer) Status() string { return *rt.status.Load() }

// register adds the retention series to the proxy's /_bb/metrics.
func (rt *retainer) register(p *proxy.Proxy) error {
	counter := func(name, help string, v *atomic.Uint64) error {
		return p.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v.Load()) }))
	}
	var err error
	for _, f := range []func() error{
		func() error {
			return counter("bbengine_retention_runs_total", "Runs of the retention the user set (retention: in the config, --retention-*), since the proxy started.", &rt.runs)
		},
		func() error {
			return counter("bbengine_retention_failures_total", "Retention runs that failed (the error is on /_bb/health and the proxy's log).", &rt.failures)
		},
		func() error {
			return counter("bbengine_retention_removed_segments_total", "WAL segments retention removed, after a snapshot of what was derived from them.", &rt.segments)
		},
		func() error {
			return counter("bbengine_retention_removed_bytes_total", "Bytes of WAL segments retention removed.", &rt.bytes)
		},
		func() error {
			return counter("bbengine_retention_forgotten_sessions_total", "Sessions whose memory retention forgot for its age (retention.memory_days).", &rt.forgotten)
		},
		func() error {
			return p.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bbengine_retention_waiting_segments",
				Help: "WAL segments the retention policy selects that derivation has not passed yet, as of the last run: they go once it has."},
				func() float64 { return float64(rt.waiting.Load()) }))
		},
		func() error {
			return p.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bbengine_retention_last_run_timestamp_seconds",
				Help: "When retention last ran (unix seconds); 0 before its first run."},
				func() float64 { return float64(rt.last.Load()) }))
		},
	} {
		if e := f(); e != nil && err == nil {
			err = e
		}
	}
	return err
}

// retain runs retention through mem until ctx is done.
func (pe *proxyEngine) retain(ctx context.Context, mem *api.Local, rt *retainer, logf func(string, ...any)) {
	defer pe.syncers.Done()
	lowPriority()
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !pe.waitIdle(ctx, 5*time.Second) {
			return
		}
		pe.mu.Lock()
		stopped := pe.wedged
		pe.mu.Unlock()
		if stopped || pe.filled.Load() {
			// The engine's store cannot be used this run (see run and
			// hold): the next start retains.
			s := "keeps " + describeRetention(rt.r) + "; stopped with derivation until the proxy restarts"
			rt.status.Store(&s)
			return
		}
		if err := recovered("retention", func() error { rt.run(mem, time.Now(), logf); return nil }); err != nil {
			rt.failures.Add(1)
			s := "keeps " + describeRetention(rt.r) + "; stopped: " + err.Error()
			rt.status.Store(&s)
			logf("retention stopped until the proxy restarts: %v", err)
			return
		}
		t.Reset(rt.every)
	}
}

// run runs retention once at now and records what it did.
func (rt *retainer) run(mem *api.Local, now time.Time, logf func(string, ...any)) {
	res, err := mem.Retain(api.RetainRequest{Retention: rt.r, Now: now})
	rt.runs.Add(1)
	rt.last.Store(now.Unix())
	var s string
	if res != nil {
		rt.segments.Add(uint64(len(res.Raw.Segments)))
		rt.bytes.Add(uint64(res.Raw.Freed))
		rt.forgotten.Add(uint64(len(res.Forgotten)))
		rt.waiting.Store(int64(len(res.Raw.Waiting)))
		s = fmt.Sprintf("keeps %s; last run %s removed %d WAL segments (%s) and forgot %d sessions' memory",
			describeRetention(rt.r), now.UTC().Format(time.RFC3339), len(res.Raw.Segments), bytesize.Format(res.Raw.Freed), len(res.Forgotten))
		if n := len(res.Raw.Waiting); n > 0 {
			s += fmt.Sprintf("; %d more segments go once derivation has passed them", n)
		}
		if len(res.Raw.Segments) > 0 || len(res.Forgotten) > 0 {
			logf("retention: removed %d WAL segments (%s), forgot %d sessions' memory", len(res.Raw.Segments), bytesize.Format(res.Raw.Freed), len(res.Forgotten))
		}
	}
	if err != nil {
		rt.failures.Add(1)
		s = fmt.Sprintf("keeps %s; last run %s failed: %v (retried in %s)", describeRetention(rt.r), now.UTC().Format(time.RFC3339), err, rt.every)
		logf("retention failed: %v (retried in %s)", err, rt.every)
	}
	rt.status.Store(&s)
}
