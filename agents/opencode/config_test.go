package opencode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/agents"
)

// TestInstallJSONCNoSecret: install refuses an opencode.json with
// comments and trailing commas (JSONC, which opencode reads) naming its
// line and column, never printing the line: here it holds an API key.
// Doctor reads the file as opencode does, and finds the provider in it.
func TestInstallJSONCNoSecret(t *testing.T) {
	project := t.TempDir()
	file := filepath.Join(project, "opencode.json")
	jsonc := "{\n  \"provider\": {\"anthropic\": {\"options\": {\n    \"apiKey\": \"sk-ant-api03-REVIEWSECRETkey\", // rotate monthly\n  }}}\n}\n"
	os.WriteFile(file, []byte(jsonc), 0o600)
	_, err := Agent{}.Install(&agents.Setup{Exe: "/opt/bb/bbengine", MCP: true, ProjectDir: project})
	if err == nil || strings.Contains(err.Error(), "REVIEWSECRET") || !strings.Contains(err.Error(), file+":3:") || !strings.Contains(err.Error(), "JSONC") {
		t.Errorf("install into a JSONC file: %v", err)
	}
	if b, _ := os.ReadFile(file); string(b) != jsonc {
		t.Errorf("the file changed")
	}
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("PATH", t.TempDir())
	dir := filepath.Join(home, ".config", "opencode")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "opencode.json"), []byte(jsonc), 0o600)
	env := &agents.DoctorEnv{Home: home, ProjectDir: project, Exe: "/opt/bb/bbengine", Now: time.Now(), Timeout: time.Second}
	for _, f := range (Agent{}).Doctor(env) {
		if strings.Contains(f.Message, "REVIEWSECRET") || f.Check == "settings" {
			t.Errorf("doctor on JSONC: %s %v: %s", f.Check, f.Severity, f.Message)
		}
	}
	// A file that is not JSONC either: line and column, not the line.
	os.WriteFile(filepath.Join(dir, "opencode.json"), []byte("{\n  \"apiKey\": \"sk-REVIEWSECRET\" \"x\"\n}\n"), 0o600)
	f := finding(t, Agent{}.Doctor(env), "settings")
	if f.Severity != agents.Fail || strings.Contains(f.Message, "REVIEWSECRET") || !strings.Contains(f.Message, "opencode.json:2:") {
		t.Errorf("doctor on a broken file: %+v", f)
	}
	// The provider in opencode.jsonc and the MCP server in config.json,
	// with comments.
	os.Remove(filepath.Join(dir, "opencode.json"))
	os.WriteFile(filepath.Join(dir, "opencode.jsonc"), []byte("{\n  // ours\n  \"provider\": {\"bbengine\": {\"options\": {\"baseURL\": \"http://127.0.0.1:9/v1\",},},},\n}\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "config.json"), []byte("{/* ours */ \"mcp\": {\"bbengine\": {\"type\": \"local\", \"command\": [\"/opt/bb/bbengine\", \"mcp\"]}}}"), 0o600)
	env.Proxy = "http://127.0.0.1:9"
	fs := Agent{}.Doctor(env)
	if f := finding(t, fs, "base-url"); f.Severity != agents.OK || !strings.Contains(f.Message, "opencode.jsonc") {
		t.Errorf("base-url from opencode.jsonc: %+v", f)
	}
	if f := finding(t, fs, "mcp"); f.Severity != agents.OK || !strings.Contains(f.Message, "config.json") {
		t.Errorf("mcp from config.json: %+v", f)
	}
}

// TestInstallRoundTripUsersFormat: install then uninstall on a file
// written the user's way (tabs, objects on one line) gives back the
// user's bytes, not ours.
func TestInstallRoundTripUsersFormat(t *testing.T) {
	project := t.TempDir()
	file := filepath.Join(project, "opencode.json")
	users := "{\n\t\"$schema\": \"https://opencode.ai/config.json\",\n\t\"model\": \"anthropic/claude-sonnet-4\",\n\t\"provider\": {\"anthropic\": {\"options\": {\"apiKey\": \"{env:ANTHROPIC_API_KEY}\"}}}\n}\n"
	os.WriteFile(file, []byte(users), 0o600)
	s := &agents.Setup{Exe: "/opt/bb/bbengine", BaseURL: "http://127.0.0.1:9", MCP: true, ProjectDir: project}
	install(t, s, "updated")
	s.Uninstall = true
	install(t, s, "updated")
	if b, _ := os.ReadFile(file); string(b) != users {
		t.Errorf("after install and uninstall:\n%s\nwas:\n%s", b, users)
	}
}
