package cli

import (
	"bufio"
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/wal"
)

// scrape reads /_bb/metrics into series → value ("name{labels}" as
// exposed).
func scrape(t *testing.T, addr string) map[string]float64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/_bb/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// TestProxyMetrics runs the proxy as the command does and checks that
// every series the spec names is on /_bb/metrics and moves: the latency
// the proxy adds, derivation time per frame and lag, retrieval latency,
// and the sizes of the WAL and the data directory.
func TestProxyMetrics(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(sseAnswer))
	defer up.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runProxy(ctx, &stdout, &stderr, proxyConfig{dir: dir, listen: "127.0.0.1:0", sync: wal.SyncInterval,
			opts: proxy.Options{Upstreams: map[string]string{"anthropic": up.URL}}, shutdown: 5 * time.Second,
			lagEvery: 10 * time.Millisecond, sizeEvery: 10 * time.Millisecond}, ready)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("proxy: %v\n%s", err, stderr.String())
		}
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("proxy stopped: %v\n%s", err, stderr.String())
	}
	const (
		first    = `bbengine_proxy_overhead_seconds_count{stage="first_byte"}`
		total    = `bbengine_proxy_overhead_seconds_count{stage="total"}`
		frames   = `bbengine_derive_frame_seconds_count`
		search   = `bbengine_retrieval_seconds_count{op="search"}`
		get      = `bbengine_retrieval_seconds_count{op="get"}`
		lagBytes = `bbengine_derive_lag_bytes`
		lagSecs  = `bbengine_derive_lag_seconds`
		walSize  = `bbengine_wal_size_bytes`
		dirSize  = `bbengine_data_dir_size_bytes`
		indexLag = `bbengine_index_lag_seconds`
		syncs    = `bbengine_index_sync_seconds_count`
	)
	series := []string{first, total, frames, search, get, lagBytes, lagSecs, walSize, dirSize, indexLag, syncs}
	// The gauges are known once the engine is open and the refresher ran.
	var before map[string]float64
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		before = scrape(t, addr)
		if !math.IsNaN(before[lagBytes]) && !math.IsNaN(before[walSize]) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lag and sizes still unknown: %v", before)
		}
	}
	for _, s := range series {
		if _, ok := before[s]; !ok {
			t.Errorf("/_bb/metrics lacks %s", s)
		}
	}
	const n = 3
	for i := range n {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/messages",
			strings.NewReader(`{"model":"claude-sonnet-4","stream":true,"messages":[{"role":"user","content":"ping `+strconv.Itoa(i)+`"}]}`))
		req.Header.Set("X-Bb-Session-Id", "metrics-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		bufio.NewReader(resp.Body).WriteTo(&b)
		resp.Body.Close()
		if !strings.Contains(b.String(), "message_stop") {
			t.Fatalf("stream: %q", b.String())
		}
	}
	// Retrieval through the query endpoint, as bbengine mem and the MCP
	// server ask a running proxy.
	out, errs, code := run(t, "--dir", dir, "mem", "search", "pong", "--json")
	if code != 0 {
		t.Fatalf("mem search: %d %s %s", code, out, errs)
	}
	if _, errs, code := run(t, "--dir", dir, "mem", "get", "no-such-artifact"); code == 0 {
		t.Fatalf("mem get of a missing artifact succeeded: %s", errs)
	}
	var after map[string]float64
	moved := func() bool {
		return after[first] == before[first]+n && after[total] == before[total]+n && after[frames] > before[frames] &&
			after[search] == before[search]+1 && after[get] == before[get]+1 &&
			after[walSize] > before[walSize] && after[dirSize] > before[dirSize] && after[dirSize] >= after[walSize] &&
			after[lagBytes] == 0 && after[lagSecs] == 0 && after[syncs] > before[syncs] && after[indexLag] == 0
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if after = scrape(t, addr); moved() {
			break
		}
		if time.Now().After(deadline) {
			for _, s := range series {
				t.Logf("%s: %v → %v", s, before[s], after[s])
			}
			t.Fatal("the metrics did not move as the requests, derivation and retrieval should move them")
		}
	}
}

// TestDerivationLag checks the lag against a real WAL: bytes to the end
// and the age of the first frame not derived, 0 once derivation is at
// the end.
func TestDerivationLag(t *testing.T) {
	// One frame per segment: derivation that read a segment's last
	// frame stands at the next segment's header.
	log, err := wal.Open(filepath.Join(t.TempDir(), "wal"), &wal.Options{Sync: wal.SyncNone, SegmentSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	t0 := time.Unix(1_700_000_000, 0)
	var offs []uint64
	for i := range 3 {
		off, err := log.Append(wal.Record{Kind: frame.KindRequestBody, Exchange: 1, Time: t0.Add(time.Duration(i) * time.Second).UnixNano(), Payload: []byte(`{"n":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, off)
	}
	if err := log.Sync(); err != nil {
		t.Fatal(err)
	}
	end, _ := log.End()
	now := t0.Add(10 * time.Second)
	for _, tt := range []struct {
		applied   uint64
		wantBytes uint64
		wantAge   float64
	}{
		{offs[0], end - offs[0], 10},
		{offs[2], end - offs[2], 8},
		{offs[1] - frame.HeaderLen - 8, end - offs[1] + frame.HeaderLen + 8, 9}, // at the header of frame 1's segment
		{end, 0, 0},
	} {
		b, age, err := derivationLag(log, tt.applied, now)
		if err != nil || b != tt.wantBytes || age != tt.wantAge {
			t.Errorf("applied %d: lag %d bytes, %vs, %v; want %d bytes, %vs", tt.applied, b, age, err, tt.wantBytes, tt.wantAge)
		}
	}
}

// TestIndexLag checks the index lag's clock: it starts at the first
// memory change the index has not taken, keeps that start through later
// changes, and stops at a sync that began after it, not at one that
// began before.
func TestIndexLag(t *testing.T) {
	pm := newProxyMetrics(t.TempDir(), t.TempDir(), nil)
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	if got := pm.indexLag(at(0)); got != 0 {
		t.Fatalf("lag before any change %v, want 0", got)
	}
	pm.indexBehind(at(1))
	pm.indexBehind(at(2))
	if got := pm.indexLag(at(4)); got != 3 {
		t.Fatalf("lag %v, want 3 (from the first change)", got)
	}
	pm.indexSynced(at(0.5), time.Second) // began before the change
	if got := pm.indexLag(at(4)); got != 3 {
		t.Fatalf("lag after an older sync %v, want 3", got)
	}
	pm.indexSynced(at(3), time.Second)
	if got := pm.indexLag(at(5)); got != 0 {
		t.Fatalf("lag after a sync %v, want 0", got)
	}
	if got := pm.indexSyncs.Count(); got != 2 {
		t.Fatalf("%d syncs timed, want 2", got)
	}
}

// TestMetricsObserveAllocs: timing a retrieval or a commit of derived
// frames allocates nothing.
func TestMetricsObserveAllocs(t *testing.T) {
	pm := newProxyMetrics(t.TempDir(), t.TempDir(), nil)
	var none *retrievalTimings
	start := time.Now()
	if n := testing.AllocsPerRun(1000, func() {
		pm.retrieval.Observe(api.OpSearch, start)
		none.Observe(api.OpGet, start)
		pm.onDerived(7, time.Millisecond)
	}); n != 0 {
		t.Fatalf("observing allocates %v times", n)
	}
	if got := pm.perFrame.Count(); got < 7000 {
		t.Fatalf("%d frames counted", got)
	}
}

// TestWaitIdle checks the index syncer's wait for the proxy: at once when
// no exchange is in progress, until the last ends, no longer than its
// bound, and not at all once stopped.
func TestWaitIdle(t *testing.T) {
	var active atomic.Int64
	pe := &proxyEngine{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if !pe.waitIdle(ctx, time.Hour) {
		t.Fatal("without a busy function: not idle")
	}
	pe.setBusy(active.Load)
	if !pe.waitIdle(ctx, time.Hour) {
		t.Fatal("idle proxy: false")
	}
	active.Store(1)
	go func() {
		time.Sleep(20 * time.Millisecond)
		active.Store(0)
	}()
	if !pe.waitIdle(ctx, time.Hour) || active.Load() != 0 {
		t.Fatal("returned while an exchange was in progress")
	}
	active.Store(1)
	if !pe.waitIdle(ctx, 10*time.Millisecond) {
		t.Fatal("bounded wait: false")
	}
	cancel()
	if pe.waitIdle(ctx, time.Hour) {
		t.Fatal("stopped: true")
	}
}
