package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/pack"
)

// importMemory fills a data directory with the memory test session and
// returns its id.
func importMemory(t *testing.T, dir string) string {
	t.Helper()
	src := writeFile(t, t.TempDir(), "33333333-2222-4333-8444-555555555555.jsonl", memoryTranscript())
	if out, errs, code := run(t, "--dir", dir, "import", "claude", src, "--quiet"); code != 0 {
		t.Fatalf("import: %d\n%s%s", code, out, errs)
	}
	return "claude:33333333-2222-4333-8444-555555555555"
}

func TestMemContext(t *testing.T) {
	dir := t.TempDir()
	session := importMemory(t, dir)
	p := memJSON[pack.Pack](t, "--dir", dir, "mem", "context", "--session", session, "--task", "speed up store/cache.go")
	if len(p.Decisions) != 1 || !strings.Contains(p.Decisions[0].Text, "ARC") || len(p.Constraints) != 1 || len(p.Implemented) != 2 ||
		p.GoalSource != "first prompt" || !strings.Contains(p.Goal, "cache in front of the session store") {
		t.Fatalf("pack = %+v", p)
	}
	out, errs, code := run(t, "--dir", dir, "mem", "context", "--session", session[len("claude:"):][:8], "--task", "x", "--budget", "400")
	if code != 0 || !strings.HasPrefix(out, "<bbengine-context-pack session=\""+session+"\"") || strings.Contains(out, "LRU cache for") {
		t.Fatalf("mem context: %d\n%s%s", code, out, errs)
	}
	if n := pack.Count(out); n > 400 {
		t.Errorf("a pack of budget 400 has %d tokens", n)
	}
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"mem", "context"}, 2, "--session is required"},
		{[]string{"mem", "context", "--session", session, "--budget", "50"}, 1, "at least 120"},
		{[]string{"mem", "context", "--session", session, "extra"}, 2, "unexpected argument"},
	} {
		_, errs, code := run(t, append([]string{"--dir", dir}, c.args...)...)
		if code != c.code || !strings.Contains(errs, c.msg) {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, errs, c.code, c.msg)
		}
	}
	// A session with nothing recorded yet has an empty pack, not an error.
	if p := memJSON[pack.Pack](t, "--dir", dir, "mem", "context", "--session", "not-started-yet"); !p.Empty() {
		t.Errorf("pack of an unknown session: %+v", p)
	}
}

func TestRunPlainCommand(t *testing.T) {
	dir := t.TempDir()
	session := importMemory(t, dir)
	out := filepath.Join(t.TempDir(), "seen")
	script := `cat "$BBENGINE_PACK_FILE" > "$1.file"; printf '%s' "$2" > "$1.arg"; env | grep '^BBENGINE_\|^ANTHROPIC_\|^OPENAI_BASE_URL' > "$1.env"; exit 3`
	stdout, errs, code := run(t, "--dir", dir, "run", "--session", session, "--describe", "store/cache.go eviction", "--",
		"sh", "-c", script, "sh", out, "pack: {pack}")
	if code != 3 {
		t.Fatalf("run: exit %d, want the agent's 3\n%s%s", code, stdout, errs)
	}
	file, _ := os.ReadFile(out + ".file")
	arg, _ := os.ReadFile(out + ".arg")
	env, _ := os.ReadFile(out + ".env")
	if !strings.HasPrefix(string(file), "<bbengine-context-pack session=\""+session+"\" task=\"task-1\"") || !strings.Contains(string(file), "ARC cache") {
		t.Errorf("pack file:\n%s", file)
	}
	if string(arg) != "pack: "+string(file) {
		t.Errorf("{pack} argument:\n%s", arg)
	}
	for _, want := range []string{"BBENGINE_SESSION=" + session, "BBENGINE_TASK_ID=task-1", "ANTHROPIC_BASE_URL=http://127.0.0.1:",
		"X-Bb-Session-Id: " + session, "OPENAI_BASE_URL=http://127.0.0.1:", "BBENGINE_DIR=" + dir} {
		if !strings.Contains(string(env), want) {
			t.Errorf("agent environment lacks %q:\n%s", want, env)
		}
	}
	_, packFile, _ := strings.Cut(string(env), "BBENGINE_PACK_FILE=")
	packFile, _, _ = strings.Cut(packFile, "\n")
	if _, err := os.Stat(packFile); packFile == "" || err == nil {
		t.Errorf("pack file %q left behind", packFile)
	}
	// The outcome run recorded: task-1 failed, with the exit status.
	var found bool
	for _, c := range memJSON[[]engine.Card](t, "--dir", dir, "mem", "list", session, "--type", "outcome") {
		if c.Task == "task-1" {
			found = true
			a := memJSON[engine.Artifact](t, "--dir", dir, "mem", "get", c.ID)
			if a.Status != "fail" || !strings.Contains(a.Text, "status 3") {
				t.Errorf("task-1 outcome: %s %q", a.Status, a.Text)
			}
		}
	}
	if !found {
		t.Error("no outcome for task-1")
	}
	// The next run is task-2.
	_, errs, code = run(t, "--dir", dir, "run", "--session", session, "--", "sh", "-c", `test "$BBENGINE_TASK_ID" = task-2`)
	if code != 0 {
		t.Errorf("second run: exit %d (task id not task-2?)\n%s", code, errs)
	}
	// Usage errors.
	for _, args := range [][]string{{"run"}, {"run", "--budget", "-1", "--", "true"}, {"run", "--upstream", "x", "--", "true"}} {
		if _, errs, code := run(t, append([]string{"--dir", dir}, args...)...); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, errs)
		}
	}
	if _, errs, code := run(t, "--dir", dir, "run", "--", "no-such-agent-e2e"); code != 1 || !strings.Contains(errs, "no-such-agent-e2e") {
		t.Errorf("unknown agent: exit %d, %s", code, errs)
	}
}

// TestRunRepoChanges: a task under bbengine run reports what it changed
// in the repository, by git's diff before and after it: an edited file
// with its line counts and new content's hash, a new file, a deleted
// one; a file already changed before the task and left alone is not the
// task's.
func TestRunRepoChanges(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	gitIn := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitIn("init", "-q")
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(repo, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.go", "package a\n\nfunc A() {}\n")
	write("old.go", "package a\n// old\n")
	gitIn("add", ".")
	gitIn("commit", "-q", "-m", "start")
	write("pre.txt", "changed before the task\n")

	dir := t.TempDir()
	t.Chdir(repo)
	script := `printf 'package a\n\nfunc A() { B() }\nfunc B() {}\n' > a.go; printf '1\n2\n3\n4\n' > new.go; rm old.go`
	if out, errs, code := run(t, "--dir", dir, "run", "--session", "ses-diff", "--", "sh", "-c", script); code != 0 {
		t.Fatalf("run: %d\n%s%s", code, out, errs)
	}
	var outcome engine.Artifact
	for _, c := range memJSON[[]engine.Card](t, "--dir", dir, "mem", "list", "ses-diff", "--type", "outcome") {
		outcome = memJSON[engine.Artifact](t, "--dir", dir, "mem", "get", c.ID)
	}
	if outcome.Outcome == nil {
		t.Fatal("no outcome recorded")
	}
	got := map[string]engine.FileChange{}
	for _, f := range outcome.Outcome.Files {
		got[f.Path] = f
	}
	sum := sha256.Sum256([]byte("package a\n\nfunc A() { B() }\nfunc B() {}\n"))
	if a := got["a.go"]; a.Op != "diff" || a.Added != 2 || a.Deleted != 1 || a.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("a.go: %+v", a)
	}
	if n := got["new.go"]; n.Op != "diff" || n.Added != 4 || n.Deleted != 0 || n.SHA256 == "" {
		t.Errorf("new.go: %+v", n)
	}
	if o := got["old.go"]; o.Op != "delete" || o.Deleted != 2 || o.SHA256 != "" {
		t.Errorf("old.go: %+v", o)
	}
	if _, ok := got["pre.txt"]; ok || len(got) != 3 {
		t.Errorf("changes: %+v, want a.go, new.go and old.go only", outcome.Outcome.Files)
	}
	if !strings.Contains(outcome.Text, "a.go (+2 -1)") {
		t.Errorf("outcome text lacks the change:\n%s", outcome.Text)
	}
}
