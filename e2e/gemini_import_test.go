package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/agents/gemini"
	"github.com/bbengine/bbengine/cli"
	"github.com/bbengine/bbengine/engine"
)

// gemImpMarker is in the prompt; the fake tells the main conversation from
// the CLI's side requests (routing, next-speaker checks) by it.
const gemImpMarker = "E2E-GEMINI-4b2e"

// The ids of the two function calls the fake makes.
const (
	gemImpShellID = "call-e2e-shell-0001"
	gemImpReadID  = "call-e2e-read-0002"
)

// gemImpFake plays Gemini for one Gemini CLI run: a run_shell_command
// (echo hello), then, once its functionResponse is back, a read_file of a
// note in the project, then text quoting both results. It logs every
// request and answers all of them.
type gemImpFake struct {
	note, nonce string
	mu          sync.Mutex
	calls       []string // method, path and query of every request
	side        []string
	tools       map[string]bool // the function declarations the main requests offered
}

type gemImpPart struct {
	Text             string          `json:"text,omitempty"`
	Thought          bool            `json:"thought,omitempty"`
	FunctionCall     json.RawMessage `json:"functionCall,omitempty"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse,omitempty"`
}

type gemImpRequest struct {
	Contents []struct {
		Role  string       `json:"role"`
		Parts []gemImpPart `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

func (r *gemImpRequest) text() string {
	var b strings.Builder
	for _, c := range r.Contents {
		for _, p := range c.Parts {
			b.WriteString(p.Text)
			if p.FunctionResponse != nil {
				b.Write(p.FunctionResponse.Response)
			}
		}
	}
	return b.String()
}

// result returns the response of the function call id, and whether there
// is one.
func (r *gemImpRequest) result(id string) (string, bool) {
	for _, c := range r.Contents {
		for _, p := range c.Parts {
			if p.FunctionResponse != nil && p.FunctionResponse.ID == id {
				return string(p.FunctionResponse.Response), true
			}
		}
	}
	return "", false
}

func (f *gemImpFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.calls = append(f.calls, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
	f.mu.Unlock()
	model := "gemini-2.5-pro"
	if i := strings.Index(r.URL.Path, "/models/"); i >= 0 {
		model, _, _ = strings.Cut(r.URL.Path[i+len("/models/"):], ":")
	}
	var req gemImpRequest
	json.Unmarshal(body, &req)
	switch {
	case strings.HasSuffix(r.URL.Path, ":countTokens"):
		fmt.Fprintf(w, `{"totalTokens":%d}`, len(body)/4)
		return
	case strings.HasSuffix(r.URL.Path, ":generateContent"), strings.HasSuffix(r.URL.Path, ":streamGenerateContent"):
	default:
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
		return
	}
	var parts []string
	usage := fmt.Sprintf(`{"promptTokenCount":%d,"candidatesTokenCount":%%d,"thoughtsTokenCount":%%d,"cachedContentTokenCount":%%d,"totalTokenCount":%%d}`, len(body)/4)
	out, thoughts, cached := 7, 0, 0
	shell, haveShell := req.result(gemImpShellID)
	read, haveRead := req.result(gemImpReadID)
	switch {
	case len(req.Tools) == 0 || !strings.Contains(req.text(), gemImpMarker):
		f.mu.Lock()
		f.side = append(f.side, fmt.Sprintf("%s tools=%d", r.URL.Path, len(req.Tools)))
		f.mu.Unlock()
		// Side requests (routing, next speaker) want JSON.
		parts = []string{`{"text":` + jsonString(`{"reasoning":"e2e","next_speaker":"user","model_choice":"pro","complexity_reasoning":"e2e","complexity_score":80}`) + `}`}
	case !haveShell:
		f.mu.Lock()
		if f.tools == nil {
			f.tools = map[string]bool{}
		}
		for _, tl := range req.Tools {
			for _, d := range tl.FunctionDeclarations {
				f.tools[d.Name] = true
			}
		}
		f.mu.Unlock()
		parts = []string{
			`{"text":"Let me think about the command.","thought":true}`,
			`{"text":"I will run the command."}`,
			`{"functionCall":{"id":"` + gemImpShellID + `","name":"run_shell_command","args":{"command":"echo hello","description":"Print hello"}},"thoughtSignature":"c2lnLWUyZQ=="}`,
		}
		out, thoughts = 31, 12
	case !haveRead:
		args, _ := json.Marshal(map[string]string{"file_path": f.note})
		parts = []string{`{"functionCall":{"id":"` + gemImpReadID + `","name":"read_file","args":` + string(args) + `}}`}
		out, cached = 23, 1024
	default:
		text := "E2E done: the shell said hello; the note says " + f.nonce + "."
		if !strings.Contains(shell, "hello") || !strings.Contains(read, f.nonce) {
			text = fmt.Sprintf("E2E MISMATCH: shell %s, read %s", shell, read)
		}
		parts = []string{`{"text":` + jsonString(text) + `}`}
		out = 17
	}
	prompt := len(body) / 4
	u := fmt.Sprintf(usage, out, thoughts, cached, prompt+out+thoughts)
	if strings.HasSuffix(r.URL.Path, ":generateContent") {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"candidates":[{"content":{"role":"model","parts":[%s]},"finishReason":"STOP","index":0}],"usageMetadata":%s,"modelVersion":%q}`,
			strings.Join(parts, ","), u, model)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl, _ := w.(http.Flusher)
	for i, p := range parts {
		chunk := fmt.Sprintf(`{"candidates":[{"content":{"role":"model","parts":[%s]},"index":0}],"modelVersion":%q}`, p, model)
		if i == len(parts)-1 {
			chunk = fmt.Sprintf(`{"candidates":[{"content":{"role":"model","parts":[%s]},"finishReason":"STOP","index":0}],"usageMetadata":%s,"modelVersion":%q}`, p, u, model)
		}
		fmt.Fprintf(w, "data: %s\r\n\r\n", chunk)
		if fl != nil {
			fl.Flush()
		}
	}
}

// gemImpCommand returns the Gemini CLI's launcher and its version,
// skipping when node or the package is missing.
func gemImpCommand(t *testing.T) string {
	t.Helper()
	requireNode(t)
	dir := requireNodeModules(t)
	bin := filepath.Join(dir, "node_modules", ".bin", "gemini")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("Gemini CLI is not installed (run `npm ci --prefix e2e/node`): %v", err)
	}
	return bin
}

// gemImpEnv is the whole environment a test gives Gemini CLI: its own home
// and temp directory, the fake's base URL, a fake key, and no telemetry or
// update checks.
func gemImpEnv(home, tmp, baseURL string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"TMPDIR=" + tmp,
		"SHELL=/bin/bash",
		"LANG=C.UTF-8",
		"TERM=dumb",
		"GEMINI_API_KEY=fake-e2e-key",
		"GOOGLE_GEMINI_BASE_URL=" + baseURL,
		"GEMINI_TELEMETRY_ENABLED=false",
		"GEMINI_CLI_NO_RELAUNCH=true",
		"NO_BROWSER=true",
		"CI=true",
	}
}

// gemImpSettings turns off what would reach the network besides the model.
const gemImpSettings = `{
  "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true, "enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "ide": {"enabled": false}
}
`

// gemImpRun runs `gemini -p` on a task with two tool calls in a fresh home
// and returns the session log it wrote and the fake. setup, when not
// nil, may edit the home (its settings.json turns off updates and
// telemetry) before the run, given the fake's URL; when it returns true
// the CLI must find GOOGLE_GEMINI_BASE_URL in its files, not in its
// environment.
func gemImpRun(t *testing.T, setup func(home, baseURL string) (fromFiles bool)) (log string, fake *gemImpFake) {
	bin := gemImpCommand(t)
	home, tmp, work := t.TempDir(), t.TempDir(), t.TempDir()
	fake = &gemImpFake{note: filepath.Join(work, "note.txt"), nonce: "nonce-" + randomHex(6)}
	if err := os.WriteFile(fake.note, []byte("The note says "+fake.nonce+".\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".gemini"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gemini", "settings.json"), []byte(gemImpSettings), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	env := gemImpEnv(home, tmp, srv.URL)
	if setup != nil && setup(home, srv.URL) {
		env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "GOOGLE_GEMINI_BASE_URL=") })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "Run echo hello, then read note.txt and tell me what it says. "+gemImpMarker, "--approval-mode", "yolo", "--output-format", "text")
	cmd.Dir = work
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	fake.mu.Lock()
	t.Logf("gemini -p: %v\nstdout:\n%s\nstderr:\n%s\nrequests:\n  %s\nside: %v", err, stdout.String(), stderr.String(), strings.Join(fake.calls, "\n  "), fake.side)
	fake.mu.Unlock()
	if err != nil {
		t.Fatalf("gemini -p failed: %v", err)
	}
	if !strings.Contains(stdout.String(), "E2E done") {
		t.Errorf("gemini's answer lacks the fake's final text")
	}
	logs, _ := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*.jsonl"))
	if len(logs) != 1 {
		all, _ := exec.Command("find", filepath.Join(home, ".gemini")).CombinedOutput()
		t.Fatalf("want one session log, found %v; ~/.gemini holds:\n%s", logs, all)
	}
	return logs[0], fake
}

// TestGeminiCLIImport runs the real Gemini CLI on a tool-using task
// offline and imports the session log it wrote: one session, every tool
// call with its result, import --check and export --to atif --check
// clean. BBENGINE_GEMINI_FIXTURE=FILE keeps a copy of the log (for
// agents/gemini/testdata).
func TestGeminiCLIImport(t *testing.T) {
	log, fake := gemImpRun(t, nil)
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s:\n%s", log, b)
	if dst := os.Getenv("BBENGINE_GEMINI_FIXTURE"); dst != "" {
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	home := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(log))))) // home/.gemini/tmp/<project>/chats/log
	t.Setenv("HOME", home)
	t.Setenv("GEMINI_CLI_HOME", "")
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := cli.Main(append([]string{"bbengine", "--dir", dir}, args...), &out, &errb); code != 0 {
			t.Fatalf("bbengine %v: exit %d:\n%s%s", args, code, out.String(), errb.String())
		}
		t.Logf("bbengine %v:\n%s%s", args, out.String(), errb.String())
		return out.String() + errb.String()
	}
	out := run("import", "gemini", "--all", "--check")
	if !strings.Contains(out, "nothing lost") || !strings.Contains(out, "into 1 sessions") && !strings.Contains(out, "into 1 session") {
		t.Errorf("import gemini --all --check did not find one session with nothing lost")
	}
	var first struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(b[:bytes.IndexByte(b, '\n')], &first)
	id := "gemini:" + first.SessionID
	text := run("show", id)
	// The CLI logs "<tool>__<id>"; the import keeps the model's id, which
	// the requests carry.
	shell, read := "t:run_shell_command id="+gemImpShellID, "t:read_file id="+gemImpReadID
	for _, w := range []string{shell, "Output: hello", read, fake.nonce, "E2E done: the shell said hello"} {
		if !strings.Contains(text, w) {
			t.Errorf("the imported session lacks %q", w)
		}
	}
	j := run("show", id, "--format", "json")
	var v struct {
		Session engine.Session `json:"session"`
		Events  []engine.Event `json:"events"`
	}
	if err := json.Unmarshal([]byte(j[:strings.LastIndexByte(j, '}')+1]), &v); err != nil {
		t.Fatal(err)
	}
	c := engine.Census(&v.Session, v.Events)
	if c.ToolCalls != 2 || c.ToolResults != 2 || c.CallIDs != 2 || c.UserPrompts != 1 || c.Responses != 3 {
		t.Errorf("census of the imported session: %+v", c)
	}
	if v.Session.CWD != filepath.Dir(fake.note) {
		t.Errorf("cwd %q, want %q", v.Session.CWD, filepath.Dir(fake.note))
	}
	sessions := run("sessions", "--agent", "gemini-cli")
	if n := strings.Count(sessions, "gemini:"); n != 1 {
		t.Errorf("sessions --agent gemini-cli lists %d imported sessions:\n%s", n, sessions)
	}
	run("export", id, "--to", "atif", "--check")
}

// TestGeminiCLIInstall installs bbengine's hooks, MCP server and base
// URL for the user, as `bbengine install gemini --user` does, and runs
// the real Gemini CLI with no GOOGLE_GEMINI_BASE_URL in its environment:
// it must reach the fake through ~/.gemini/.env, start the MCP server
// (its tools reach the model) and run the hook at SessionStart and BeforeAgent with the events our
// parser reads. A wrapper named bbengine-e2e logs the hook's stdin and
// its --verbose line, then runs the built bbengine.
func TestGeminiCLIInstall(t *testing.T) {
	gemImpCommand(t)
	bin := buildBBEngine(t, t.TempDir())
	dir := t.TempDir()
	wrapDir := t.TempDir()
	wrapper := filepath.Join(wrapDir, "bbengine-e2e")
	hookLog := wrapper + ".log"
	script := "#!/bin/sh\ncase \" $* \" in\n" +
		"*\" hook \"*) tee -a '" + hookLog + "' | '" + bin + "' \"$@\" --verbose 2>>'" + hookLog + "'; echo >>'" + hookLog + "' ;;\n" +
		"*) exec '" + bin + "' \"$@\" ;;\nesac\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	_, fake := gemImpRun(t, func(home, baseURL string) bool {
		changes, err := gemini.Agent{}.Install(&agents.Setup{Exe: wrapper, Dir: dir, BaseURL: baseURL, MCP: true, Hooks: true, User: true, Home: home})
		if err != nil {
			t.Fatal(err)
		}
		for _, ch := range changes {
			t.Logf("%s %s\n%s", ch.Action, ch.File, ch.Diff())
			if err := ch.Apply("20260101T000000Z"); err != nil {
				t.Fatal(err)
			}
		}
		return true // the base URL comes from ~/.gemini/.env
	})
	b, err := os.ReadFile(hookLog)
	if err != nil {
		t.Fatalf("the hook never ran: %v", err)
	}
	t.Logf("hook log:\n%s", b)
	for _, w := range []string{`"hook_event_name":"SessionStart"`, `"hook_event_name":"BeforeAgent"`, `"session_id":"`, gemImpMarker} {
		if !strings.Contains(string(b), w) {
			t.Errorf("the hook's input lacks %s", w)
		}
	}
	fake.mu.Lock()
	defer fake.mu.Unlock()
	var mcp []string
	for name := range fake.tools {
		if strings.Contains(name, "memory_search") {
			mcp = append(mcp, name)
		}
	}
	if len(mcp) == 0 {
		t.Errorf("the model was offered no bbengine MCP tool; tools: %v", fake.tools)
	}
}

// TestGeminiImportGrowing imports the Gemini CLI 0.61.0 fixture as the
// CLI writes it: first up to the middle of a line (a write in progress,
// left for later), then the rest. The session must come out as from one
// import of the whole file, with import --check clean.
func TestGeminiImportGrowing(t *testing.T) {
	whole, err := os.ReadFile(filepath.Join("..", "agents", "gemini", "testdata", "gemini-cli-0.61.0-tools.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(dir string, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := cli.Main(append([]string{"bbengine", "--dir", dir}, args...), &out, &errb); code != 0 {
			t.Fatalf("bbengine %v: exit %d:\n%s%s", args, code, out.String(), errb.String())
		}
		return out.String() + errb.String()
	}
	chats := filepath.Join(t.TempDir(), "tmp", "003", "chats")
	if err := os.MkdirAll(chats, 0o700); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(chats, "session-2026-11-27T06-36-3f849cf4.jsonl")
	cut := bytes.Index(whole, []byte(`"toolCalls"`)) // inside line 7
	if err := os.WriteFile(log, whole[:cut], 0o600); err != nil {
		t.Fatal(err)
	}
	grown := t.TempDir()
	if out := run(grown, "import", "gemini", chats); !strings.Contains(out, "imported 6 records") {
		t.Errorf("first import:\n%s", out)
	}
	if err := os.WriteFile(log, whole, 0o600); err != nil {
		t.Fatal(err)
	}
	if out := run(grown, "import", "gemini", chats, "--check"); !strings.Contains(out, "imported 10 records") || !strings.Contains(out, "nothing lost") {
		t.Errorf("second import:\n%s", out)
	}
	once := t.TempDir()
	run(once, "import", "gemini", chats)
	id := "gemini:3f849cf4-c2a2-4b67-a9c5-29d3a4ec5e1d"
	a, b := run(grown, "show", id, "--format", "json"), run(once, "show", id, "--format", "json")
	if a != b {
		t.Errorf("imported in two pieces:\n%s\nin one:\n%s", a, b)
	}
}
