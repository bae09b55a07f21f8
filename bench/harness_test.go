package bench

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/proxy"
)

// TestPathsIdentical checks the harness, not the proxy's speed: for each
// request shape the three paths return the same bytes, those are the fake
// upstream's (50 events for a stream), and the bbengine path really
// recorded them. Otherwise a benchmark could be timing an error page.
func TestPathsIdentical(t *testing.T) {
	rg, err := NewRig(Config{Dir: t.TempDir(), ExtraModes: []proxy.Mode{proxy.Privacy, proxy.Passthrough}})
	if err != nil {
		t.Fatal(err)
	}
	defer rg.Close()
	if len(rg.Paths()) != 5 {
		t.Fatalf("paths %v", rg.Paths())
	}

	want := rg.Want(Stream)
	if n := bytes.Count(want, []byte("\n\n")); n != 50 {
		t.Fatalf("stream has %d events, want 50", n)
	}
	if n := bytes.Count(want, []byte("event: ")); n != 50 || bytes.Count(want, []byte("\ndata: {")) != 50 {
		t.Fatalf("stream does not pair event:/data: lines 50 times:\n%s", want)
	}

	for _, c := range Cases {
		got := map[Path][]byte{}
		for _, p := range rg.Paths() {
			hits := rg.UpstreamHits()
			s, err := rg.Do(p, c)
			for try := 1; err != nil && p == ReverseProxy && try <= 3; try++ {
				// The bare httputil.ReverseProxy, forwarding the request
				// body as it streams, now and then cuts a streamed response
				// (golang/go#40747; bbengine reads the body first), more
				// often on a loaded machine. It is the baseline, not what
				// is tested: up to three more tries.
				t.Logf("%s %s: %v; trying again (%d of 3)", p, c, err, try)
				hits = rg.UpstreamHits()
				s, err = rg.Do(p, c)
			}
			if err != nil {
				t.Fatal(err)
			}
			if rg.UpstreamHits() != hits+1 {
				t.Errorf("%s %s: the upstream served %d requests, want 1", p, c, rg.UpstreamHits()-hits)
			}
			if s.TTFB <= 0 || s.Total < s.TTFB {
				t.Errorf("%s %s: sample %+v", p, c, s)
			}
			got[p] = bytes.Clone(rg.Body())
		}
		for _, p := range rg.Paths()[1:] {
			if !bytes.Equal(got[p], got[Direct]) {
				t.Errorf("%s %s: %d bytes differ from direct's %d", p, c, len(got[p]), len(got[Direct]))
			}
		}
		if !bytes.Equal(got[Direct], rg.Want(c)) {
			t.Errorf("%s: direct body differs from the upstream's", c)
		}
	}

	recs, err := rg.Recorded(true)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(Cases) {
		t.Fatalf("WAL holds %d exchanges, want %d", len(recs), len(Cases))
	}
	for i, c := range Cases {
		x := recs[i]
		if x.Case != c || x.Stream != c.IsStream() || !x.Ended || !x.End.Complete || x.End.Status != 200 {
			t.Errorf("%s: recorded %s %+v", c, x.Case, x.End)
		}
		if c == Stream && x.End.Chunks < 50 {
			t.Errorf("%s: the proxy read the 50 lockstep events in %d chunks; they must not coalesce", c, x.End.Chunks)
		}
		if !bytes.Equal(x.Body, rg.Want(c)) {
			t.Errorf("%s: recorded body differs from what the client got", c)
		}
	}

	// The stopped path must fail loudly; the others keep working.
	if _, err := rg.Do(BBEngine, Stream); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Errorf("bbengine after Recorded: %v", err)
	}
	if _, err := rg.Do(Direct, Stream); err != nil {
		t.Error(err)
	}
}

// TestDoRejectsWrongPath: a response that did not come through the named
// path is an error, not a sample.
func TestDoRejectsWrongPath(t *testing.T) {
	rg, err := NewRig(Config{Dir: t.TempDir(), Events: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer rg.Close()
	rg.urls[ReverseProxy] = rg.urls[BBEngine] // a miswired rig
	if _, err := rg.Do(ReverseProxy, Stream); err == nil {
		t.Fatal("a bbengine response passed for the reverse proxy's")
	}
	rg.urls[Direct] += "/nowhere"
	if _, err := rg.Do(Direct, JSON); err == nil {
		t.Fatal("a 400 passed for a measured response")
	}
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{50, 50}, {99, 99}, {100, 100}, {1, 1}, {0, 1}} {
		if got := Percentile(d, tt.q); got != tt.want {
			t.Errorf("p%v = %v, want %v", tt.q, got, tt.want)
		}
	}
	if got := Percentile(d[:1], 99); got != 1 {
		t.Errorf("p99 of one = %v", got)
	}
}

// TestEnginePath checks the -engine harness: `bbengine proxy` with its
// engine answers every concurrent request with the upstream's bytes
// through itself, and Settle returns once derivation has caught up, so
// the exchanges are then in its sessions.
func TestEnginePath(t *testing.T) {
	rg, err := NewRig(Config{Dir: t.TempDir(), Engine: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rg.Close()
	if !slices.Contains(rg.Paths(), BBEngineFull) {
		t.Fatalf("paths %v lack %s", rg.Paths(), BBEngineFull)
	}
	const clients, n = 4, 5
	for _, c := range []Case{JSON, StreamBurst} {
		hits := rg.UpstreamHits()
		samples, failed, err := rg.DoConcurrent(BBEngineFull, c, clients, n)
		if failed > 0 || len(samples) != clients*n {
			t.Fatalf("%s: %d samples, %d failed; last: %v", c, len(samples), failed, err)
		}
		if got := rg.UpstreamHits() - hits; got != clients*n {
			t.Errorf("%s: the upstream served %d requests, want %d", c, got, clients*n)
		}
	}
	if _, _, err := rg.DoConcurrent(BBEngineFull, Stream, 2, 1); err == nil {
		t.Error("lockstep streams ran concurrently")
	}
	rg.Settle()
	out, err := rg.full.sessions()
	if err != nil {
		t.Fatal(err)
	}
	m, err := rg.EngineMetrics()
	if err != nil {
		t.Fatal(err)
	}
	if got := m[`bbengine_proxy_overhead_seconds_count{stage="total"}`]; got != 2*clients*n {
		t.Errorf("the engine path's metrics count %v exchanges, want %d", got, 2*clients*n)
	}
	// Each request is a session of its own (no session header).
	var sessions []struct{ Requests int }
	if err := json.Unmarshal([]byte(out), &sessions); err != nil {
		t.Fatal(err)
	}
	got := 0
	for _, s := range sessions {
		got += s.Requests
	}
	if got != 2*clients*n {
		t.Errorf("after Settle %d requests are derived, want %d", got, 2*clients*n)
	}
}
