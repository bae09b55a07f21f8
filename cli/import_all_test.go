package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// allHome makes a temporary HOME holding, where each agent keeps them,
// the logs named in which: a Claude Code transcript, a Codex rollout
// and a Gemini CLI 0.61 chat. It clears the agents' own variables.
func allHome(t *testing.T, which ...string) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, v := range []string{"CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "XDG_DATA_HOME", "OPENCODE_DB"} {
		t.Setenv(v, "")
	}
	put := func(rel, body string) {
		p := filepath.Join(home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range which {
		switch w {
		case "claude":
			put(".claude/projects/-work/aaaaaaaa-1111-2222-3333-444444444444.jsonl", claudeLine+"\n")
		case "claude2":
			put(".claude/projects/-work/bbbbbbbb-1111-2222-3333-444444444444.jsonl",
				strings.ReplaceAll(claudeLine, "aaaaaaaa", "bbbbbbbb")+"\n")
		case "codex":
			put(".codex/sessions/2026/05/11/rollout-2026-05-11T08-27-17-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl", codexRollout)
		case "gemini":
			b, err := os.ReadFile(filepath.Join("..", "agents", "gemini", "testdata", "gemini-cli-0.61.0-tools.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			put(".gemini/tmp/work/chats/session-2026-11-27T06-36-3f849cf4.jsonl", string(b))
		case "opencode":
			for _, suffix := range []string{"", "-wal"} {
				b, err := os.ReadFile(filepath.Join("..", "agents", "opencode", "testdata", "opencode-1.18.33-tools.db"+suffix))
				if err != nil {
					t.Fatal(err)
				}
				put(".local/share/opencode/opencode.db"+suffix, string(b))
			}
		}
	}
	return home
}

// TestImportAllAgents: `import --all` with no agent imports the logs of
// Claude Code, Codex, Gemini CLI and opencode from their default
// locations, one line per agent, --check finds nothing lost, --json says
// the same, `sessions` lists the four; piped, stderr holds no progress
// bar.
func TestImportAllAgents(t *testing.T) {
	allHome(t, "claude", "codex", "gemini", "opencode")
	dir := t.TempDir()
	out, errs, code := run(t, "--dir", dir, "import", "--all", "--check")
	if code != 0 {
		t.Fatalf("import --all --check: %d\n%s%s", code, out, errs)
	}
	for _, w := range []string{"claude: imported 1 records", "codex: imported 6 records", "gemini: imported ", "into 1 sessions"} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errs)
		}
	}
	if !strings.Contains(out, "import --check: 4 sessions, nothing lost") {
		t.Errorf("--check:\n%s", out)
	}
	if strings.ContainsAny(errs, "\r\x1b") {
		t.Errorf("piped stderr holds terminal control characters: %q", errs)
	}
	sessions, errs2, code := run(t, "--dir", dir, "sessions")
	if code != 0 {
		t.Fatalf("sessions: %d %s", code, errs2)
	}
	for _, id := range []string{"claude:aaaaaaaa-1111-2222-3333-444444444444", "codex:019e1625-789d-76c0-80ab-3724b5ddb799", "gemini:3f849cf4-c2a2-4b67-a9c5-29d3a4ec5e1d",
		"opencode:ses_de3373617ffeEUid1EoeXUeDtH"} {
		if !strings.Contains(sessions, id) {
			t.Errorf("sessions lacks %s:\n%s", id, sessions)
		}
	}

	// Again, as JSON: nothing new, each log unchanged, and --check
	// covers no session (this run imported into none).
	out, errs, code = run(t, "--dir", dir, "import", "--all", "--json", "--check")
	if code != 0 {
		t.Fatalf("import --all --json: %d\n%s%s", code, out, errs)
	}
	var rep importJSON
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	var got []string
	for _, s := range rep.Sources {
		got = append(got, s.Source)
		if s.Found != 1 || s.Unchanged != 1 || s.Records != 0 {
			t.Errorf("second run, %s: %+v", s.Source, s)
		}
	}
	if strings.Join(got, " ") != "claude codex gemini opencode" || rep.Problems != 0 || rep.Check == nil || len(rep.Check) != 0 {
		t.Errorf("second run: %s", out)
	}

	// A fresh data directory, as JSON with --check: every session's
	// counts, lossless.
	out, _, code = run(t, "--dir", t.TempDir(), "import", "--all", "--json", "--check")
	rep = importJSON{}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("--json --check: %d %v\n%s", code, err, out)
	}
	if len(rep.Check) != 4 {
		t.Fatalf("--json --check: %s", out)
	}
	for _, c := range rep.Check {
		if !c.Lossless || len(c.Rows) == 0 || !strings.HasPrefix(c.Session, c.Source+":") {
			t.Errorf("check of %s: %+v", c.Session, c)
		}
	}
}

// TestImportAllMissingAgent: an agent with no logs on the machine is one
// line naming where it looked, not an error; `import <agent> --all`
// keeps its own output.
func TestImportAllMissingAgent(t *testing.T) {
	home := allHome(t, "claude", "claude2")
	dir := t.TempDir()
	_, errs, code := run(t, "--dir", dir, "import", "--all")
	if code != 0 {
		t.Fatalf("import --all: %d\n%s", code, errs)
	}
	for _, w := range []string{
		"claude: imported 2 records",
		"codex: no logs in " + filepath.Join(home, ".codex", "sessions") + ", " + filepath.Join(home, ".codex", "archived_sessions"),
		"gemini: no logs in " + filepath.Join(home, ".gemini", "tmp"),
		"opencode: no logs in " + filepath.Join(home, ".local", "share", "opencode"),
	} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errs)
		}
	}
	if n := strings.Count(errs, "\n"); n != 4 {
		t.Errorf("%d lines, want one per agent:\n%s", n, errs)
	}
	_, errs, code = run(t, "--dir", dir, "import", "codex", "--all")
	if code != 0 || !strings.HasPrefix(errs, "imported 0 records") {
		t.Errorf("import codex --all: %d %q", code, errs)
	}
	if _, errs, code = run(t, "--dir", dir, "import"); code != 2 || !strings.Contains(errs, "--all") {
		t.Errorf("import with nothing: %d %q", code, errs)
	}
	if _, errs, code = run(t, "--dir", dir, "import", "--all", "--json", "--follow"); code != 2 {
		t.Errorf("import --json --follow: %d %q", code, errs)
	}
}

// TestImportAllThroughProxy: with a proxy owning the data directory,
// import --all sends every agent's records to it, and sessions, asked
// of the proxy, lists them.
func TestImportAllThroughProxy(t *testing.T) {
	allHome(t, "claude", "codex", "gemini", "opencode")
	dir := t.TempDir()
	startTestProxy(t, dir)
	out, errs, code := run(t, "--dir", dir, "import", "--all", "--check")
	if code != 0 || !strings.Contains(out, "import --check: 4 sessions, nothing lost") {
		t.Fatalf("import --all through the proxy: %d\n%s%s", code, out, errs)
	}
	sessions, errs, code := run(t, "--dir", dir, "sessions")
	if code != 0 {
		t.Fatalf("sessions: %d %s", code, errs)
	}
	for _, id := range []string{"claude:aaaaaaaa", "codex:019e1625", "gemini:3f849cf4", "opencode:ses_de3373617ffe"} {
		if !strings.Contains(sessions, id) {
			t.Errorf("sessions lacks %s:\n%s", id, sessions)
		}
	}
}
