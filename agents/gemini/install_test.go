package gemini

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/agents"
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

// TestInstallRoundTrip installs into an empty project through the
// Agent interface alone, applies the changes, checks that a second
// install changes nothing, and that uninstall removes every file it made.
func TestInstallRoundTrip(t *testing.T) {
	project := t.TempDir()
	s := &agents.Setup{Exe: "/opt/bb/bbengine", Dir: "/data", BaseURL: "http://127.0.0.1:9", MCP: true, Hooks: true, ProjectDir: project}
	changes := install(t, s, "created created")
	d := changes[0].Diff()
	for _, w := range []string{`"SessionStart": [`, `"BeforeAgent": [`, `"command": "/opt/bb/bbengine --dir /data hook gemini"`, `"timeout": 5000`,
		`"mcpServers": {`, `"command": "/opt/bb/bbengine",`} {
		if !strings.Contains(d, w) {
			t.Errorf("settings.json diff lacks %q:\n%s", w, d)
		}
	}
	env, _ := os.ReadFile(filepath.Join(project, ".gemini", ".env"))
	if string(env) != "# bbengine install gemini: http://127.0.0.1:9\nGOOGLE_GEMINI_BASE_URL=http://127.0.0.1:9\n" {
		t.Errorf(".env:\n%s", env)
	}
	install(t, s, "unchanged unchanged")
	s.BaseURL = "http://127.0.0.1:10"
	install(t, s, "unchanged updated")
	s.Uninstall = true
	install(t, s, "removed removed")
	for _, f := range []string{".gemini/settings.json", ".gemini/.env"} {
		if _, err := os.Stat(filepath.Join(project, f)); !os.IsNotExist(err) {
			t.Errorf("%s after uninstall: %v", f, err)
		}
	}
}

// TestInstallKeepsTheUsers checks that install and uninstall leave the
// user's settings, hooks, servers and .env lines as they were, byte for
// byte, and that a base URL of the user's own is refused without
// --force.
func TestInstallKeepsTheUsers(t *testing.T) {
	home := t.TempDir()
	t.Setenv("GEMINI_CLI_HOME", "")
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	settings := `{
  "model": {"name": "gemini-2.5-pro"},
  "hooks": {"BeforeAgent": [{"hooks": [{"type": "command", "command": "my-hook"}]}]},
  "mcpServers": {"other": {"command": "other-server"}}
}
`
	env := "GEMINI_API_KEY=secret\nexport DEBUG=1"
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := &agents.Setup{Exe: "/opt/bb/bbengine", BaseURL: "http://127.0.0.1:9", MCP: true, Hooks: true, User: true, Home: home}
	// Gemini CLI takes comments in its settings; bbengine's editor does
	// not, and says where.
	write("settings.json", "{\n  // mine\n}\n")
	if _, err := (Agent{}).Install(s); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "settings.json")+":2:3: not valid JSON") {
		t.Errorf("settings with a comment: %v", err)
	}
	write("settings.json", settings)
	write(".env", env)
	install(t, s, "updated updated")
	b, _ := os.ReadFile(filepath.Join(dir, "settings.json"))
	for _, w := range []string{"my-hook", "other-server", "gemini-2.5-pro", "hook gemini"} {
		if !strings.Contains(string(b), w) {
			t.Errorf("settings.json lacks %q:\n%s", w, b)
		}
	}
	e, _ := os.ReadFile(filepath.Join(dir, ".env"))
	if !strings.HasPrefix(string(e), env+"\n# bbengine install gemini: ") {
		t.Errorf(".env:\n%s", e)
	}
	s.Uninstall = true
	install(t, s, "updated updated")
	// The settings are the user's again (jsonedit writes them in its
	// own layout once it has changed them).
	var want, got any
	json.Unmarshal([]byte(settings), &want)
	b, _ = os.ReadFile(filepath.Join(dir, "settings.json"))
	if err := json.Unmarshal(b, &got); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("settings.json after uninstall:\n%s", b)
	}
	if e, _ := os.ReadFile(filepath.Join(dir, ".env")); string(e) != env+"\n" {
		t.Errorf(".env after uninstall: %q", e)
	}

	write(".env", "GOOGLE_GEMINI_BASE_URL=https://my-gateway.example\n")
	s.Uninstall = false
	_, err := Agent{}.Install(s)
	if err == nil || !strings.Contains(err.Error(), ".env:1: GOOGLE_GEMINI_BASE_URL is \"https://my-gateway.example\"") {
		t.Errorf("install over the user's base URL: %v", err)
	}
	s.Force = true
	install(t, s, "updated updated")
	s.Uninstall = true
	install(t, s, "updated removed")
}

// TestInstallEnvBeside checks that a .env beside .gemini, which Gemini
// CLI reads when .gemini/.env does not exist, gets the base URL.
func TestInstallEnvBeside(t *testing.T) {
	project := t.TempDir()
	if err := os.WriteFile(filepath.Join(project, ".env"), []byte("GEMINI_API_KEY=k\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &agents.Setup{Exe: "/opt/bb/bbengine", BaseURL: "http://127.0.0.1:9", ProjectDir: project}
	changes := install(t, s, "unchanged updated")
	if changes[1].File != filepath.Join(project, ".env") {
		t.Errorf("edited %s", changes[1].File)
	}
	if _, err := os.Stat(filepath.Join(project, ".gemini", ".env")); !os.IsNotExist(err) {
		t.Errorf(".gemini/.env: %v", err)
	}
}

// TestInstallEnvCreated: a project .env that sets nothing Gemini CLI
// takes (no variable, or only the ones it excludes) is left alone and
// .gemini/.env created: the application's .env does not get the base
// URL, and the new file shadows nothing.
func TestInstallEnvCreated(t *testing.T) {
	for _, body := range []string{"", "# app settings\n\n", "DEBUG=1\n"} {
		project := t.TempDir()
		if err := os.WriteFile(filepath.Join(project, ".env"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		s := &agents.Setup{Exe: "/opt/bb/bbengine", BaseURL: "http://127.0.0.1:9", ProjectDir: project}
		changes := install(t, s, "unchanged created")
		if changes[1].File != filepath.Join(project, ".gemini", ".env") {
			t.Errorf(".env %q: edited %s", body, changes[1].File)
		}
		if b, _ := os.ReadFile(filepath.Join(project, ".env")); string(b) != body {
			t.Errorf(".env %q became %q", body, b)
		}
	}
}

// TestEnvLine: values are read as Gemini CLI's dotenv reads them: an
// inline comment is no part of an unquoted value, quotes go, "name: v"
// sets too.
func TestEnvLine(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:9 # bbengine", "http://127.0.0.1:9"},
		{"  export GOOGLE_GEMINI_BASE_URL = 'http://127.0.0.1:9'  # q", "http://127.0.0.1:9"},
		{`GOOGLE_GEMINI_BASE_URL="http://a#b"`, "http://a#b"},
		{"GOOGLE_GEMINI_BASE_URL: http://127.0.0.1:9\r", "http://127.0.0.1:9"},
		{"GOOGLE_GEMINI_BASE_URL=", ""},
		{"GOOGLE_GEMINI_BASE_URL=http://x#frag", "http://x"},
	} {
		if got, ok := envLine(tc.line); !ok || got != tc.want {
			t.Errorf("envLine(%q) = %q, %v; want %q", tc.line, got, ok, tc.want)
		}
	}
	for _, l := range []string{"# GOOGLE_GEMINI_BASE_URL=x", "GOOGLE_GEMINI_BASE_URL_2=x", "GOOGLE_GEMINI_BASE_URL:x"} {
		if v, ok := envLine(l); ok {
			t.Errorf("envLine(%q) = %q", l, v)
		}
	}
}

// TestInstallEnvInlineComment: the user's own line that is the proxy's
// URL followed by a comment is taken as the proxy's, not refused.
func TestInstallEnvInlineComment(t *testing.T) {
	project := t.TempDir()
	p := filepath.Join(project, ".gemini", ".env")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	body := "GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:9 # the proxy\n"
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	s := &agents.Setup{Exe: "/opt/bb/bbengine", BaseURL: "http://127.0.0.1:9", ProjectDir: project}
	install(t, s, "unchanged unchanged")
	if b, _ := os.ReadFile(p); string(b) != body {
		t.Errorf(".gemini/.env became %q", b)
	}
}
