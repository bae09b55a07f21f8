package cli

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
)

// doctorHome makes a home of the test's own, with Claude Code's
// settings.json holding settings ("" for no file), an empty PATH, and
// none of the agents' variables set; it returns the home and a project
// directory.
func doctorHome(t *testing.T, settings string) (home, project string) {
	t.Helper()
	home, project = t.TempDir(), t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("PATH", t.TempDir())
	for _, v := range []string{"CLAUDE_CONFIG_DIR", "CODEX_HOME", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL"} {
		t.Setenv(v, "")
	}
	if err := os.MkdirAll(filepath.Join(home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if settings != "" {
		writeFile(t, filepath.Join(home, ".claude"), "settings.json", settings)
	}
	return home, project
}

// doctor runs `bbengine doctor --json` and returns its report and exit
// status.
func doctor(t *testing.T, dir, project string, args ...string) (api.DoctorReport, int) {
	t.Helper()
	out, stderr, code := run(t, append([]string{"--dir", dir, "doctor", "--json", "--project-dir", project}, args...)...)
	var rep api.DoctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json: %v\nstdout: %s\nstderr: %s", err, out, stderr)
	}
	return rep, code
}

// find returns the finding of agent's check.
func find(t *testing.T, rep api.DoctorReport, agent, check string) agents.Finding {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Agent == agent && f.Check == check {
			return f
		}
	}
	t.Fatalf("no %s %s finding in %+v", agent, check, rep.Findings)
	return agents.Finding{}
}

func TestDoctorCleanup(t *testing.T) {
	for _, tc := range []struct {
		name, settings string
		sev            agents.Severity
		in             string
		code           int
	}{
		{"unset", `{"theme": "dark"}`, agents.Warn, "cleanupPeriodDays is not set", 0},
		{"no file", "", agents.Warn, "30 days after their last change, its default", 0},
		{"high", `{"cleanupPeriodDays": 100000}`, agents.OK, "cleanupPeriodDays is 100000 in", 0},
		{"zero", `{"cleanupPeriodDays": 0}`, agents.Fail, "takes 1 or more", 1},
		{"not a number", `{"cleanupPeriodDays": "30"}`, agents.Fail, `is "30", not a whole number`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home, project := doctorHome(t, tc.settings)
			rep, code := doctor(t, filepath.Join(home, "data"), project, "claude")
			f := find(t, rep, "claude", "cleanup")
			if f.Severity != tc.sev || !strings.Contains(f.Message, tc.in) {
				t.Errorf("cleanup = %s %q, want %s with %q", f.Severity, f.Message, tc.sev, tc.in)
			}
			wantFix := `set "cleanupPeriodDays": 100000 in ` + filepath.Join(home, ".claude", "settings.json")
			if tc.sev != agents.OK && !strings.Contains(f.Fix, wantFix) {
				t.Errorf("fix = %q, want %q", f.Fix, wantFix)
			}
			if code != tc.code || rep.Failed != (tc.code == 1) {
				t.Errorf("exit %d, failed %v; want %d", code, rep.Failed, tc.code)
			}
		})
	}
}

// TestDoctorCleanupUnimported fails the cleanup check when a log not
// imported yet is near Claude Code's cleanup, and says so in text.
func TestDoctorCleanupUnimported(t *testing.T) {
	home, project := doctorHome(t, `{"cleanupPeriodDays": 30}`)
	logs := filepath.Join(home, ".claude", "projects", "-p")
	os.MkdirAll(logs, 0o755)
	p := writeFile(t, logs, "11111111-2222-4333-8444-555555555555.jsonl", "{}\n")
	old := time.Now().Add(-25 * 24 * time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
	out, _, code := run(t, "--dir", filepath.Join(home, "data"), "doctor", "--project-dir", project, "claude")
	if code != 1 {
		t.Errorf("exit %d, want 1:\n%s", code, out)
	}
	want := "fail claude   cleanup    cleanupPeriodDays is 30 in " + filepath.Join(home, ".claude", "settings.json") +
		"; 1 of 1 logs are not imported yet, the oldest last changed 25 days ago (Claude Code deletes logs after 30 days); fix: run `bbengine import claude --all` now, and set \"cleanupPeriodDays\": 100000 in "
	if !strings.Contains(out, want) {
		t.Errorf("doctor says:\n%s\nwant a line with:\n%s", out, want)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(l, "ok ") && !strings.HasPrefix(l, "warn ") && !strings.HasPrefix(l, "fail ") {
			t.Errorf("line without a severity: %q", l)
		}
	}
}

func TestDoctorInstall(t *testing.T) {
	home, project := doctorHome(t, `{"cleanupPeriodDays": 100000}`)
	dir := filepath.Join(home, "data")
	if _, stderr, code := run(t, "--dir", dir, "install", "claude", "--user", "--no-base-url"); code != 0 {
		t.Fatalf("install: %s", stderr)
	}
	rep, _ := doctor(t, dir, project, "claude")
	for _, check := range []string{"hooks", "mcp"} {
		if f := find(t, rep, "claude", check); f.Severity != agents.OK || !strings.Contains(f.Message, "registered in "+home) {
			t.Errorf("after install, %s = %s %q", check, f.Severity, f.Message)
		}
	}
	// Hooks of another data directory are a warn.
	other := t.TempDir()
	rep, _ = doctor(t, other, project, "claude")
	if f := find(t, rep, "claude", "hooks"); f.Severity != agents.Warn || !strings.Contains(f.Message, "read "+dir+", not "+other) {
		t.Errorf("hooks of another data directory: %s %q", f.Severity, f.Message)
	}
	if _, stderr, code := run(t, "--dir", dir, "uninstall", "claude", "--user"); code != 0 {
		t.Fatalf("uninstall: %s", stderr)
	}
	rep, _ = doctor(t, dir, project, "claude")
	for _, check := range []string{"hooks", "mcp"} {
		if f := find(t, rep, "claude", check); f.Severity != agents.Warn || !strings.Contains(f.Message, "not registered") ||
			!strings.Contains(f.Fix, "bbengine install claude --user") {
			t.Errorf("after uninstall, %s = %s %q (fix %q)", check, f.Severity, f.Message, f.Fix)
		}
	}
}

func TestDoctorCodexInstall(t *testing.T) {
	home, project := doctorHome(t, "")
	dir := filepath.Join(home, "data")
	if _, stderr, code := run(t, "--dir", dir, "install", "codex", "--user", "--no-base-url"); code != 0 {
		t.Fatalf("install: %s", stderr)
	}
	rep, _ := doctor(t, dir, project, "codex")
	for _, check := range []string{"hooks", "mcp"} {
		if f := find(t, rep, "codex", check); f.Severity != agents.OK {
			t.Errorf("after install, %s = %s %q", check, f.Severity, f.Message)
		}
	}
	if f := find(t, rep, "codex", "base-url"); f.Severity != agents.Warn || !strings.Contains(f.Message, "is not set") {
		t.Errorf("base-url = %s %q", f.Severity, f.Message)
	}
	run(t, "--dir", dir, "uninstall", "codex", "--user")
	rep, _ = doctor(t, dir, project, "codex")
	if f := find(t, rep, "codex", "hooks"); f.Severity != agents.Warn {
		t.Errorf("after uninstall, hooks = %s %q", f.Severity, f.Message)
	}
}

// TestDoctorVersion runs the agent's --version from PATH.
func TestDoctorVersion(t *testing.T) {
	home, project := doctorHome(t, "")
	bin := t.TempDir()
	writeFile(t, bin, "claude", "#!/bin/sh\necho '2.1.90 (Claude Code)'\n")
	os.Chmod(filepath.Join(bin, "claude"), 0o755)
	t.Setenv("PATH", bin)
	rep, _ := doctor(t, filepath.Join(home, "data"), project, "claude")
	if f := find(t, rep, "claude", "version"); f.Severity != agents.OK || !strings.Contains(f.Message, "Claude Code 2.1.90 (Claude Code)") {
		t.Errorf("version = %s %q", f.Severity, f.Message)
	}
	// A claude that does not answer is given up after --timeout.
	sleep := "/bin/sleep"
	if _, err := os.Stat(sleep); err != nil {
		sleep = "/usr/bin/sleep"
	}
	writeFile(t, bin, "claude", "#!/bin/sh\nexec "+sleep+" 30\n")
	out, _, _ := run(t, "--dir", filepath.Join(home, "data"), "doctor", "--json", "--timeout", "300ms", "--project-dir", project, "claude")
	var hung api.DoctorReport
	if err := json.Unmarshal([]byte(out), &hung); err != nil {
		t.Fatal(err)
	}
	if f := find(t, hung, "claude", "version"); f.Severity != agents.Warn || !strings.Contains(f.Message, "did not answer within 300ms") {
		t.Errorf("a claude that hangs: version = %s %q", f.Severity, f.Message)
	}
	// The real Claude Code, when the e2e install is there.
	if real, err := filepath.Abs("../e2e/node/node_modules/.bin/claude"); err == nil {
		if _, err := os.Stat(real); err == nil {
			t.Setenv("PATH", filepath.Dir(real)+string(os.PathListSeparator)+"/usr/bin:/bin")
			rep, _ := doctor(t, filepath.Join(home, "data"), project, "claude")
			if f := find(t, rep, "claude", "version"); f.Severity != agents.OK || !strings.Contains(f.Message, "(Claude Code)") {
				t.Errorf("the real claude: version = %s %q", f.Severity, f.Message)
			}
		}
	}
	t.Setenv("PATH", t.TempDir())
	rep, code := doctor(t, filepath.Join(home, "data"), project, "codex")
	if len(rep.Findings) == 0 || code != 0 {
		t.Fatalf("exit %d, %+v", code, rep.Findings)
	}
	if f := find(t, rep, "codex", "found"); f.Severity != agents.OK || !strings.Contains(f.Message, "not found") {
		t.Errorf("codex = %s %q", f.Severity, f.Message)
	}
}

// TestDoctorDataDir checks a data directory that does not exist and an
// empty one: warn and ok, exit 0, and doctor creates nothing.
func TestDoctorDataDir(t *testing.T) {
	home, project := doctorHome(t, `{"cleanupPeriodDays": 100000}`)
	missing := filepath.Join(home, "data")
	rep, code := doctor(t, missing, project, "claude")
	if f := find(t, rep, "bbengine", "data-dir"); f.Severity != agents.Warn || code != 0 {
		t.Errorf("missing data dir: %s %q, exit %d", f.Severity, f.Message, code)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Errorf("doctor created %s", missing)
	}
	empty := t.TempDir()
	rep, code = doctor(t, empty, project, "claude")
	if f := find(t, rep, "bbengine", "data-dir"); f.Severity != agents.OK || code != 0 {
		t.Errorf("empty data dir: %s %q, exit %d", f.Severity, f.Message, code)
	}
	if f := find(t, rep, "bbengine", "wal"); f.Severity != agents.OK || !strings.Contains(f.Message, "nothing recorded") {
		t.Errorf("wal: %s %q", f.Severity, f.Message)
	}
	if ents, _ := os.ReadDir(empty); len(ents) != 0 {
		t.Errorf("doctor wrote into the empty data directory: %v", ents)
	}
	if f := find(t, rep, "bbengine", "proxy"); !strings.Contains(f.Message, "no proxy runs") {
		t.Errorf("proxy: %q", f.Message)
	}
}

// TestDoctorJSON checks the --json shape: the field names a program
// reads.
func TestDoctorJSON(t *testing.T) {
	home, project := doctorHome(t, `{}`)
	out, _, _ := run(t, "--dir", filepath.Join(home, "data"), "doctor", "--json", "--project-dir", project, "claude")
	var raw map[string]any
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"dir", "findings", "failed"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("no %q in %s", k, out)
		}
	}
	fs, _ := raw["findings"].([]any)
	if len(fs) == 0 {
		t.Fatalf("no findings: %s", out)
	}
	for _, f := range fs {
		m := f.(map[string]any)
		for _, k := range []string{"agent", "check", "severity", "message"} {
			if s, _ := m[k].(string); s == "" {
				t.Errorf("finding without %q: %v", k, m)
			}
		}
		if m["severity"] != "ok" {
			if s, _ := m["fix"].(string); s == "" {
				t.Errorf("a %s finding without a fix: %v", m["severity"], m)
			}
		}
	}
	if _, _, code := run(t, "doctor", "nosuchagent"); code == 0 {
		t.Errorf("doctor nosuchagent exits 0")
	}
}

// TestDoctorProxy asks a running proxy: the base URL is ok when it
// points at it and a warn when it does not; the proxy and the lag are
// read over loopback.
func TestDoctorProxy(t *testing.T) {
	home, project := doctorHome(t, `{"cleanupPeriodDays": 100000}`)
	dir := filepath.Join(home, "data")
	startTestProxy(t, dir)
	h, held, err := engine.ReadHolder(dir)
	if err != nil || !held || h.Proxy == "" {
		t.Fatalf("no proxy in the lock file: %+v %v %v", h, held, err)
	}
	base := "http://" + h.Proxy
	t.Setenv("ANTHROPIC_BASE_URL", base)
	rep, code := doctor(t, dir, project, "claude")
	if f := find(t, rep, "claude", "base-url"); f.Severity != agents.OK || !strings.Contains(f.Message, "the running proxy") {
		t.Errorf("base-url at the proxy = %s %q", f.Severity, f.Message)
	}
	if rep.Proxy != base || code != 0 {
		t.Errorf("proxy %q, exit %d; want %q, 0: %+v", rep.Proxy, code, base, rep.Findings)
	}
	if f := find(t, rep, "bbengine", "proxy"); f.Severity != agents.OK {
		t.Errorf("proxy = %s %q", f.Severity, f.Message)
	}
	if f := find(t, rep, "bbengine", "lag"); f.Severity != agents.OK || !strings.Contains(f.Message, "derivation") {
		t.Errorf("lag = %s %q", f.Severity, f.Message)
	}
	t.Setenv("ANTHROPIC_BASE_URL", "https://api.anthropic.com")
	rep, _ = doctor(t, dir, project, "claude")
	if f := find(t, rep, "claude", "base-url"); f.Severity != agents.Warn || !strings.Contains(f.Fix, base) {
		t.Errorf("base-url elsewhere = %s %q (fix %q)", f.Severity, f.Message, f.Fix)
	}
	// Settings win over the environment, as in Claude Code.
	writeFile(t, filepath.Join(home, ".claude"), "settings.json", `{"cleanupPeriodDays": 100000, "env": {"ANTHROPIC_BASE_URL": "`+base+`/"}}`)
	rep, _ = doctor(t, dir, project, "claude")
	if f := find(t, rep, "claude", "base-url"); f.Severity != agents.OK || !strings.Contains(f.Message, "settings.json") {
		t.Errorf("base-url in settings = %s %q", f.Severity, f.Message)
	}
	// A loopback address where nothing answers fails every request.
	writeFile(t, filepath.Join(home, ".claude"), "settings.json", `{"env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:1"}}`)
	rep, code = doctor(t, dir, project, "claude")
	if f := find(t, rep, "claude", "base-url"); f.Severity != agents.Fail || code != 1 {
		t.Errorf("base-url at nothing = %s %q, exit %d", f.Severity, f.Message, code)
	}
}

// TestDoctorImported reads what was imported from the derived state,
// opened here without a proxy and then asked of a running one: a log
// imported whole is ok, one that grew since is not imported in full.
func TestDoctorImported(t *testing.T) {
	home, project := doctorHome(t, `{"cleanupPeriodDays": 100000}`)
	dir := filepath.Join(home, "data")
	logs := filepath.Join(home, ".claude", "projects", "-p")
	os.MkdirAll(logs, 0o755)
	p := writeFile(t, logs, "33333333-2222-4333-8444-555555555555.jsonl", memoryTranscript())
	if out, errs, code := run(t, "--dir", dir, "import", "claude", "--all", "--quiet"); code != 0 {
		t.Fatalf("import: %d\n%s%s", code, out, errs)
	}
	rep, code := doctor(t, dir, project, "claude")
	if f := find(t, rep, "claude", "logs"); f.Severity != agents.OK || !strings.Contains(f.Message, "all 1 logs") {
		t.Errorf("logs after import = %s %q", f.Severity, f.Message)
	}
	if f := find(t, rep, "bbengine", "lag"); f.Severity != agents.OK || !strings.Contains(f.Message, "caught up") {
		t.Errorf("lag = %s %q", f.Severity, f.Message)
	}
	if f := find(t, rep, "bbengine", "wal"); f.Severity != agents.OK {
		t.Errorf("wal = %s %q", f.Severity, f.Message)
	}
	if code != 0 {
		t.Errorf("exit %d: %+v", code, rep.Findings)
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"user","sessionId":"33333333-2222-4333-8444-555555555555","message":{"role":"user","content":"more"}}` + "\n")
	f.Close()
	startTestProxy(t, dir)
	rep, _ = doctor(t, dir, project, "claude")
	if f := find(t, rep, "claude", "logs"); f.Severity != agents.Warn || !strings.Contains(f.Message, "1 of 1 logs") {
		t.Errorf("logs after the log grew = %s %q", f.Severity, f.Message)
	}
}

// TestDoctorWritesNothing runs doctor without a proxy on a data
// directory with derived state, and on the agents' files: every file
// stays as it was, and no file is added.
func TestDoctorWritesNothing(t *testing.T) {
	home, project := doctorHome(t, `{"cleanupPeriodDays": 100000}`)
	dir := filepath.Join(home, "data")
	importMemory(t, dir)
	if _, stderr, code := run(t, "--dir", dir, "install", "claude", "--user", "--no-base-url"); code != 0 {
		t.Fatalf("install: %s", stderr)
	}
	before := treeState(t, home)
	if _, code := doctor(t, dir, project); code != 0 {
		t.Fatalf("exit %d", code)
	}
	after := treeState(t, home)
	for p, s := range before {
		if after[p] != s {
			t.Errorf("doctor changed %s: %s → %s", p, s, after[p])
		}
	}
	for p := range after {
		if _, ok := before[p]; !ok {
			t.Errorf("doctor added %s", p)
		}
	}
}

// treeState maps every file under root to its size, time and content's
// hash.
func treeState(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		info, _ := d.Info()
		out[p] = fmt.Sprintf("%d bytes %v %x", len(b), info.ModTime().UnixNano(), sha256.Sum256(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDoctorEncrypted checks an encrypted data directory: locked
// without a secret (and no secret printed), read here with the
// passphrase, and held unlocked by a running proxy.
func TestDoctorEncrypted(t *testing.T) {
	home, project := doctorHome(t, `{"cleanupPeriodDays": 100000}`)
	dir := filepath.Join(home, "data")
	const secret = "correct horse battery staple"
	t.Setenv("BBENGINE_PASSPHRASE", secret)
	if out, errs, code := run(t, "--dir", dir, "init", "--encrypt"); code != 0 {
		t.Fatalf("init --encrypt: %d %s %s", code, out, errs)
	}
	logs := filepath.Join(home, ".claude", "projects", "-p")
	os.MkdirAll(logs, 0o755)
	writeFile(t, logs, "33333333-2222-4333-8444-555555555555.jsonl", memoryTranscript())
	if out, errs, code := run(t, "--dir", dir, "import", "claude", "--all", "--quiet"); code != 0 {
		t.Fatalf("import: %d\n%s%s", code, out, errs)
	}

	t.Setenv("BBENGINE_PASSPHRASE", "")
	out, errs, code := run(t, "--dir", dir, "--no-keyring", "doctor", "--json", "--project-dir", project, "claude")
	if strings.Contains(out+errs, secret) {
		t.Fatalf("doctor printed the secret:\n%s%s", out, errs)
	}
	var rep api.DoctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("doctor: %d %v\n%s%s", code, err, out, errs)
	}
	if f := find(t, rep, "bbengine", "encryption"); f.Severity != agents.Warn || !strings.Contains(f.Message, "locked") ||
		!strings.Contains(f.Fix, "BBENGINE_PASSPHRASE") {
		t.Errorf("locked: %s %q (fix %q)", f.Severity, f.Message, f.Fix)
	}
	if f := find(t, rep, "bbengine", "wal"); f.Severity != agents.OK {
		t.Errorf("wal without the key: %s %q", f.Severity, f.Message)
	}

	t.Setenv("BBENGINE_PASSPHRASE", secret)
	rep, code = doctor(t, dir, project, "claude")
	if f := find(t, rep, "bbengine", "encryption"); f.Severity != agents.OK || !strings.Contains(f.Message, "unlocked here") {
		t.Errorf("with the passphrase: %s %q", f.Severity, f.Message)
	}
	if f := find(t, rep, "claude", "logs"); f.Severity != agents.OK || !strings.Contains(f.Message, "all 1 logs") {
		t.Errorf("logs of the encrypted directory: %s %q", f.Severity, f.Message)
	}
	if f := find(t, rep, "bbengine", "lag"); f.Severity != agents.OK {
		t.Errorf("lag: %s %q", f.Severity, f.Message)
	}
	if code != 0 {
		t.Errorf("exit %d: %+v", code, rep.Findings)
	}

	startTestProxy(t, dir)
	rep, _ = doctor(t, dir, project, "claude")
	if f := find(t, rep, "bbengine", "encryption"); f.Severity != agents.OK || !strings.Contains(f.Message, "holds it unlocked") {
		t.Errorf("with a proxy: %s %q", f.Severity, f.Message)
	}
}

// TestDoctorCorruptWAL flips a byte inside a WAL frame: the wal check
// fails naming the segment and doctor exits 1.
func TestDoctorCorruptWAL(t *testing.T) {
	home, project := doctorHome(t, `{"cleanupPeriodDays": 100000}`)
	dir := filepath.Join(home, "data")
	importMemory(t, dir)
	segs, _ := filepath.Glob(filepath.Join(dir, "wal", "*"))
	var seg string
	for _, s := range segs {
		if info, err := os.Stat(s); err == nil && info.Mode().IsRegular() && info.Size() > 4096 {
			seg = s
		}
	}
	if seg == "" {
		t.Fatalf("no WAL segment of more than 4 KiB in %v", segs)
	}
	b, err := os.ReadFile(seg)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(seg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	rep, code := doctor(t, dir, project, "claude")
	f := find(t, rep, "bbengine", "wal")
	if f.Severity != agents.Fail || !strings.Contains(f.Message, filepath.Base(seg)) || !strings.Contains(f.Fix, "bbengine wal repair") {
		t.Errorf("wal = %s %q (fix %q)", f.Severity, f.Message, f.Fix)
	}
	if code != 1 || !rep.Failed {
		t.Errorf("exit %d, failed %v; want 1", code, rep.Failed)
	}
}
