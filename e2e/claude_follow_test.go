package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
)

// TestClaudeCodeImportFollow runs Claude Code through the bbengine proxy
// binary while `bbengine import claude --follow` imports its log as it
// is written, through the same proxy (the import before, during and
// after the calls: design 2.6, "interleaved"). Then, and after a
// rebuild, the session is one, each call counted once.
func TestClaudeCodeImportFollow(t *testing.T) {
	nm := requireNodeModules(t)
	argv, version := claudeCommand(t, nm)
	t.Logf("Claude Code %s", version)
	bin := os.Getenv("BBENGINE_FAULT_BIN")
	if bin == "" {
		bin = buildBBEngine(t, t.TempDir())
	}
	tmp := t.TempDir()
	home, config, work := filepath.Join(tmp, "home"), filepath.Join(tmp, "config"), filepath.Join(tmp, "work")
	projects := filepath.Join(config, "projects")
	for _, d := range []string{home, projects, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	nonce := "nonce-" + randomHex(8)
	note := filepath.Join(work, "note.txt")
	if err := os.WriteFile(note, []byte(nonce+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	apiKey := "sk-ant-api03-fake" + randomHex(24) + "-E2E"
	cc := &ccFake{note: note, nonce: nonce, usage: map[int]ausage{}}
	up := newFake(t, messagesAPI(cc.answer))
	tw := newTripwire(t)
	dir := t.TempDir()
	p := startKilledProxy(t, bin, dir, up.URL, "interval")
	defer func() {
		if p.alive() {
			p.kill()
		}
	}()

	follow := exec.Command(bin, "--dir", dir, "import", "claude", projects, "--follow", "--interval", "50ms")
	follow.Env = append(os.Environ(), "HOME="+t.TempDir())
	var followOut bytes.Buffer
	follow.Stdout, follow.Stderr = &followOut, &followOut
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	followDone := make(chan error, 1)
	go func() { followDone <- follow.Wait() }()

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prompt := ccMarker + ": run `echo hello` with the Bash tool, then read note.txt, then say what both said."
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], "-p", prompt, "--output-format", "text",
		"--allowedTools", "Bash(echo hello)", "Read")...)
	cmd.Dir = work
	cmd.Env = append(claudeEnv(os.Getenv("PATH"), home, config, tmp, "http://"+p.addr, apiKey), tw.env()...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || !strings.Contains(stdout.String(), "E2E done") {
		logOutput(t, "claude stderr", stderr.Bytes())
		t.Fatalf("claude: %v, printed %q", err, stdout.String())
	}
	if a := tw.attempts(); len(a) > 0 {
		t.Errorf("Claude Code tried to reach the outside: %v", a)
	}
	// A few more rounds of the follower, then Ctrl-C.
	time.Sleep(500 * time.Millisecond)
	follow.Process.Signal(syscall.SIGINT)
	select {
	case err := <-followDone:
		// Ctrl-C ends the follower (it may die of the signal).
		if ws, ok := follow.ProcessState.Sys().(syscall.WaitStatus); err != nil && !(ok && ws.Signaled() && ws.Signal() == syscall.SIGINT) {
			t.Fatalf("import --follow: %v\n%s", err, followOut.String())
		}
	case <-time.After(30 * time.Second):
		follow.Process.Kill()
		t.Fatalf("import --follow did not stop on SIGINT:\n%s", followOut.String())
	}
	t.Logf("import --follow said:\n%s", followOut.String())

	run := func(args ...string) string {
		t.Helper()
		c := exec.Command(bin, append([]string{"--dir", dir}, args...)...)
		c.Env = append(os.Environ(), "HOME="+t.TempDir())
		var out, errb bytes.Buffer
		c.Stdout, c.Stderr = &out, &errb
		if err := c.Run(); err != nil {
			t.Fatalf("bbengine %v: %v\n%s", args, err, errb.String())
		}
		return out.String()
	}
	check := func(when string) string {
		t.Helper()
		var list []engine.Session
		if err := json.Unmarshal([]byte(run("sessions", "--json")), &list); err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].Merged == nil {
			t.Fatalf("%s: sessions %+v, want one, merged", when, list)
		}
		var rep api.UsageReport
		if err := json.Unmarshal([]byte(run("usage", "session", "--json")), &rep); err != nil {
			t.Fatal(err)
		}
		var want api.UsageTokens
		cc.mu.Lock()
		calls := len(cc.usage)
		for _, u := range cc.usage {
			want.Input += u.Input
			want.Output += u.Output
		}
		cc.mu.Unlock()
		if rep.Total.Calls != calls || rep.Total.Input != want.Input || rep.Total.Output != want.Output {
			t.Errorf("%s: usage %d calls %+v; the fake answered %d calls %+v, each once", when, rep.Total.Calls, rep.Total.UsageTokens, calls, want)
		}
		text := run("show", list[0].ID)
		if strings.Count(text, "t:Bash id="+ccBashID) != 1 || strings.Count(text, "t:Read id="+ccReadID) != 1 || strings.Count(text, "\nu: "+prompt) != 1 {
			t.Errorf("%s: show has a tool call or the prompt other than once:\n%s", when, text)
		}
		t.Logf("%s: %s merged %+v", when, list[0].ID, *list[0].Merged)
		return text
	}
	live := check("through the running proxy")
	p.kill() // the WAL and the derived state as a crash leaves them
	if got := check("after the proxy was killed"); got != live {
		t.Errorf("show differs once the proxy is gone")
	}
	run("rebuild")
	if got := check("after rebuild"); got != live {
		t.Errorf("show differs after rebuild")
	}
}
