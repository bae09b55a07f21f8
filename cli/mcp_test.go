package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api/tools"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/server"
	"github.com/bbengine/bbengine/wal"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// asMainEnv makes the test binary run the bbengine command line, so a
// test can start it as a subprocess (an MCP server on stdio).
const asMainEnv = "BB_CLI_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		os.Exit(Main(append([]string{"bbengine"}, os.Args[1:]...), os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// memSession is the session of memoryTranscript.
const memSession = "33333333-2222-4333-8444-555555555555"

// memoryDir returns a data directory holding memoryTranscript, imported.
func memoryDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(t.TempDir(), memSession+".jsonl")
	if err := os.WriteFile(src, []byte(memoryTranscript()), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	if code := Main([]string{"bbengine", "--dir", dir, "import", "claude", src, "--quiet"}, &out, &errb); code != 0 {
		t.Fatalf("import: %d\n%s%s", code, out.String(), errb.String())
	}
	return dir
}

// connectMCP connects the SDK's client over transport.
func connectMCP(t *testing.T, transport mcp.Transport) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bbengine-test", Version: "v0"}, nil).Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return cs
}

// callTool calls a tool and decodes its structured output into out; it
// returns the result for the caller to check IsError and content.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any, out any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	if res.IsError || out == nil {
		return res
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: structured content: %v\n%s", name, err, b)
	}
	return res
}

// resultText joins the text content of a result.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// asJSONValue turns v into what a JSON client decodes it as.
func asJSONValue(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkMCPTools checks what the server lists: the four tools, with the
// schemas of the Go types, read-only annotations and titles.
func checkMCPTools(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		def := tools.Named(tl.Name)
		if def == nil {
			t.Errorf("unknown tool %q listed", tl.Name)
			continue
		}
		if !reflect.DeepEqual(tl.InputSchema, asJSONValue(t, def.In)) {
			t.Errorf("%s: input schema %v, want %v", tl.Name, tl.InputSchema, asJSONValue(t, def.In))
		}
		if !reflect.DeepEqual(tl.OutputSchema, asJSONValue(t, def.Out)) || tl.OutputSchema == nil {
			t.Errorf("%s: output schema differs from the Go type's", tl.Name)
		}
		a := tl.Annotations
		if a == nil || !a.ReadOnlyHint || !a.IdempotentHint || a.OpenWorldHint == nil || *a.OpenWorldHint ||
			a.DestructiveHint == nil || *a.DestructiveHint || a.Title == "" || tl.Title == "" || tl.Description == "" {
			t.Errorf("%s: annotations %+v title %q", tl.Name, a, tl.Title)
		}
	}
	want := tools.Names()
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
	if caps := cs.InitializeResult().Capabilities; caps.Logging != nil || caps.Tools == nil || caps.Tools.ListChanged {
		t.Errorf("server capabilities %+v: want tools and no logging", caps)
	}
}

// checkMCPCalls runs the tools on memoryTranscript's memory: search,
// get of a found id with provenance to the WAL, related, the context
// pack, and bad input answered as tool errors.
func checkMCPCalls(t *testing.T, cs *mcp.ClientSession) {
	t.Helper()
	var found tools.SearchOut
	callTool(t, cs, "memory_search", map[string]any{"query": "which cache did we choose for the session store", "k": 3}, &found)
	if len(found.Cards) == 0 || len(found.Cards) > 3 || found.Cards[0].Type != engine.ArtifactDecision || !strings.Contains(found.Cards[0].Title, "ARC") {
		t.Fatalf("memory_search: %+v", found.Cards)
	}
	arc := found.Cards[0].ID

	var got tools.GetOut
	res := callTool(t, cs, "memory_get", map[string]any{"id": arc}, &got)
	a := got.Artifact
	if a.ID != arc || a.Decision == nil || !strings.Contains(a.Text, "scans evict hot entries") || len(a.Evidence) == 0 || len(got.Truncated) != 0 {
		t.Fatalf("memory_get %s: %+v", arc, got)
	}
	for _, ev := range a.Evidence {
		if ev.Prov.First == 0 || ev.Prov.Last < ev.Prov.First || !strings.HasSuffix(ev.Prov.File, ".jsonl") || ev.Prov.Line == 0 {
			t.Errorf("memory_get: evidence %d provenance %+v: want WAL offsets and the source file and line", ev.Seq, ev.Prov)
		}
	}
	if !strings.Contains(resultText(res), arc) {
		t.Errorf("memory_get: the text content does not carry the artifact: %q", resultText(res))
	}
	// A prefix works as in `mem get`.
	var byPrefix tools.GetOut
	if callTool(t, cs, "memory_get", map[string]any{"id": arc[:9]}, &byPrefix); byPrefix.Artifact.ID != arc {
		t.Errorf("memory_get by prefix: %s", byPrefix.Artifact.ID)
	}

	var rel tools.RelatedOut
	callTool(t, cs, "memory_related", map[string]any{"id": arc, "k": 2}, &rel)
	if rel.Artifact.ID != arc || len(rel.Supersedes) != 1 || !strings.Contains(rel.Supersedes[0].Title, "LRU") || len(rel.Adjacent) > 2 || len(rel.Events) == 0 {
		t.Fatalf("memory_related: %+v", rel)
	}

	var p tools.ContextOut
	res = callTool(t, cs, "memory_context_for_task", map[string]any{"session": memSession, "task": "tune the cache eviction in store/cache.go"}, &p)
	if p.Session != "claude:"+memSession || len(p.Decisions) == 0 || !strings.Contains(p.Decisions[0].Text, "ARC") || p.Contract == "" ||
		!strings.HasPrefix(p.Markdown, "<bbengine-context-pack") || resultText(res) != p.Markdown {
		t.Fatalf("memory_context_for_task: %+v\ncontent %q", p, resultText(res))
	}
	for _, d := range p.Decisions {
		if strings.Contains(d.Text, "LRU cache for the session store because") {
			t.Errorf("the pack lists the superseded LRU decision: %+v", d)
		}
	}

	for _, c := range []struct {
		name string
		args map[string]any
		want string
	}{
		{"memory_search", map[string]any{"query": 5}, "/properties/query"},
		{"memory_search", map[string]any{"query": "cache", "k": 50}, "/properties/k"},
		{"memory_search", map[string]any{"query": "cache", "colour": "red"}, `["colour"]`},
		{"memory_search", map[string]any{"query": "cache", "types": []string{"nope"}}, "/properties/types"},
		{"memory_search", map[string]any{"query": "  "}, "query is empty"},
		{"memory_get", map[string]any{}, `missing properties: ["id"]`},
		{"memory_get", map[string]any{"id": "ffffffffffff"}, "not found"},
		{"memory_context_for_task", map[string]any{"session": memSession, "task": "x", "budget": 10}, "/properties/budget"},
		{"memory_related", map[string]any{"id": "nope"}, "not found"},
	} {
		res := callTool(t, cs, c.name, c.args, nil)
		if !res.IsError || !strings.Contains(resultText(res), c.want) {
			t.Errorf("%s %v: error %v %q, want a tool error naming %q", c.name, c.args, res.IsError, resultText(res), c.want)
		}
	}
	// The server still answers after the errors.
	var again tools.SearchOut
	if callTool(t, cs, "memory_search", map[string]any{"query": "TestSessionStoreEviction", "types": []string{"open_thread"}}, &again); len(again.Cards) != 1 {
		t.Errorf("memory_search after errors: %+v", again.Cards)
	}
}

// TestMCPInMemory runs the MCP server in this process and talks to it
// with the SDK's client over in-memory transports.
func TestMCPInMemory(t *testing.T) {
	dir := memoryDir(t)
	s, closeMem := NewMCPServer(dir, t.Logf)
	defer closeMem()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs := connectMCP(t, ct)
	defer cs.Close()
	checkMCPTools(t, cs)
	checkMCPCalls(t, cs)
}

// TestMCPStdio runs `bbengine mcp` as a subprocess, as Claude Code does,
// and talks to it over its stdin and stdout.
func TestMCPStdio(t *testing.T) {
	dir := memoryDir(t)
	cmd := exec.Command(os.Args[0], "--dir", dir, "mcp")
	cmd.Env = append(os.Environ(), asMainEnv+"=1", "HOME="+t.TempDir())
	var stderr syncBuffer
	cmd.Stderr = &stderr
	cs := connectMCP(t, &mcp.CommandTransport{Command: cmd})
	checkMCPTools(t, cs)
	checkMCPCalls(t, cs)
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
		t.Errorf("bbengine mcp exited with %v; stderr:\n%s", cmd.ProcessState, stderr.String())
	}
	if h, held, _ := engine.ReadHolder(dir); held {
		t.Errorf("the data directory is still held after the server exited: %+v", h)
	}
}

// TestMCPProxyComesAndGoes checks that a long-lived MCP server does not
// keep a proxy out of the data directory: it lets the directory go soon
// after a call, a proxy started meanwhile takes it, calls then go
// through the proxy (and see what it records), and once the proxy
// stops they open the directory again.
func TestMCPProxyComesAndGoes(t *testing.T) {
	dir := memoryDir(t)
	s, closeMem := NewMCPServer(dir, t.Logf)
	defer closeMem()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs := connectMCP(t, ct)
	defer cs.Close()

	var found tools.SearchOut
	if callTool(t, cs, "memory_search", map[string]any{"query": "ARC cache"}, &found); len(found.Cards) == 0 {
		t.Fatal("memory_search found nothing")
	}
	if _, held, _ := engine.ReadHolder(dir); !held {
		t.Fatal("the server does not keep the directory open between calls of a burst")
	}

	// A proxy started now waits for the directory, then takes it.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4","content":[{"type":"text","text":"We decided to use a zebrafish queue for the mailer because it batches."}],"stop_reason":"end_turn","usage":{"input_tokens":11,"output_tokens":9}}`)
	}))
	defer up.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, &stdout, &stderr, server.Config{Dir: dir, Listen: "127.0.0.1:0", Sync: wal.SyncInterval,
			Proxy: proxy.Options{Upstreams: map[string]string{"anthropic": up.URL}}, Shutdown: 5 * time.Second}, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("proxy stopped: %v", err)
	}
	start := time.Now()
	for {
		if h, held, _ := engine.ReadHolder(dir); held && h.Addr != "" {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("the proxy did not get the data directory within 10 s:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the proxy had the directory %v after it started", time.Since(start).Round(time.Millisecond))

	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/messages",
		strings.NewReader(`{"model":"claude-sonnet-4","messages":[{"role":"user","content":"pick a queue for the mailer"}]}`))
	req.Header.Set("X-Bb-Session-Id", "mcp-proxy-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	// The proxy writes the exchange's last frames after the client has
	// its answer: ask until memory has it.
	var viaProxy tools.SearchOut
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		callTool(t, cs, "memory_search", map[string]any{"query": "zebrafish queue"}, &viaProxy)
		if len(viaProxy.Cards) > 0 || time.Since(start) > 10*time.Second {
			break
		}
	}
	if len(viaProxy.Cards) == 0 || viaProxy.Cards[0].Session != "mcp-proxy-1" {
		t.Fatalf("memory_search through the proxy: %+v", viaProxy.Cards)
	}
	var p tools.ContextOut
	callTool(t, cs, "memory_context_for_task", map[string]any{"session": "mcp-proxy-1", "task": "send the mail"}, &p)
	if len(p.Decisions) != 1 || p.Decisions[0].ID != viaProxy.Cards[0].ID || !strings.Contains(p.Markdown, "zebrafish") {
		t.Fatalf("memory_context_for_task through the proxy: %+v", p)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("proxy: %v", err)
	}
	var after tools.SearchOut
	if callTool(t, cs, "memory_search", map[string]any{"query": "zebrafish queue"}, &after); len(after.Cards) == 0 || after.Cards[0].ID != viaProxy.Cards[0].ID {
		t.Fatalf("memory_search after the proxy stopped: %+v", after.Cards)
	}
	// Idle, the server lets the directory go.
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if _, held, _ := engine.ReadHolder(dir); !held {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatal("the idle MCP server still holds the data directory after 5 s")
		}
	}
}

// startMCPHTTP runs `bbengine mcp --http` in this process and returns
// its URL; it stops with the test.
func startMCPHTTP(t *testing.T, dir string, args ...string) (string, *syncBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- MainContext(ctx, append([]string{"bbengine", "--dir", dir, "mcp", "--http", "127.0.0.1:0"}, args...), &stdout, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("bbengine mcp --http exited with %d:\n%s", code, stderr.String())
		}
	})
	const prefix = "listening on "
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		s := stderr.String()
		if i := strings.Index(s, prefix); i >= 0 {
			u, _, _ := strings.Cut(s[i+len(prefix):], ";")
			return u, &stderr
		}
		select {
		case code := <-done:
			done <- code
			t.Fatalf("bbengine mcp --http exited with %d:\n%s", code, s)
		default:
		}
	}
	t.Fatalf("bbengine mcp --http did not start:\n%s", stderr.String())
	return "", nil
}

// bearer adds a token to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

func TestMCPHTTP(t *testing.T) {
	dir := memoryDir(t)
	const token = "test-token-0123456789abcdef"
	u, _ := startMCPHTTP(t, dir, "--token", token)
	if !strings.HasPrefix(u, "http://127.0.0.1:") || !strings.HasSuffix(u, "/mcp") {
		t.Fatalf("URL %q", u)
	}
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"0"}}}`
	post := func(auth, origin string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp
	}
	for _, c := range []struct {
		auth, origin string
		want         int
	}{
		{"", "", http.StatusUnauthorized},
		{"Bearer wrong-token-0123456789abcdef", "", http.StatusUnauthorized},
		{token, "", http.StatusUnauthorized}, // no "Bearer "
		{"Bearer " + token, "https://evil.example", http.StatusForbidden},
		{"Bearer " + token, "http://localhost:3000", http.StatusOK},
		{"Bearer " + token, "", http.StatusOK},
	} {
		resp := post(c.auth, c.origin)
		if resp.StatusCode != c.want {
			t.Errorf("Authorization %q Origin %q: %d, want %d", c.auth, c.origin, resp.StatusCode, c.want)
		}
		if c.want == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("401 without WWW-Authenticate: Bearer")
		}
	}
	cs := connectMCP(t, &mcp.StreamableClientTransport{Endpoint: u, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}})
	defer cs.Close()
	checkMCPTools(t, cs)
	var found tools.SearchOut
	if callTool(t, cs, "memory_search", map[string]any{"query": "ARC cache"}, &found); len(found.Cards) == 0 {
		t.Fatal("memory_search over HTTP found nothing")
	}
	var got tools.GetOut
	if callTool(t, cs, "memory_get", map[string]any{"id": found.Cards[0].ID}, &got); got.Artifact.ID != found.Cards[0].ID || len(got.Artifact.Evidence) == 0 {
		t.Fatalf("memory_get over HTTP: %+v", got)
	}
}

// TestMCPHTTPToken checks the token kept in the data directory when none
// is given: made once, owner-only, and the same on the next start.
func TestMCPHTTPToken(t *testing.T) {
	dir := t.TempDir()
	_, stderr := startMCPHTTP(t, dir)
	path := filepath.Join(dir, "mcp.token")
	if !strings.Contains(stderr.String(), "bearer token in "+path+" (new)") {
		t.Fatalf("stderr does not say where the token is:\n%s", stderr.String())
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	b, _ := os.ReadFile(path)
	if tok := strings.TrimSpace(string(b)); len(tok) < 32 {
		t.Fatalf("token %q", tok)
	}
	_, stderr = startMCPHTTP(t, dir)
	if !strings.Contains(stderr.String(), "bearer token in "+path+"\n") {
		t.Fatalf("second start does not reuse the token:\n%s", stderr.String())
	}
	if b2, _ := os.ReadFile(path); string(b2) != string(b) {
		t.Fatalf("the token changed: %q, then %q", b, b2)
	}
}

func TestMCPFlags(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "--http", "0.0.0.0:0"}, "0.0.0.0 is not a loopback address"},
		{[]string{"mcp", "--http", ":8080"}, "every interface is not a loopback address"},
		{[]string{"mcp", "--http", "192.168.1.10:8080"}, "not a loopback address"},
		{[]string{"mcp", "--http", "example.com:80"}, "not a loopback address"},
		{[]string{"mcp", "--http", "127.0.0.1"}, "want host:port"},
		{[]string{"mcp", "--http", "127.0.0.1:0", "--token", "short"}, "at least 16"},
		{[]string{"mcp", "extra"}, "unexpected argument"},
	} {
		_, errs, code := run(t, append([]string{"--dir", dir}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, want 2 and %q:\n%s", c.args, code, c.want, errs)
		}
	}
}
