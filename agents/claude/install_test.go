package claude

import (
	"encoding/json"
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
