package e2e

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"
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

// ocStartProxy starts `bbengine proxy`, the binary, recording into dir
// with its OpenAI route going to upstream.
func ocStartProxy(t *testing.T, bin, dir, upstream string) *gemLiveProxy {
	t.Helper()
	p := &gemLiveProxy{done: make(chan error, 1)}
	p.cmd = exec.Command(bin, "--dir", dir, "proxy", "--listen", "127.0.0.1:0", "--upstream", "openai="+upstream,
		"--sync", "none", "--shutdown-timeout", "5s")
	p.cmd.Stderr = &p.out
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			p.out.Write([]byte(line + "\n"))
			if i := strings.Index(line, "listening on http://"); i >= 0 && !sent {
				a, _, _ := strings.Cut(line[i+len("listening on http://"):], " ")
				addr <- a
				sent = true
			}
		}
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() { p.stop(t) })
	select {
	case p.addr = <-addr:
	case <-time.After(30 * time.Second):
		t.Fatalf("bbengine proxy did not start:\n%s", p.out.String())
	}
	loopbackOnly(t, "http://"+p.addr)
	return p
}

// ocTimeline is the part of `show --format json` read here.
type ocTimeline struct {
	Session struct {
		ID      string `json:"id"`
		Agent   string `json:"agent"`
		Threads int    `json:"threads"`
		Usage   struct {
			Input, Output, CacheRead int64
		} `json:"usage"`
	} `json:"session"`
	Events []struct {
		Kind   string `json:"kind"`
		Thread int    `json:"thread"`
		Role   string `json:"role"`
		Text   string `json:"text"`
		Tool   *struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"tool"`
	} `json:"events"`
}

// ocShow returns session's timeline in dir.
func ocShow(t *testing.T, bin, dir, session string) ocTimeline {
	t.Helper()
	out, err := exec.Command(bin, "--dir", dir, "show", session, "--format", "json").CombinedOutput()
	if err != nil {
		t.Fatalf("bbengine show %s: %v\n%s", session, err, out)
	}
	var tl ocTimeline
	if err := json.Unmarshal(out, &tl); err != nil {
		t.Fatalf("bbengine show %s: %v\n%s", session, err, out)
	}
	return tl
}

// ocCheckTool checks that tl holds the bash call call_1 and its result
// "hi", each once.
func ocCheckTool(t *testing.T, what string, tl ocTimeline) {
	t.Helper()
	var calls, results int
	for _, e := range tl.Events {
		if e.Tool == nil || e.Tool.ID != "call_1" {
			continue
		}
		switch e.Kind {
		case "tool_call":
			calls++
			if e.Tool.Name != "bash" {
				t.Errorf("%s: call_1 is %s, want bash", what, e.Tool.Name)
			}
		case "tool_result":
			results++
			if !strings.Contains(e.Text, "hi") {
				t.Errorf("%s: the result of call_1 is %q", what, e.Text)
			}
		}
	}
	if calls != 1 || results != 1 {
		t.Errorf("%s: %d calls and %d results of call_1, want one each", what, calls, results)
	}
}

// TestOpencodeProxy runs the real opencode through `bbengine proxy`, set
// up by `bbengine install opencode --user --base-url`, against the fake,
// and checks the run three ways (issue 22 part 5): through the proxy, it
// is one session filed under opencode's ses_ id, with the title call a
// thread of its own beside the main one, and the bash call with its
// result; imported from the database opencode wrote (every row still in
// its -wal), with --check; and exported to ATIF with --check. Imported
// into the directory that recorded it, the log merges with the proxied
// session (issue 22 part 6): one session, each call counted once.
func TestOpencodeProxy(t *testing.T) {
	bin := buildBBEngine(t, t.TempDir())
	f := newFake(t, ocAnswer)
	loopbackOnly(t, f.URL)
	dir := filepath.Join(t.TempDir(), "data")
	px := ocStartProxy(t, bin, dir, f.URL)
	home, repo := ocHome(t, "http://127.0.0.1:1/unused")
	// The provider and the MCP server as install writes them, then the
	// models, which the user lists.
	cfg := filepath.Join(home, ".config", "opencode", "opencode.json")
	os.WriteFile(cfg, []byte(`{"$schema": "https://opencode.ai/config.json", "autoupdate": false, "share": "disabled", "plugin": []}`+"\n"), 0o644)
	install := exec.Command(bin, "--dir", dir, "install", "opencode", "--user", "--base-url", "http://"+px.addr)
	install.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME=")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("bbengine install opencode: %v\n%s", err, out)
	}
	var conf map[string]any
	b, _ := os.ReadFile(cfg)
	if err := json.Unmarshal(b, &conf); err != nil {
		t.Fatalf("%s: %v\n%s", cfg, err, b)
	}
	p := conf["provider"].(map[string]any)["bbengine"].(map[string]any)
	if base := p["options"].(map[string]any)["baseURL"]; base != "http://"+px.addr+"/v1" {
		t.Fatalf("install set baseURL %v", base)
	}
	p["options"].(map[string]any)["apiKey"] = "sk-e2e-secret"
	p["models"] = map[string]any{ocModel: map[string]any{"name": "Fake 1"}}
	conf["model"] = "bbengine/" + ocModel
	b, _ = json.MarshalIndent(conf, "", "  ")
	os.WriteFile(cfg, b, 0o644)
	t.Logf("%s:\n%s", cfg, b)

	tw := newTripwire(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ocCommand(t), "run", "Run echo hi with bash")
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
	reqs := f.requests()
	if len(reqs) != 3 {
		t.Fatalf("the fake saw %d requests, want 3 (title, two turns)", len(reqs))
	}
	ses := reqs[0].Header.Get("X-Session-Affinity")
	if !strings.HasPrefix(ses, "ses_") {
		t.Fatalf("x-session-affinity %q", ses)
	}
	// The MCP server install registered gave opencode its tools.
	if !bytes.Contains(reqs[1].Body, []byte(`"bbengine_`)) {
		t.Errorf("the first turn offers no tool of bbengine's MCP server")
	}
	if got := reqs[1].Header.Get("Authorization"); got != "Bearer sk-e2e-secret" {
		t.Errorf("the upstream got authorization %q", got)
	}
	px.stop(t)
	// The key opencode sent is redacted at rest.
	scanFiles(t, dir, "sk-e2e-secret")

	// Through the proxy.
	list := gemLiveSessions(t, bin, dir)
	if len(list) != 1 || !strings.Contains(list[0].ID, ses) || list[0].Requests != 3 || list[0].Agent != "opencode" {
		t.Fatalf("sessions %+v, want one of %s with 3 requests", list, ses)
	}
	live := ocShow(t, bin, dir, list[0].ID)
	if live.Session.Threads != 2 {
		t.Errorf("the proxied session has %d threads, want 2 (the title call's, the main one)", live.Session.Threads)
	}
	ocCheckTool(t, "proxied", live)
	for _, e := range live.Events {
		if e.Tool != nil && e.Thread != live.Events[len(live.Events)-1].Thread {
			t.Errorf("the tool call is in thread %d, not the main thread", e.Thread)
		}
	}
	out, err := exec.Command(bin, "--dir", dir, "export", list[0].ID, "--to", "atif", "--check").CombinedOutput()
	if err != nil {
		t.Errorf("export %s --to atif --check: %v\n%s", list[0].ID, err, out)
	}

	// Imported from the database, read while its -wal holds every row.
	if fi, err := os.Stat(ocDB(home) + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("no -wal beside the database: %v", err)
	}
	idir := filepath.Join(t.TempDir(), "import")
	imp := exec.Command(bin, "--dir", idir, "import", "opencode", "--all", "--check")
	imp.Env = append(os.Environ(), "HOME="+home, "XDG_DATA_HOME=", "OPENCODE_DB=")
	out, err = imp.CombinedOutput()
	t.Logf("import:\n%s", out)
	if err != nil || !bytes.Contains(out, []byte("import --check: 1 sessions, nothing lost")) {
		t.Fatalf("import opencode --all --check: %v", err)
	}
	id := "opencode:" + ses
	imported := ocShow(t, bin, idir, id)
	ocCheckTool(t, "imported", imported)
	var prompt bool
	for _, e := range imported.Events {
		prompt = prompt || e.Kind == "message" && e.Role == "user" && e.Text == `"Run echo hi with bash"`
	}
	if !prompt || imported.Session.Agent != "opencode" {
		t.Errorf("the imported session lacks the prompt (quoted, as opencode run stores it)")
	}
	out, err = exec.Command(bin, "--dir", idir, "export", id, "--to", "atif", "--check").CombinedOutput()
	if err != nil {
		t.Errorf("export %s --to atif --check: %v\n%s", id, err, out)
	}

	// Imported into the directory that recorded it: one session, the
	// proxied one, whose calls count once (issue 22 part 6).
	imp = exec.Command(bin, "--dir", dir, "import", "opencode", "--all", "--check")
	imp.Env = append(os.Environ(), "HOME="+home, "XDG_DATA_HOME=", "OPENCODE_DB=")
	out, err = imp.CombinedOutput()
	t.Logf("import into the proxied directory:\n%s", out)
	if err != nil || !bytes.Contains(out, []byte("nothing lost")) || !bytes.Contains(out, []byte("merged 1 sessions with proxied ones")) {
		t.Fatalf("import opencode --all --check into the proxied directory: %v", err)
	}
	merged := gemLiveSessions(t, bin, dir)
	if len(merged) != 1 || merged[0].ID != list[0].ID || merged[0].Requests != 3 {
		text, _ := exec.Command(bin, "--dir", dir, "show", id).CombinedOutput()
		t.Logf("show %s:\n%s", id, text)
		t.Fatalf("sessions after the import %+v, want %s alone with its 3 requests", merged, list[0].ID)
	}
	view := ocShow(t, bin, dir, id)
	if view.Session.ID != list[0].ID {
		t.Errorf("%s reads as %s, want the merged session %s", id, view.Session.ID, list[0].ID)
	}
	ocCheckTool(t, "merged", view)
	if view.Session.Usage != live.Session.Usage {
		t.Errorf("merged usage %+v, want the proxied session's %+v: each call once", view.Session.Usage, live.Session.Usage)
	}
	out, err = exec.Command(bin, "--dir", dir, "export", list[0].ID, "--to", "atif", "--check").CombinedOutput()
	if err != nil {
		t.Errorf("export of the merged session --to atif --check: %v\n%s", err, out)
	}
	ocKeepFixture(t, home)
}

// TestOpencodeV2 makes opencode write its newer session store,
// session_message, through the v2 HTTP API of `opencode serve` (design
// section 4.5), and imports it: one session, the bash call with its
// result, import --check and export to ATIF with --check clean.
// BBENGINE_OPENCODE_V2_FIXTURE=FILE keeps FILE and FILE-wal.
func TestOpencodeV2(t *testing.T) {
	bin := buildBBEngine(t, t.TempDir())
	f := newFake(t, ocAnswer)
	home, repo := ocHome(t, f.URL+"/v1")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	tw := newTripwire(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, ocCommand(t), "serve", "--port", strconv.Itoa(port), "--hostname", "127.0.0.1")
	cmd.Dir = repo
	cmd.Env = ocEnv(home, tw)
	cmd.WaitDelay = 5 * time.Second
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		logOutput(t, "opencode serve", []byte(out.String()))
	}
	defer stop()
	for !strings.Contains(out.String(), "server listening on") {
		if ctx.Err() != nil {
			t.Fatal("opencode serve did not start")
		}
		time.Sleep(100 * time.Millisecond)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	post := func(path, body string) []byte {
		t.Helper()
		q := "?directory=" + url.QueryEscape(repo)
		for try := 0; ; try++ {
			resp, err := http.Post(base+path+q, "application/json", strings.NewReader(body))
			if err != nil {
				if try < 100 {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				t.Fatalf("POST %s: %v", path, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				t.Fatalf("POST %s: %s\n%s", path, resp.Status, b)
			}
			return b
		}
	}
	var created struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	b := post("/api/session", "{}")
	ses := created.Data
	if json.Unmarshal(b, &created) != nil || !strings.HasPrefix(created.Data.ID, "ses_") {
		t.Fatalf("POST /api/session: %s", b)
	}
	ses = created.Data
	post("/api/session/"+ses.ID+"/prompt", `{"prompt":{"text":"Run echo hi with bash"}}`)
	// The API does not wait for the run: poll the database until both
	// assistant rows are complete.
	db, err := sql.Open("sqlite", "file:"+ocDB(home)+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for {
		var n int
		db.QueryRow(`select count(*) from session_message where type = 'assistant' and json_extract(data, '$.time.completed') is not null`).Scan(&n)
		if n >= 2 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the run did not finish; the fake saw %d requests", len(f.requests()))
		}
		time.Sleep(200 * time.Millisecond)
	}
	db.Close()
	stop()
	if a := tw.attempts(); len(a) > 0 {
		t.Errorf("opencode tried to reach the network: %v", a)
	}
	if dst := os.Getenv("BBENGINE_OPENCODE_V2_FIXTURE"); dst != "" {
		for _, suffix := range []string{"", "-wal"} {
			b, err := os.ReadFile(ocDB(home) + suffix)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(dst+suffix, b, 0o644)
		}
	}
	dir := filepath.Join(t.TempDir(), "data")
	imp := exec.Command(bin, "--dir", dir, "import", "opencode", "--all", "--check")
	imp.Env = append(os.Environ(), "HOME="+home, "XDG_DATA_HOME=", "OPENCODE_DB=")
	b, err = imp.CombinedOutput()
	t.Logf("import:\n%s", b)
	if err != nil || !bytes.Contains(b, []byte("import --check: 1 sessions, nothing lost")) {
		t.Fatalf("import opencode --all --check: %v", err)
	}
	id := "opencode:" + ses.ID
	ocCheckTool(t, "imported v2", ocShow(t, bin, dir, id))
	if b, err := exec.Command(bin, "--dir", dir, "export", id, "--to", "atif", "--check").CombinedOutput(); err != nil {
		t.Errorf("export %s --to atif --check: %v\n%s", id, err, b)
	}
}

// ocSubagentAnswer plays the model for a run with a subagent (design
// section 2.2, [R4]): the parent's first turn calls the task tool, the
// child (whose requests carry x-parent-session-id) runs bash, and the
// parent's second turn answers with text.
func ocSubagentAnswer(s *seen, w http.ResponseWriter) {
	var req ocRequest
	json.Unmarshal(s.Body, &req)
	child := s.Header.Get("X-Parent-Session-Id") != ""
	if child || len(req.Tools) == 0 || len(req.Messages) == 0 || req.Messages[len(req.Messages)-1].Role != "user" {
		ocAnswer(s, w)
		return
	}
	chunk := func(delta, finish string) string {
		f := "null"
		if finish != "" {
			f = jsonString(finish)
		}
		return "data: " + fmt.Sprintf(`{"id":"chatcmpl-e2e","object":"chat.completion.chunk","created":1,"model":%q,"choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`, ocModel, delta, f) + "\n\n"
	}
	args := jsonString(`{"description":"Echo hi","prompt":"Run echo hi with bash","subagent_type":"general"}`)
	writeSSE(w, []string{
		chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_task","type":"function","function":{"name":"task","arguments":""}}]}`, ""),
		chunk(`{"tool_calls":[{"index":0,"function":{"arguments":`+args+`}}]}`, ""),
		chunk(`{}`, "tool_calls"),
		"data: " + fmt.Sprintf(`{"id":"chatcmpl-e2e","object":"chat.completion.chunk","created":1,"model":%q,"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":7,"total_tokens":107}}`, ocModel) + "\n\n",
		"data: [DONE]\n\n",
	})
}

// TestOpencodeSubagent runs opencode with a subagent (the task tool) and
// imports the database: two sessions, nothing lost, the parent listing
// the child as its subagent with the task call that started it.
// BBENGINE_OPENCODE_SUBAGENT_FIXTURE=FILE keeps FILE and FILE-wal.
func TestOpencodeSubagent(t *testing.T) {
	bin := buildBBEngine(t, t.TempDir())
	f := newFake(t, ocSubagentAnswer)
	home := ocRun(t, f.URL+"/v1")
	var parent, child string
	for _, s := range f.requests() {
		if p := s.Header.Get("X-Parent-Session-Id"); p != "" {
			parent, child = p, s.Header.Get("X-Session-Affinity")
		}
	}
	if parent == "" || child == "" || parent == child {
		t.Fatalf("no child session's request: %d requests", len(f.requests()))
	}
	if dst := os.Getenv("BBENGINE_OPENCODE_SUBAGENT_FIXTURE"); dst != "" {
		for _, suffix := range []string{"", "-wal"} {
			b, err := os.ReadFile(ocDB(home) + suffix)
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(dst+suffix, b, 0o644)
		}
	}
	dir := filepath.Join(t.TempDir(), "data")
	imp := exec.Command(bin, "--dir", dir, "import", "opencode", "--all", "--check")
	imp.Env = append(os.Environ(), "HOME="+home, "XDG_DATA_HOME=", "OPENCODE_DB=")
	b, err := imp.CombinedOutput()
	t.Logf("import:\n%s", b)
	if err != nil || !bytes.Contains(b, []byte("import --check: 2 sessions, nothing lost")) {
		t.Fatalf("import opencode --all --check: %v", err)
	}
	out, err := exec.Command(bin, "--dir", dir, "show", "opencode:"+parent, "--format", "json").CombinedOutput()
	if err != nil {
		t.Fatalf("show: %v\n%s", err, out)
	}
	var v struct {
		Session struct {
			Agents []struct {
				ID, Type, Description, Call string
			} `json:"agents"`
		} `json:"session"`
	}
	json.Unmarshal(out, &v)
	if a := v.Session.Agents; len(a) != 1 || a[0].ID != "opencode:"+child || a[0].Type != "general" || a[0].Call != "call_task" {
		t.Errorf("the parent's agents %+v, want %s started by call_task", a, child)
	}
	ocCheckTool(t, "the child", ocShow(t, bin, dir, "opencode:"+child))
}
