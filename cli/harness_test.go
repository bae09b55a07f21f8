package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/api/httpapi"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/server"
	"github.com/bbengine/bbengine/wal"
)

// fakeAnthropic is an upstream on 127.0.0.1 that answers every Messages
// request with a short stream saying text.
func fakeAnthropic(t *testing.T, text string) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		if r.Header.Get("X-Bb-Session-Goal") != "" {
			http.Error(w, "X-Bb-Session-Goal reached the upstream", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		delta, _ := json.Marshal(text)
		for _, ev := range []string{
			`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"msg_1","model":"claude-sonnet-4","usage":{"input_tokens":11,"output_tokens":1}}}`,
			`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":` + string(delta) + `}}`,
			`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":0}`,
			`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`,
			`event: message_stop` + "\n" + `data: {"type":"message_stop"}`} {
			io.WriteString(w, ev+"\n\n")
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(up.Close)
	return up
}

// harnessRig is a proxy run in-process with the harness API on.
type harnessRig struct {
	dir, proxy, api, token string
	stderr                 *syncBuffer
	stop                   func()
}

func startHarnessRig(t *testing.T, upstream string) *harnessRig {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	ready, apiReady := make(chan string, 1), make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, &stdout, &stderr, server.Config{Dir: dir, Listen: "127.0.0.1:0", Sync: wal.SyncInterval,
			Proxy: proxy.Options{Upstreams: map[string]string{"anthropic": upstream}}, Shutdown: 5 * time.Second,
			API: "127.0.0.1:0", APIReady: apiReady}, ready)
	}()
	rg := &harnessRig{dir: dir, stderr: &stderr}
	for rg.proxy == "" || rg.api == "" {
		select {
		case rg.proxy = <-ready:
		case rg.api = <-apiReady:
		case err := <-done:
			cancel()
			t.Fatalf("proxy stopped: %v\n%s", err, stderr.String())
		}
	}
	stopped := false
	rg.stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("proxy: %v", err)
		}
	}
	t.Cleanup(rg.stop)
	b, err := os.ReadFile(filepath.Join(dir, "api.token"))
	if err != nil {
		t.Fatalf("no generated token: %v", err)
	}
	rg.token = strings.TrimSpace(string(b))
	return rg
}

// call sends a harness API request and decodes the JSON answer into v
// (when not nil); it returns the status and the raw body. While the
// proxy's engine is still opening the API answers 503 with Retry-After,
// and call retries as a client should.
func (rg *harnessRig) call(t *testing.T, method, path, token, body string, v any) (int, string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		code, b := rg.callOnce(t, method, path, token, body, v)
		if code != http.StatusServiceUnavailable || !strings.Contains(b, "not open yet") || time.Now().After(deadline) {
			return code, b
		}
	}
}

func (rg *harnessRig) callOnce(t *testing.T, method, path, token, body string, v any) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, "http://"+rg.api+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q", method, path, ct)
	}
	if v != nil && resp.StatusCode == http.StatusOK {
		reflect.ValueOf(v).Elem().SetZero()
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s %s: %v\n%s", method, path, err, b)
		}
	}
	return resp.StatusCode, string(b)
}

// must is call expecting 200.
func (rg *harnessRig) must(t *testing.T, method, path, body string, v any) {
	t.Helper()
	if code, b := rg.call(t, method, path, rg.token, body, v); code != http.StatusOK {
		t.Fatalf("%s %s %s: %d %s", method, path, body, code, b)
	}
}

// packWhen asks for a pack until ok accepts it: the proxy records an
// exchange after its response has reached the client, so the engine
// sees it a moment later.
func (rg *harnessRig) packWhen(t *testing.T, body string, ok func(*httpapi.PackReply) bool) *httpapi.PackReply {
	t.Helper()
	var p httpapi.PackReply
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		rg.must(t, http.MethodPost, "/v1/pack", body, &p)
		if ok(&p) || time.Now().After(deadline) {
			return &p
		}
	}
}

// send proxies one Messages request with the given X-Bb-* headers.
func (rg *harnessRig) send(t *testing.T, prompt string, hdr map[string]string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4", "stream": true, "max_tokens": 100,
		"messages": []any{map[string]any{"role": "user", "content": prompt}}})
	req, _ := http.NewRequest(http.MethodPost, "http://"+rg.proxy+"/v1/messages", bytes.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "message_stop") {
		t.Fatalf("proxied request: %d %s", resp.StatusCode, b)
	}
}

// TestHarnessAPI drives the harness API of a real proxy with a fake
// upstream: a goal set through the API holds against the header goal of
// a later request, a header goal sets the goal of a session that had
// none, and checkpoints, outcomes, search and get work end to end.
func TestHarnessAPI(t *testing.T) {
	rg := startHarnessRig(t, fakeAnthropic(t, "We decided to use an ARC cache. The cache is in place.").URL)
	if fi, err := os.Stat(filepath.Join(rg.dir, "api.token")); err != nil || fi.Mode().Perm() != 0o600 || len(rg.token) < 32 {
		t.Fatalf("api.token: %v %v (token %q)", fi.Mode(), err, rg.token)
	}
	if !strings.Contains(rg.stderr.String(), "harness API token in "+filepath.Join(rg.dir, "api.token")) {
		t.Errorf("the token file is not logged:\n%s", rg.stderr.String())
	}

	// Without the token, or with another one (the query endpoint's), 401.
	q := api.Dial(rg.dir)
	for _, tok := range []string{"", "not-the-token", q.Token} {
		if code, b := rg.call(t, http.MethodPost, "/v1/goal", tok, `{"session":"h1","goal":"x"}`, nil); code != http.StatusUnauthorized || !strings.Contains(b, `"error":"bad or missing bearer token`) {
			t.Errorf("token %q: %d %s", tok, code, b)
		}
	}

	// The goal comes first, before the session's first request.
	var noted api.Noted
	rg.must(t, http.MethodPost, "/v1/goal", `{"session":"h1","goal":"Ship the session cache"}`, &noted)
	if noted.Offset == 0 || noted.Note.Op != "goal" || noted.Note.Source != "harness" {
		t.Errorf("goal: %+v", noted)
	}
	var p httpapi.PackReply
	rg.must(t, http.MethodPost, "/v1/pack", `{"session":"h1","task":"add the cache","task_id":"t1"}`, &p)
	if p.Goal != "Ship the session cache" || p.GoalSource != "harness" || !strings.Contains(p.Markdown, "Goal: Ship the session cache") || p.TaskID != "t1" {
		t.Fatalf("pack before the first request: %+v", p)
	}
	// A request carrying a header goal does not override it.
	rg.send(t, "Add a cache to the session store.", map[string]string{"X-Bb-Session-Id": "h1", "X-Bb-Task-Id": "t1", "X-Bb-Session-Goal": "a header goal"})
	p = *rg.packWhen(t, `{"session":"h1","task":"document the cache","task_id":"t2"}`, func(p *httpapi.PackReply) bool { return p.Artifacts > 0 })
	if p.Goal != "Ship the session cache" || p.GoalSource != "harness" || p.Artifacts == 0 {
		t.Errorf("pack after a header goal: goal %q from %q, %d artifacts", p.Goal, p.GoalSource, p.Artifacts)
	}
	// A header goal sets the goal of a session that had none.
	rg.send(t, "Write the docs.", map[string]string{"X-Bb-Session-Id": "h2", "X-Bb-Session-Goal": "%C3%89crire%20la%20doc%20du%20cache"})
	p = *rg.packWhen(t, `{"session":"h2"}`, func(p *httpapi.PackReply) bool { return p.Goal != "" })
	if p.Goal != "Écrire la doc du cache" || p.GoalSource != "header" {
		t.Errorf("pack of a header goal: goal %q from %q", p.Goal, p.GoalSource)
	}

	// A checkpoint.
	rg.must(t, http.MethodPost, "/v1/checkpoints", `{"session":"h1","summary":"The cache is in; the docs are next."}`, &noted)
	rg.must(t, http.MethodPost, "/v1/pack", `{"session":"h1","budget":600}`, &p)
	if p.Checkpoint != "The cache is in; the docs are next." || p.Budget.Total != 600 {
		t.Errorf("pack after a checkpoint: %q, budget %+v", p.Checkpoint, p.Budget)
	}

	// An outcome: it decides the task's status; its artifact points at
	// the note's WAL offset.
	rg.must(t, http.MethodPost, "/v1/outcomes", `{"session":"h1","task_id":"t1","status":"fail","summary":"TestCacheEvict fails in CI.","files":["store/cache.go"],"exit_code":2}`, &noted)
	if noted.Artifact != engine.OutcomeID("h1", "t1") || noted.Note.Exit == nil || *noted.Note.Exit != 2 {
		t.Fatalf("outcome: %+v", noted)
	}
	var a engine.Artifact
	rg.must(t, http.MethodGet, "/v1/artifacts/"+noted.Artifact, "", &a)
	last := a.Evidence[len(a.Evidence)-1]
	if a.Status != "fail" || a.Outcome.Report == nil || a.Outcome.Summary[0] != "TestCacheEvict fails in CI." ||
		last.Kind != engine.EvidenceNote || last.Prov.First != noted.Offset || a.Evidence[0].Prov.Exchange == 0 {
		t.Errorf("outcome artifact: status %s, report %+v, evidence %+v", a.Status, a.Outcome.Report, a.Evidence)
	}
	// An outcome of a task no request carried.
	rg.must(t, http.MethodPost, "/v1/outcomes", `{"session":"h1","task_id":"t7","status":"blocked","summary":"Needs a staging key."}`, &noted)
	rg.must(t, http.MethodGet, "/v1/artifacts/"+noted.Artifact[:8], "", &a)
	if a.Status != "blocked" || a.Task != "t7" {
		t.Errorf("outcome from a report alone: %+v", a)
	}
	var cards []engine.Card
	rg.must(t, http.MethodGet, "/v1/search?q=TestCacheEvict&session=h1&k=3", "", &cards)
	if len(cards) == 0 || cards[0].ID != engine.OutcomeID("h1", "t1") || len(cards) > 3 {
		t.Errorf("search: %+v", cards)
	}
	rg.must(t, http.MethodGet, "/v1/search?q=staging&task=t7&type=outcome", "", &cards)
	if len(cards) != 1 || cards[0].Task != "t7" {
		t.Errorf("search by task and type: %+v", cards)
	}

	// Bad requests name what is wrong.
	for _, tc := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"POST", "/v1/outcomes", `{"session":"h1","task_id":"t1","status":"fail","exit_code":"two"}`, 400, `exit_code: want an integer, got a JSON string`},
		{"POST", "/v1/outcomes", `{"session":"h1","task_id":"t1","status":"done"}`, 400, `status \"done\" (want success, fail or blocked)`},
		{"POST", "/v1/outcomes", `{"session":"h1","status":"fail"}`, 400, `task_id: required`},
		{"POST", "/v1/outcomes", `{"session":"h1","task_id":"t1","status":"fail","files":"a.go"}`, 400, `files: want a list of strings, got a JSON string`},
		{"POST", "/v1/goal", `{"session":"h1","goal":"x","source":"run"}`, 400, `unknown field \"source\" (the fields are session, goal)`},
		{"POST", "/v1/goal", `{"session":"h1"}`, 400, `goal: required`},
		{"POST", "/v1/goal", `{"session":"h1","goal":"` + strings.Repeat("g", exchange.MaxGoal+1) + `"}`, 400, `goal: 2049 bytes (at most 2048)`},
		{"POST", "/v1/checkpoints", `{"summary":"x"}`, 400, `session: required`},
		{"POST", "/v1/checkpoints", `{"session":"h1","summary":`, 400, `the JSON ends early`},
		{"POST", "/v1/checkpoints", ``, 400, `an empty body`},
		{"POST", "/v1/checkpoints", `["h1"]`, 400, `want a JSON object with session, summary, got a JSON array`},
		{"POST", "/v1/pack", `{"session":"h1","budget":"big"}`, 400, `budget: want an integer`},
		{"POST", "/v1/pack", `{"session":"h1","budget":50}`, 400, `a total budget of 50 tokens`},
		{"POST", "/v1/pack", `{"session":"h1"} {}`, 400, `more than one JSON value`},
		{"GET", "/v1/search?session=h1", "", 400, `q: required`},
		{"GET", "/v1/search?q=x&k=many", "", 400, `k \"many\"`},
		{"GET", "/v1/search?q=x&session=nope", "", 404, `no session`},
		{"GET", "/v1/artifacts/out-000000000000", "", 404, `no artifact`},
		{"GET", "/v1/goal", "", 405, `GET /v1/goal: use POST`},
		{"POST", "/v1/search", "", 405, `use GET`},
		{"GET", "/v1/sessions", "", 404, `no route GET /v1/sessions`},
		{"GET", "/metrics", "", 404, `no route`},
	} {
		code, b := rg.call(t, tc.method, tc.path, rg.token, tc.body, nil)
		var e struct{ Error string }
		if code != tc.code || json.Unmarshal([]byte(b), &e) != nil || !strings.Contains(b, tc.want) {
			t.Errorf("%s %s %.60s: %d %s, want %d with %q", tc.method, tc.path, tc.body, code, b, tc.code, tc.want)
		}
	}

	// The query endpoint answers the same routes with its own token, and
	// a remote Note goes through it.
	m := q
	if _, err := m.Note(exchange.Note{Op: "checkpoint", Session: "h2", Text: "Docs drafted.", Source: "run"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Note(exchange.Note{Op: "checkpoint", Session: "h2", Source: "run"}); err == nil || !strings.Contains(err.Error(), "checkpoint note: text is empty") {
		t.Errorf("remote Note of an empty checkpoint: %v", err)
	}
	// mem search's Find goes through it too, with its results'
	// explanations.
	if rs, err := m.Find(api.SearchRequest{Text: "ARC cache", Explain: true, AllProjects: true, Dir: rg.dir}); err != nil || len(rs) == 0 ||
		rs[0].Explain == nil || len(rs[0].Explain.Terms) == 0 || rs[0].Explain.BM25 <= 0 {
		t.Errorf("remote Find: %+v, %v", rs, err)
	}
	var qp httpapi.PackReply
	if err := q.Do(http.MethodPost, "/v1/pack", nil, []byte(`{"session":"h2"}`), &qp); err != nil || qp.Checkpoint != "Docs drafted." || qp.Markdown == "" {
		t.Errorf("pack on the query endpoint: %+v, %v", qp, err)
	}

	// What the harness recorded is in the WAL: after the proxy stops,
	// a rebuild and a rebuild of memory give the same packs.
	rg.stop()
	for _, args := range [][]string{nil, {"rebuild"}, {"rebuild", "--derived"}} {
		if args != nil {
			if out, errs, code := run(t, append([]string{"--dir", rg.dir}, args...)...); code != 0 {
				t.Fatalf("%v: %d %s%s", args, code, out, errs)
			}
		}
		p1 := memJSON[httpapi.PackReply](t, "--dir", rg.dir, "mem", "context", "--session", "h1")
		p2 := memJSON[httpapi.PackReply](t, "--dir", rg.dir, "mem", "context", "--session", "h2")
		if p1.Goal != "Ship the session cache" || p1.Checkpoint != "The cache is in; the docs are next." || p2.Goal != "Écrire la doc du cache" || p2.Checkpoint != "Docs drafted." {
			t.Errorf("after %v: h1 %q/%q, h2 %q/%q", args, p1.Goal, p1.Checkpoint, p2.Goal, p2.Checkpoint)
		}
		var failed bool
		for _, it := range p1.Implemented {
			failed = failed || it.Task == "t1" && it.Status == "fail"
		}
		if !failed {
			t.Errorf("after %v: the pack does not show t1 failed: %+v", args, p1.Implemented)
		}
	}
}

// TestHarnessAPIFlags: the API listens on loopback only, takes its token
// from the config file, and refuses a short one.
func TestHarnessAPIFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--api", "0.0.0.0:7435"}, "loopback only"},
		{[]string{"--api", ":7435"}, "loopback only"},
		{[]string{"--api", "example.com:7435"}, "loopback only"},
		{[]string{"--api", "7435"}, "want host:port"},
		{[]string{"--api", "127.0.0.1:0", "--api-token", "short"}, "at least 16"},
	} {
		args := append([]string{"--dir", t.TempDir(), "proxy", "--listen", "127.0.0.1:0"}, tc.args...)
		if _, errs, code := run(t, args...); code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d %s, want 2 with %q", tc.args, code, errs, tc.want)
		}
	}

	// The token from the config file's api-token key.
	dir := t.TempDir()
	cfg := writeFile(t, t.TempDir(), "bbengine.yaml", "proxy:\n  api: 127.0.0.1:0\n  api-token: 0123456789abcdef-config\n  listen: 127.0.0.1:0\n")
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- MainContext(ctx, []string{"bbengine", "--dir", dir, "--config", cfg, "proxy"}, &stdout, &stderr)
	}()
	defer func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("proxy exit %d: %s", code, stderr.String())
		}
	}()
	re := regexp.MustCompile(`Harness API http://([0-9.:]+)/v1/`)
	var addr string
	for deadline := time.Now().Add(10 * time.Second); addr == ""; time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(stdout.String()); m != nil {
			addr = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no harness API address:\n%s%s", stdout.String(), stderr.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "api.token")); !os.IsNotExist(err) {
		t.Errorf("a configured token still wrote api.token: %v", err)
	}
	rg := &harnessRig{api: addr, token: "0123456789abcdef-config"}
	var noted api.Noted
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		code, b := rg.call(t, http.MethodPost, "/v1/goal", rg.token, `{"session":"c1","goal":"from the config"}`, &noted)
		if code == http.StatusOK {
			break
		}
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("goal with the config's token: %d %s", code, b)
		}
	}
	var p httpapi.PackReply
	rg.must(t, http.MethodPost, "/v1/pack", `{"session":"c1"}`, &p)
	if p.Goal != "from the config" {
		t.Errorf("pack goal %q", p.Goal)
	}
}
