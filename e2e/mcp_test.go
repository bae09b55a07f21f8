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

	"github.com/bbengine/bbengine/engine"
)

// mcpMark is in the prompt of the MCP session: the fake knows the main
// conversation by it.
const mcpMark = "E2E-MCP-3f7a"

// The tool calls the fake makes through Claude Code's MCP client.
const (
	mcpSearchID = "toolu_01E2eMcpSearch000000"
	mcpGetID    = "toolu_01E2eMcpGet000000000"
	mcpSearch   = "mcp__bbengine__memory_search"
	mcpGet      = "mcp__bbengine__memory_get"
)

// mcpFake plays the model: it asks memory_search for the broker the
// earlier session chose, checks that the result names the decision, asks
// memory_get for it, checks the artifact's provenance, and says what it
// found.
type mcpFake struct {
	nonce, decision string // the decision's word and id
	mu              sync.Mutex
	schema          json.RawMessage // memory_search's input_schema as Claude Code sent it
	side            []string
}

func (f *mcpFake) answer(s *seen, req *amsgRequest, w http.ResponseWriter) {
	rep := areply{id: fmt.Sprintf("msg_01E2eMcp%06d", s.Seq), model: req.Model, stop: "end_turn",
		usage: ausage{Input: int64(len(s.Body) / 4), Output: 12}}
	if !strings.Contains(req.allText(), mcpMark) || len(req.Tools) == 0 {
		f.mu.Lock()
		f.side = append(f.side, fmt.Sprintf("model=%s tools=%d last=%.80q", req.Model, len(req.Tools), lastUserText(req)))
		f.mu.Unlock()
		rep.blocks = []ablock{{Type: "text", Text: "E2E side answer"}}
		rep.write(w, req.Stream)
		return
	}
	var tools struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
	}
	json.Unmarshal(s.Body, &tools)
	var names []string
	for _, t := range tools.Tools {
		names = append(names, t.Name)
		if t.Name == mcpSearch {
			f.mu.Lock()
			f.schema = t.InputSchema
			f.mu.Unlock()
		}
	}
	f.mu.Lock()
	nonce, decision := f.nonce, f.decision
	f.mu.Unlock()
	res := req.toolResults()
	found, haveSearch := res[mcpSearchID]
	got, haveGet := res[mcpGetID]
	switch {
	case !req.hasTool(mcpSearch) || !req.hasTool(mcpGet):
		rep.blocks = []ablock{{Type: "text", Text: fmt.Sprintf("E2E MISMATCH: the request offers no bbengine memory tools: %v", names)}}
	case !haveSearch:
		in, _ := json.Marshal(map[string]any{"query": "which broker did we choose for the mailer queue", "k": 3})
		rep.blocks = []ablock{{Type: "text", Text: "I will look in memory."},
			{Type: "tool_use", ID: mcpSearchID, Name: mcpSearch, Input: in}}
		rep.stop = "tool_use"
	case found.IsError || !strings.Contains(found.resultText(), decision) || !strings.Contains(found.resultText(), nonce):
		rep.blocks = []ablock{{Type: "text", Text: fmt.Sprintf("E2E MISMATCH: memory_search returned %q (error %v), want %s", found.resultText(), found.IsError, decision)}}
	case !haveGet:
		in, _ := json.Marshal(map[string]string{"id": decision})
		rep.blocks = []ablock{{Type: "tool_use", ID: mcpGetID, Name: mcpGet, Input: in}}
		rep.stop = "tool_use"
	default:
		var out struct {
			Artifact engine.Artifact `json:"artifact"`
		}
		err := json.Unmarshal([]byte(got.resultText()), &out)
		a := out.Artifact
		if got.IsError || err != nil || a.ID != decision || len(a.Evidence) == 0 || a.Evidence[0].Prov.First == 0 || a.Evidence[0].Prov.Line == 0 {
			rep.blocks = []ablock{{Type: "text", Text: fmt.Sprintf("E2E MISMATCH: memory_get returned %q (error %v, %v)", got.resultText(), got.IsError, err)}}
			break
		}
		rep.blocks = []ablock{{Type: "text", Text: fmt.Sprintf("E2E MCP done: %s chose the %s broker, WAL %d.", a.ID, nonce, a.Evidence[0].Prov.First)}}
	}
	rep.write(w, req.Stream)
}

// brokerTranscript is a Claude Code transcript of one task that chooses
// a broker named nonce for the mailer queue.
func brokerTranscript(session, nonce string) string {
	var lines []string
	t := time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)
	for i, m := range []map[string]any{
		{"type": "user", "message": map[string]any{"role": "user", "content": "Set up the queue of the mailer."}},
		{"type": "assistant", "requestId": "req_e2e_broker", "message": map[string]any{
			"id": "msg_e2e_broker", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
			"content":     []any{map[string]any{"type": "text", "text": "We decided to use the " + nonce + " broker for the mailer queue because it batches sends."}},
			"stop_reason": "end_turn", "usage": map[string]any{"input_tokens": 900, "output_tokens": 40}}},
	} {
		t = t.Add(2 * time.Second)
		m["uuid"] = fmt.Sprintf("00000000-0000-4000-8000-%012d", i+1)
		m["sessionId"], m["timestamp"], m["cwd"], m["version"] = session, t.Format(time.RFC3339Nano), "/repo", "2.1.39"
		b, _ := json.Marshal(m)
		lines = append(lines, string(b))
	}
	return strings.Join(lines, "\n") + "\n"
}

// buildBBEngine builds the bbengine binary into dir.
func buildBBEngine(t *testing.T, dir string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go is not on PATH to build bbengine: %v", err)
	}
	bin := filepath.Join(dir, "bbengine")
	cmd := exec.Command(goBin, "build", "-o", bin, "github.com/bbengine/bbengine")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestClaudeCodeMCP runs Claude Code with bbengine's MCP server in its
// --mcp-config: the fake model calls mcp__bbengine__memory_search and
// then memory_get, and the answers Claude Code passes back hold the
// decision an earlier (imported) session made, with its provenance.
// With proxy=on, Claude Code talks to the model through a running
// `bbengine proxy` that owns the data directory, and the MCP server asks
// it; with proxy=off the MCP server opens the directory itself.
func TestClaudeCodeMCP(t *testing.T) {
	requireNodeModules(t)
	bin := buildBBEngine(t, t.TempDir())
	t.Run("proxy=off", func(t *testing.T) { testClaudeCodeMCP(t, bin, false) })
	t.Run("proxy=on", func(t *testing.T) { testClaudeCodeMCP(t, bin, true) })
}

func testClaudeCodeMCP(t *testing.T, bin string, withProxy bool) {
	nodeModules := requireNodeModules(t)
	argv, version := claudeCommand(t, nodeModules)
	t.Logf("Claude Code %s", version)
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	config := filepath.Join(tmp, "config")
	work := filepath.Join(tmp, "work")
	for _, d := range []string{home, config, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}

	f := &mcpFake{}
	up := newFake(t, messagesAPI(f.answer))
	tw := newTripwire(t)
	loopbackOnly(t, up.URL)
	baseURL := up.URL
	dir := filepath.Join(tmp, "data")
	if withProxy {
		px := startProxy(t, dir, up.URL)
		baseURL = "http://" + px.addr
		loopbackOnly(t, baseURL)
	}

	// The memory: an earlier session, imported.
	nonce := "zq" + strings.Map(func(r rune) rune { return 'a' + (r % 26) }, randomHex(6))
	session := "44444444-2222-4333-8444-" + randomHex(6)
	src := filepath.Join(tmp, session+".jsonl")
	if err := os.WriteFile(src, []byte(brokerTranscript(session, nonce)), 0o644); err != nil {
		t.Fatal(err)
	}
	bb(t, dir, "import", "claude", src, "--quiet")
	decision := findOne(t, dir, nonce+" broker", engine.ArtifactDecision)
	t.Logf("decision %s: %s", decision.ID, decision.Title)

	mcpConfig := filepath.Join(tmp, "mcp.json")
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"bbengine": map[string]any{"type": "stdio", "command": bin, "args": []string{"--dir", dir, "mcp"}},
	}})
	if err := os.WriteFile(mcpConfig, cfg, 0o644); err != nil {
		t.Fatal(err)
	}

	f.mu.Lock()
	f.nonce, f.decision = nonce, decision.ID
	f.mu.Unlock()
	apiKey := "sk-ant-api03-fake" + randomHex(24) + "-E2E"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	debugFile := filepath.Join(tmp, "claude-debug.log")
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:len(argv):len(argv)], "-p", mcpMark+": which broker does the mailer queue use?",
		"--output-format", "text", "--mcp-config", mcpConfig, "--strict-mcp-config",
		"--allowedTools", mcpSearch, mcpGet, "--debug-file", debugFile)...)
	cmd.Dir = work
	// ENABLE_TOOL_SEARCH=false puts the MCP tools in the request's tools
	// list; by default Claude Code defers them behind its ToolSearch tool.
	cmd.Env = append(claudeEnv(os.Getenv("PATH"), home, config, tmp, baseURL, apiKey, "ENABLE_TOOL_SEARCH=false"), tw.env()...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("claude ran for %v", time.Since(start).Round(time.Millisecond))
	logOutput(t, "claude stdout", stdout.Bytes())
	logOutput(t, "claude stderr", stderr.Bytes())
	for _, s := range up.requests() {
		t.Logf("upstream got #%d %s %s (%d bytes) -> %d", s.Seq, s.Method, s.Path, len(s.Body), s.Status)
	}
	f.mu.Lock()
	for _, s := range f.side {
		t.Logf("side request: %s", s)
	}
	schema := f.schema
	f.mu.Unlock()
	if a := tw.attempts(); len(a) > 0 {
		t.Errorf("Claude Code tried to reach the outside: %v", a)
	}
	if err != nil || ctx.Err() != nil {
		if b, rerr := os.ReadFile(debugFile); rerr == nil {
			logOutput(t, "claude debug", b)
		}
		t.Fatalf("claude: %v (context: %v)", err, ctx.Err())
	}
	want := fmt.Sprintf("E2E MCP done: %s chose the %s broker, WAL ", decision.ID, nonce)
	if !strings.Contains(stdout.String(), want) {
		if b, rerr := os.ReadFile(debugFile); rerr == nil {
			logOutput(t, "claude debug", b)
		}
		t.Fatalf("claude printed %q, want it to contain %q", stdout.String(), want)
	}
	// Claude Code gave the model memory_search's schema as the server
	// declares it.
	var in struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	if err := json.Unmarshal(schema, &in); err != nil || in.Properties["query"] == nil || in.Properties["k"] == nil || len(in.Required) != 1 || in.Required[0] != "query" {
		t.Errorf("memory_search input_schema as Claude Code sent it: %s (%v)", schema, err)
	}
	// The MCP server let the data directory go when Claude Code exited
	// (or never held it: the proxy does).
	h, held, _ := engine.ReadHolder(dir)
	if withProxy && (!held || h.Addr == "") || !withProxy && held {
		t.Errorf("the data directory's holder: %+v (held %v)", h, held)
	}
}
