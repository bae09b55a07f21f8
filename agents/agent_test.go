package agents_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/agents"
	_ "github.com/bbengine/bbengine/agents/all"
)

// TestRegistry checks that agents/all registers every agent under its
// name, in name order, and that each describes itself for the command
// line.
func TestRegistry(t *testing.T) {
	if got, want := agents.Names(), []string{"claude", "codex"}; !slices.Equal(got, want) {
		t.Fatalf("Names() = %q, want %q", got, want)
	}
	for _, a := range agents.All() {
		got, ok := agents.Lookup(a.Name())
		if !ok || got.Name() != a.Name() {
			t.Errorf("Lookup(%q) = %v, %v", a.Name(), got, ok)
		}
		d := a.Doc()
		if d.Title == "" || d.InstallUsage == "" || d.InstallDescription == "" || d.HookUsage == "" {
			t.Errorf("%s: Doc %+v lacks a title or a usage", a.Name(), d)
		}
		if a.HookMaxChars() <= 0 || len(a.SessionHeaders()) == 0 || len(a.LogDirs("/home/u")) == 0 {
			t.Errorf("%s: HookMaxChars %d, SessionHeaders %q, LogDirs %q", a.Name(), a.HookMaxChars(), a.SessionHeaders(), a.LogDirs("/home/u"))
		}
	}
	if _, ok := agents.Lookup("gemini"); ok {
		t.Error("Lookup of an agent nobody registered")
	}
}

// TestRegisterTwice checks that a second agent under a taken name
// panics rather than replacing the first.
func TestRegisterTwice(t *testing.T) {
	claude, _ := agents.Lookup("claude")
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), `"claude"`) {
			t.Errorf("Register of a taken name: recovered %v", r)
		}
	}()
	agents.Register(claude)
}

// TestSessionHeaders checks the merge the proxy makes: its own list
// first, in its order, then the agents' headers it lacks, compared
// without case.
func TestSessionHeaders(t *testing.T) {
	got := agents.SessionHeaders([]string{"X-Session-Id", "session-id"})
	want := []string{"X-Session-Id", "session-id", "X-Claude-Code-Session-Id", "Session_id"}
	if !slices.Equal(got, want) {
		t.Errorf("SessionHeaders = %q, want %q", got, want)
	}
}

// TestHookProtocol decodes a hook event as the agents write it and
// checks the answer each gives.
func TestHookProtocol(t *testing.T) {
	in := `{"session_id":"s-1","transcript_path":"/t.jsonl","cwd":"/repo","hook_event_name":"UserPromptSubmit","prompt":"fix <b> & go","model":"x"}`
	for _, a := range agents.All() {
		ev, err := a.ParseHook([]byte(in))
		want := agents.HookEvent{SessionID: "s-1", TranscriptPath: "/t.jsonl", Cwd: "/repo", Event: "UserPromptSubmit", Prompt: "fix <b> & go"}
		if err != nil || ev != want {
			t.Errorf("%s: ParseHook = %+v, %v; want %+v", a.Name(), ev, err, want)
		}
		out, err := a.HookAnswer(ev, "<pack>a & b</pack>")
		if want := `{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"<pack>a & b</pack>"}}` + "\n"; err != nil || string(out) != want {
			t.Errorf("%s: HookAnswer = %q, %v; want %q", a.Name(), out, err, want)
		}
		if _, err := a.ParseHook([]byte(`[1]`)); err == nil {
			t.Errorf("%s: ParseHook of an array: no error", a.Name())
		}
	}
}

// TestLogs checks where each agent looks for its logs by default and
// which files it takes for logs.
func TestLogs(t *testing.T) {
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("CODEX_HOME", "")
	for _, c := range []struct {
		agent string
		env   string // CLAUDE_CONFIG_DIR or CODEX_HOME
		dirs  []string
		logs  []string
		not   []string
	}{
		{agent: "claude", dirs: []string{"/h/.claude/projects", "/h/.config/claude/projects"},
			logs: []string{"/p/-repo/s.jsonl", "/p/-repo/s/subagents/agent-1.jsonl", "/p/-repo/s/subagents/agent-1.meta.json", "/p/-repo/s/tool-results/x.txt"},
			not:  []string{"/p/-repo/s.json", "/p/-repo/s/subagents/workflows/w.jsonl"}},
		{agent: "claude", env: "/c1, /c2", dirs: []string{"/c1/projects", "/c2/projects"}},
		{agent: "codex", dirs: []string{"/h/.codex/sessions", "/h/.codex/archived_sessions"},
			logs: []string{"/s/2026/01/02/rollout-2026-01-02T10-00-00-abc.jsonl", "/a/rollout-x.jsonl.zst"},
			not:  []string{"/s/history.jsonl", "/s/rollout-x.json"}},
		{agent: "codex", env: "/ch", dirs: []string{"/ch/sessions", "/ch/archived_sessions"}},
	} {
		a, _ := agents.Lookup(c.agent)
		if c.env != "" {
			t.Setenv(map[string]string{"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME"}[c.agent], c.env)
		}
		if got := a.LogDirs("/h"); !slices.Equal(got, c.dirs) {
			t.Errorf("%s (env %q): LogDirs = %q, want %q", c.agent, c.env, got, c.dirs)
		}
		for _, p := range c.logs {
			if !a.IsLog(p) {
				t.Errorf("%s: IsLog(%q) = false", c.agent, p)
			}
		}
		for _, p := range c.not {
			if a.IsLog(p) {
				t.Errorf("%s: IsLog(%q) = true", c.agent, p)
			}
		}
	}
}
