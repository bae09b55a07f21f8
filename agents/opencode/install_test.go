package opencode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/internal/jsonedit"
)

// install runs Install with s and applies the changes, checking their
// actions.
func install(t *testing.T, s *agents.Setup, want string) []*agents.Change {
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

// TestInstallRoundTrip installs into an empty project, checks that a
// second install changes nothing, that a new base URL updates the
// provider, and that uninstall removes the file it made.
func TestInstallRoundTrip(t *testing.T) {
	project := t.TempDir()
	s := &agents.Setup{Exe: "/opt/bb/bbengine", Dir: "/data", BaseURL: "http://127.0.0.1:9", MCP: true, ProjectDir: project}
	install(t, s, "created")
	b, _ := os.ReadFile(filepath.Join(project, "opencode.json"))
	for _, w := range []string{`"npm": "@ai-sdk/openai-compatible"`, `"baseURL": "http://127.0.0.1:9/v1"`, `"type": "local"`,
		`"command": [`, `"/opt/bb/bbengine",`, `"--dir",`, `"/data",`, `"mcp"`, `"enabled": true`} {
		if !strings.Contains(string(b), w) {
			t.Errorf("opencode.json lacks %q:\n%s", w, b)
		}
	}
	install(t, s, "unchanged")
	s.BaseURL = "http://127.0.0.1:10/"
	install(t, s, "updated")
	if b, _ := os.ReadFile(filepath.Join(project, "opencode.json")); !strings.Contains(string(b), `"baseURL": "http://127.0.0.1:10/v1"`) {
		t.Errorf("the base URL was not updated:\n%s", b)
	}
	s.Uninstall = true
	install(t, s, "removed")
	if _, err := os.Stat(filepath.Join(project, "opencode.json")); !os.IsNotExist(err) {
		t.Errorf("opencode.json after uninstall: %v", err)
	}
}

// TestInstallKeepsTheUsers checks that install and uninstall leave the
// user's settings, providers and MCP servers as they were, byte for byte,
// that the models the user lists in the provider survive a second
// install, and that a provider "bbengine" of another package is refused
// without --force.
func TestInstallKeepsTheUsers(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", "")
	file := filepath.Join(home, ".config", "opencode", "opencode.json")
	// The user's own layout, not ours: uninstall gives it back.
	users := `{
	"$schema": "https://opencode.ai/config.json",
	"model": "anthropic/claude-sonnet-4",
	"provider": {"anthropic": {"options": {"apiKey": "{env:ANTHROPIC_API_KEY}"}}},
	"mcp": {"other": {"type": "local", "command": ["other-server"]}}
}`
	if _, err := jsonedit.Parse([]byte(users)); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &agents.Setup{Exe: "/opt/bb/bbengine", BaseURL: "http://127.0.0.1:8787", MCP: true, User: true, Home: home}
	install(t, s, "updated")
	b, _ := os.ReadFile(file)
	for _, w := range []string{`"anthropic": {`, `"apiKey": "{env:ANTHROPIC_API_KEY}"`, `"other": {`, `"bbengine": {`, `"model": "anthropic/claude-sonnet-4"`} {
		if !strings.Contains(string(b), w) {
			t.Errorf("after install, opencode.json lacks %q:\n%s", w, b)
		}
	}
	// The user lists models in the provider; a second install keeps them.
	withModels := strings.Replace(string(b), `"name": "bbengine proxy",`, `"name": "bbengine proxy", "models": {"gpt-5": {}},`, 1)
	if withModels == string(b) {
		t.Fatalf("no provider name to add models after:\n%s", b)
	}
	os.WriteFile(file, []byte(withModels), 0o600)
	install(t, s, "unchanged")
	s.Uninstall = true
	install(t, s, "updated")
	if b, _ := os.ReadFile(file); string(b) != users {
		t.Errorf("uninstall left\n%s\nwant the user's file as it was:\n%s", b, users)
	}
	// A provider "bbengine" of the user's own, of another package.
	own := `{"provider": {"bbengine": {"npm": "@ai-sdk/anthropic"}}}`
	os.WriteFile(file, []byte(own), 0o600)
	s.Uninstall = false
	if _, err := (Agent{}).Install(s); err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "--force") {
		t.Errorf("install over the user's provider: %v", err)
	}
	s.Force = true
	install(t, s, "updated")
}

// TestInstallBadFile: a file that is not JSON (opencode.json with
// comments, say) is refused with its line and left as it is.
func TestInstallBadFile(t *testing.T) {
	project := t.TempDir()
	file := filepath.Join(project, "opencode.json")
	bad := "{\n  // a comment\n  \"model\": \"x\"\n}\n"
	os.WriteFile(file, []byte(bad), 0o600)
	_, err := Agent{}.Install(&agents.Setup{Exe: "/opt/bb/bbengine", MCP: true, ProjectDir: project})
	if err == nil || !strings.Contains(err.Error(), file+":2:") {
		t.Errorf("install into a file with comments: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != bad {
		t.Errorf("the file changed")
	}
}

func finding(t *testing.T, fs []agents.Finding, check string) agents.Finding {
	t.Helper()
	for _, f := range fs {
		if f.Check == check {
			return f
		}
	}
	t.Fatalf("no %s finding in %+v", check, fs)
	return agents.Finding{}
}

// TestDoctor: an empty home is one "found" line; after `install opencode
// --user` the provider's base URL (where no proxy runs: a fail) and the
// MCP server are found, and the database and its -wal are reported.
func TestDoctor(t *testing.T) {
	home, project := t.TempDir(), t.TempDir()
	t.Setenv("PATH", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_DATA_HOME", "")
	t.Setenv("OPENCODE_DB", "")
	env := &agents.DoctorEnv{Home: home, ProjectDir: project, Exe: "/opt/bb/bbengine", Now: time.Now(), Timeout: time.Second}
	fs := Agent{}.Doctor(env)
	if len(fs) != 1 || fs[0].Check != "found" || fs[0].Severity != agents.OK {
		t.Fatalf("empty home: %+v", fs)
	}
	install(t, &agents.Setup{Exe: env.Exe, BaseURL: "http://127.0.0.1:9", MCP: true, User: true, Home: home}, "created")
	user := filepath.Join(home, ".config", "opencode", "opencode.json")
	fs = Agent{}.Doctor(env)
	if f := finding(t, fs, "version"); f.Severity != agents.Warn || !strings.Contains(f.Message, "opencode is not on PATH") {
		t.Errorf("version: %+v", f)
	}
	if f := finding(t, fs, "mcp"); f.Severity != agents.OK || !strings.Contains(f.Message, user) {
		t.Errorf("mcp: %+v", f)
	}
	if f := finding(t, fs, "base-url"); f.Severity != agents.Fail || !strings.Contains(f.Message, "provider.bbengine.options.baseURL in "+user+" is http://127.0.0.1:9/v1") {
		t.Errorf("base-url: %+v", f)
	}
	if f := finding(t, fs, "database"); f.Severity != agents.OK || !strings.Contains(f.Message, "no database at "+filepath.Join(home, ".local", "share", "opencode", "opencode.db")) {
		t.Errorf("database: %+v", f)
	}
	// With the proxy running there, and the model not of the provider.
	env.Proxy = "http://127.0.0.1:9"
	if f := finding(t, Agent{}.Doctor(env), "base-url"); f.Severity != agents.OK {
		t.Errorf("base-url with the proxy: %+v", f)
	}
	os.WriteFile(user, []byte(`{"model": "anthropic/x", "provider": {"bbengine": {"options": {"baseURL": "http://127.0.0.1:9/v1"}}}}`), 0o600)
	if f := finding(t, Agent{}.Doctor(env), "base-url"); f.Severity != agents.Warn || !strings.Contains(f.Fix, `"model": "bbengine/<model>"`) {
		t.Errorf("base-url, another model: %+v", f)
	}
	// The fixture's database: its -wal is reported.
	db := copyDB(t, fixture)
	t.Setenv("OPENCODE_DB", db)
	if f := finding(t, Agent{}.Doctor(env), "database"); f.Severity != agents.OK || !strings.Contains(f.Message, "1.3 MB in its -wal") || !strings.Contains(f.Message, "OPENCODE_DB") {
		t.Errorf("database: %+v", f)
	}
	t.Setenv("OPENCODE_DB", ":memory:")
	if f := finding(t, Agent{}.Doctor(env), "database"); f.Severity != agents.Warn {
		t.Errorf("database in memory: %+v", f)
	}
}
