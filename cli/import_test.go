package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func goldenDir(t *testing.T, sub string) string {
	t.Helper()
	d := filepath.Join("..", "..", "shared", "agentlogs-golden", sub)
	if _, err := os.Stat(d); err != nil {
		t.Skipf("golden agent logs not present: %v", err)
	}
	return d
}

func TestImportCodexGolden(t *testing.T) {
	src := goldenDir(t, "codex")
	dir := t.TempDir()
	out, errs, code := run(t, "--dir", dir, "import", "codex", src, "--check")
	if code != 0 || !strings.Contains(out, "import --check: 8 sessions, nothing lost") || !strings.Contains(errs, "into 8 sessions") {
		t.Fatalf("import --check: %d\n%s%s", code, out, errs)
	}
	if _, errs, code = run(t, "--dir", dir, "import", "codex", src); code != 0 || !strings.Contains(errs, "imported 0 records") || !strings.Contains(errs, "8 unchanged") {
		t.Fatalf("second import: %d %s", code, errs)
	}
	before, errs, code := run(t, "--dir", dir, "show", "019c8a59", "--format", "json")
	if code != 0 || !strings.Contains(before, `"kind": "rewrite"`) {
		t.Fatalf("show: %d %s", code, errs)
	}
	if _, errs, code = run(t, "--dir", dir, "rebuild"); code != 0 {
		t.Fatalf("rebuild: %d %s", code, errs)
	}
	if after, _, _ := run(t, "--dir", dir, "show", "019c8a59", "--format", "json"); after != before {
		t.Fatal("the imported session changed in a rebuild")
	}
}

func TestImportProblems(t *testing.T) {
	dir := t.TempDir()
	logs := t.TempDir()
	p := writeFile(t, logs, "rollout-2026-01-01T00-00-00-11111111-2222-3333-4444-555555555555.jsonl",
		strings.Join(strings.Split(codexRollout, "\n")[:3], "\n")+"\n{oops\n"+`{"timestamp":"2026-05-11T08:27:19.001Z","type":"event_msg","pay`)
	_, errs, code := run(t, "--dir", dir, "import", "codex", logs)
	if code != 1 || !strings.Contains(errs, p+":4:2: not JSON: invalid character 'o'") || !strings.Contains(errs, "imported 3 records") {
		t.Fatalf("import: %d %s", code, errs)
	}
	// The writer finishes its line: the next import reads it, and only
	// it. The line it skipped lies after the last record imported, so it
	// is named again.
	if err := os.WriteFile(p, []byte(strings.Join(strings.Split(codexRollout, "\n")[:3], "\n")+"\n{oops\n"+strings.Split(codexRollout, "\n")[3]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs, code = run(t, "--dir", dir, "import", "codex", logs)
	if code != 1 || !strings.Contains(errs, "imported 1 records") || !strings.Contains(errs, p+":4:2: not JSON") {
		t.Fatalf("second import: %d %s", code, errs)
	}
	// Now it lies before: nothing new, nothing to say.
	_, errs, code = run(t, "--dir", dir, "import", "codex", logs)
	if code != 0 || !strings.Contains(errs, "imported 0 records") || strings.Contains(errs, "not JSON") {
		t.Fatalf("third import: %d %s", code, errs)
	}
	out, errs, code := run(t, "--dir", dir, "show", "019e1625", "--format", "json")
	if code != 0 || !strings.Contains(out, `"errors": 0`) || !strings.Contains(out, `"records": 4`) {
		t.Fatalf("show: %d %s %s", code, out, errs)
	}
	if _, errs, code = run(t, "--dir", dir, "import", "codex", filepath.Join(logs, "missing.jsonl")); code != 1 || !strings.Contains(errs, "missing.jsonl") {
		t.Fatalf("missing file: %d %s", code, errs)
	}
	if _, errs, code = run(t, "--dir", dir, "import", "nosuchagent", logs); code != 2 || !strings.Contains(errs, `unknown source "nosuchagent"`) {
		t.Fatalf("unknown source: %d %s", code, errs)
	}
}

func TestImportClaudeGolden(t *testing.T) {
	src := goldenDir(t, "claude")
	dir := t.TempDir()
	out, errs, code := run(t, "--dir", dir, "import", "claude", src, "--check")
	if code != 0 || !strings.Contains(out, "import --check: 9 sessions, nothing lost") {
		t.Fatalf("import --check: %d\n%s%s", code, out, errs)
	}
	// The nested subagents of a 2.1.x session are threads of it.
	out, errs, code = run(t, "--dir", dir, "show", "ef958aa1", "--format", "json")
	if code != 0 || strings.Count(out, `"thread": `) < 7 || !strings.Contains(out, `"agents": [`) {
		t.Fatalf("show: %d %s", code, errs)
	}
	if _, errs, code = run(t, "--dir", dir, "import", "claude", src); code != 0 || !strings.Contains(errs, "imported 0 records") {
		t.Fatalf("second import: %d %s", code, errs)
	}
}

func TestImportFollow(t *testing.T) {
	dir, logs := t.TempDir(), t.TempDir()
	lines := strings.Split(strings.TrimSpace(codexRollout), "\n")
	p := writeFile(t, logs, "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl", strings.Join(lines[:4], "\n")+"\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		app := NewApp(&stdout, &stderr)
		err := app.RunContext(ctx, []string{"bbengine", "--dir", dir, "import", "--follow", "--interval", "20ms", "codex", logs})
		code := 0
		if err != nil {
			code = 1
		}
		done <- code
	}()
	waitFor := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), want); {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in:\n%s", want, stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("imported 4 records")
	// The agent writes the rest of its session, a new file appears.
	f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(strings.Join(lines[4:], "\n") + "\n")
	f.Close()
	waitFor("imported 2 records")
	writeFile(t, logs, "rollout-2026-05-12T00-00-00-22222222-2222-3333-4444-555555555555.jsonl",
		strings.Replace(lines[0], "019e1625-789d-76c0-80ab-3724b5ddb799", "22222222-2222-3333-4444-555555555555", 1)+"\n")
	waitFor("imported 1 records")
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("import --follow: exit %d: %s", code, stderr.String())
	}
	out, errs, code := run(t, "--dir", dir, "show", "019e1625", "--format", "json")
	if code != 0 || !strings.Contains(out, `"text": "two files"`) || !strings.Contains(out, `"records": 6`) {
		t.Fatalf("show after --follow: %d %s %s", code, out, errs)
	}
	if out, errs, code = run(t, "--dir", dir, "sessions"); code != 0 || !strings.Contains(out, "codex:22222222") {
		t.Fatalf("sessions after --follow: %d %s %s", code, out, errs)
	}
}
