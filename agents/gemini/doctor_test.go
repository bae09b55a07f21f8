package gemini

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

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// doctorHome is a temporary home with no gemini on PATH and no system
// settings, and the DoctorEnv of it.
func doctorHome(t *testing.T) (home, project string, env *agents.DoctorEnv) {
	home, project = t.TempDir(), t.TempDir()
	t.Setenv("PATH", t.TempDir())
	t.Setenv("GEMINI_CLI_HOME", "")
	t.Setenv(EnvVar, "")
	t.Setenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH", filepath.Join(t.TempDir(), "settings.json"))
	env = &agents.DoctorEnv{Home: home, ProjectDir: project, Exe: "/opt/bb/bbengine", Now: time.Now(), Timeout: time.Second}
	return home, project, env
}

// TestDoctorInstalled: an empty home is one "found" line; after `install
// gemini --user` the hooks, the MCP server and the base URL in
// ~/.gemini/.env are found, and the default retention (30 days) warns
// with the exact setting, or fails when a log not imported is near it.
func TestDoctorInstalled(t *testing.T) {
	home, project, env := doctorHome(t)
	fs := Agent{}.Doctor(env)
	if len(fs) != 1 || fs[0].Check != "found" || fs[0].Severity != agents.OK {
		t.Fatalf("empty home: %+v", fs)
	}
	s := &agents.Setup{Exe: env.Exe, BaseURL: "http://127.0.0.1:9", MCP: true, Hooks: true, User: true, Home: home}
	install(t, s, "created created")
	user := filepath.Join(home, ".gemini", "settings.json")
	fs = Agent{}.Doctor(env)
	if f := doctorFinding(t, fs, "version"); f.Severity != agents.Warn || !strings.Contains(f.Message, "gemini is not on PATH") {
		t.Errorf("version: %+v", f)
	}
	if f := doctorFinding(t, fs, "hooks"); f.Severity != agents.OK || !strings.Contains(f.Message, "SessionStart and BeforeAgent hooks are registered in "+user) {
		t.Errorf("hooks: %+v", f)
	}
	if f := doctorFinding(t, fs, "mcp"); f.Severity != agents.OK || !strings.Contains(f.Message, user) {
		t.Errorf("mcp: %+v", f)
	}
	envFile := filepath.Join(home, ".gemini", ".env")
	if f := doctorFinding(t, fs, "base-url"); f.Severity != agents.Fail || !strings.Contains(f.Message, EnvVar+" in "+envFile+" is http://127.0.0.1:9") {
		t.Errorf("base-url: %+v", f)
	}
	off := `set "general": {"sessionRetention": {"enabled": false}} in ` + user
	f := doctorFinding(t, fs, "cleanup")
	if f.Severity != agents.Warn || !strings.Contains(f.Message, "general.sessionRetention is not set") || !strings.Contains(f.Message, "30d") || f.Fix != off {
		t.Errorf("default retention: %+v", f)
	}
	env.Logs, env.Unimported, env.Oldest = 4, 2, env.Now.Add(-25*24*time.Hour)
	f = doctorFinding(t, Agent{}.Doctor(env), "cleanup")
	if f.Severity != agents.Fail || !strings.Contains(f.Message, "2 of 4 logs are not imported yet, the oldest last changed 25 days ago") ||
		!strings.Contains(f.Fix, "bbengine import gemini --all") || !strings.Contains(f.Fix, off) {
		t.Errorf("default retention, an old log not imported: %+v", f)
	}

	// The environment wins over the .env file; the project's .env (a
	// directory up from where Gemini CLI runs) over the home's.
	t.Setenv(EnvVar, "https://example.invalid")
	if f := doctorFinding(t, Agent{}.Doctor(env), "base-url"); f.Severity != agents.Warn || !strings.Contains(f.Message, EnvVar+" in the environment is https://example.invalid") {
		t.Errorf("base-url from the environment: %+v", f)
	}
	t.Setenv(EnvVar, "")
	writeFile(t, filepath.Join(project, ".env"), "GEMINI_API_KEY=k\n")
	env.ProjectDir = filepath.Join(project, "sub")
	if f := doctorFinding(t, Agent{}.Doctor(env), "base-url"); f.Severity != agents.Warn || !strings.Contains(f.Message, "not in "+filepath.Join(project, ".env")) {
		t.Errorf("base-url with a project .env: %+v", f)
	}
}

// TestDoctorRetention: the project's settings win over the user's and
// the fix names the file that sets the retention; enabled false is ok;
// an invalid setting (which turns Gemini CLI's cleanup off) warns.
func TestDoctorRetention(t *testing.T) {
	home, project, env := doctorHome(t)
	user := filepath.Join(home, ".gemini", "settings.json")
	proj := filepath.Join(project, ".gemini", "settings.json")
	env.Logs, env.Unimported, env.Oldest = 3, 1, env.Now.Add(-5*24*time.Hour)
	// Two chats in one project (an old .json and its .jsonl are one),
	// one in another.
	for _, f := range []string{"p1/chats/session-a.json", "p1/chats/session-a.jsonl", "p1/chats/session-b.jsonl", "p2/chats/session-c.jsonl"} {
		writeFile(t, filepath.Join(home, ".gemini", "tmp", f), "{}")
	}
	for _, tc := range []struct {
		name, user, proj string
		sev              agents.Severity
		msg, fix         string
	}{
		{name: "long", user: `{"general": {"sessionRetention": {"maxAge": "9999d"}}}`, sev: agents.OK,
			msg: `general.sessionRetention.maxAge is "9999d" in ` + user},
		{name: "project wins", user: `{"general": {"sessionRetention": {"maxAge": "9999d"}}}`, proj: `{"general": {"sessionRetention": {"maxAge": "10d"}}}`,
			sev: agents.Fail, msg: `maxAge is "10d" in ` + proj, fix: `{"enabled": false}} in ` + proj},
		{name: "months", user: `{"general": {"sessionRetention": {"maxAge": "2m"}}}`, sev: agents.Warn,
			msg: "import them before Gemini CLI deletes them", fix: `{"enabled": false}} in ` + user},
		{name: "off", user: `{"general": {"sessionRetention": {"enabled": false}}}`, sev: agents.OK,
			msg: "enabled is false in " + user + ": Gemini CLI deletes no chats"},
		{name: "off in the project", user: `{"general": {"sessionRetention": {"maxAge": "1d"}}}`, proj: `{"general": {"sessionRetention": {"enabled": false}}}`,
			sev: agents.OK, msg: "enabled is false in " + proj},
		{name: "max count", user: `{"general": {"sessionRetention": {"maxAge": "9999d", "maxCount": 5}}}`, sev: agents.Warn,
			msg: "keeps only the 5 newest chats"},
		{name: "max count, more logs", user: `{"general": {"sessionRetention": {"maxAge": "9999d", "maxCount": 1}}}`, sev: agents.Fail,
			msg: "(Gemini CLI keeps 1 chats of a project; " + filepath.Join(home, ".gemini", "tmp", "p1") + " has 2)", fix: "bbengine import gemini --all"},
		{name: "bad period", user: `{"general": {"sessionRetention": {"maxAge": "30 days"}}}`, sev: agents.Warn,
			msg: `maxAge is "30 days" in ` + user + `, not a period like "30d": Gemini CLI turns its cleanup off`},
		{name: "below minimum", user: `{"general": {"sessionRetention": {"maxAge": "2h"}}}`, sev: agents.Warn,
			msg: "below minRetention (24h0m0s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writeFile(t, user, tc.user)
			os.Remove(proj)
			if tc.proj != "" {
				writeFile(t, proj, tc.proj)
			}
			f := doctorFinding(t, Agent{}.Doctor(env), "cleanup")
			if f.Severity != tc.sev || !strings.Contains(f.Message, tc.msg) || !strings.Contains(f.Fix, tc.fix) {
				t.Errorf("got %s %q (fix %q), want %s %q (fix %q)", f.Severity, f.Message, f.Fix, tc.sev, tc.msg, tc.fix)
			}
		})
	}
	writeFile(t, proj, "{\n  \"general\": {,\n}")
	f := doctorFinding(t, Agent{}.Doctor(env), "settings")
	if f.Severity != agents.Fail || !strings.Contains(f.Message, proj+":2:") {
		t.Errorf("a file that does not parse: %+v", f)
	}
}
