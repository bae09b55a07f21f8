package codex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/agents"
)

// TestInstallRoundTrip installs into an empty project through the
// Agent interface alone, applies the changes, checks that a second
// install changes nothing, and that uninstall removes every file it made.
// cli's TestInstallCodex covers the merges with the user's files.
func TestInstallRoundTrip(t *testing.T) {
	project := t.TempDir()
	s := &agents.Setup{Exe: "/opt/bb/bbengine", Dir: "/data", BaseURL: "http://127.0.0.1:9", MCP: true, Hooks: true, ProjectDir: project}
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
	changes := apply("created created created")
	if d := changes[0].Diff(); !strings.Contains(d, "+openai_base_url = \"http://127.0.0.1:9/v1\"") || !strings.Contains(d, `+args = ["--dir", "/data", "mcp"]`) {
		t.Errorf("config.toml diff:\n%s", d)
	}
	hooks, _ := os.ReadFile(filepath.Join(project, ".codex", "hooks.json"))
	if !strings.Contains(string(hooks), `"command": "/opt/bb/bbengine --dir /data hook codex"`) {
		t.Errorf("hooks.json:\n%s", hooks)
	}
	apply("unchanged unchanged unchanged")
	s.Uninstall = true
	apply("removed removed removed")
	for _, f := range []string{".codex/config.toml", ".codex/hooks.json", "AGENTS.md"} {
		if _, err := os.Stat(filepath.Join(project, f)); !os.IsNotExist(err) {
			t.Errorf("%s after uninstall: %v", f, err)
		}
	}
}
