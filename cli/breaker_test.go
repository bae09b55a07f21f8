package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/proxy/breaker"
	"github.com/bbengine/bbengine/wal"
)

// loopRequest is an Anthropic request after n identical failed Bash
// calls: an agent stuck in a loop.
func loopRequest(n int) string {
	msgs := []any{map[string]any{"role": "user", "content": "build it"}}
	for i := range n {
		id := fmt.Sprintf("toolu_%d", i)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": "make"}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": "make: *** Error 2", "is_error": true}}})
	}
	b, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4", "max_tokens": 100, "stream": true, "messages": msgs})
	return string(b)
}

// cmdProxy is `bbengine proxy` run through Main in this process.
type cmdProxy struct {
	addr   string
	stderr *syncBuffer
	cancel context.CancelFunc
	done   chan int
}

func startCmdProxy(t *testing.T, global []string, args ...string) *cmdProxy {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &cmdProxy{stderr: &syncBuffer{}, cancel: cancel, done: make(chan int, 1)}
	go func() {
		p.done <- MainContext(ctx, append(append([]string{"bbengine"}, global...), append([]string{"proxy", "--listen", "127.0.0.1:0"}, args...)...), io.Discard, p.stderr)
	}()
	dir := global[slices.Index(global, "--dir")+1]
	for deadline := time.Now().Add(20 * time.Second); ; {
		if r := api.Dial(dir); r != nil && r.Proxy != "" {
			p.addr = r.Proxy
			return p
		}
		select {
		case code := <-p.done:
			t.Fatalf("proxy exited with %d: %s", code, p.stderr)
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("the proxy did not start: %s", p.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *cmdProxy) stop(t *testing.T) {
	t.Helper()
	p.cancel()
	if code := <-p.done; code != 0 {
		t.Fatalf("proxy exited with %d: %s", code, p.stderr)
	}
}

func (p *cmdProxy) post(t *testing.T, session, body string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+p.addr+"/v1/messages", strings.NewReader(body))
	req.Header.Set("X-Bb-Session-Id", session)
	req.Header.Set("Anthropic-Version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func breakerJSON(t *testing.T, dir string, args ...string) breaker.Status {
	t.Helper()
	out, errs, code := run(t, append([]string{"--dir", dir, "breaker", "status", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("breaker status %v: %d %s", args, code, errs)
	}
	var st breaker.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("breaker status %v: %v\n%s", args, err, out)
	}
	return st
}

// TestBreakerCommand: the thresholds of the --config file apply; a
// stuck session is refused; status explains it through the running
// proxy and from the WAL with none; a restart keeps it open; reset and
// trip work with and without a proxy; show has the changes.
func TestBreakerCommand(t *testing.T) {
	var upstream atomic.Int64
	up := fakeAnthropic(t, "ok")
	dir := t.TempDir()
	cfg := writeFile(t, t.TempDir(), "bb.yaml", "proxy:\n  upstream: [anthropic=http://127.0.0.1:1]\ncircuit_breaker:\n  stagnation_threshold: 2\n  cooldown_period_seconds: 600\n")
	// The upstream counts what reaches it.
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		upstream.Add(1)
		resp, err := http.Post(up.URL+r.URL.Path, "application/json", r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		io.Copy(w, resp.Body)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	counter := srv.URL

	p := startCmdProxy(t, []string{"--dir", dir, "--config", cfg}, "--upstream", "anthropic="+counter)
	// Stagnation threshold 2: the first failed call is a step, the second
	// and third repeat it; the fourth request is refused.
	for n := range 3 {
		if code, _, body := p.post(t, "loop", loopRequest(n)); code != 200 {
			t.Fatalf("request %d: %d %s", n+1, code, body)
		}
	}
	code, hdr, body := p.post(t, "loop", loopRequest(3))
	if code != http.StatusTooManyRequests || hdr.Get("Retry-After") != "600" || !strings.Contains(body, "session loop is open (stagnation)") {
		t.Fatalf("request 4: %d Retry-After %q %s", code, hdr.Get("Retry-After"), body)
	}
	if n := upstream.Load(); n != 3 {
		t.Fatalf("the upstream saw %d requests, want 3", n)
	}
	st := breakerJSON(t, dir, "loop")
	if !st.Live || st.State != "open" || st.Reason != "stagnation" || !strings.Contains(st.Detail, `Bash {"command":"make"}`) ||
		st.Config == nil || st.Config.Stagnation != 2 || st.ConfigFrom != cfg || st.Counters.Calls != 3 || st.Counters.Stagnant != 2 {
		t.Fatalf("status through the proxy: %+v", st)
	}
	out, errs, code2 := run(t, "--dir", dir, "breaker", "status", "loop")
	if code2 != 0 || !strings.Contains(out, "session loop: OPEN") || !strings.Contains(out, "stagnation 2") || !strings.Contains(out, "probe") {
		t.Fatalf("status text: %d\n%s%s", code2, out, errs)
	}
	// An emergency stop of another session, through the proxy.
	if out, errs, code := run(t, "--dir", dir, "breaker", "trip", "other", "--reason", "it is deleting files"); code != 0 || !strings.Contains(out, "breaker open until") {
		t.Fatalf("trip: %d %s %s", code, out, errs)
	}
	if code, hdr, body := p.post(t, "other", loopRequest(0)); code != 429 || hdr.Get("Retry-After") != "" || !strings.Contains(body, "it is deleting files") {
		t.Fatalf("tripped session: %d %q %s", code, hdr.Get("Retry-After"), body)
	}
	p.stop(t)

	// No proxy: status from the WAL's records.
	st = breakerJSON(t, dir, "loop")
	if st.Live || st.State != "open" || st.Reason != "stagnation" || st.Counters.Calls != 3 || len(st.Transitions) != 1 {
		t.Fatalf("status from the records: %+v", st)
	}
	if _, errs, code := run(t, "--dir", dir, "breaker", "status", "nosuch"); code != 1 || !strings.Contains(errs, `no record of session "nosuch"`) {
		t.Fatalf("unknown session: %d %s", code, errs)
	}
	if _, errs, code := run(t, "--dir", dir, "breaker", "trip", "x"); code != 2 || !strings.Contains(errs, "reason") {
		t.Fatalf("trip without a reason: %d %s", code, errs)
	}
	out, errs, code2 = run(t, "--dir", dir, "show", "loop")
	if code2 != 0 || !strings.Contains(out, `@escalate "circuit breaker opened (stagnation): 2 stagnant calls in a row`) {
		t.Fatalf("show: %d\n%s%s", code2, out, errs)
	}
	// A reset with no proxy goes to the WAL; the next start takes it.
	if out, errs, code := run(t, "--dir", dir, "breaker", "reset", "other"); code != 0 || !strings.Contains(out, "no proxy runs") {
		t.Fatalf("reset without a proxy: %d %s %s", code, out, errs)
	}

	// A restart keeps loop open and takes other's reset.
	p = startCmdProxy(t, []string{"--dir", dir, "--config", cfg}, "--upstream", "anthropic="+counter)
	if code, _, body := p.post(t, "loop", loopRequest(4)); code != 429 || !strings.Contains(body, "stagnation") {
		t.Fatalf("after a restart: %d %s", code, body)
	}
	if n := upstream.Load(); n != 3 {
		t.Fatalf("the upstream saw %d requests, want 3", n)
	}
	if code, _, body := p.post(t, "other", loopRequest(0)); code != 200 {
		t.Fatalf("other after its reset: %d %s", code, body)
	}
	list := func() []breaker.Status {
		out, errs, code := run(t, "--dir", dir, "breaker", "status", "--json")
		var all []breaker.Status
		if code != 0 || json.Unmarshal([]byte(out), &all) != nil {
			t.Fatalf("status of all: %d %s %s", code, out, errs)
		}
		return all
	}
	if all := list(); len(all) != 2 || all[0].Session != "loop" || all[0].State != "open" || all[1].State != "closed" {
		t.Fatalf("status of all: %+v", all)
	}
	// A reset through the proxy lets loop go on.
	if out, errs, code := run(t, "--dir", dir, "breaker", "reset", "loop"); code != 0 || !strings.Contains(out, "breaker closed") {
		t.Fatalf("reset: %d %s %s", code, out, errs)
	}
	if code, _, body := p.post(t, "loop", loopRequest(4)); code != 200 {
		t.Fatalf("after reset: %d %s", code, body)
	}
	st = breakerJSON(t, dir, "loop")
	if st.State != "closed" || len(st.Transitions) != 2 || st.Transitions[1].Op != "reset" || st.Counters.Stagnant != 0 {
		t.Fatalf("after reset: %+v", st)
	}
	out, errs, code2 = run(t, "--dir", dir, "show", "loop")
	if code2 != 0 || !strings.Contains(out, "@escalate") || !strings.Contains(out, `@notify "circuit breaker reset: reset by`) {
		t.Fatalf("show after reset: %d\n%s%s", code2, out, errs)
	}
	p.stop(t)
}

// TestBreakerConfigErrors: a misspelt threshold in the --config file or
// a bad --breaker is an error naming the file and line.
func TestBreakerConfigErrors(t *testing.T) {
	cfg := writeFile(t, t.TempDir(), "bb.yaml", "circuit_breaker:\n  stagnation_treshold: 2\n")
	_, errs, code := run(t, "--dir", t.TempDir(), "--config", cfg, "proxy", "--listen", "127.0.0.1:0")
	if code != 1 || !strings.Contains(errs, "bb.yaml:2: unknown setting circuit_breaker.stagnation_treshold") {
		t.Fatalf("misspelt threshold: %d %s", code, errs)
	}
	cfg = writeFile(t, t.TempDir(), "bb.yaml", "circuit_breaker:\n  cooldown_period_seconds: -1\n")
	_, errs, code = run(t, "--dir", t.TempDir(), "--config", cfg, "proxy", "--listen", "127.0.0.1:0")
	if code != 1 || !strings.Contains(errs, "cooldown_period_seconds is -1") {
		t.Fatalf("negative cooldown: %d %s", code, errs)
	}
	if _, errs, code = run(t, "--dir", t.TempDir(), "proxy", "--breaker", "maybe"); code != 2 || !strings.Contains(errs, `--breaker "maybe"`) {
		t.Fatalf("bad --breaker: %d %s", code, errs)
	}
	if _, errs, code = run(t, "--dir", t.TempDir(), "proxy", "--project", "/nonexistent/dir"); code != 2 || !strings.Contains(errs, "not a directory") {
		t.Fatalf("bad --project: %d %s", code, errs)
	}
	if _, errs, code = run(t, "--dir", t.TempDir()+"/none", "breaker", "status"); code != 1 || !strings.Contains(errs, "no data directory") {
		t.Fatalf("status of a missing directory: %d %s", code, errs)
	}
}

// TestRestoreBreakerTail: a proxy restores both the records the engine
// has derived and those of the WAL beyond them.
func TestRestoreBreakerTail(t *testing.T) {
	dir := t.TempDir()
	log, err := wal.Open(filepath.Join(dir, "wal"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	e, err := engine.Open(dir, &engine.Options{WAL: log})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	appendTrip := func(session, reason string) {
		p, err := exchange.AppendBreaker(nil, exchange.Breaker{Op: "trip", Session: session, State: exchange.BreakerOpen,
			From: exchange.BreakerClosed, Reason: "manual", Detail: reason, Time: time.Now().UnixNano(), Source: "cli"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := log.Append(wal.Record{Kind: frame.KindBreaker, Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	appendTrip("derived", "one")
	log.Append(wal.Record{Kind: frame.KindBreaker, Payload: []byte(`{"op":"trip"`)}) // skipped
	if _, err := e.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	appendTrip("tail", "two")
	b := breaker.New(breaker.Options{Config: breaker.Defaults()})
	if err := api.RestoreBreaker(e, log, b); err != nil {
		t.Fatal(err)
	}
	for session, detail := range map[string]string{"derived": "one", "tail": "two"} {
		st, ok := b.Status(session)
		if !ok || st.State != exchange.BreakerOpen || st.Detail != detail {
			t.Errorf("%s: %+v", session, st)
		}
	}
	if recs, err := e.Breakers("derived"); err != nil || len(recs) != 1 || recs[0].Offset == 0 {
		t.Errorf("derived records %+v, %v", recs, err)
	}
}
