package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/cli"
	"github.com/bbengine/bbengine/engine"
)

// TestClaudeCodeResumedThroughProxy runs one Claude Code session twice
// (docs/design/merge.md 2.12, "Partial"): first `claude -p --session-id
// <uuid>` straight to the fake Messages API, then `claude -p --resume
// <uuid>` through the proxy, and imports the session's log into the
// recorded directory. The first run's calls are in the log alone, the
// second's on both sides: one session, each call the fake answered
// counted once, and the history the resumed request re-sent is not in
// the timeline twice.
func TestClaudeCodeResumedThroughProxy(t *testing.T) {
	dir := requireNodeModules(t)
	argv, version := claudeCommand(t, dir)
	t.Logf("Claude Code %s", version)
	tmp := t.TempDir()
	home, config, work := filepath.Join(tmp, "home"), filepath.Join(tmp, "config"), filepath.Join(tmp, "work")
	for _, d := range []string{home, config, work} {
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
	rg := newRig(t, up.URL)
	tw := newTripwire(t)
	loopbackOnly(t, up.URL)
	loopbackOnly(t, rg.srv.URL)
	session := "3b5c9d1e-2f4a-4b6c-8d0e-1f2a3b4c5d6e"

	claude := func(baseURL string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], append(args, "--output-format", "text",
			"--allowedTools", "Bash(echo hello)", "Read")...)...)
		cmd.Dir = work
		cmd.Env = append(claudeEnv(os.Getenv("PATH"), home, config, tmp, baseURL, apiKey), tw.env()...)
		cmd.WaitDelay = 5 * time.Second
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			logOutput(t, "claude stderr", stderr.Bytes())
			t.Fatalf("claude %v: %v", args, err)
		}
		return stdout.String()
	}
	prompt := ccMarker + ": run `echo hello` with the Bash tool, then read note.txt, then say what both said."
	if out := claude(up.URL, "-p", prompt, "--session-id", session); !strings.Contains(out, "E2E done") {
		t.Fatalf("the first run printed %q", out)
	}
	direct := len(up.requests())
	again := ccMarker + ": say it again."
	if out := claude(rg.srv.URL, "-p", again, "--resume", session); !strings.Contains(out, "E2E done") {
		t.Fatalf("the resumed run printed %q", out)
	}
	proxied := len(up.requests()) - direct
	t.Logf("the fake answered %d requests straight, %d through the proxy", direct, proxied)
	if a := tw.attempts(); len(a) > 0 {
		t.Errorf("Claude Code tried to reach the outside: %v", a)
	}
	rg.stop(t)
	if err := rg.log.Close(); err != nil {
		t.Fatal(err)
	}

	run := func(args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		if code := cli.Main(append([]string{"bbengine", "--dir", rg.dir}, args...), &out, &errb); code != 0 {
			t.Fatalf("bbengine %v: exit %d:\n%s%s", args, code, out.String(), errb.String())
		}
		return out.String()
	}
	run("import", "claude", filepath.Join(config, "projects"))
	var list []engine.Session
	if err := json.Unmarshal([]byte(run("sessions", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != session || list[0].Merged == nil {
		t.Fatalf("sessions: %+v, want %s once, merged", list, session)
	}
	t.Logf("merged: %+v", *list[0].Merged)

	// Every call the fake answered, straight or proxied, once.
	var want api.UsageTokens
	cc.mu.Lock()
	calls := len(cc.usage)
	for _, u := range cc.usage {
		want.Input += u.Input
		want.Output += u.Output
		want.CacheRead += u.CacheRead
		want.CacheCreation += u.CacheCreation
	}
	cc.mu.Unlock()
	var rep api.UsageReport
	if err := json.Unmarshal([]byte(run("usage", "session", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	got := rep.Total
	t.Logf("usage: %d calls %+v; the fake answered %d calls %+v", got.Calls, got.UsageTokens, calls, want)
	if got.Calls != calls || got.Input != want.Input || got.Output != want.Output || got.CacheRead != want.CacheRead || got.CacheCreation != want.CacheCreation {
		t.Errorf("usage counts %d calls %+v; the fake answered %d calls %+v, each once", got.Calls, got.UsageTokens, calls, want)
	}

	// The timeline: each fact once, the re-sent history paired with the
	// log's record of it.
	var v struct {
		Events []engine.Event `json:"events"`
	}
	if err := json.Unmarshal([]byte(run("show", session, "--format", "json")), &v); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, ev := range v.Events {
		switch {
		case ev.Tool != nil:
			seen[string(ev.Kind)+" "+ev.Tool.ID]++
		case ev.Kind == engine.KindModelCall && ev.Call != nil:
			seen["call "+ev.Call.ResponseID]++
		case ev.Kind == engine.KindMessage && ev.Meta == "" && ev.Role == "user":
			seen["prompt "+ev.Text]++
		}
		// What the resumed request re-sent is paired with the log's
		// record of it: nothing of it is left on its own.
		if ev.Prov.Side == "request" && len(ev.Also) == 0 && (ev.Kind == engine.KindToolCall || ev.Kind == engine.KindToolResult ||
			ev.Kind == engine.KindThinking || ev.Kind == engine.KindMessage && ev.Role == "assistant") {
			t.Errorf("event %d (%s %q) is the re-sent history alone, not paired with the log's", ev.Seq, ev.Kind, ev.Text)
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%q appears %d times in the merged timeline", k, n)
		}
	}
	if seen["tool_call "+ccBashID] != 1 || seen["prompt "+prompt] != 1 || seen["prompt "+again] != 1 || len(seen) != 4+4+2 {
		t.Errorf("the timeline holds %v; want 4 calls, 2 tool calls and their results, the 2 prompts, once each", seen)
	}
	text := run("show", session)
	t.Logf("bbengine show %s:\n%s", session, text)
	run("rebuild")
	if run("show", session) != text {
		t.Errorf("show after rebuild differs")
	}
}
