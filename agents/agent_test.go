package agents_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/agents"
	_ "github.com/bbengine/bbengine/agents/all"
	"github.com/bbengine/bbengine/engine"
)

// TestRegistry checks that agents/all registers every agent under its
// name, in name order, and that each describes itself for the command
// line.
func TestRegistry(t *testing.T) {
	if got, want := agents.Names(), []string{"claude", "codex", "gemini", "opencode"}; !slices.Equal(got, want) {
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
		// Gemini CLI alone sends no session id.
		if a.HookMaxChars() <= 0 || (len(a.SessionHeaders()) == 0) != (a.Name() == "gemini") || len(a.LogDirs("/home/u")) == 0 {
			t.Errorf("%s: HookMaxChars %d, SessionHeaders %q, LogDirs %q", a.Name(), a.HookMaxChars(), a.SessionHeaders(), a.LogDirs("/home/u"))
		}
	}
	if _, ok := agents.Lookup("aider"); ok {
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
	want := []string{"X-Session-Id", "session-id", "X-Claude-Code-Session-Id", "Session_id", "x-session-affinity"}
	if !slices.Equal(got, want) {
		t.Errorf("SessionHeaders = %q, want %q", got, want)
	}
}

// TestHookProtocol decodes a hook event as the agents write it and
// checks the answer each gives. Gemini CLI calls the prompt's event
// BeforeAgent. opencode runs no hook commands: both say so.
func TestHookProtocol(t *testing.T) {
	for _, a := range agents.All() {
		if a.Name() == "opencode" {
			if _, err := a.ParseHook([]byte(`{}`)); err == nil || !strings.Contains(err.Error(), "no hook commands") {
				t.Errorf("opencode: ParseHook: %v", err)
			}
			if _, err := a.HookAnswer(agents.HookEvent{}, "x"); err == nil {
				t.Error("opencode: HookAnswer: no error")
			}
			continue
		}
		event := "UserPromptSubmit"
		if a.Name() == "gemini" {
			event = "BeforeAgent"
		}
		in := `{"session_id":"s-1","transcript_path":"/t.jsonl","cwd":"/repo","hook_event_name":"` + event + `","prompt":"fix <b> & go","model":"x"}`
		ev, err := a.ParseHook([]byte(in))
		want := agents.HookEvent{SessionID: "s-1", TranscriptPath: "/t.jsonl", Cwd: "/repo", Event: "UserPromptSubmit", Prompt: "fix <b> & go"}
		if err != nil || ev != want {
			t.Errorf("%s: ParseHook = %+v, %v; want %+v", a.Name(), ev, err, want)
		}
		out, err := a.HookAnswer(ev, "<pack>a & b</pack>")
		if want := `{"hookSpecificOutput":{"hookEventName":"` + event + `","additionalContext":"<pack>a & b</pack>"}}` + "\n"; err != nil || string(out) != want {
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
	t.Setenv("GEMINI_CLI_HOME", "")
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("OPENCODE_DB", "")
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
		{agent: "gemini", dirs: []string{"/h/.gemini/tmp"},
			logs: []string{"/h/.gemini/tmp/repo/chats/session-2026-11-27T06-31-5831d373.jsonl", "/h/.gemini/tmp/repo/chats/5831d373-d41d/agent-1.jsonl",
				"/h/.gemini/tmp/repo/chats/session-2025-01-01T10-00-abc.json", "/h/.gemini/tmp/repo/logs.json"},
			not: []string{"/h/.gemini/tmp/repo/chats/session-x.jsonl.tmp-41", "/h/.gemini/tmp/repo/x.jsonl", "/h/.gemini/tmp/repo/chats/sub/logs.json",
				"/h/.gemini/tmp/repo/chats/session-x.jsonl.unreadable-1700000000000", "/h/.gemini/tmp/repo/chats/x/y.json"}},
		{agent: "gemini", env: "/gh", dirs: []string{"/gh/.gemini/tmp"}},
		{agent: "opencode", dirs: []string{"/h/.local/share/opencode"},
			logs: []string{"/h/.local/share/opencode/opencode.db", "/d/opencode-beta2.db", "/d/storage/session/p1/ses_1.json",
				"/d/storage/message/ses_1/msg_1.json", "/d/storage/part/msg_1/prt_1.json"},
			not: []string{"/d/opencode.db-wal", "/d/opencode.db-shm", "/d/other.db", "/d/storage/session_share/ses_1.json", "/d/storage/project/p1.json",
				"/d/storage/todo/ses_1.json", "/d/session/p1/ses_1.json"}},
		{agent: "opencode", env: "/xd", dirs: []string{"/xd/opencode"}},
	} {
		a, _ := agents.Lookup(c.agent)
		if c.env != "" {
			t.Setenv(map[string]string{"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME", "gemini": "GEMINI_CLI_HOME", "opencode": "XDG_DATA_HOME"}[c.agent], c.env)
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

// TestFamilies checks the families handed to the engine: the agents'
// first (coding agents all), then the clients known without a
// directory, in the order the User-Agent is matched; and that each
// agent's import sources are registered importers, its own name among
// them when it imports its logs.
func TestFamilies(t *testing.T) {
	var names []string
	for _, f := range agents.Families() {
		names = append(names, f.Name)
	}
	want := []string{"claude-code", "codex", "gemini-cli", "opencode", "anthropic-sdk", "openai-sdk", "aider", "cursor", "cline"}
	if !slices.Equal(names, want) {
		t.Fatalf("Families() = %q, want %q", names, want)
	}
	for _, a := range agents.All() {
		f := agents.Families()[slices.Index(names, a.Family().Name)]
		if !f.Coding || len(f.UserAgents) == 0 {
			t.Errorf("%s: family %+v: not a coding agent, or no User-Agent words", a.Name(), f)
		}
		for _, w := range f.UserAgents {
			if w != strings.ToLower(w) {
				t.Errorf("%s: User-Agent word %q is not lower case", a.Name(), w)
			}
		}
		if slices.Contains(engine.ImportSources(), a.Name()) && !slices.Contains(f.Sources, a.Name()) {
			t.Errorf("%s: Sources %q lack the agent's name, which has an importer", a.Name(), f.Sources)
		}
		for _, src := range f.Sources {
			if !slices.Contains(engine.ImportSources(), src) {
				t.Errorf("%s: source %q has no importer", a.Name(), src)
			}
		}
	}
}

// TestSessionFiles checks what convert reads for one named log: Claude
// Code's main file brings its folder's logs and the flat agent files
// that name its session; a Codex rollout is alone.
func TestSessionFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(rel, data string) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	main := write("s1.jsonl", `{"type":"user","sessionId":"s1"}`+"\n")
	sub := write("s1/subagents/agent-a.jsonl", `{"type":"user","sessionId":"s1"}`+"\n")
	meta := write("s1/subagents/agent-a.meta.json", `{"agentType":"x"}`)
	spill := write("s1/tool-results/t1.txt", "out")
	write("s1/subagents/workflows/w.jsonl", "{}\n")
	flat := write("agent-b.jsonl", `{"type":"user","sessionId":"s1"}`+"\n")
	write("agent-c.jsonl", `{"type":"user","sessionId":"s2"}`+"\n")
	for _, c := range []struct {
		agent, path string
		want        []string
	}{
		{"claude", main, []string{main, sub, meta, spill, flat}},
		{"claude", flat, []string{flat}},
		{"codex", main, []string{main}},
		{"gemini", main, []string{main}},
	} {
		a, _ := agents.Lookup(c.agent)
		got, err := a.SessionFiles(c.path)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: SessionFiles(%s) = %q, %v; want %q", c.agent, c.path, got, err, c.want)
		}
	}
}
