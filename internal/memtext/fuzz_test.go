package memtext

import (
	"strings"
	"testing"
)

func FuzzFind(f *testing.F) {
	for _, s := range []string{
		"We decided to use SQLite because it is simple.",
		"- **Never** run `rm -rf /`.\n\n## Decision\n\nKeep it.",
		"```go\n// TODO: x\n```\nTODO: y",
		"Should I commit this? Would you like a PR?",
		"$ go test\n--- FAIL: TestX\n\nI'm blocked on the API key.",
		"`unclosed code span. You must not.",
		"Use X instead of Y, not Z; so that w.",
		"ü’ — … “quoted” don’t",
		"Actually, ditch X; Y from now on. Make the key the id, not the name. Train with lr 1e-4 and bf16.",
		"Still need to:\n- a\n  - b\n7. Pending Tasks:\n- c\nAll done.",
		"Rule one: nobody runs X. The format is frozen, no renames allowed. I'd rather we use",
		"User has answered your questions: \"Q?\"=\"A\", \"R\"=\"",
		"keep the X under; set the Y to; the cache key should be the",
	} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, text string, questions bool) {
		for _, role := range []string{"user", "assistant"} {
			fs := Find(text, FindOptions{Role: role, Questions: questions})
			prev := -1
			for _, x := range fs {
				checkFinding(t, text, x)
				if x.Start < prev {
					t.Fatalf("findings out of order: %+v", fs)
				}
				prev = x.Start
				if x.Rationale != "" && len(x.Rationale) > maxSentence {
					t.Fatalf("rationale too long: %d", len(x.Rationale))
				}
			}
		}
		for _, it := range TodoList(text) {
			if it == "" || len(it) > maxSentence {
				t.Fatalf("todo item %q", it)
			}
		}
		AllDone(text)
		for _, qa := range ToolAnswers(text) {
			if !strings.Contains(text, qa[0]) || !strings.Contains(text, qa[1]) {
				t.Fatalf("answer %q not in the text", qa)
			}
		}
		SubjectOf(text, text)
		FailureKind(text, text)
		ErrorSignature(text)
		Normalize(text)
		Terms(text)
		if ids := Identifiers(text); len(ids) > maxIdentifiers {
			t.Fatalf("%d identifiers", len(ids))
		}
		for _, td := range TODOs(text) {
			if td.Line < 1 || td.Line > strings.Count(text, "\n")+1 {
				t.Fatalf("TODO line %d out of range", td.Line)
			}
		}
	})
}

func FuzzShellWrites(f *testing.F) {
	for _, s := range []string{
		"echo hi > out.txt && cat a >> log 2>&1",
		"cat > f <<'EOF'\nbody\nEOF\n",
		`bash -lc "sed -i 's/a/b/' x && rm -rf y"`,
		"echo $(date) `uname` ${HOME} 'unterminated",
		"sudo -u x env A=1 timeout 5 tee -a f",
		"cp -t\nmv\nln -s",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		for _, p := range ShellWrites(cmd) {
			if p == "" {
				t.Fatal("empty path")
			}
		}
		ShellDeletes(cmd)
		IsTestCommand(cmd)
		r := ParseTestResult(cmd, cmd, 1, true)
		if r.Passed && r.Failed {
			t.Fatal("passed and failed")
		}
		ExitCode(cmd)
		if len(FirstErrorLine(cmd)) > maxErrorLine {
			t.Fatal("error line too long")
		}
	})
}
