package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/agents/claude"
	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/server"
	"github.com/bbengine/bbengine/wal"
)

// runHookCmd runs the hook command line in this process with stdin and
// returns its stdout and stderr. The hook must exit 0 whatever happens.
func runHookCmd(t *testing.T, stdin string, args ...string) (string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	app := NewApp(&out, &errb)
	app.Reader = strings.NewReader(stdin)
	if err := app.RunContext(context.Background(), flagsFirst(app, append([]string{"bbengine"}, args...))); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, errb.String())
	}
	return out.String(), errb.String()
}

// hookEvent is a hook input as Claude Code writes it.
func hookEvent(event, session, prompt string) string {
	m := map[string]string{"session_id": session, "transcript_path": "/tmp/" + session + ".jsonl", "cwd": "/repo",
		"hook_event_name": event, "permission_mode": "default"}
	if event == "SessionStart" {
		m["source"] = "startup"
		m["model"] = "claude-sonnet-4-5"
	} else {
		m["prompt"] = prompt
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// decodeHook decodes the hook's answer; "" is no answer.
func decodeHook(t *testing.T, out string) (claude.HookOutput, bool) {
	t.Helper()
	if out == "" {
		return claude.HookOutput{}, false
	}
	var raw map[string]map[string]string
	if err := json.Unmarshal([]byte(out), &raw); err != nil || len(raw) != 1 || len(raw["hookSpecificOutput"]) != 2 {
		t.Fatalf("hook output is not {\"hookSpecificOutput\":{hookEventName,additionalContext}}: %v %q", err, out)
	}
	var o claude.HookOutput
	json.Unmarshal([]byte(out), &o)
	return o, true
}

// startTestProxy runs `bbengine proxy` on dir in this process until the
// test ends, and waits until it answers memory queries.
func startTestProxy(t *testing.T, dir string) {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no upstream", http.StatusTeapot) }))
	t.Cleanup(up.Close)
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, &stdout, &stderr, server.Config{Dir: dir, Listen: "127.0.0.1:0", Sync: wal.SyncInterval,
			Proxy: proxy.Options{Upstreams: map[string]string{"anthropic": up.URL}}, Shutdown: 5 * time.Second}, ready)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("proxy: %v\n%s", err, stderr.String())
		}
	})
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("proxy stopped: %v\n%s", err, stderr.String())
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		h, held, _ := engine.ReadHolder(dir)
		if held && h.Addr != "" {
			if _, _, code := run(t, "--dir", dir, "mem", "context", "--session", memSession); code == 0 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy does not answer memory queries:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitHookWork(t *testing.T) { t.Cleanup(api.WaitHookWork) }

// TestHookProxy runs the hook against a running proxy: the pack of the
// imported session comes back in the shape Claude Code and Codex take,
// once per agent session, and the hook says nothing when it has nothing
// to say or cannot read its input.
func TestHookProxy(t *testing.T) {
	dir := t.TempDir()
	importMemory(t, dir)
	startTestProxy(t, dir)
	waitHookWork(t)
	hook := func(stdin string, args ...string) (string, string) {
		return runHookCmd(t, stdin, append([]string{"--dir", dir, "hook", "claude", "--verbose"}, args...)...)
	}

	// SessionStart of the Claude Code session (its bare id: the import
	// is "claude:<id>") injects the pack.
	out, errs := hook(hookEvent("SessionStart", memSession, ""))
	o, ok := decodeHook(t, out)
	if !ok {
		t.Fatalf("SessionStart: no answer; stderr %q", errs)
	}
	md := o.Specific.Context
	if o.Specific.Event != "SessionStart" || !strings.HasPrefix(md, "<"+engine.PackTag+` session="claude:`+memSession+`"`) ||
		!strings.Contains(md, "ARC cache") || !strings.Contains(md, "Never store session tokens") || len(md) > claude.HookMaxChars {
		t.Fatalf("SessionStart answer: event %q, %d characters:\n%s", o.Specific.Event, len(md), md)
	}
	if strings.Contains(md, "LRU cache for the session store because") {
		t.Errorf("the pack holds the superseded decision:\n%s", md)
	}
	if n := strings.Count(errs, "\n"); n != 1 || !strings.Contains(errs, "injected the pack of claude:"+memSession) {
		t.Errorf("--verbose: want one line saying what it did, got %q", errs)
	}
	st, ok := api.ReadHookState(api.HookStatePath(dir, "claude", memSession))
	if !ok || st.PackSession != "claude:"+memSession || st.State == "" || st.Chars != len(md) {
		t.Errorf("hook state: %+v (%v)", st, ok)
	}

	// The prompt that follows in the same Claude Code session adds
	// nothing: the pack is in its context already.
	if out, errs := hook(hookEvent("UserPromptSubmit", memSession, "Tune the ARC cache")); out != "" || !strings.Contains(errs, "was injected at SessionStart") {
		t.Errorf("UserPromptSubmit after SessionStart: %q %q", out, errs)
	}

	// A Claude Code session whose SessionStart said nothing (here: none
	// ran) gets the pack with its first prompt, ranked by the prompt.
	other := "44444444-2222-4333-8444-555555555555"
	out, errs = hook(hookEvent("UserPromptSubmit", other, "Tune the ARC cache eviction"), "--session", memSession, "--task-id", "t-9")
	if o, ok := decodeHook(t, out); !ok || o.Specific.Event != "UserPromptSubmit" ||
		!strings.Contains(o.Specific.Context, "This task: Tune the ARC cache eviction") || !strings.Contains(o.Specific.Context, `task="t-9"`) {
		t.Errorf("first UserPromptSubmit: %q %q", out, errs)
	}
	if out, _ := hook(hookEvent("UserPromptSubmit", other, "And now the tests"), "--session", memSession); out != "" {
		t.Errorf("second UserPromptSubmit injected again: %q", out)
	}

	// A session unknown at SessionStart, of the same project (cwd): it
	// starts with what the project's earlier session left in force,
	// each item saying where it comes from.
	fresh := "88888888-2222-4333-8444-555555555555"
	if out, errs := hook(hookEvent("SessionStart", fresh, "")); !strings.Contains(out, "ARC cache") || !strings.Contains(out, "from session claude:"+memSession) {
		t.Fatalf("SessionStart of a new session of the project: %q %q", out, errs)
	}
	// One of another project starts empty.
	elsewhere := strings.ReplaceAll(hookEvent("SessionStart", "99999999-2222-4333-8444-555555555555", ""), `"cwd":"/repo"`, `"cwd":"/elsewhere"`)
	if out, errs := hook(elsewhere); out != "" || !strings.Contains(errs, "is empty") {
		t.Fatalf("SessionStart of a new session of another project: %q %q", out, errs)
	}
	src := writeFile(t, t.TempDir(), fresh+".jsonl", strings.ReplaceAll(memoryTranscript(), memSession, fresh))
	if out, errs, code := run(t, "--dir", dir, "import", "claude", src, "--quiet"); code != 0 {
		t.Fatalf("import: %d\n%s%s", code, out, errs)
	}
	if out, _, _ := run(t, "--dir", dir, "mem", "context", "--session", fresh); !strings.Contains(out, "ARC cache") {
		t.Fatalf("the new session has no memory yet:\n%s", out)
	}
	if out, errs := hook(hookEvent("UserPromptSubmit", fresh, "Tune the ARC cache")); out != "" || !strings.Contains(errs, "was injected at SessionStart") {
		t.Errorf("UserPromptSubmit after SessionStart: %q %q", out, errs)
	}

	// bbengine run: BBENGINE_SESSION and BBENGINE_TASK_TEXT name the session
	// and the task; the pack reaches the model once in the run.
	t.Setenv("BBENGINE_SESSION", "claude:"+memSession)
	t.Setenv("BBENGINE_TASK_TEXT", "Add metrics to the session store cache")
	t.Setenv("BBENGINE_TASK_ID", "task-2")
	runID := "55555555-2222-4333-8444-555555555555"
	var injected []string
	for _, ev := range []string{hookEvent("SessionStart", runID, ""), hookEvent("UserPromptSubmit", runID, "Add metrics to the session store cache")} {
		if out, _ := hook(ev); out != "" {
			o, _ := decodeHook(t, out)
			injected = append(injected, o.Specific.Event)
			if !strings.Contains(o.Specific.Context, "This task: Add metrics to the session store cache") || !strings.Contains(o.Specific.Context, `task="task-2"`) {
				t.Errorf("bbengine run pack:\n%s", o.Specific.Context)
			}
		}
	}
	if !slices.Equal(injected, []string{"SessionStart"}) {
		t.Errorf("under bbengine run the pack was injected at %v, want once at SessionStart", injected)
	}
	for _, k := range []string{"BBENGINE_SESSION", "BBENGINE_TASK_TEXT", "BBENGINE_TASK_ID"} {
		os.Unsetenv(k)
	}

	// Codex takes the same answer.
	out, _ = runHookCmd(t, hookEvent("SessionStart", memSession, ""), "--dir", dir, "hook", "codex")
	if o, ok := decodeHook(t, out); !ok || o.Specific.Event != "SessionStart" || !strings.Contains(o.Specific.Context, "ARC cache") {
		t.Errorf("hook codex: %q", out)
	}

	// Silence: an unknown session, other events, bad input.
	for _, c := range []struct {
		name, stdin, why string
	}{
		{"unknown session of an unknown project", strings.ReplaceAll(hookEvent("SessionStart", "66666666-2222-4333-8444-555555555555", ""), `"cwd":"/repo"`, `"cwd":"/nowhere"`), "is empty"},
		{"other event", `{"session_id":"` + memSession + `","hook_event_name":"PreToolUse","tool_name":"Bash"}`, `event "PreToolUse"`},
		{"no session", `{"hook_event_name":"SessionStart","source":"startup"}`, "no session"},
		{"not JSON", `{"session_id":`, "not a JSON object"},
		{"empty stdin", "", "not a JSON object"},
		{"array", `[1,2]`, "not a JSON object"},
	} {
		out, errs := hook(c.stdin)
		if out != "" || !strings.Contains(errs, c.why) {
			t.Errorf("%s: stdout %q, stderr %q (want silence because %q)", c.name, out, errs, c.why)
		}
	}
	if out, errs := runHookCmd(t, "{oops", "--dir", dir, "hook", "claude"); out != "" || errs != "" {
		t.Errorf("without --verbose the hook writes nothing: %q %q", out, errs)
	}

	// Latency through the running proxy, measured in this process (the
	// binary adds its start-up; TestClaudeCodeHook measures that).
	var times []time.Duration
	for i := range 30 {
		start := time.Now()
		out, _ := runHookCmd(t, hookEvent("SessionStart", fmt.Sprintf("77777777-2222-4333-8444-%012d", i), ""), "--dir", dir, "hook", "claude", "--session", memSession)
		times = append(times, time.Since(start))
		if out == "" {
			t.Fatalf("run %d: no answer", i)
		}
	}
	slices.Sort(times)
	t.Logf("hook latency through the proxy (in-process, 30 SessionStart runs): min %v, median %v, p90 %v, max %v",
		times[0], times[len(times)/2], times[len(times)*9/10], times[len(times)-1])
}

// TestHookLocal runs the hook with no proxy: it opens the data directory
// itself, and stays silent when it cannot in time, when another process
// holds the directory, or when there is none.
func TestHookLocal(t *testing.T) {
	dir := t.TempDir()
	importMemory(t, dir)
	waitHookWork(t)
	ev := hookEvent("SessionStart", memSession, "")

	out, errs := runHookCmd(t, ev, "--dir", dir, "hook", "claude", "--timeout", "30s", "--verbose")
	if o, ok := decodeHook(t, out); !ok || !strings.Contains(o.Specific.Context, "ARC cache") {
		t.Fatalf("local: %q %q", out, errs)
	}
	t.Logf("local: %s", strings.TrimSpace(errs))

	out, errs = runHookCmd(t, ev, "--dir", dir, "hook", "claude", "--timeout", "1us", "--verbose")
	if out != "" || !strings.Contains(errs, "silent") {
		t.Errorf("a timeout too short: %q %q", out, errs)
	}
	api.WaitHookWork()

	// A process that holds the directory without serving queries.
	e, err := engine.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out, errs = runHookCmd(t, ev, "--dir", dir, "hook", "claude", "--verbose")
	if out != "" || !strings.Contains(errs, "serves no queries") || time.Since(start) > 2*time.Second {
		t.Errorf("a held directory: %q %q after %v", out, errs, time.Since(start))
	}
	e.Close()

	// No data directory: silent, and none is made.
	none := filepath.Join(t.TempDir(), "none")
	if out, errs = runHookCmd(t, ev, "--dir", none, "hook", "claude", "--verbose"); out != "" || !strings.Contains(errs, "no data directory") {
		t.Errorf("no data directory: %q %q", out, errs)
	}
	if _, err := os.Stat(none); !os.IsNotExist(err) {
		t.Errorf("the hook made %s: %v", none, err)
	}
}

// TestHookLargeBudget checks that a pack stays under Claude Code's
// 10,000-character cap however large the budget.
func TestHookLargeBudget(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	n := 0
	ts := time.Date(2026, 11, 3, 10, 0, 0, 0, time.UTC)
	add := func(m map[string]any) {
		n++
		ts = ts.Add(time.Second)
		m["uuid"] = fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
		m["sessionId"], m["timestamp"], m["cwd"], m["version"] = memSession, ts.Format(time.RFC3339Nano), "/repo", "2.1.39"
		b, _ := json.Marshal(m)
		lines = append(lines, string(b))
	}
	for i := range 60 {
		add(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": fmt.Sprintf("Set up component%d.", i)}})
		add(map[string]any{"type": "assistant", "requestId": fmt.Sprintf("req_%d", n), "message": map[string]any{
			"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
			"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("We decided to use storage engine variant%d for component%d because its write "+
				"amplification stays low under the bursty ingest pattern that component%d sees every night during the batch window, "+
				"and it never needs a manual compaction. The component%d service must never block its callers for longer than "+
				"fifty milliseconds.", i, i, i, i)}},
			"stop_reason": "end_turn", "usage": map[string]any{"input_tokens": 900, "output_tokens": 90}}})
	}
	src := writeFile(t, t.TempDir(), memSession+".jsonl", strings.Join(lines, "\n")+"\n")
	if out, errs, code := run(t, "--dir", dir, "import", "claude", src, "--quiet"); code != 0 {
		t.Fatalf("import: %d\n%s%s", code, out, errs)
	}
	waitHookWork(t)
	out, errs := runHookCmd(t, hookEvent("SessionStart", memSession, ""), "--dir", dir, "hook", "claude", "--budget", "40000", "--timeout", "30s", "--verbose")
	o, ok := decodeHook(t, out)
	if !ok {
		t.Fatalf("no answer: %q", errs)
	}
	md := o.Specific.Context
	t.Logf("a pack with a budget of 40,000 tokens: %d characters (%s)", len(md), strings.TrimSpace(errs))
	if len(md) > claude.HookMaxChars || len(md) < 8000 {
		t.Errorf("the pack has %d characters, want a full one under %d", len(md), claude.HookMaxChars)
	}
}
