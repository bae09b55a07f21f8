package memtext

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestFindDecisionFields(t *testing.T) {
	tests := []struct {
		text                    string
		subject, key, rationale string
		chooses, replaces       []string
	}{
		{text: "We decided to use SQLite.", subject: "database", key: "sqlite", chooses: []string{"sqlite"}},
		{text: "Decision: use SQLite", subject: "database", key: "sqlite", chooses: []string{"sqlite"}},
		{text: "we'll use sqlite", subject: "database", key: "sqlite", chooses: []string{"sqlite"}},
		{text: "For the cache, use Redis.", subject: "cache", key: "for the cache use redis", chooses: []string{"redis"}},
		{text: "Decision: database: Postgres", subject: "database", key: "database postgres", chooses: []string{"postgres"}},
		{text: "Use errgroup for the fan-out.", subject: "fan-out", key: "errgroup for the fan-out", chooses: []string{"errgroup"}},
		{text: "Let's use Redis instead of Memcached.", subject: "cache", key: "redis instead of memcached", chooses: []string{"redis"}, replaces: []string{"memcached"}},
		{text: "We will use gRPC rather than REST.", subject: "api style", key: "grpc rather than rest", chooses: []string{"grpc"}, replaces: []string{"rest"}},
		{text: "Switch the logger from logrus to slog.", subject: "logging library", key: "switch the logger from logrus to slog", chooses: []string{"slog"}, replaces: []string{"logrus"}},
		{text: "Replace the retry loop with backoff.Retry.", subject: "retries", key: "replace the retry loop with backoff.retry", chooses: []string{"backoff.retry"}, replaces: []string{"retry loop"}},
		{text: "We no longer use the v1 client.", key: "no longer use the v1 client", replaces: []string{"v1 client"}},
		{text: "Drop the Python 3.8 support.", key: "drop the python 3.8 support", replaces: []string{"python 3.8 support"}},
		{text: "Use slog, not fmt.Println.", subject: "logging library", key: "slog not fmt.println", chooses: []string{"slog"}, replaces: []string{"fmt.println"}},
		{text: "I chose chi over gorilla/mux since gorilla is archived.", subject: "web framework", key: "chi over gorilla/mux", rationale: "since gorilla is archived", chooses: []string{"chi"}, replaces: []string{"gorilla/mux"}},
		{text: "We decided to vendor the dependencies. This is because the build machines are offline.", key: "vendor the dependencies", rationale: "This is because the build machines are offline."},
		{text: "Going with zstd so that the archives stay small.", key: "zstd", rationale: "so that the archives stay small", chooses: []string{"zstd"}},
		{text: "We decided against an ORM to avoid the reflection cost.", subject: "orm", key: "against an orm", rationale: "to avoid the reflection cost", replaces: []string{"orm"}},
	}
	for _, tt := range tests {
		fs := Find(tt.text, FindOptions{Role: "user"})
		if len(fs) != 1 || fs[0].Type != TypeDecision {
			t.Errorf("Find(%q) = %+v, want one decision", tt.text, fs)
			continue
		}
		f := fs[0]
		if f.Subject != tt.subject || f.Key != tt.key || f.Rationale != tt.rationale || !slices.Equal(f.Chooses, tt.chooses) || !slices.Equal(f.Replaces, tt.replaces) {
			t.Errorf("Find(%q):\n got subject=%q key=%q rationale=%q chooses=%q replaces=%q\nwant subject=%q key=%q rationale=%q chooses=%q replaces=%q",
				tt.text, f.Subject, f.Key, f.Rationale, f.Chooses, f.Replaces, tt.subject, tt.key, tt.rationale, tt.chooses, tt.replaces)
		}
	}
}

func TestFindConstraintModal(t *testing.T) {
	tests := []struct {
		text, modal string
		neg         bool
	}{
		{"You must not commit to main.", "must not", true},
		{"The API must stay compatible.", "must", false},
		{"Never edit generated files.", "never", true},
		{"Always run gofmt.", "always", false},
		{"Please don't add dependencies.", "do not", true},
		{"Tests should not sleep.", "should not", true},
		{"The migration should be idempotent.", "should", false},
		{"Make sure not to break the flags.", "make sure", true},
		{"Make sure the output is sorted.", "make sure", false},
		{"Under no circumstances push to prod.", "under no circumstances", true},
		{"Only use the standard library.", "only", false},
		{"The handler is required to respond in 200ms.", "required", false},
	}
	for _, tt := range tests {
		fs := Find(tt.text, FindOptions{Role: "user"})
		if len(fs) != 1 || fs[0].Type != TypeConstraint || fs[0].Modal != tt.modal || fs[0].Negative != tt.neg {
			t.Errorf("Find(%q) = %+v, want constraint %q negative=%v", tt.text, fs, tt.modal, tt.neg)
		}
	}
}

func TestFindOffsetsAndCleaning(t *testing.T) {
	text := "Intro line.\n\n- **Never** run `rm -rf /` on the *build* box.\n\n## Decision\n\nKeep   the old\nflag as an alias."
	fs := Find(text, FindOptions{Role: "user"})
	if len(fs) != 2 {
		t.Fatalf("Find = %+v, want 2 findings", fs)
	}
	if got, want := fs[0].Sentence, "Never run `rm -rf /` on the build box."; got != want {
		t.Errorf("Sentence = %q, want %q", got, want)
	}
	if got, want := text[fs[0].Start:fs[0].End], "**Never** run `rm -rf /` on the *build* box."; got != want {
		t.Errorf("text[Start:End] = %q, want %q", got, want)
	}
	if fs[1].Type != TypeDecision || fs[1].Sentence != "Keep the old flag as an alias." {
		t.Errorf("decision section: got %+v", fs[1])
	}
	long := "You must " + strings.Repeat("ünïcödé ", 80) + "."
	fs = Find(long, FindOptions{Role: "user"})
	if len(fs) != 1 || len(fs[0].Sentence) > maxSentence || !strings.HasPrefix(fs[0].Sentence, "You must ") {
		t.Fatalf("long sentence: %+v", fs)
	}
}

func TestFindSkipsNonProse(t *testing.T) {
	for _, text := range []string{
		"```go\n// We decided to use a mutex.\n```",
		"    // TODO: indented code\n    never call this",
		"> You must not use globals.",
		"| a | never do this |",
		"2024-05-01 12:00:00 ERROR must not be nil",
		"$ make\nYou must run configure first.",
		"@@ -1 +1 @@\n-use sqlite\n+use postgres",
		"The `must not be nil` message is from the validator.",
	} {
		if fs := Find(text, FindOptions{Role: "user"}); len(fs) != 0 {
			t.Errorf("Find(%q) = %+v, want none", text, fs)
		}
	}
}

func TestFindQuestionsOption(t *testing.T) {
	text := "I added the flag. Should I also update the docs?"
	if fs := Find(text, FindOptions{Role: "assistant"}); len(fs) != 0 {
		t.Errorf("without Questions: %+v", fs)
	}
	fs := Find(text, FindOptions{Role: "assistant", Questions: true})
	if len(fs) != 1 || fs[0].Type != TypeQuestion || fs[0].Sentence != "Should I also update the docs?" {
		t.Errorf("with Questions: %+v", fs)
	}
	if fs := Find(text, FindOptions{Role: "user", Questions: true}); len(fs) != 0 {
		t.Errorf("user question: %+v", fs)
	}
}

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"We decided to use SQLite.", "sqlite"},
		{"Decision: use SQLite", "sqlite"},
		{"we'll use sqlite", "sqlite"},
		{"OK, so let's go with **Postgres**!", "postgres"},
		{"Going with `sync.Pool`.", "sync.pool"},
		{"  Keep   the cmd/main.go   entry  ", "keep the cmd/main.go entry"},
		{"I'll use snake_case names", "snake_case names"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Normalize(tt.in); got != tt.want {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTerms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"We decided to use SQLite for the cache.", []string{"cache", "sqlite"}},
		{"Use `sync.Pool` in cmd/main.go, not the cache", []string{"cache", "cmd/main.go", "sync.pool"}},
		{"the a an of", nil},
	}
	for _, tt := range tests {
		got := Terms(tt.in)
		if len(got) == 0 && len(tt.want) == 0 {
			continue
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Terms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestIdentifiers(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Rename useRedis to SessionLive in cmd/main.go.", []string{"SessionLive", "cmd/main.go", "useRedis"}},
		{"Call pkg.Func and a.b.c, see README.md and .gitignore.", []string{".gitignore", "README.md", "a.b.c", "pkg.Func"}},
		{"The `--json flag` and snake_case_name (e.g. this) in v1.2.3 and 3.11.", []string{"--json flag", "snake_case_name"}},
		{"APIs and PRs, https://example.com/x, and/or plain words.", nil},
	}
	for _, tt := range tests {
		if got := Identifiers(tt.in); !slices.Equal(got, tt.want) {
			t.Errorf("Identifiers(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "id_%03d ", i)
	}
	got := Identifiers(b.String())
	if len(got) != maxIdentifiers || got[0] != "id_000" || got[63] != "id_063" {
		t.Errorf("cap: got %d identifiers, first %q last %q", len(got), got[0], got[len(got)-1])
	}
}

func TestTODOs(t *testing.T) {
	code := "package x\n// TODO: handle EOF\nx := 1 // FIXME(bob): racy\n# XXX - bad\n-- HACK: sql\n/* TODO wrap */\n<!-- TODO: html -->\n; TODO lisp\n/*\n * FIXME: in block\n */\n#include <x.h>\nTODOs := 1\ny-- // not a TODO: marker here\n"
	want := []TODO{
		{"TODO", "handle EOF", 2},
		{"FIXME", "racy", 3},
		{"XXX", "bad", 4},
		{"HACK", "sql", 5},
		{"TODO", "wrap", 6},
		{"TODO", "html", 7},
		{"TODO", "lisp", 8},
		{"FIXME", "in block", 10},
	}
	if got := TODOs(code); !reflect.DeepEqual(got, want) {
		t.Errorf("TODOs:\n got %+v\nwant %+v", got, want)
	}
}

func TestShellWrites(t *testing.T) {
	tests := []struct {
		cmd            string
		writes, delete []string
	}{
		{cmd: "echo hi > out.txt && cat a >> log.txt 2>&1", writes: []string{"out.txt", "log.txt"}},
		{cmd: "go test ./... 2>/dev/null | tee -a test.log", writes: []string{"test.log"}},
		{cmd: "sed -i 's/a/b/' main.go util.go", writes: []string{"main.go", "util.go"}},
		{cmd: "sed -i.bak -e 's/a/b/' -e 's/c/d/' x.txt", writes: []string{"x.txt"}},
		{cmd: "sed 's/a/b/' in.txt > out.txt", writes: []string{"out.txt"}},
		{cmd: "touch a b; mkdir -p dir; cp -r src dst/; mv old new", writes: []string{"a", "b", "dst/", "new"}},
		{cmd: "rm -rf build/ tmp.txt && git rm -r --cached old/", writes: []string{"build/", "tmp.txt", "old/"}, delete: []string{"build/", "tmp.txt", "old/"}},
		{cmd: "ln -s ../target link", writes: []string{"link"}},
		{cmd: "cat > notes.md <<'EOF'\n> not a redirect\nrm -rf /\nEOF\necho done > done.txt", writes: []string{"notes.md", "done.txt"}},
		{cmd: `bash -lc "cd repo && FOO=1 sudo -u me tee 'my file.txt' < in"`, writes: []string{"my file.txt"}},
		{cmd: `sh -c 'echo x >"quoted name"'`, writes: []string{"quoted name"}},
		{cmd: "install -m 644 bin/tool /usr/local/bin/tool && install -d /opt/x", writes: []string{"/usr/local/bin/tool"}},
		{cmd: "cp -t dest/ a b", writes: []string{"dest/"}},
		{cmd: "dd if=/dev/zero of=disk.img bs=1M count=1 && truncate -s 0 log", writes: []string{"disk.img", "log"}},
		{cmd: "ls -la # > not-a-file", writes: nil},
		{cmd: "echo $(date > inner) > outer", writes: []string{"outer"}},
		{cmd: "echo a > a.txt; echo b > a.txt", writes: []string{"a.txt"}},
		{cmd: "perl -pi -e 's/x/y/' conf.ini", writes: []string{"conf.ini"}},
	}
	for _, tt := range tests {
		if got := ShellWrites(tt.cmd); !slices.Equal(got, tt.writes) {
			t.Errorf("ShellWrites(%q) = %q, want %q", tt.cmd, got, tt.writes)
		}
		if got := ShellDeletes(tt.cmd); !slices.Equal(got, tt.delete) {
			t.Errorf("ShellDeletes(%q) = %q, want %q", tt.cmd, got, tt.delete)
		}
	}
}

func TestIsTestCommand(t *testing.T) {
	yes := []string{
		"go test ./...", "go test -race -run TestX ./internal/...", "cd x && go test .", "pytest -x tests/",
		"python -m pytest", "python3 -m unittest discover", "uv run pytest -q", "npm test", "npm run test:unit",
		"yarn test", "pnpm test", "pnpm --filter web test", "npx jest src", "npx vitest run", "npx mocha",
		"cargo test", "cargo nextest run", "make test", "make check", "mvn test", "./gradlew test", "gradle :app:test",
		"ctest --output-on-failure", "bundle exec rspec", "rspec spec/x_spec.rb", "vendor/bin/phpunit", "dotnet test",
		"bun test", "deno test -A", "tox -e py311", "CI=1 npm test", `bash -lc "go test ./..."`, "sudo -E make test",
	}
	no := []string{"go build ./...", "npm install", "npm run build", "cargo build", "make", "make install", "echo test",
		"git commit -m 'test'", "python main.py", "ls tests/", "cat pytest.ini", "grep -r 'go test' ."}
	for _, c := range yes {
		if !IsTestCommand(c) {
			t.Errorf("IsTestCommand(%q) = false, want true", c)
		}
	}
	for _, c := range no {
		if IsTestCommand(c) {
			t.Errorf("IsTestCommand(%q) = true, want false", c)
		}
	}
}

func TestParseTestResult(t *testing.T) {
	tests := []struct {
		name, cmd, out string
		exit           int
		known          bool
		want           TestResult
	}{
		{"go fail", "go test ./...", "=== RUN   TestA\n--- FAIL: TestA (0.00s)\n    a_test.go:9: boom\n--- FAIL: TestB/sub (0.01s)\nFAIL\nFAIL\tgithub.com/x/y\t0.012s\nok  \tgithub.com/x/z\t0.1s\n", 1, true,
			TestResult{IsTest: true, Failed: true, FailedNames: []string{"TestA", "TestB/sub"}, Summary: "FAIL github.com/x/y 0.012s"}},
		{"go pass", "go test ./...", "ok  \tgithub.com/x/y\t0.2s\n", 0, true,
			TestResult{IsTest: true, Passed: true, Summary: "ok github.com/x/y 0.2s"}},
		{"pytest", "pytest", "FAILED tests/test_x.py::test_y - AssertionError: 1 != 2\n==== 1 failed, 12 passed in 0.31s ====\n", 1, true,
			TestResult{IsTest: true, Failed: true, FailedNames: []string{"tests/test_x.py::test_y"}, Summary: "1 failed, 12 passed"}},
		{"jest", "npx jest", "  ✕ adds numbers (5 ms)\n  ✓ subtracts\nTests:       1 failed, 5 passed, 6 total\n", 0, false,
			TestResult{IsTest: true, Failed: true, FailedNames: []string{"adds numbers"}, Summary: "1 failed, 5 passed, 6 total"}},
		{"cargo", "cargo test", "test tests::it_works ... FAILED\ntest tests::other ... ok\ntest result: FAILED. 1 passed; 1 failed; 0 ignored\n", 101, true,
			TestResult{IsTest: true, Failed: true, FailedNames: []string{"tests::it_works"}, Summary: "FAILED. 1 passed; 1 failed; 0 ignored"}},
		{"rspec", "bundle exec rspec", "Failures:\n\n  1) InvoiceJob skips cancelled subscriptions\n     Failure/Error: expect(Invoice.count).to eq(2)\nFinished in 1.21 seconds\n4 examples, 1 failure\n", 1, true,
			TestResult{IsTest: true, Failed: true, FailedNames: []string{"InvoiceJob skips cancelled subscriptions"}, Summary: "4 examples, 1 failure"}},
		{"rspec pass", "bundle exec rspec", "Finished in 1.09 seconds\n5 examples, 0 failures\n", 0, false,
			TestResult{IsTest: true, Passed: true, Summary: "5 examples, 0 failures"}},
		{"exunit", "mix test", "  1) test retries on 4xx (App.MailerTest)\n     ** (MatchError) no match\n\nFinished in 0.4 seconds\n3 tests, 1 failure\n", 2, true,
			TestResult{IsTest: true, Failed: true, FailedNames: []string{"retries on 4xx"}, Summary: "3 tests, 1 failure"}},
		{"gradle", "./gradlew test", "ClientTest > facetsByBrand() FAILED\n    java.lang.NoSuchMethodError\n14 tests completed, 1 failed\n", 1, true,
			TestResult{IsTest: true, Failed: true, FailedNames: []string{"facetsByBrand"}, Summary: "14 tests completed, 1 failed"}},
		{"gtest", "ctest", "[  FAILED  ] PlayerTest.RemoveWhileIterating (3 ms)\n[  PASSED  ] 11 tests.\n", 8, true,
			TestResult{IsTest: true, Failed: true, FailedNames: []string{"PlayerTest.RemoveWhileIterating"}}},
		{"ctest", "ctest --preset asan", "==1==ERROR: AddressSanitizer: heap-use-after-free\n1/12 Test #4: lobby_kick ......***Failed\n 2/12 Test  #5: lobby_join .......   Passed    0.01 sec\n92% tests passed, 1 tests failed out of 12\n\nThe following tests FAILED:\n\t  4 - lobby_kick (Failed)\n", 8, true,
			TestResult{IsTest: true, Failed: true, FailedNames: []string{"lobby_kick"}, Summary: "92% tests passed, 1 tests failed out of 12"}},
		{"ctest pass", "ctest --preset asan", "100% tests passed, 0 tests failed out of 12\n", 0, true,
			TestResult{IsTest: true, Passed: true, Summary: "100% tests passed, 0 tests failed out of 12"}},
		{"ctest exception", "ctest", "3/3 Test #3: fuzz_decode ......***Exception: SegFault  0.02 sec\n", 8, true,
			TestResult{IsTest: true, Failed: true, FailedNames: []string{"fuzz_decode"}}},
		{"generic exit", "make check", "all good\n", 0, true, TestResult{IsTest: true, Passed: true}},
		{"generic fail", "make check", "nope\n", 2, true, TestResult{IsTest: true, Failed: true}},
		{"unknown", "make check", "something\n", 0, false, TestResult{IsTest: true}},
		{"not a test", "ls", "a\nb\n", 0, true, TestResult{Passed: true}},
	}
	for _, tt := range tests {
		if got := ParseTestResult(tt.cmd, tt.out, tt.exit, tt.known); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: ParseTestResult = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestExitCode(t *testing.T) {
	tests := []struct {
		out  string
		code int
		ok   bool
	}{
		{"Exit code 1\nsome error", 1, true},
		{"Exit code: 0\nWall time: 0.2 seconds\nOutput:\nhi", 0, true},
		{"Chunk ID: x\nProcess exited with code 2\nOutput:", 2, true},
		{"main.go:3: oops\nexit status 3\n", 3, true},
		{"hello world", 0, false},
		{"Exit code nope", 0, false},
	}
	for _, tt := range tests {
		if c, ok := ExitCode(tt.out); c != tt.code || ok != tt.ok {
			t.Errorf("ExitCode(%q) = %d, %v, want %d, %v", tt.out, c, ok, tt.code, tt.ok)
		}
	}
}

func TestFirstErrorLine(t *testing.T) {
	tests := []struct{ out, want string }{
		{"building\nmain.go:3:2: error: undefined x\nmore", "main.go:3:2: error: undefined x"},
		{"ok\n  Error: cannot find module 'x'\n", "Error: cannot find module 'x'"},
		{"Traceback (most recent call last):\n  File \"a.py\", line 1\n    raise ValueError('bad')\nValueError: bad\n", "ValueError: bad"},
		{"bash: foo: command not found\n", "bash: foo: command not found"},
		{"npm ERR! code ENOENT\n", "npm ERR! code ENOENT"},
		{"--- FAIL: TestX (0.00s)\n", "--- FAIL: TestX (0.00s)"},
		{"fatal: not a git repository\n", "fatal: not a git repository"},
		{"Failed to compile.\n./page.tsx\nType error: Property 'v' does not exist.\n", "Type error: Property 'v' does not exist."},
		{"==31337==ERROR: AddressSanitizer: heap-use-after-free on address 0x60\n", "==31337==ERROR: AddressSanitizer: heap-use-after-free on address 0x60"},
		{"panic: boom\n\ngoroutine 1", "panic: boom"},
		{"ERROR - Task failed with exception\nKeyError: 'shipping_country'\nExit code 1", "KeyError: 'shipping_country'"},
		{"ERROR - Task failed with exception\nsee the log\n", "ERROR - Task failed with exception"},
		{"all fine\n", ""},
		{"error: " + strings.Repeat("x", 300), "error: " + strings.Repeat("x", 193)},
	}
	for _, tt := range tests {
		if got := FirstErrorLine(tt.out); got != tt.want {
			t.Errorf("FirstErrorLine(%q) = %q, want %q", tt.out, got, tt.want)
		}
	}
}

// TestFindGolden runs Find over the assistant and user messages of the
// shared agent logs, checking the invariants on real text.
func TestFindGolden(t *testing.T) {
	root := filepath.Join("..", "..", "..", "shared", "agentlogs-golden")
	if _, err := os.Stat(root); err != nil {
		t.Skip("shared agent logs not present:", err)
	}
	n := 0
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		for _, opts := range []FindOptions{{Role: "assistant", Questions: true}, {Role: "user"}} {
			for _, f := range Find(text, opts) {
				checkFinding(t, text, f)
				n++
			}
		}
		return nil
	})
	t.Logf("%d findings checked", n)
}

func checkFinding(t *testing.T, text string, f Finding) {
	t.Helper()
	if f.Start < 0 || f.End > len(text) || f.Start >= f.End {
		t.Fatalf("finding %+v: offsets out of range for text of %d bytes", f, len(text))
	}
	if want := capBytes(clean(text[f.Start:f.End]), maxSentence); f.Sentence != want {
		t.Fatalf("finding Sentence %q is not clean(text[%d:%d]) = %q", f.Sentence, f.Start, f.End, want)
	}
}

func TestCleanEmphasis(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"**Default**: Use beads for tracking", "Default: Use beads for tracking"},
		{"use *exactly* this", "use exactly this"},
		{"compute 2 * 3 and a*b", "compute 2 * 3 and a*b"},
		{"**Decision:** use SQLite", "Decision: use SQLite"},
		{"Redirects from old /docs/* URLs via the _redirects file", "Redirects from old /docs/* URLs via the _redirects file"},
		{"keep _all_ of it under /tmp/*", "keep all of it under /tmp/*"},
	} {
		if got := clean(c.in); got != c.want {
			t.Errorf("clean(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
