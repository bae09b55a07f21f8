package codex_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	_ "github.com/bbengine/bbengine/agents/all"
	"github.com/bbengine/bbengine/cli"
)

// TestImportCodex0169Check imports the rollout the real Codex CLI 0.169.0
// wrote (testdata/codex-0.169.0-tool.jsonl, from e2e's TestCodex), laid
// out in a sessions directory as Codex lays it out, with
// `bbengine import codex --check`: nothing lost, and each row of the
// comparison the exact count of the run (the prompt one user prompt,
// the skills and environment context two injected messages, no line of
// an unknown type).
func TestImportCodex0169Check(t *testing.T) {
	b, err := os.ReadFile("testdata/codex-0.169.0-tool.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	const id = "01a21dff-d575-7003-9b96-4b029ce49315"
	sessions := filepath.Join(t.TempDir(), ".codex", "sessions")
	day := filepath.Join(sessions, "2026", "11", "27")
	if err := os.MkdirAll(day, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(day, "rollout-2026-11-27T17-13-55-"+id+".jsonl"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := cli.Main([]string{"bbengine", "--dir", t.TempDir(), "import", "codex", sessions, "--check"}, &out, &errb)
	t.Logf("bbengine import codex --check: exit %d\n%s%s", code, errb.String(), out.String())
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, row := range []string{
		`codex:` + id + ` \(1 files\)`,
		`records +21 +21`,
		`parse errors +0 +0`,
		`user prompts +1 +1`,
		`meta/summary user messages +2 +2`,
		`assistant messages +1 +1`,
		`model responses +2 +2`,
		`thinking blocks +1 +1`,
		`tool calls +1 +1`,
		`tool results +1 +1`,
		`errors +0 +0`,
		`distinct call ids +1 +1`,
		`tokens in +9741 +9741`,
		`tokens out +53 +53`,
		`cache read +9472 +9472`,
		`cache creation +0 +0`,
		`records kept +8 +8`,
		`unknown records kept +0 +0`,
		`import --check: 1 sessions, nothing lost`,
	} {
		if !regexp.MustCompile(`(?m)^\s*` + row + `\s*$`).MatchString(out.String()) {
			t.Errorf("import --check output lacks the line %q", row)
		}
	}
}
