package cli

import (
	"bufio"
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/server"
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
		done <- server.Run(ctx, &stdout, &stderr, server.Config{Dir: dir, Listen: "127.0.0.1:0", Sync: wal.SyncInterval,
			Proxy: proxy.Options{Upstreams: map[string]string{"anthropic": up.URL}}, Shutdown: 5 * time.Second,
			LagEvery: 10 * time.Millisecond, SizeEvery: 10 * time.Millisecond}, ready)
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
