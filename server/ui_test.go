package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api/webui"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/wal"
)

// TestUIDownChecks: until the engine is open (and for the proxy's whole
// life when derivation is off or paused, or the UI's token could not be
// read), the web UI's paths answer 503 with why, but only after the UI's
// own checks, with its headers: a DNS-rebinding page must not read the
// proxy's status (file paths, process ids).
func TestUIDownChecks(t *testing.T) {
	pe := &proxyEngine{}
	pe.setStatus("paused: open /home/alice/.bbengine/db: held by pid 4242 (recording goes on; retrying every 5s)")
	h := withUI(http.NotFoundHandler(), pe.serveUI)
	req := httptest.NewRequest("GET", "http://rebound.attacker.example:8080/_bb/ui/", nil)
	req.Header.Set("Origin", "http://rebound.attacker.example:8080")
	req.RemoteAddr = "127.0.0.1:5555"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusMisdirectedRequest {
		t.Errorf("a request for host rebound.attacker.example: %d, want 421:\n%s", rec.Code, rec.Body)
	}
	if strings.Contains(rec.Body.String(), "/home/alice") {
		t.Errorf("a rebound page reads derivation's status: %q", rec.Body)
	}
	if rec.Header().Get("Content-Security-Policy") == "" || rec.Header().Get("X-Content-Type-Options") == "" {
		t.Errorf("the 503 lacks the UI's security headers: %v", rec.Header())
	}
	// From this machine's own page: 503, and why.
	req = httptest.NewRequest("GET", "http://127.0.0.1:8080/_bb/ui/", nil)
	req.RemoteAddr = "127.0.0.1:5555"
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "no token") ||
		rec.Header().Get("Content-Security-Policy") == "" {
		t.Errorf("the UI's own request while it is down: %d %q %v", rec.Code, rec.Body, rec.Header())
	}
}

// TestUIHealth runs the proxy as `bbengine proxy` does, sends exchanges
// through it to a fake upstream, and reads the web UI's health page
// signed in: its latency histograms count every exchange, its WAL size
// is the one /_bb/metrics reports, and derivation is ok and caught up.
func TestUIHealth(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Done."}],"stop_reason":"end_turn","usage":{"input_tokens":12,"output_tokens":3}}`)
	}))
	defer up.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var logs strings.Builder
	var mu sync.Mutex
	logw := writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(b) })
	ready := make(chan string, 1)
	done := make(chan error, 1)
	cfg := Config{Dir: dir, Listen: "127.0.0.1:0", Sync: wal.SyncInterval, Shutdown: 5 * time.Second,
		LagEvery: 10 * time.Millisecond, SizeEvery: 50 * time.Millisecond}
	cfg.Proxy.Upstreams = map[string]string{"anthropic": up.URL}
	go func() { done <- Run(ctx, io.Discard, logw, cfg, ready) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("proxy: %v\n%s", err, logs.String())
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			mu.Lock()
			t.Errorf("proxy: %v\n%s", err, logs.String())
			mu.Unlock()
		}
	}()
	const n = 3
	for i := range n {
		req, _ := http.NewRequest("POST", "http://"+addr+"/v1/messages",
			strings.NewReader(`{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[{"role":"user","content":"ping `+strconv.Itoa(i)+`"}]}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Bb-Session-Id", "health-1")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("exchange %d: %s", i, resp.Status)
		}
	}

	// Sign in as `bbengine ui` sends the browser: a ticket of the token
	// the proxy keeps in the directory, swapped for a cookie.
	b, err := os.ReadFile(filepath.Join(dir, UITokenFile))
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	page := func() string {
		t.Helper()
		resp, err := c.Get("http://" + addr + webui.Prefix + "health")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return ""
		}
		return string(b)
	}
	var body string
	// The UI is up once the engine is open; a ticket signs in once.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := c.Get("http://" + addr + webui.Prefix + "health?token=" + webui.Ticket(strings.TrimSpace(string(b)), time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the UI never signed in: %s", resp.Status)
		}
	}
	field := func(body, re string) string {
		m := regexp.MustCompile(re).FindStringSubmatch(body)
		if m == nil {
			return ""
		}
		return m[1]
	}
	// Derivation catches up with the exchanges and the lag is measured
	// again every 10 ms.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		body = page()
		if strings.Contains(body, `<dd id="derive">ok</dd>`) && strings.Contains(body, `<dd id="lag">0 bytes behind the WAL: caught up</dd>`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("derivation never showed ok and caught up:\n%s", body)
		}
	}
	for _, id := range []string{"first", "total"} {
		if got := field(body, `<span id="`+id+`-count">(\d+)</span>`); got != strconv.Itoa(n) {
			t.Errorf("the %s histogram counts %q exchanges, want %d", id, got, n)
		}
		fig := field(body, `(?s)<figure class="hist" id="`+id+`">(.*?)</figure>`)
		sum := 0
		for _, m := range regexp.MustCompile(`<tr><td>[^<]+</td><td class="n">(\d+)</td>`).FindAllStringSubmatch(fig, -1) {
			k, _ := strconv.Atoi(m[1])
			sum += k
		}
		if bars := strings.Count(fig, `<rect class="bar `+id+`"`); sum != n || bars != len(proxy.AddedBuckets)+1 {
			t.Errorf("the %s histogram: its table sums to %d, want %d; %d bars, want %d", id, sum, n, bars, len(proxy.AddedBuckets)+1)
		}
	}
	var health proxy.Health
	resp, err := http.Get("http://" + addr + "/_bb/health")
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if got, want := field(body, `<dd id="recorded">(\d+)</dd>`), strconv.FormatUint(health.Recorded, 10); got != want || health.Recorded == 0 {
		t.Errorf("the page shows %s frames recorded, /_bb/health %s", got, want)
	}
	if !strings.Contains(body, `<dd id="status">ok</dd>`) || !strings.Contains(body, `<dd id="mode">`+health.Mode+`</dd>`) {
		t.Errorf("the page does not show the proxy ok in mode %s", health.Mode)
	}
	if !strings.Contains(body, `<p id="retention">none set: everything is kept</p>`) {
		t.Error("the page does not say no retention is set")
	}
	// The sizes are measured every 50 ms: compare the page with the
	// metrics that report the same figure before and after it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		before := walSizeMetric(t, addr)
		body = page()
		after := walSizeMetric(t, addr)
		got := field(body, `<dd id="walsize">[^<(]*\((\d+) bytes\)</dd>`)
		if before == after && before > 0 {
			if got != strconv.FormatInt(before, 10) {
				t.Fatalf("the page's WAL size is %q bytes, /_bb/metrics reports %d", got, before)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the WAL's size never held still: %d then %d", before, after)
		}
	}
	if !strings.Contains(body, "measured again every 50ms") || field(body, `<dd id="dirsize">[^<(]*\((\d+) bytes\)</dd>`) == "" {
		t.Errorf("the page lacks the data directory's size or when the sizes are measured:\n%s", body)
	}
}

// walSizeMetric returns bbengine_wal_size_bytes from the proxy's
// /_bb/metrics.
func walSizeMetric(t *testing.T, addr string) int64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/_bb/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "bbengine_wal_size_bytes "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("bbengine_wal_size_bytes %q: %v", v, err)
			}
			return int64(f)
		}
	}
	t.Fatal("/_bb/metrics has no bbengine_wal_size_bytes")
	return 0
}

// writerFunc is an io.Writer.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
