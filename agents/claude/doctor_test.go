package claude

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/agents"
)

func doctorFinding(t *testing.T, fs []agents.Finding, check string) agents.Finding {
	t.Helper()
	for _, f := range fs {
		if f.Check == check {
			return f
		}
	}
	t.Fatalf("no %s finding in %+v", check, fs)
	return agents.Finding{}
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDoctorSettingsOrder: the project's local settings win over the
// user's (CLAUDE_CONFIG_DIR here), and the fix names the file that sets
// the value; a settings file that does not parse fails naming its line.
func TestDoctorSettingsOrder(t *testing.T) {
	home, project, config := t.TempDir(), t.TempDir(), t.TempDir()
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CLAUDE_CONFIG_DIR", config)
	t.Setenv("ANTHROPIC_BASE_URL", "")
	write(t, filepath.Join(config, "settings.json"), `{"cleanupPeriodDays": 100000}`)
	local := filepath.Join(project, ".claude", "settings.local.json")
	write(t, local, `{"cleanupPeriodDays": 10}`)
	now := time.Now()
	env := &agents.DoctorEnv{Home: home, ProjectDir: project, Exe: "/usr/bin/bbengine", Now: now, Timeout: time.Second,
		Logs: 3, Unimported: 1, Oldest: now.Add(-5 * 24 * time.Hour)}
	f := doctorFinding(t, Agent{}.Doctor(env), "cleanup")
	if f.Severity != agents.Fail || !strings.Contains(f.Message, "cleanupPeriodDays is 10 in "+local) ||
		!strings.Contains(f.Fix, `"cleanupPeriodDays": 100000 in `+local) {
		t.Errorf("local settings: %s %q (fix %q)", f.Severity, f.Message, f.Fix)
	}
	os.Remove(local)
	f = doctorFinding(t, Agent{}.Doctor(env), "cleanup")
	if f.Severity != agents.OK || !strings.Contains(f.Message, filepath.Join(config, "settings.json")) {
		t.Errorf("CLAUDE_CONFIG_DIR settings: %s %q", f.Severity, f.Message)
	}
	write(t, filepath.Join(project, ".claude", "settings.json"), "{\n  \"env\": {,\n}")
	f = doctorFinding(t, Agent{}.Doctor(env), "settings")
	if f.Severity != agents.Fail || !strings.Contains(f.Message, filepath.Join(project, ".claude", "settings.json")+":2:") {
		t.Errorf("a file that does not parse: %s %q", f.Severity, f.Message)
	}
}
