package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/cli"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/wal"
)

// The run the Codex fake scripts: a prompt carrying cxMarker, one
// exec_command call (Codex 0.169's shell tool, unified exec, whose only
// required argument is cmd), its result, then a text-only answer.
const (
	cxVersion = "0.169.0"
	cxModel   = "gpt-5.5"
	cxMarker  = "E2E-CODEX-5b2e"
	cxCallID  = "call_E2eExecEchoHello0001"
	cxFinal   = "E2E done: the shell said hello."
)

// cxUsage is what the fake reported for one response.
type cxUsage struct {
	Input, Cached, Output, Reasoning int64
}

// cxFake plays the Responses API for one `codex exec` run: the first
// turn gets reasoning and the exec_command call cxCallID, the turn that
// carries its function_call_output gets the text cxFinal. Anything else
// is refused, so an unexpected request fails the run.
type cxFake struct {
	mu     sync.Mutex
	usage  map[int]cxUsage // by X-E2e-Seq
	ids    map[int]string  // response ids by X-E2e-Seq
	final  map[int]bool    // whether X-E2e-Seq got the text answer
	output []string        // the function_call_output texts Codex sent
	refuse []string        // why requests were refused
	first  int64           // the first turn's input tokens, then cached
}

func newCxFake() *cxFake {
	return &cxFake{usage: map[int]cxUsage{}, ids: map[int]string{}, final: map[int]bool{}}
}

// cxRequest is the part of a Responses request the fake reads.
type cxRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Input  []struct {
		Type   string          `json:"type"`
		Role   string          `json:"role"`
		CallID string          `json:"call_id"`
		Output json.RawMessage `json:"output"`
	} `json:"input"`
	Tools []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
}

func (c *cxFake) refused(w http.ResponseWriter, status int, why string) {
	c.mu.Lock()
	c.refuse = append(c.refuse, why)
	c.mu.Unlock()
	http.Error(w, "e2e fake: "+why, status)
}

func (c *cxFake) answer(s *seen, w http.ResponseWriter) {
	if s.Method != http.MethodPost || s.Path != "/v1/responses" {
		c.refused(w, http.StatusNotFound, fmt.Sprintf("no such endpoint: %s %s", s.Method, s.Path))
		return
	}
	var req cxRequest
	if err := json.Unmarshal(s.Body, &req); err != nil {
		c.refused(w, http.StatusBadRequest, fmt.Sprintf("request #%d is not JSON: %v", s.Seq, err))
		return
	}
	exec := false
	for _, tl := range req.Tools {
		exec = exec || tl.Type == "function" && tl.Name == "exec_command"
	}
	if !exec || !req.Stream || !bytes.Contains(s.Body, []byte(cxMarker)) {
		c.refused(w, http.StatusBadRequest, fmt.Sprintf("request #%d: exec_command offered %v, stream %v, marker %v", s.Seq, exec, req.Stream, bytes.Contains(s.Body, []byte(cxMarker))))
		return
	}
	var result string
	have := false
	for _, it := range req.Input {
		if it.Type == "function_call_output" && it.CallID == cxCallID {
			have = true
			if json.Unmarshal(it.Output, &result) != nil {
				result = string(it.Output)
			}
		}
	}
	rid := fmt.Sprintf("resp_0e2ec0de%016d", s.Seq+1)
	in := int64(len(s.Body) / 4)
	var u cxUsage
	var items []string
	c.mu.Lock()
	if !have {
		// Nothing cached yet: the first turn of a new session.
		u = cxUsage{Input: in, Output: 41, Reasoning: 24}
		c.first = in
		items = []string{
			`{"type":"reasoning","id":"rs_0e2ec0de0001","summary":[],"encrypted_content":"gAAAAABe2e-codex-encrypted-reasoning-0001"}`,
			`{"type":"function_call","id":"fc_0e2ec0de0001","status":"completed","call_id":` + jsonString(cxCallID) + `,"name":"exec_command","arguments":` + jsonString(`{"cmd":"echo hello"}`) + `}`,
		}
	} else {
		c.output = append(c.output, result)
		text := cxFinal
		if !strings.Contains(result, "hello") {
			text = fmt.Sprintf("E2E MISMATCH: the exec_command output was %q", result)
		}
		// The prefix the first turn sent is in the cache, in blocks
		// of 128 tokens, as OpenAI reports cached_tokens.
		u = cxUsage{Input: in, Cached: c.first / 128 * 128, Output: 12}
		items = []string{
			`{"type":"message","id":"msg_0e2ec0de0002","status":"completed","role":"assistant","content":[{"type":"output_text","text":` + jsonString(text) + `,"annotations":[]}]}`,
		}
		c.final[s.Seq] = true
	}
	c.usage[s.Seq] = u
	c.ids[s.Seq] = rid
	c.mu.Unlock()
	writeSSE(w, cxEvents(rid, req.Model, items, u))
}

// cxEvents is a Responses stream as the API sends it: created, each
// item added and done (a message with its text delta, a call with its
// arguments delta), then completed with the usage.
func cxEvents(rid, model string, items []string, u cxUsage) []string {
	var out []string
	n := 0
	ev := func(typ, body string) {
		out = append(out, fmt.Sprintf("event: %s\ndata: {\"type\":%q,\"sequence_number\":%d,%s}\n\n", typ, typ, n, body))
		n++
	}
	resp := func(status, output, usage string) string {
		return fmt.Sprintf(`"response":{"id":%q,"object":"response","created_at":1795800000,"status":%q,"model":%q,"output":[%s],"usage":%s}`, rid, status, model, output, usage)
	}
	ev("response.created", resp("in_progress", "", "null"))
	ev("response.in_progress", resp("in_progress", "", "null"))
	for i, it := range items {
		var item struct {
			Type      string `json:"type"`
			ID        string `json:"id"`
			Arguments string `json:"arguments"`
			Content   []struct {
				Text string `json:"text"`
			} `json:"content"`
		}
		json.Unmarshal([]byte(it), &item)
		ev("response.output_item.added", fmt.Sprintf(`"output_index":%d,"item":%s`, i, it))
		switch item.Type {
		case "function_call":
			ev("response.function_call_arguments.delta", fmt.Sprintf(`"item_id":%q,"output_index":%d,"delta":%s`, item.ID, i, jsonString(item.Arguments)))
			ev("response.function_call_arguments.done", fmt.Sprintf(`"item_id":%q,"output_index":%d,"arguments":%s`, item.ID, i, jsonString(item.Arguments)))
		case "message":
			text := jsonString(item.Content[0].Text)
			ev("response.content_part.added", fmt.Sprintf(`"item_id":%q,"output_index":%d,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}`, item.ID, i))
			ev("response.output_text.delta", fmt.Sprintf(`"item_id":%q,"output_index":%d,"content_index":0,"delta":%s`, item.ID, i, text))
			ev("response.output_text.done", fmt.Sprintf(`"item_id":%q,"output_index":%d,"content_index":0,"text":%s`, item.ID, i, text))
			ev("response.content_part.done", fmt.Sprintf(`"item_id":%q,"output_index":%d,"content_index":0,"part":{"type":"output_text","text":%s,"annotations":[]}`, item.ID, i, text))
		}
		ev("response.output_item.done", fmt.Sprintf(`"output_index":%d,"item":%s`, i, it))
	}
	usage := fmt.Sprintf(`{"input_tokens":%d,"input_tokens_details":{"cached_tokens":%d},"output_tokens":%d,"output_tokens_details":{"reasoning_tokens":%d},"total_tokens":%d}`,
		u.Input, u.Cached, u.Output, u.Reasoning, u.Input+u.Output)
	ev("response.completed", resp("completed", strings.Join(items, ","), usage))
	return out
}

// cxCommand returns the installed Codex CLI (node_modules/.bin/codex,
// whose launcher runs the native binary of @openai/codex-linux-x64 and
// the like), skipping the test when it or its native binary is missing.
func cxCommand(t *testing.T) string {
	t.Helper()
	dir := requireNodeModules(t)
	bin := filepath.Join(dir, "node_modules", ".bin", "codex")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("Codex is not installed (run `npm ci --prefix e2e/node`): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "codex-cli ") {
		t.Skipf("Codex's native binary does not run here (npm installs it from @openai/codex's optional platform packages): %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "codex-cli "+cxVersion {
		t.Fatalf("codex --version says %q, the lock file pins %s", got, cxVersion)
	}
	return bin
}

// cxConfig is $CODEX_HOME/config.toml of a run: a provider of its own
// at baseURL (Codex 0.169 ignores OPENAI_BASE_URL, and its built-in
// openai provider tries the Responses WebSocket first; a provider with
// supports_websockets = false speaks HTTP and SSE only), the key from
// OPENAI_API_KEY, no retries, no analytics (OTLP metrics to
// ab.chatgpt.com) and no plugins (the marketplace on github.com and
// chatgpt.com).
func cxConfig(baseURL string) string {
	return `model = "` + cxModel + `"
model_provider = "e2e"
check_for_update_on_startup = false

[model_providers.e2e]
name = "e2e fake through bbengine proxy"
base_url = "` + baseURL + `"
wire_api = "responses"
env_key = "OPENAI_API_KEY"
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0

[analytics]
enabled = false

[features]
plugins = false
`
}

// TestCodex runs the real Codex CLI, `codex exec`, offline: through
// `bbengine proxy` to a fake Responses API, one exec_command call and a
// text answer. Through the proxy it is one session with the call, its
// result and the answer; the rollout Codex wrote, imported into the same
// data directory, merges with it into one session whose calls count
// once; import --check and export to ATIF with --check pass; rebuild
// gives the same answers. BBENGINE_CODEX_FIXTURE=FILE keeps the rollout
// (agents/codex/testdata).
func TestCodex(t *testing.T) {
	codex := cxCommand(t)
	bin := buildBBEngine(t, t.TempDir())
	cx := newCxFake()
	up := newFake(t, cx.answer)
	loopbackOnly(t, up.URL)
	dir := filepath.Join(t.TempDir(), "data")
	px := ocStartProxy(t, bin, dir, up.URL) // `bbengine proxy`, its OpenAI route to the fake

	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	codexHome := filepath.Join(home, ".codex")
	work := filepath.Join(tmp, "work")
	for _, d := range []string{codexHome, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cxConfig("http://"+px.addr+"/v1")), 0o644); err != nil {
		t.Fatal(err)
	}
	apiKey := "sk-proj-e2e" + randomHex(24)
	tw := newTripwire(t)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	prompt := cxMarker + ": run `echo hello` in the shell and tell me what it printed."
	// The sandbox is bypassed so that the one command the fake asks for
	// runs in any container (Codex's bubblewrap sandbox needs user
	// namespaces); approvals are never asked in exec.
	cmd := exec.CommandContext(ctx, codex, "exec",
		"--skip-git-repo-check",
		"--dangerously-bypass-approvals-and-sandbox",
		"--color", "never",
		prompt)
	cmd.Dir = work
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"CODEX_HOME=" + codexHome,
		"TMPDIR=" + tmp,
		"SHELL=/bin/bash",
		"LANG=C.UTF-8",
		"TERM=dumb",
		"NO_COLOR=1",
		"OPENAI_API_KEY=" + apiKey,
	}, tw.env()...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("codex exec ran for %v", time.Since(start).Round(time.Millisecond))
	logOutput(t, "codex stdout", stdout.Bytes())
	logOutput(t, "codex stderr", stderr.Bytes())
	reqs := up.requests()
	for _, s := range reqs {
		t.Logf("upstream got #%d %s %s (%d bytes) -> %d, %d bytes; session-id %q, user-agent %q, originator %q",
			s.Seq, s.Method, s.Path, len(s.Body), s.Status, len(s.Sent), s.Header.Get("Session-Id"), s.Header.Get("User-Agent"), s.Header.Get("Originator"))
	}
	if a := tw.attempts(); len(a) > 0 {
		t.Errorf("Codex tried to reach the outside: %v", a)
	}
	cx.mu.Lock()
	refused, outputs := cx.refuse, cx.output
	cx.mu.Unlock()
	if len(refused) > 0 {
		t.Errorf("the fake refused: %v", refused)
	}
	if err != nil || ctx.Err() != nil {
		t.Fatalf("codex exec: %v (context: %v)", err, ctx.Err())
	}
	if !strings.Contains(stdout.String(), cxFinal) {
		t.Fatalf("codex printed %q, want it to contain %q (the tool's output was %q)", stdout.String(), cxFinal, outputs)
	}
	if len(reqs) != 2 {
		t.Fatalf("the fake saw %d requests, want 2 (the call, the answer)", len(reqs))
	}

	// The rollout Codex wrote.
	rollouts, _ := filepath.Glob(filepath.Join(codexHome, "sessions", "*", "*", "*", "rollout-*.jsonl"))
	if len(rollouts) != 1 {
		t.Fatalf("rollouts under %s: %v, want one", codexHome, rollouts)
	}
	session := cxRolloutSession(t, rollouts[0])
	t.Logf("Codex session %s, rollout %s", session, rollouts[0])
	for _, s := range reqs {
		if got := s.Header.Get("Session-Id"); got != session {
			t.Errorf("upstream #%d got session-id %q, the rollout says %q", s.Seq, got, session)
		}
		if got := s.Header.Get("Authorization"); got != "Bearer "+apiKey {
			t.Errorf("upstream #%d got authorization %q, want the client's key unchanged", s.Seq, got)
		}
	}
	if dst := os.Getenv("BBENGINE_CODEX_FIXTURE"); dst != "" {
		b, err := os.ReadFile(rollouts[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The WAL: every byte that crossed the wire, the session, the usage.
	px.stop(t)
	l, err := wal.Open(filepath.Join(dir, "wal"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ex := assembleWAL(t, l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if len(ex) != len(reqs) {
		t.Errorf("the WAL holds %d exchanges, the upstream saw %d requests", len(ex), len(reqs))
	}
	for _, x := range ex {
		checkExchangeEnd(t, x, reqs, true)
		if x.Start == nil || x.End == nil {
			continue
		}
		t.Logf("WAL exchange %d: %s %s provider=%s model=%s stream=%v session=%s (from %s) status=%d usage=%+v",
			x.ID, x.Start.Method, x.Start.Path, x.Start.Provider, x.Start.Model, x.Start.Stream, x.Start.SessionID, x.Start.SessionSource, x.End.Status, x.End.Usage)
		if x.Start.Provider != "openai" || x.Start.Model != cxModel || !x.Start.Stream {
			t.Errorf("exchange %d: provider %q, model %q, stream %v", x.ID, x.Start.Provider, x.Start.Model, x.Start.Stream)
		}
		if x.Start.SessionID != session {
			t.Errorf("exchange %d: the proxy recorded session %q (from %q), Codex's is %q", x.ID, x.Start.SessionID, x.Start.SessionSource, session)
		}
		if h := x.Start.Headers["Authorization"]; len(h) != 1 || !strings.HasPrefix(h[0], "[redacted") {
			t.Errorf("exchange %d: recorded Authorization %v", x.ID, h)
		}
		cx.mu.Lock()
		u, ok := cx.usage[seqOf(x)]
		cx.mu.Unlock()
		want := exchange.Usage{InputTokens: u.Input, OutputTokens: u.Output, CacheReadTokens: u.Cached, TotalTokens: u.Input + u.Output}
		if !ok || x.End.Usage == nil || *x.End.Usage != want {
			t.Errorf("exchange %d: usage %+v, the upstream sent %+v", x.ID, x.End.Usage, want)
		}
	}
	scanFiles(t, dir, apiKey)

	// Through the proxy, then imported into the same directory.
	cxCheckProxied(t, dir, session, cx)
	cxCheckMerged(t, dir, filepath.Join(codexHome, "sessions"), session, cx)
}

// cxRolloutSession returns the id in a rollout's session_meta.
func cxRolloutSession(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := bytes.Cut(b, []byte("\n"))
	var line struct {
		Type    string `json:"type"`
		Payload struct {
			ID         string `json:"id"`
			CLIVersion string `json:"cli_version"`
			Originator string `json:"originator"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(first, &line); err != nil || line.Type != "session_meta" || line.Payload.ID == "" {
		t.Fatalf("%s: first line is not a session_meta with an id: %v\n%.300s", path, err, first)
	}
	if line.Payload.CLIVersion != cxVersion {
		t.Errorf("%s: cli_version %q, want %s", path, line.Payload.CLIVersion, cxVersion)
	}
	return line.Payload.ID
}

// cxTimeline is `show --format json`.
type cxTimeline struct {
	Session engine.Session `json:"session"`
	Events  []engine.Event `json:"events"`
}

// cxRun runs the command line on dir in process and returns its stdout
// and stderr; a non-zero exit fails the test.
func cxRun(t *testing.T, dir string, args ...string) (string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := cli.Main(append([]string{"bbengine", "--dir", dir}, args...), &out, &errb); code != 0 {
		t.Fatalf("bbengine %v: exit %d:\n%s%s", args, code, out.String(), errb.String())
	}
	return out.String(), errb.String()
}

// cxFacts counts what a timeline holds of the run: the exec_command call
// and its result, the final answer, the model calls by response id.
type cxFacts struct {
	calls, results, finals, modelCalls int
	byResponse                         map[string]int
	result                             string
}

func cxCount(tl cxTimeline) cxFacts {
	f := cxFacts{byResponse: map[string]int{}}
	for _, ev := range tl.Events {
		switch {
		case ev.Kind == engine.KindToolCall && ev.Tool != nil && ev.Tool.ID == cxCallID:
			f.calls++
		case ev.Kind == engine.KindToolResult && ev.Tool != nil && ev.Tool.ID == cxCallID:
			f.results++
			f.result = ev.Text
		case ev.Kind == engine.KindMessage && ev.Role == "assistant" && strings.Contains(ev.Text, cxFinal):
			f.finals++
		case ev.Kind == engine.KindModelCall:
			f.modelCalls++
			if ev.Call != nil && ev.Call.ResponseID != "" {
				f.byResponse[ev.Call.ResponseID]++
			}
		}
	}
	return f
}

// cxPrompts counts the user messages that hold the prompt.
func cxPrompts(tl cxTimeline) int {
	n := 0
	for _, ev := range tl.Events {
		if ev.Kind == engine.KindMessage && ev.Role == "user" && strings.Contains(ev.Text, cxMarker) {
			n++
		}
	}
	return n
}

// cxEventList is one line per event, for the log.
func cxEventList(tl cxTimeline) string {
	var b strings.Builder
	for _, ev := range tl.Events {
		fmt.Fprintf(&b, "  %3d %-12s side=%-8s", ev.Seq, ev.Kind, ev.Prov.Side)
		if len(ev.Also) > 0 {
			fmt.Fprintf(&b, " +%s", ev.Also[0].Prov.Side)
		}
		if ev.Role != "" {
			fmt.Fprintf(&b, " role=%s", ev.Role)
		}
		if ev.Tool != nil {
			fmt.Fprintf(&b, " tool=%s id=%s", ev.Tool.Name, ev.Tool.ID)
		}
		if ev.Call != nil {
			fmt.Fprintf(&b, " response=%s", ev.Call.ResponseID)
		}
		if ev.Usage != nil {
			fmt.Fprintf(&b, " usage=%+v", *ev.Usage)
		}
		if ev.Record != nil {
			fmt.Fprintf(&b, " record=%s", ev.Record.Type)
		}
		if ev.Text != "" {
			txt := strings.ReplaceAll(ev.Text, "\n", `\n`)
			if len(txt) > 60 {
				txt = txt[:60] + "…"
			}
			fmt.Fprintf(&b, " %q", txt)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// cxWantUsage is what the fake answered, as `usage` reports it: input
// without the cached tokens, which are cache reads.
func cxWantUsage(cx *cxFake) (want api.UsageTokens, calls int, final api.UsageTokens) {
	cx.mu.Lock()
	defer cx.mu.Unlock()
	for seq, u := range cx.usage {
		t := api.UsageTokens{Input: u.Input - u.Cached, Output: u.Output, CacheRead: u.Cached}
		want.Input += t.Input
		want.Output += t.Output
		want.CacheRead += t.CacheRead
		if cx.final[seq] {
			final = t
		}
	}
	return want, len(cx.usage), final
}

// cxCheckProxied checks the session as the proxy recorded it: one codex
// session under Codex's id, two model calls with the fake's response ids
// and usage, the call with its result, the answer; export to ATIF with
// --check; the same after a rebuild.
func cxCheckProxied(t *testing.T, dir, session string, cx *cxFake) {
	t.Helper()
	out, _ := cxRun(t, dir, "sessions", "--json")
	var list []engine.Session
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != session || list[0].Agent != "codex" {
		t.Fatalf("sessions: %s\nwant one codex session %s", out, session)
	}
	s := list[0]
	want, calls, _ := cxWantUsage(cx)
	if s.Requests != calls || s.Usage.Input != want.Input+want.CacheRead || s.Usage.Output != want.Output || s.Usage.CacheRead != want.CacheRead {
		t.Errorf("the proxied session counts %d requests, usage %+v; the fake answered %d calls, %+v", s.Requests, s.Usage, calls, want)
	}
	text, _ := cxRun(t, dir, "show", session)
	t.Logf("bbengine show %s (proxied):\n%s", session, text)
	j, _ := cxRun(t, dir, "show", session, "--format", "json")
	var tl cxTimeline
	if err := json.Unmarshal([]byte(j), &tl); err != nil {
		t.Fatal(err)
	}
	f := cxCount(tl)
	if f.calls != 1 || f.results != 1 || f.finals != 1 || f.modelCalls != 2 || !strings.Contains(f.result, "hello") {
		t.Errorf("the proxied session: %d calls and %d results of %s (result %q), %d final answers, %d model calls; want 1, 1, 1, 2",
			f.calls, f.results, cxCallID, f.result, f.finals, f.modelCalls)
	}
	cx.mu.Lock()
	for _, id := range cx.ids {
		if f.byResponse[id] != 1 {
			t.Errorf("response %s is %d model calls in the proxied session", id, f.byResponse[id])
		}
	}
	cx.mu.Unlock()
	if n := cxPrompts(tl); n != 1 {
		t.Errorf("the proxied session holds the prompt in %d user messages, want 1", n)
	}
	atif, errs := cxRun(t, dir, "export", session, "--to", "atif", "--check")
	t.Logf("export %s --to atif --check: %d bytes\n%s", session, len(atif), errs)
	cxRun(t, dir, "rebuild")
	if again, _ := cxRun(t, dir, "show", session); again != text {
		t.Errorf("show of the proxied session after rebuild differs")
	}
}

// cxCheckMerged imports the rollout into the directory that recorded the
// session: one merged session, each call once. The text-only answer has
// no exact pairing key in a rollout: it pairs by content
// (docs/design/merge.md, 2.3), and each call's usage, which Codex 0.169
// logs after the tool's output, ends its call.
func cxCheckMerged(t *testing.T, dir, sessions, session string, cx *cxFake) {
	t.Helper()
	out, errs := cxRun(t, dir, "import", "codex", sessions, "--check")
	t.Logf("bbengine import codex --check (into the recorded directory):\n%s%s", errs, out)
	if !strings.Contains(out, "nothing lost") {
		t.Errorf("import --check did not pass")
	}
	if !strings.Contains(errs+out, "merged 1 sessions with proxied ones") {
		t.Errorf("import does not say it merged the session")
	}

	check := func(when string) string {
		t.Helper()
		out, _ := cxRun(t, dir, "sessions", "--json")
		var list []engine.Session
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].ID != session || list[0].Merged == nil {
			t.Fatalf("%s: sessions: %s\nwant session %s once, merged", when, out, session)
		}
		s := list[0]
		t.Logf("%s: merged: %+v; session usage %+v, %d requests", when, *s.Merged, s.Usage, s.Requests)
		if got, want := strings.Join(s.Merged.Members, " "), session+" codex:"+session; got != want {
			t.Errorf("%s: members %q, want %q", when, got, want)
		}
		if s.CWD == "" || s.Import == nil {
			t.Errorf("%s: the merged summary lacks the rollout's cwd (%q) or import info (%v)", when, s.CWD, s.Import)
		}
		un, _ := cxRun(t, dir, "sessions", "--unmerged")
		t.Logf("%s: bbengine sessions --unmerged:\n%s", when, un)
		out, _ = cxRun(t, dir, "sessions", "--json", "--unmerged")
		var unmerged []engine.Session
		if err := json.Unmarshal([]byte(out), &unmerged); err != nil {
			t.Fatal(err)
		}
		if len(unmerged) != 2 {
			t.Errorf("%s: sessions --unmerged lists %d, want the 2 sides", when, len(unmerged))
		}

		// usage: each call the fake answered, once.
		want, calls, final := cxWantUsage(cx)
		table, _ := cxRun(t, dir, "usage", "session")
		t.Logf("%s: bbengine usage session:\n%s", when, table)
		out, _ = cxRun(t, dir, "usage", "session", "--json")
		var rep api.UsageReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		got := rep.Total
		t.Logf("%s: usage: %d rows, %d calls, %+v; the fake answered %d calls, %+v", when, len(rep.Rows), got.Calls, got.UsageTokens, calls, want)
		switch {
		case len(rep.Rows) != 1:
			t.Errorf("%s: usage has %d rows, want 1", when, len(rep.Rows))
		case got.Calls == calls && got.Input == want.Input && got.Output == want.Output && got.CacheRead == want.CacheRead && got.CacheCreation == 0:
		case got.Calls == calls+1 && got.Input == want.Input+final.Input && got.Output == want.Output+final.Output && got.CacheRead == want.CacheRead+final.CacheRead:
			t.Errorf("%s: usage counts the text-only answer twice: %d calls, %+v; the fake answered %d calls, %+v", when, got.Calls, got.UsageTokens, calls, want)
		case got.Calls == 2*calls && got.Input == 2*want.Input && got.Output == 2*want.Output && got.CacheRead == 2*want.CacheRead:
			t.Errorf("%s: usage counts every call twice (each side's usage event stays unpaired): %d calls, %+v; the fake answered %d calls, %+v", when, got.Calls, got.UsageTokens, calls, want)
		default:
			t.Errorf("%s: usage counts %d calls, %+v; the fake answered %d calls, %+v once", when, got.Calls, got.UsageTokens, calls, want)
		}
		in := want.Input + want.CacheRead
		switch u := s.Usage; {
		case u.Input == in && u.Output == want.Output && u.CacheRead == want.CacheRead:
		case u.Input == 2*in && u.Output == 2*want.Output && u.CacheRead == 2*want.CacheRead:
			t.Errorf("%s: the merged session's usage is every call's twice: %+v", when, u)
		case u.Input == in+final.Input+final.CacheRead && u.Output == want.Output+final.Output && u.CacheRead == want.CacheRead+final.CacheRead:
			t.Errorf("%s: the merged session's usage counts the text-only answer twice: %+v", when, u)
		default:
			t.Errorf("%s: the merged session's usage %+v, the fake answered input %d (cached included), output %d, cache read %d", when, u, in, want.Output, want.CacheRead)
		}

		// show: one timeline, each fact once, both provenances.
		text, _ := cxRun(t, dir, "show", session)
		j, _ := cxRun(t, dir, "show", session, "--format", "json")
		var tl cxTimeline
		if err := json.Unmarshal([]byte(j), &tl); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: bbengine show %s (merged), %d events:\n%s", when, session, len(tl.Events), cxEventList(tl))
		if other, _ := cxRun(t, dir, "show", "codex:"+session); other != text {
			t.Errorf("%s: show codex:%s differs from show %s", when, session, session)
		}
		if n := cxPrompts(tl); n != 1 {
			t.Errorf("%s: the prompt is in %d user messages, want 1", when, n)
		}
		f := cxCount(tl)
		if f.calls != 1 || f.results != 1 || !strings.Contains(f.result, "hello") {
			t.Errorf("%s: %d calls and %d results of %s (result %q), want one each", when, f.calls, f.results, cxCallID, f.result)
		}
		switch f.finals {
		case 1:
		case 2:
			t.Errorf("%s: the text-only answer is in the merged timeline twice", when)
		default:
			t.Errorf("%s: the answer %q appears %d times", when, cxFinal, f.finals)
		}
		switch f.modelCalls {
		case calls:
		case calls + 1:
			t.Errorf("%s: %d model calls in the merged timeline, the fake answered %d (the text-only answer's on both sides)", when, f.modelCalls, calls)
		default:
			t.Errorf("%s: %d model calls in the merged timeline, the fake answered %d", when, f.modelCalls, calls)
		}
		cx.mu.Lock()
		for _, id := range cx.ids {
			if f.byResponse[id] != 1 {
				t.Errorf("%s: response %s is %d model calls", when, id, f.byResponse[id])
			}
		}
		cx.mu.Unlock()
		paired, live, imported := 0, 0, 0
		for _, ev := range tl.Events {
			switch {
			case len(ev.Also) > 0:
				paired++
			case ev.Prov.Side == "import":
				imported++
			default:
				live++
			}
		}
		t.Logf("%s: merged timeline: %d events, %d paired, %d live only, %d log only", when, len(tl.Events), paired, live, imported)
		if paired == 0 || imported == 0 {
			t.Errorf("%s: %d events paired, %d log only", when, paired, imported)
		}
		atif, errs := cxRun(t, dir, "export", session, "--to", "atif", "--check")
		t.Logf("%s: export %s --to atif --check: %d bytes\n%s", when, session, len(atif), errs)
		return text + "\n" + table
	}
	before := check("after the import")
	cxRun(t, dir, "rebuild")
	if after := check("after rebuild"); after != before {
		t.Errorf("show and usage of the merged session differ after rebuild")
	}
}
