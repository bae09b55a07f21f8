package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/agents/claude"
	"github.com/bbengine/bbengine/agents/codex"
	"github.com/bbengine/bbengine/internal/jsonedit"
)

// testExe is what install writes as the command: this test binary.
func testExe(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func readOr(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func parseJSON(t *testing.T, s string) any {
	t.Helper()
	v, err := jsonedit.Parse([]byte(s))
	if err != nil {
		t.Fatalf("%v:\n%s", err, s)
	}
	return v
}

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

func backups(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "*.bak-*"))
	return m
}

// TestInstallClaudeMerge installs into settings files of several shapes
// and checks the merge, that a second install changes nothing, and that
// uninstall gives back the other content.
func TestInstallClaudeMerge(t *testing.T) {
	exe := testExe(t)
	ours := exe + " hook claude"
	for _, c := range []struct {
		name     string
		settings string // "" for no file
		// want are the SessionStart and UserPromptSubmit commands after
		// install.
		wantStart, wantPrompt []string
		// keys are the top-level keys after install, in order.
		keys []string
		// restored is the settings after uninstall ("" for no file).
		restored string
	}{
		{
			name: "no file", wantStart: []string{ours}, wantPrompt: []string{ours},
			keys: []string{"hooks", "env", "enabledMcpjsonServers"},
		},
		{
			name:     "empty object",
			settings: "{}\n", wantStart: []string{ours}, wantPrompt: []string{ours},
			keys: []string{"hooks", "env", "enabledMcpjsonServers"},
		},
		{
			name: "hooks and keys of others",
			settings: `{"permissions": {"allow": ["Bash(ls)"]}, "model": "opus",
				"hooks": {"SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}],
				          "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh", "timeout": 3}]}]},
				"env": {"FOO": "1"}, "enabledMcpjsonServers": ["other"], "unknownKey": {"nested": [1, 2.50, null]}}`,
			wantStart: []string{"echo hi", ours}, wantPrompt: []string{ours},
			keys: []string{"permissions", "model", "hooks", "env", "enabledMcpjsonServers", "unknownKey"},
			restored: `{"permissions": {"allow": ["Bash(ls)"]}, "model": "opus",
				"hooks": {"SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]}],
				          "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh", "timeout": 3}]}]},
				"env": {"FOO": "1"}, "enabledMcpjsonServers": ["other"], "unknownKey": {"nested": [1, 2.50, null]}}`,
		},
		{
			name: "ours already, from another path and twice",
			settings: `{"hooks": {"SessionStart": [
					{"hooks": [{"type": "command", "command": "/old/bin/bbengine --dir /data hook claude", "timeout": 30}]},
					{"hooks": [{"type": "command", "command": "echo mine"}, {"type": "command", "command": "'/other place/bbengine' hook claude"}]}],
				"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "bbengine hook codex"}]}]}}`,
			wantStart: []string{ours, "echo mine"}, wantPrompt: []string{"bbengine hook codex", ours},
			keys: []string{"hooks", "env", "enabledMcpjsonServers"},
			restored: `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo mine"}]}],
				"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "bbengine hook codex"}]}]}}`,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			project := t.TempDir()
			settings := filepath.Join(project, ".claude", "settings.json")
			mcpFile := filepath.Join(project, ".mcp.json")
			if c.settings != "" {
				os.MkdirAll(filepath.Dir(settings), 0o755)
				writeFile(t, filepath.Dir(settings), "settings.json", c.settings)
			}
			inst := func() string {
				out, errs, code := run(t, "install", "claude", "--project-dir", project)
				if code != 0 {
					t.Fatalf("install: %d\n%s%s", code, out, errs)
				}
				return out
			}
			out := inst()
			got := readOr(t, settings)
			if s := hookCommands(t, got, "SessionStart"); strings.Join(s, "|") != strings.Join(c.wantStart, "|") {
				t.Errorf("SessionStart hooks %q, want %q", s, c.wantStart)
			}
			if s := hookCommands(t, got, "UserPromptSubmit"); strings.Join(s, "|") != strings.Join(c.wantPrompt, "|") {
				t.Errorf("UserPromptSubmit hooks %q, want %q", s, c.wantPrompt)
			}
			if keys := parseJSON(t, got).(*jsonedit.Object).Keys(); strings.Join(keys, " ") != strings.Join(c.keys, " ") {
				t.Errorf("keys %v, want %v", keys, c.keys)
			}
			var doc struct {
				Env     map[string]string `json:"env"`
				Enabled []string          `json:"enabledMcpjsonServers"`
			}
			json.Unmarshal([]byte(got), &doc)
			if doc.Env["ANTHROPIC_BASE_URL"] != defaultBaseURL || doc.Env[claude.BaseURLMark] != defaultBaseURL || !strings.Contains(strings.Join(doc.Enabled, " "), "bbengine") {
				t.Errorf("env %v, enabledMcpjsonServers %v", doc.Env, doc.Enabled)
			}
			var mcp struct {
				Servers map[string]struct {
					Type, Command string
					Args          []string
				} `json:"mcpServers"`
			}
			if err := json.Unmarshal([]byte(readOr(t, mcpFile)), &mcp); err != nil || mcp.Servers["bbengine"].Command != exe ||
				strings.Join(mcp.Servers["bbengine"].Args, " ") != "mcp" || mcp.Servers["bbengine"].Type != "stdio" {
				t.Errorf(".mcp.json: %v %+v", err, mcp)
			}
			wantBackups := 0
			if c.settings != "" {
				wantBackups = 1
				if !strings.Contains(out, "updated") || !strings.Contains(out, "(backup ") {
					t.Errorf("install output: %q", out)
				}
				if b := readOr(t, backups(t, filepath.Dir(settings))[0]); b != c.settings {
					t.Errorf("the backup holds %q, want the file as it was", b)
				}
			}
			if n := len(backups(t, filepath.Dir(settings))); n != wantBackups {
				t.Errorf("%d backups, want %d", n, wantBackups)
			}

			// Idempotent, byte for byte, with no new backup.
			mcpBefore := readOr(t, mcpFile)
			if out := inst(); strings.Count(out, "unchanged") != 2 {
				t.Errorf("second install: %q", out)
			}
			if again := readOr(t, settings); again != got {
				t.Errorf("a second install changed the file:\n%s\n---\n%s", got, again)
			}
			if readOr(t, mcpFile) != mcpBefore || len(backups(t, filepath.Dir(settings))) != wantBackups {
				t.Error("a second install changed .mcp.json or made a backup")
			}

			// Uninstall gives back the other content.
			if out, errs, code := run(t, "uninstall", "claude", "--project-dir", project); code != 0 {
				t.Fatalf("uninstall: %d\n%s%s", code, out, errs)
			}
			after := readOr(t, settings)
			switch {
			case c.restored == "" && after != "":
				t.Errorf("after uninstall settings.json holds %q, want it removed", after)
			case c.restored != "" && !jsonedit.Equal(parseJSON(t, after), parseJSON(t, c.restored)):
				t.Errorf("after uninstall:\n%s\nwant the same as:\n%s", after, c.restored)
			}
			if c.restored != "" {
				if keys := parseJSON(t, after).(*jsonedit.Object).Keys(); strings.Join(keys, " ") != strings.Join(parseJSON(t, c.restored).(*jsonedit.Object).Keys(), " ") {
					t.Errorf("uninstall changed the order of keys: %v", keys)
				}
			}
			if m := readOr(t, mcpFile); m != "" {
				t.Errorf("after uninstall .mcp.json holds %q", m)
			}
		})
	}
}

// TestInstallClaudeProblems covers files install must not touch and the
// base URL rules.
func TestInstallClaudeProblems(t *testing.T) {
	project := t.TempDir()
	dir := filepath.Join(project, ".claude")
	os.MkdirAll(dir, 0o755)
	bad := "{\n  \"env\": {\n    \"A\": 1,\n  }\n}\n"
	writeFile(t, dir, "settings.json", bad)
	_, errs, code := run(t, "install", "claude", "--project-dir", project)
	if code != 1 || !strings.Contains(errs, filepath.Join(dir, "settings.json")+":4:3: not valid JSON") {
		t.Errorf("invalid JSON: exit %d %q", code, errs)
	}
	if readOr(t, filepath.Join(dir, "settings.json")) != bad || len(backups(t, dir)) != 0 || readOr(t, filepath.Join(project, ".mcp.json")) != "" {
		t.Error("install touched a project whose settings.json is not JSON")
	}
	writeFile(t, dir, "settings.json", `{"hooks": []}`)
	if _, errs, code := run(t, "install", "claude", "--project-dir", project); code != 1 || !strings.Contains(errs, `"hooks" is a JSON array, not an object`) {
		t.Errorf("hooks of the wrong kind: exit %d %q", code, errs)
	}
	writeFile(t, dir, "settings.json", `[]`)
	if _, errs, code := run(t, "install", "claude", "--project-dir", project); code != 1 || !strings.Contains(errs, "holds a JSON array, not an object") {
		t.Errorf("an array: exit %d %q", code, errs)
	}

	// A base URL of the user's own stays unless --force; uninstall
	// removes only the one install set.
	gw := `{"env": {"ANTHROPIC_BASE_URL": "https://gateway.example"}}`
	writeFile(t, dir, "settings.json", gw)
	if _, errs, code := run(t, "install", "claude", "--project-dir", project); code != 1 || !strings.Contains(errs, `env.ANTHROPIC_BASE_URL is "https://gateway.example", not bbengine's`) {
		t.Errorf("a foreign base URL: exit %d %q", code, errs)
	}
	if _, errs, code := run(t, "install", "claude", "--project-dir", project, "--no-base-url"); code != 0 {
		t.Errorf("--no-base-url: %q", errs)
	}
	if s := readOr(t, filepath.Join(dir, "settings.json")); !strings.Contains(s, "https://gateway.example") || strings.Contains(s, claude.BaseURLMark) {
		t.Errorf("--no-base-url changed the base URL:\n%s", s)
	}
	if _, errs, code := run(t, "install", "claude", "--project-dir", project, "--force", "--base-url", "http://127.0.0.1:9999/"); code != 0 {
		t.Errorf("--force: %q", errs)
	}
	if s := readOr(t, filepath.Join(dir, "settings.json")); !strings.Contains(s, `"ANTHROPIC_BASE_URL": "http://127.0.0.1:9999"`) {
		t.Errorf("--force did not set the base URL:\n%s", s)
	}
	// The user points it elsewhere after install: it is no longer ours.
	s := strings.Replace(readOr(t, filepath.Join(dir, "settings.json")), `"ANTHROPIC_BASE_URL": "http://127.0.0.1:9999"`, `"ANTHROPIC_BASE_URL": "https://mine.example"`, 1)
	writeFile(t, dir, "settings.json", s)
	if _, errs, code := run(t, "uninstall", "claude", "--project-dir", project); code != 0 {
		t.Fatalf("uninstall: %q", errs)
	}
	var doc struct{ Env map[string]string }
	json.Unmarshal([]byte(readOr(t, filepath.Join(dir, "settings.json"))), &doc)
	if len(doc.Env) != 1 || doc.Env["ANTHROPIC_BASE_URL"] != "https://mine.example" {
		t.Errorf("uninstall: env %v, want the user's base URL alone", doc.Env)
	}

	if _, errs, code := run(t, "install", "claude", "--project", "--user"); code != 2 || !strings.Contains(errs, "exclude each other") {
		t.Errorf("--project --user: %d %q", code, errs)
	}
	if _, errs, code := run(t, "install", "claude", "--base-url", "127.0.0.1:8787", "--project-dir", project); code != 2 || !strings.Contains(errs, "want http://HOST:PORT") {
		t.Errorf("bad --base-url: %d %q", code, errs)
	}
}

// TestInstallClaudeUser writes the user's files under CLAUDE_CONFIG_DIR,
// with --dir in the commands, and shows a dry run.
func TestInstallClaudeUser(t *testing.T) {
	config := t.TempDir()
	t.Setenv("CLAUDE_CONFIG_DIR", config)
	data := t.TempDir()
	global := `{"numStartups": 3, "projects": {"/x": {"allowedTools": []}}, "mcpServers": {"other": {"command": "o"}}}`
	writeFile(t, config, ".claude.json", global)
	out, errs, code := run(t, "--dir", data, "install", "claude", "--user", "--dry-run")
	if code != 0 || !strings.Contains(out, "--- /dev/null\n+++ "+filepath.Join(config, "settings.json")) ||
		!strings.Contains(out, `+            "command": `+jsonString(agents.ShellQuote(testExe(t))+" --dir "+data+" hook claude")) ||
		!strings.Contains(out, "+    \"bbengine\": {") || !strings.Contains(out, "@@ ") {
		t.Errorf("dry run: %d\n%s%s", code, out, errs)
	}
	if readOr(t, filepath.Join(config, "settings.json")) != "" || readOr(t, filepath.Join(config, ".claude.json")) != global || len(backups(t, config)) != 0 {
		t.Fatal("a dry run wrote files")
	}
	if out, errs, code := run(t, "--dir", data, "install", "claude", "--user", "--json"); code != 0 || !strings.Contains(out, `"action": "created"`) {
		t.Fatalf("install --user: %d\n%s%s", code, out, errs)
	}
	var g struct {
		N       int `json:"numStartups"`
		Servers map[string]struct {
			Command string
			Args    []string
		} `json:"mcpServers"`
	}
	json.Unmarshal([]byte(readOr(t, filepath.Join(config, ".claude.json"))), &g)
	if g.N != 3 || g.Servers["other"].Command != "o" || strings.Join(g.Servers["bbengine"].Args, " ") != "--dir "+data+" mcp" {
		t.Errorf(".claude.json: %+v", g)
	}
	if info, err := os.Stat(filepath.Join(config, ".claude.json")); err != nil || info.Mode().Perm() != 0o644 {
		// The file kept the permissions it had (writeFile made it 0644).
		t.Errorf(".claude.json mode: %v %v", info.Mode(), err)
	}
	if s := readOr(t, filepath.Join(config, "settings.json")); strings.Contains(s, "enabledMcpjsonServers") {
		t.Errorf("user settings approve a project server:\n%s", s)
	}
	if _, errs, code := run(t, "uninstall", "claude", "--user"); code != 0 {
		t.Fatal(errs)
	}
	if !jsonedit.Equal(parseJSON(t, readOr(t, filepath.Join(config, ".claude.json"))), parseJSON(t, global)) || readOr(t, filepath.Join(config, "settings.json")) != "" {
		t.Errorf("uninstall --user left:\n%s", readOr(t, filepath.Join(config, ".claude.json")))
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestInstallCodex installs into a Codex config with the user's
// comments and tables, checks the result parses and keeps every user
// line, that a second install changes nothing, and that uninstall gives
// the files back.
func TestInstallCodex(t *testing.T) {
	home := t.TempDir()
	t.Setenv("CODEX_HOME", home)
	exe := testExe(t)
	orig := "# my settings\nmodel = \"gpt-5\" # the default\n\n[features]\nweb_search = true\n\n[mcp_servers.other]\ncommand = \"other\"\n"
	writeFile(t, home, "config.toml", orig)
	agentsOrig := "# House rules\n\nWrite tests first.\n"
	writeFile(t, home, "AGENTS.md", agentsOrig)
	if out, errs, code := run(t, "install", "codex", "--user"); code != 0 {
		t.Fatalf("install: %d\n%s%s", code, out, errs)
	}
	cfg := readOr(t, filepath.Join(home, "config.toml"))
	var doc struct {
		Model         string `toml:"model"`
		OpenAIBaseURL string `toml:"openai_base_url"`
		Features      map[string]bool
		MCP           map[string]struct {
			Command string
			Args    []string
		} `toml:"mcp_servers"`
	}
	if _, err := toml.Decode(cfg, &doc); err != nil {
		t.Fatalf("config.toml after install: %v\n%s", err, cfg)
	}
	if doc.Model != "gpt-5" || doc.OpenAIBaseURL != defaultBaseURL+"/v1" || !doc.Features["codex_hooks"] || !doc.Features["web_search"] ||
		doc.MCP["bbengine"].Command != exe || strings.Join(doc.MCP["bbengine"].Args, " ") != "mcp" || doc.MCP["other"].Command != "other" {
		t.Errorf("config.toml:\n%s\n%+v", cfg, doc)
	}
	for _, l := range strings.Split(orig, "\n") {
		if !strings.Contains(cfg, l) {
			t.Errorf("install lost the line %q", l)
		}
	}
	hooks := readOr(t, filepath.Join(home, "hooks.json"))
	if s := hookCommands(t, hooks, "SessionStart"); len(s) != 1 || s[0] != exe+" hook codex" {
		t.Errorf("hooks.json: %s", hooks)
	}
	agents := readOr(t, filepath.Join(home, "AGENTS.md"))
	if !strings.HasPrefix(agents, agentsOrig+"\n"+codex.AgentsBegin) || !strings.Contains(agents, "mem context --session \"$BBENGINE_SESSION\"") || !strings.HasSuffix(agents, codex.AgentsEnd+"\n") {
		t.Errorf("AGENTS.md:\n%s", agents)
	}
	if out, _, _ := run(t, "install", "codex", "--user"); strings.Count(out, "unchanged") != 3 {
		t.Errorf("second install: %q", out)
	}
	if readOr(t, filepath.Join(home, "config.toml")) != cfg || readOr(t, filepath.Join(home, "AGENTS.md")) != agents || readOr(t, filepath.Join(home, "hooks.json")) != hooks {
		t.Error("a second install changed a file")
	}
	if _, errs, code := run(t, "uninstall", "codex", "--user"); code != 0 {
		t.Fatal(errs)
	}
	if got := readOr(t, filepath.Join(home, "config.toml")); got != orig {
		t.Errorf("uninstall left config.toml:\n%s\nwant:\n%s", got, orig)
	}
	if got := readOr(t, filepath.Join(home, "AGENTS.md")); got != agentsOrig {
		t.Errorf("uninstall left AGENTS.md:\n%q", got)
	}
	if got := readOr(t, filepath.Join(home, "hooks.json")); got != "" {
		t.Errorf("uninstall left hooks.json: %q", got)
	}

	// A config with no [features] gets one in the block; an empty one
	// comes back empty (removed).
	project := t.TempDir()
	if _, errs, code := run(t, "install", "codex", "--project-dir", project, "--no-base-url"); code != 0 {
		t.Fatal(errs)
	}
	cfg = readOr(t, filepath.Join(project, ".codex", "config.toml"))
	if !strings.Contains(cfg, "[features]\ncodex_hooks = true\n") || strings.Contains(cfg, "openai_base_url") || readOr(t, filepath.Join(project, "AGENTS.md")) == "" {
		t.Errorf("project config:\n%s", cfg)
	}
	if _, errs, code := run(t, "uninstall", "codex", "--project-dir", project); code != 0 {
		t.Fatal(errs)
	}
	for _, f := range []string{".codex/config.toml", ".codex/hooks.json", "AGENTS.md"} {
		if s := readOr(t, filepath.Join(project, f)); s != "" {
			t.Errorf("uninstall left %s: %q", f, s)
		}
	}

	// What install must not do.
	for _, c := range []struct {
		config, want string
	}{
		{"model = \"x\"\nopenai_base_url = \"https://other.example/v1\"\n", "config.toml:2: openai_base_url is \"https://other.example/v1\" already"},
		{"[mcp_servers.bbengine]\ncommand = \"x\"\n", "config.toml:1: [mcp_servers.bbengine] is defined already"},
		{"model = \"x\"\n[features\n", "config.toml:2:"},
		{"features = { web_search = true }\n", "without a [features] table"},
	} {
		writeFile(t, home, "config.toml", c.config)
		_, errs, code := run(t, "install", "codex", "--user")
		if code != 1 || !strings.Contains(errs, c.want) {
			t.Errorf("config %q: exit %d %q, want %q", c.config, code, errs, c.want)
		}
		if readOr(t, filepath.Join(home, "config.toml")) != c.config {
			t.Errorf("install changed a config it refused")
		}
	}
	// The user's own codex_hooks stands.
	writeFile(t, home, "config.toml", "[features]\ncodex_hooks = false\n")
	if _, errs, code := run(t, "install", "codex", "--user", "--no-mcp", "--no-base-url"); code != 0 || readOr(t, filepath.Join(home, "config.toml")) != "[features]\ncodex_hooks = false\n" {
		t.Errorf("codex_hooks = false: %q\n%s", errs, readOr(t, filepath.Join(home, "config.toml")))
	}
}
