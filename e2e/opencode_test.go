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
	"testing"
	"time"
)

// ocModel is the model of the fake provider the runs use.
const ocModel = "fake-1"

// ocRequest is the part of an OpenAI chat request the fake reads.
type ocRequest struct {
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []json.RawMessage `json:"tools"`
}

// system returns the text of the request's system messages.
func (r *ocRequest) system() string {
	var b strings.Builder
	for _, m := range r.Messages {
		if m.Role == "system" {
			b.Write(m.Content)
		}
	}
	return b.String()
}

// ocAnswer plays the model for one `opencode run "Run echo hi with bash"`
// (design section 4.5): the title call gets a title, a turn whose last
// message is the user's gets text and a bash call (call_1), and the turn
// after the tool's result gets reasoning and text. Every answer is SSE;
// any other path is a 404, so an unexpected call fails the test.
func ocAnswer(s *seen, w http.ResponseWriter) {
	if s.Method != http.MethodPost || !strings.HasSuffix(s.Path, "/chat/completions") {
		http.Error(w, "e2e fake: no such path "+s.Path, http.StatusNotFound)
		return
	}
	var req ocRequest
	if err := json.Unmarshal(s.Body, &req); err != nil || len(req.Messages) == 0 {
		http.Error(w, "e2e fake: bad request", http.StatusBadRequest)
		return
	}
	prompt := len(s.Body) / 4
	usage := func(out, reasoning int) string {
		return fmt.Sprintf(`{"id":"chatcmpl-e2e","object":"chat.completion.chunk","created":1,"model":%q,"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":40},"completion_tokens_details":{"reasoning_tokens":%d}}}`,
			ocModel, prompt, out, prompt+out, reasoning)
	}
	chunk := func(delta, finish string) string {
		f := "null"
		if finish != "" {
			f = jsonString(finish)
		}
		return fmt.Sprintf(`{"id":"chatcmpl-e2e","object":"chat.completion.chunk","created":1,"model":%q,"choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`, ocModel, delta, f)
	}
	var events []string
	switch last := req.Messages[len(req.Messages)-1].Role; {
	case len(req.Tools) == 0 && strings.Contains(req.system(), "title generator"):
		events = []string{chunk(`{"role":"assistant","content":"Echo hi"}`, ""), chunk(`{}`, "stop"), usage(3, 0)}
	case last == "user":
		events = []string{
			chunk(`{"role":"assistant","content":"I will run it."}`, ""),
			chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"bash","arguments":""}}]}`, ""),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"command\":\"echo hi\",\"description\":\"Print hi\"}"}}]}`, ""),
			chunk(`{}`, "tool_calls"),
			usage(7, 2),
		}
	case last == "tool":
		events = []string{
			chunk(`{"role":"assistant","reasoning_content":"done thinking"}`, ""),
			chunk(`{"content":"It printed hi."}`, ""),
			chunk(`{}`, "stop"),
			usage(7, 2),
		}
	default:
		http.Error(w, "e2e fake: no answer for a request whose last message is "+last, http.StatusBadRequest)
		return
	}
	var sse []string
	for _, e := range events {
		sse = append(sse, "data: "+e+"\n\n")
	}
	sse = append(sse, "data: [DONE]\n\n")
	writeSSE(w, sse)
}

// ocCommand returns the path of the opencode binary, skipping the test
// when it is not installed.
func ocCommand(t *testing.T) string {
	t.Helper()
	dir := requireNodeModules(t)
	bin := filepath.Join(dir, "node_modules", ".bin", "opencode")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("opencode is not installed (run `npm ci --prefix e2e/node`): %v", err)
	}
	return bin
}

// ocConfig is ~/.config/opencode/opencode.json of a run (design section
// 2.1): no update, sharing or plugins, and the fake provider at baseURL.
func ocConfig(baseURL string) string {
	return `{
  "$schema": "https://opencode.ai/config.json",
  "autoupdate": false,
  "share": "disabled",
  "plugin": [],
  "model": "fake/` + ocModel + `",
  "provider": {
    "fake": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "e2e fake",
      "options": {"baseURL": ` + jsonString(baseURL) + `, "apiKey": "sk-e2e-secret"},
      "models": {"` + ocModel + `": {"name": "Fake 1"}}
    }
  }
}
`
}

// ocHome makes a home for one run: the config of ocConfig, a config
// directory that already lists @opencode-ai/plugin (else opencode
// installs it from the registry in the background), and a git
// repository with one commit to work in. It returns the home and the
// repository.
func ocHome(t *testing.T, baseURL string) (home, repo string) {
	t.Helper()
	home = t.TempDir()
	cfg := filepath.Join(home, ".config", "opencode")
	plugin := filepath.Join(cfg, "node_modules", "@opencode-ai", "plugin")
	repo = filepath.Join(home, "proj")
	for _, d := range []string{plugin, repo} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(cfg, "opencode.json"): ocConfig(baseURL),
		filepath.Join(cfg, "package.json"):  `{"dependencies":{"@opencode-ai/plugin":"1.18.33"}}` + "\n",
		filepath.Join(cfg, "package-lock.json"): `{"name":"opencode","lockfileVersion":3,"requires":true,"packages":{` +
			`"":{"dependencies":{"@opencode-ai/plugin":"1.18.33"}},` +
			`"node_modules/@opencode-ai/plugin":{"version":"1.18.33"}}}` + "\n",
		filepath.Join(plugin, "package.json"): `{"name":"@opencode-ai/plugin","version":"1.18.33","main":"index.js"}` + "\n",
		filepath.Join(plugin, "index.js"):     "export {}\n",
		filepath.Join(repo, "README.md"):      "e2e\n",
	}
	for p, body := range files {
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"-c", "user.name=e2e", "-c", "user.email=e2e@example.invalid", "commit", "-q", "-m", "init"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "HOME="+home, "GIT_CONFIG_NOSYSTEM=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return home, repo
}

// ocEnv is the whole environment of a run (design section 2.3).
func ocEnv(home string, tw *tripwire) []string {
	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"TMPDIR=" + home,
		"SHELL=/bin/bash",
		"LANG=C.UTF-8",
		"TERM=dumb",
		"NO_COLOR=1",
		"CI=1",
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_SHARE=1",
	}
	if tw != nil {
		env = append(env, tw.env()...)
	}
	return env
}

// ocRun runs `opencode run "Run echo hi with bash"` in a fresh home whose
// provider's base URL is baseURL, and returns the home. No request may
// leave the machine (a tripwire takes them).
func ocRun(t *testing.T, baseURL string) string {
	t.Helper()
	bin := ocCommand(t)
	home, repo := ocHome(t, baseURL)
	tw := newTripwire(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "Run echo hi with bash")
	cmd.Dir = repo
	cmd.Env = ocEnv(home, tw)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	logOutput(t, "opencode stdout", stdout.Bytes())
	logOutput(t, "opencode stderr", stderr.Bytes())
	if err != nil {
		t.Fatalf("opencode run: %v", err)
	}
	if a := tw.attempts(); len(a) > 0 {
		t.Errorf("opencode tried to reach the network: %v", a)
	}
	return home
}

// ocDB returns the database of a run's home.
func ocDB(home string) string {
	return filepath.Join(home, ".local", "share", "opencode", "opencode.db")
}

// ocKeepFixture copies a run's database and its -wal, as they are, to
// the files BBENGINE_OPENCODE_FIXTURE names (FILE.db and FILE.db-wal).
func ocKeepFixture(t *testing.T, home string) {
	dst := os.Getenv("BBENGINE_OPENCODE_FIXTURE")
	if dst == "" {
		return
	}
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(ocDB(home) + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst+suffix, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpencodeDirect runs the real opencode straight against the fake,
// with no proxy: the run must end with the fake's final text and write
// its database with every row in the -wal. BBENGINE_OPENCODE_FIXTURE=FILE
// keeps FILE and FILE-wal (agents/opencode/testdata).
func TestOpencodeDirect(t *testing.T) {
	f := newFake(t, ocAnswer)
	home := ocRun(t, f.URL+"/v1")
	if n := len(f.requests()); n != 3 {
		t.Errorf("the fake saw %d requests, want 3 (title, two turns)", n)
	}
	for _, s := range f.requests() {
		if got := s.Header.Get("X-Session-Affinity"); !strings.HasPrefix(got, "ses_") {
			t.Errorf("request %d: x-session-affinity %q, want ses_…", s.Seq, got)
		}
	}
	ocKeepFixture(t, home)
}
