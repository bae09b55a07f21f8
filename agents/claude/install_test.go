package claude

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/agents/internal/settings"
)

// hookCommands lists the commands of the handlers of an event.
func hookCommands(t *testing.T, settings, event string) []string {
	t.Helper()
	var doc struct {
		Hooks map[string][]struct {
			Matcher string `json:"matcher"`
			Hooks   []struct {
				Type    string `json:"type"`
				Command string `json:"command"`
				Timeout int    `json:"timeout"`
			} `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(settings), &doc); err != nil {
		t.Fatalf("%v:\n%s", err, settings)
	}
	var out []string
	for _, g := range doc.Hooks[event] {
		for _, h := range g.Hooks {
			out = append(out, h.Command)
		}
	}
	return out
}

// TestClaudeHooksSettings checks the fragment `bbengine run` passes to
// claude --settings.
func TestClaudeHooksSettings(t *testing.T) {
	b, err := json.Marshal(HooksSettings("/opt/my tools/bbengine", "/data dir"))
	if err != nil {
		t.Fatal(err)
	}
	want := `'/opt/my tools/bbengine' --dir '/data dir' hook claude`
	for _, ev := range []string{"SessionStart", "UserPromptSubmit"} {
		if got := hookCommands(t, string(b), ev); len(got) != 1 || got[0] != want {
			t.Errorf("%s: %q, want %q", ev, got, want)
		}
	}
	if !strings.Contains(string(b), `"timeout":5`) || !strings.Contains(string(b), `"type":"command"`) {
		t.Errorf("settings: %s", b)
	}
	if !settings.IsOurHook(want, "claude", "/usr/bin/x") || settings.IsOurHook(want, "codex", "") || settings.IsOurHook("echo bbengine hook claude", "claude", "") {
		t.Error("settings.IsOurHook")
	}
	if f := agents.ShellFields(`a 'b c' "d \"e\"" f\ g`); strings.Join(f, "|") != `a|b c|d "e"|f g` {
		t.Errorf("agents.ShellFields: %q", f)
	}
}

// TestInstallRoundTrip installs into an empty project through the
// Agent interface alone, applies the changes, checks that a second
// install changes nothing, and that uninstall removes every file it made.
// cli's TestInstallClaude* cover the merges with the user's files.
func TestInstallRoundTrip(t *testing.T) {
	project := t.TempDir()
	s := &agents.Setup{Exe: "/opt/bb/bbengine", BaseURL: "http://127.0.0.1:9", MCP: true, Hooks: true, ProjectDir: project}
	apply := func(want string) []*agents.Change {
		t.Helper()
		changes, err := Agent{}.Install(s)
		if err != nil {
			t.Fatal(err)
		}
		var actions []string
		for _, ch := range changes {
			actions = append(actions, ch.Action)
			if err := ch.Apply("20260101T000000Z"); err != nil {
				t.Fatal(err)
			}
		}
		if got := strings.Join(actions, " "); got != want {
			t.Fatalf("actions %q, want %q", got, want)
		}
		return changes
	}
	changes := apply("created created")
	if d := changes[0].Diff(); !strings.Contains(d, `+    "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",`) || !strings.Contains(d, `"command": "/opt/bb/bbengine hook claude"`) {
		t.Errorf("settings.json diff:\n%s", d)
	}
	if b, _ := os.ReadFile(filepath.Join(project, ".mcp.json")); !strings.Contains(string(b), `"command": "/opt/bb/bbengine"`) {
		t.Errorf(".mcp.json:\n%s", b)
	}
	apply("unchanged unchanged")
	s.Uninstall = true
	apply("removed removed")
	for _, f := range []string{".claude/settings.json", ".mcp.json"} {
		if _, err := os.Stat(filepath.Join(project, f)); !os.IsNotExist(err) {
			t.Errorf("%s after uninstall: %v", f, err)
		}
	}
}
