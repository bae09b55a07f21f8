package memtext

import (
	"path"
	"strconv"
	"strings"
	"unicode/utf8"
)

// IsTestCommand reports whether a shell command runs tests: go test,
// gotestsum, pytest (also python -m pytest/unittest, uv/poetry/pipenv run
// pytest), npm/yarn/pnpm/bun test and run test*, npx jest/vitest/mocha,
// jest, vitest, mocha, cargo test/nextest, make test/check, mvn test,
// gradle test, ctest, rspec, phpunit, dotnet test, deno test, tox, nox,
// and a few more (mix test, swift test, rake test).
func IsTestCommand(cmd string) bool {
	found := false
	eachCommand(cmd, 0, func(args, _ []string) {
		if !found && isTestArgs(args, 0) {
			found = true
		}
	})
	return found
}

func isTestArgs(args []string, depth int) bool {
	if len(args) == 0 || depth > 3 {
		return false
	}
	name := path.Base(args[0])
	rest := args[1:]
	first := ""
	if ops, _ := operands(rest, "-C", "--filter", "-F", "--dir", "--prefix", "-w", "--workspace", "-p", "--cwd", "-j"); len(ops) > 0 {
		first = ops[0]
	}
	second := func() string {
		ops, _ := operands(rest, "-C", "--filter", "-F", "--dir", "--prefix", "-w", "--workspace", "-p", "--cwd")
		if len(ops) > 1 {
			return ops[1]
		}
		return ""
	}
	switch name {
	case "go":
		return first == "test"
	case "gotestsum", "pytest", "py.test", "jest", "vitest", "mocha", "ava", "ctest", "rspec", "phpunit", "tox", "nox", "karma":
		return true
	case "python", "python3", "py", "python2":
		for i, a := range rest {
			if a == "-m" && i+1 < len(rest) {
				m := rest[i+1]
				return m == "pytest" || m == "unittest" || m == "nose2" || m == "tox"
			}
		}
		return false
	case "uv", "poetry", "pipenv", "pdm", "rye", "hatch", "bundle":
		if first == "run" || first == "exec" {
			return isTestArgs(afterWord(rest, first), depth+1)
		}
		return false
	case "uvx", "npx", "pnpx", "bunx":
		return isTestArgs(skipFlags(rest, "-p", "--package"), depth+1)
	case "npm":
		switch first {
		case "test", "t", "tst":
			return true
		case "run", "run-script":
			return strings.HasPrefix(second(), "test")
		case "exec":
			return isTestArgs(afterWord(rest, first), depth+1)
		}
		return false
	case "yarn", "pnpm", "bun":
		switch {
		case strings.HasPrefix(first, "test"):
			return true
		case first == "run":
			return strings.HasPrefix(second(), "test")
		case first == "exec" || first == "dlx" || name == "bun" && first == "x":
			return isTestArgs(afterWord(rest, first), depth+1)
		case name == "yarn" && (first == "jest" || first == "vitest" || first == "mocha"):
			return true
		}
		return false
	case "deno", "dotnet", "swift", "mix", "flutter", "dart", "rake", "rails", "composer", "zig", "sbt":
		return first == "test"
	case "cargo":
		return first == "test" || first == "t" || first == "nextest"
	case "make", "gmake", "just", "task":
		for _, a := range rest {
			if a == "test" || a == "tests" || a == "check" || strings.HasPrefix(a, "test-") || strings.HasPrefix(a, "test_") || strings.HasPrefix(a, "check-") {
				return true
			}
		}
		return false
	case "mvn", "mvnw", "gradle", "gradlew":
		for _, a := range rest {
			if a == "test" || a == "check" || strings.HasSuffix(a, ":test") || strings.HasSuffix(a, ":check") || a == "surefire:test" {
				return true
			}
		}
		return false
	case "playwright":
		return first == "test"
	}
	return false
}

// afterWord returns the arguments after the first occurrence of w.
func afterWord(args []string, w string) []string {
	for i, a := range args {
		if a == w {
			return args[i+1:]
		}
	}
	return nil
}

// TestResult is what a test run's output says.
type TestResult struct {
	// IsTest is set when the command runs tests or the output is a test
	// runner's.
	IsTest bool
	// Passed and Failed are both false when the output and the exit code
	// do not tell.
	Passed, Failed bool
	// FailedNames are the tests that failed, as the runner names them:
	// TestFoo, TestFoo/sub, tests/test_x.py::test_y, a jest title, a
	// cargo test path.
	FailedNames []string
	// Summary is the runner's count line ("3 failed, 12 passed"), or the
	// first "FAIL pkg" line of go test.
	Summary string
}

// maxFailedNames caps TestResult.FailedNames.
const maxFailedNames = 50

// ParseTestResult reads a test run's output: go test (--- FAIL: TestX,
// ok/FAIL package lines), pytest (FAILED path::name, "N failed, M
// passed"), jest and vitest (✕ name, Tests: N failed), cargo (test x ...
// FAILED, test result:), RSpec and ExUnit ("1) name", "N examples, M
// failures", "N tests, M failures"), Gradle's JUnit ("Class > test()
// FAILED", "N tests completed, M failed") and GoogleTest ("[  FAILED  ]
// Suite.Name"), and falls back on the exit code when it is known.
func ParseTestResult(cmd, output string, exit int, exitKnown bool) TestResult {
	r := TestResult{IsTest: IsTestCommand(cmd)}
	seen := map[string]bool{}
	fail := func(n string) {
		n = strings.TrimSpace(n)
		if n != "" && !seen[n] && len(r.FailedNames) < maxFailedNames {
			seen[n] = true
			r.FailedNames = append(r.FailedNames, n)
		}
	}
	var goFail, goOK string
	countFailed, countPassed := -1, -1
	runner, inFailures, inCTestFailed := false, false, false
	for l := range strings.Lines(output) {
		l = strings.TrimRight(l, "\r\n")
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "--- FAIL: "):
			runner = true
			name := strings.TrimPrefix(t, "--- FAIL: ")
			if k := strings.Index(name, " ("); k >= 0 {
				name = name[:k]
			}
			fail(name)
		case strings.HasPrefix(t, "--- PASS: "), strings.HasPrefix(t, "=== RUN"):
			runner = true
		case strings.HasPrefix(l, "FAIL\t") || strings.HasPrefix(l, "FAIL ") && strings.Count(l, " ") <= 3 && !strings.Contains(l, "::"):
			runner = true
			if goFail == "" {
				goFail = strings.Join(strings.Fields(l), " ")
			}
		case strings.HasPrefix(l, "ok  \t") || strings.HasPrefix(l, "ok \t") || strings.HasPrefix(l, "ok  "):
			runner = true
			if goOK == "" {
				goOK = strings.Join(strings.Fields(l), " ")
			}
		case strings.HasPrefix(t, "FAILED ") && strings.Contains(t, "::"):
			runner = true
			name := strings.TrimPrefix(t, "FAILED ")
			if k := strings.Index(name, " - "); k >= 0 {
				name = name[:k]
			}
			fail(name)
		case strings.HasPrefix(t, "ERROR ") && strings.Contains(t, "::"):
			runner = true
			name := strings.TrimPrefix(t, "ERROR ")
			if k := strings.Index(name, " - "); k >= 0 {
				name = name[:k]
			}
			fail(name)
		case strings.HasPrefix(t, "✕ ") || strings.HasPrefix(t, "× ") || strings.HasPrefix(t, "✗ ") || strings.HasPrefix(t, "✘ "):
			runner = true
			_, n := utf8.DecodeRuneInString(t)
			name := strings.TrimSpace(t[n:])
			if k := strings.LastIndex(name, " ("); k > 0 && strings.HasSuffix(name, ")") {
				name = name[:k]
			}
			if k := strings.LastIndex(name, " "); k > 0 && strings.HasSuffix(name, "ms") && isDigits(strings.TrimSuffix(name[k+1:], "ms")) {
				name = name[:k]
			}
			fail(name)
		case strings.HasPrefix(t, "test ") && strings.HasSuffix(t, " ... FAILED"):
			runner = true
			fail(strings.TrimSuffix(strings.TrimPrefix(t, "test "), " ... FAILED"))
		case strings.HasPrefix(t, "test result: "):
			runner = true
			s := strings.TrimPrefix(t, "test result: ")
			if f, ok := countOf(s, "failed"); ok && f > countFailed {
				countFailed = f
			}
			if p, ok := countOf(s, "passed"); ok {
				countPassed = max(countPassed, 0) + p
			}
			if r.Summary == "" || strings.HasPrefix(s, "FAILED") {
				r.Summary = strings.TrimSuffix(s, ".")
			}
		case strings.HasPrefix(t, "Tests:") || strings.HasPrefix(t, "Tests "):
			// jest "Tests:       1 failed, 5 passed, 6 total"; vitest
			// "Tests  1 failed | 5 passed (6)".
			s := strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(t, "Tests:"), "Tests "))
			f, okf := countOf(s, "failed")
			p, okp := countOf(s, "passed")
			if okf || okp {
				runner = true
				r.Summary = strings.Join(strings.Fields(s), " ")
				if okf {
					countFailed = f
				}
				if okp {
					countPassed = p
				}
			}
		case strings.HasPrefix(t, "[  FAILED  ] ") && !strings.Contains(t, " test"):
			// GoogleTest "[  FAILED  ] Suite.Name (3 ms)".
			runner = true
			name := strings.TrimPrefix(t, "[  FAILED  ] ")
			if k := strings.Index(name, " ("); k >= 0 {
				name = name[:k]
			}
			fail(name)
		case strings.HasPrefix(t, "[  PASSED  ] "):
			runner = true
			if n, ok := leadingInt(strings.TrimPrefix(t, "[  PASSED  ] ")); ok {
				countPassed = max(countPassed, 0) + n
			}
		case strings.HasSuffix(t, " FAILED") && strings.Contains(t, " > ") && !strings.HasPrefix(t, "FAILURE"):
			// Gradle's JUnit "SearchClientTest > facetsByBrand() FAILED".
			runner = true
			name := strings.TrimSuffix(t, " FAILED")
			if k := strings.LastIndex(name, " > "); k >= 0 {
				name = strings.TrimSuffix(name[k+3:], "()")
			}
			fail(name)
		case numberedTest(t):
			// RSpec "  1) Job skips cancelled subscriptions" after
			// "Failures:"; ExUnit "  1) test retries on 4xx (Mod.Test)".
			if inFailures || strings.Contains(t, ") test ") && strings.HasSuffix(t, ")") {
				runner = true
				name := t[strings.Index(t, ") ")+2:]
				if strings.HasPrefix(name, "test ") && strings.HasSuffix(name, ")") {
					name = strings.TrimPrefix(name, "test ")
					if k := strings.LastIndex(name, " ("); k > 0 {
						name = name[:k]
					}
				}
				fail(name)
			}
		case t == "Failures:":
			inFailures = true
		case ctestLine(t) != "":
			// CTest "1/12 Test #4: lobby_kick ......***Failed".
			runner = true
			if name, status := ctestResult(t); strings.HasPrefix(status, "***") {
				fail(name)
			}
		case t == "The following tests FAILED:":
			runner, inCTestFailed = true, true
		case inCTestFailed && strings.Contains(t, " - "):
			// "4 - lobby_kick (Failed)".
			name := t[strings.Index(t, " - ")+3:]
			if k := strings.LastIndex(name, " ("); k > 0 {
				name = name[:k]
			}
			fail(name)
		case strings.Contains(t, "% tests passed, ") && strings.Contains(t, " tests failed out of "):
			// CTest "92% tests passed, 1 tests failed out of 12".
			runner = true
			r.Summary = t
			if f, ok := countOf(t, "tests failed"); ok {
				countFailed = f
				_, total, _ := strings.Cut(t, " out of ")
				if n, ok := leadingInt(total); ok {
					countPassed = n - f
				}
			}
		case rspecSummary(t):
			// RSpec "4 examples, 1 failure", ExUnit "3 tests, 1 failure",
			// Gradle "14 tests completed, 1 failed".
			runner = true
			r.Summary = t
			if f, ok := countOf(t, "failure"); ok {
				countFailed = f
			} else if f, ok := countOf(t, "failures"); ok {
				countFailed = f
			} else if f, ok := countOf(t, "failed"); ok {
				countFailed = f
			} else {
				countFailed = 0
			}
			if n, ok := leadingInt(t); ok && countFailed >= 0 {
				countPassed = n - countFailed
			}
		case isPytestSummary(t):
			runner = true
			s := strings.Trim(t, "= ")
			if k := strings.Index(s, " in "); k >= 0 {
				s = s[:k]
			}
			r.Summary = s
			if f, ok := countOf(s, "failed"); ok {
				countFailed = f
			} else if f, ok := countOf(s, "error"); ok {
				countFailed = f
			}
			if p, ok := countOf(s, "passed"); ok {
				countPassed = p
			}
		}
	}
	if runner {
		r.IsTest = true
	}
	if r.Summary == "" {
		switch {
		case goFail != "":
			r.Summary = goFail
		case goOK != "":
			r.Summary = goOK
		}
	}
	r.Failed = len(r.FailedNames) > 0 || countFailed > 0 || goFail != "" || exitKnown && exit != 0
	if !r.Failed {
		r.Passed = exitKnown && exit == 0 || countPassed > 0 || goOK != "" || strings.HasPrefix(strings.TrimSpace(lastLine(output)), "PASS")
	}
	return r
}

// ctestLine returns the test name of a CTest progress line ("1/12 Test
// #4: lobby_kick ......***Failed"), or "".
func ctestLine(t string) string {
	name, _ := ctestResult(t)
	return name
}

// ctestResult splits a CTest progress line into the test's name and its
// status ("Passed", "***Failed", "***Exception: SegFault").
func ctestResult(t string) (name, status string) {
	n, ok := leadingInt(t)
	if !ok || n <= 0 {
		return "", ""
	}
	rest := strings.TrimLeft(t, "0123456789")
	if !strings.HasPrefix(rest, "/") {
		return "", ""
	}
	rest = strings.TrimLeft(rest[1:], "0123456789")
	rest = strings.TrimSpace(rest)
	if !strings.HasPrefix(rest, "Test ") {
		return "", ""
	}
	rest = strings.TrimSpace(rest[len("Test "):])
	if !strings.HasPrefix(rest, "#") {
		return "", ""
	}
	colon := strings.Index(rest, ": ")
	if colon < 0 {
		return "", ""
	}
	rest = strings.TrimSpace(rest[colon+2:])
	dots := strings.Index(rest, " .")
	if dots <= 0 {
		return "", ""
	}
	return rest[:dots], strings.TrimSpace(strings.TrimLeft(rest[dots:], " ."))
}

// numberedTest reports a numbered failure line: "1) name".
func numberedTest(t string) bool {
	n, ok := leadingInt(t)
	return ok && n > 0 && strings.HasPrefix(strings.TrimLeft(t, "0123456789"), ") ") && len(t) > 4
}

// rspecSummary reports the count line of RSpec ("4 examples, 1
// failure"), ExUnit ("3 tests, 1 failure", "5 tests, 0 failures") and
// Gradle ("14 tests completed, 1 failed").
func rspecSummary(t string) bool {
	n, ok := leadingInt(t)
	if !ok || n < 0 {
		return false
	}
	rest := strings.TrimLeft(t, "0123456789")
	for _, p := range []string{" examples, ", " example, ", " tests, ", " test, ", " tests completed, ", " tests completed"} {
		if strings.HasPrefix(rest, p) {
			return true
		}
	}
	return false
}

// isPytestSummary reports pytest's closing line: "==== 1 failed, 2 passed
// in 0.12s ====".
func isPytestSummary(t string) bool {
	if !strings.HasPrefix(t, "=") || !strings.HasSuffix(t, "=") {
		return false
	}
	return strings.Contains(t, " passed") || strings.Contains(t, " failed") || strings.Contains(t, " error")
}

// countOf returns N from "N word" in s ("3 failed, 12 passed").
func countOf(s, word string) (int, bool) {
	for {
		k := strings.Index(s, word)
		if k < 0 {
			return 0, false
		}
		before := strings.TrimRight(s[:k], " ")
		j := len(before)
		for j > 0 && before[j-1] >= '0' && before[j-1] <= '9' {
			j--
		}
		if j < len(before) {
			n, err := strconv.Atoi(before[j:])
			if err == nil {
				return n, true
			}
		}
		s = s[k+len(word):]
	}
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\r\n\t ")
	if k := strings.LastIndexByte(s, '\n'); k >= 0 {
		return s[k+1:]
	}
	return s
}

// ExitCode returns the exit code a tool result states: Claude Code's
// "Exit code N" first line, Codex's "Process exited with code N" or "Exit
// code: N", or a trailing "exit status N" (go run, make).
func ExitCode(output string) (int, bool) {
	n := 0
	for l := range strings.Lines(output) {
		n++
		t := strings.TrimSpace(l)
		for _, p := range []string{"Exit code: ", "Exit code ", "Process exited with code ", "exit code: ", "Exit status: "} {
			if strings.HasPrefix(t, p) {
				if c, ok := leadingInt(t[len(p):]); ok {
					return c, true
				}
			}
		}
		if n >= 5 {
			break
		}
	}
	for l := range strings.Lines(output) {
		t := strings.TrimSpace(l)
		if k := strings.Index(t, "Process exited with code "); k >= 0 {
			if c, ok := leadingInt(t[k+len("Process exited with code "):]); ok {
				return c, true
			}
		}
	}
	last := strings.TrimSpace(lastLine(output))
	for _, p := range []string{"exit status ", "Exit status "} {
		if k := strings.LastIndex(last, p); k >= 0 {
			if c, ok := leadingInt(last[k+len(p):]); ok {
				return c, true
			}
		}
	}
	return 0, false
}

func leadingInt(s string) (int, bool) {
	j := 0
	if j < len(s) && s[j] == '-' {
		j++
	}
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == 0 || s[:j] == "-" || j > 11 {
		return 0, false
	}
	n, err := strconv.Atoi(s[:j])
	return n, err == nil
}

// maxErrorLine caps FirstErrorLine, in bytes.
const maxErrorLine = 200

// FirstErrorLine returns the first line of output that looks like an
// error (error:, Error:, ERROR, panic:, fatal:, FAIL, npm ERR!, "command
// not found", an "XError: …" line, or the exception line that ends a
// Python traceback), trimmed and capped at 200 bytes; "" when there is
// none.
func FirstErrorLine(output string) string {
	inTrace := false
	for l := range strings.Lines(output) {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if strings.HasPrefix(t, "Traceback (most recent call last)") {
			inTrace = true
			continue
		}
		if inTrace {
			if l[0] != ' ' && l[0] != '\t' && isExceptionLine(t) {
				return capBytes(t, maxErrorLine)
			}
			continue
		}
		if errorLine(t) {
			if lt := strings.ToLower(strings.TrimRight(t, ":. ")); strings.HasSuffix(lt, "with exception") || strings.HasSuffix(lt, "with an exception") {
				// "ERROR - Task failed with exception": the exception
				// it names follows.
				if e := nextException(output[strings.Index(output, l)+len(l):]); e != "" {
					return capBytes(e, maxErrorLine)
				}
			}
			return capBytes(t, maxErrorLine)
		}
	}
	return ""
}

// nextException returns the first exception line ("KeyError: 'x'")
// among the next five lines of output that are not blank.
func nextException(output string) string {
	n := 0
	for l := range strings.Lines(output) {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if isExceptionLine(t) {
			return t
		}
		if n++; n == 5 {
			break
		}
	}
	return ""
}

func errorLine(t string) bool {
	lt := strings.ToLower(t)
	for _, p := range []string{"error:", "error[", "error ", "panic:", "fatal:", "fatal error", "npm err!", "err!", "failed:", "exception:"} {
		if strings.HasPrefix(lt, p) {
			return true
		}
	}
	if strings.HasPrefix(t, "FAIL") && (len(t) == 4 || !isAlnum(t[4])) || strings.HasPrefix(t, "--- FAIL") || strings.HasPrefix(t, "ERROR") {
		return true
	}
	if strings.Contains(lt, "command not found") || strings.Contains(t, ": error:") || strings.Contains(t, ": error ") || strings.HasPrefix(lt, "type error:") || strings.Contains(t, "==ERROR: ") ||
		strings.Contains(lt, "no such file or directory") || strings.Contains(t, "Segmentation fault") {
		return true
	}
	return isExceptionLine(t)
}

// isExceptionLine reports "ValueError: …", "pkg.SomeException: …", and
// a qualified exception of any name ("psycopg2.errors.UniqueViolation:
// …", "java.lang.NoSuchMethodError: …").
func isExceptionLine(t string) bool {
	k := strings.IndexByte(t, ':')
	if k <= 0 {
		return false
	}
	name := t[:k]
	if strings.ContainsAny(name, " \t") {
		return false
	}
	for _, suf := range []string{"Error", "Exception", "Interrupt", "Exit", "Failure"} {
		if strings.HasSuffix(name, suf) {
			return true
		}
	}
	// A dotted name whose last part is CamelCase, followed by ": ".
	d := strings.LastIndexByte(name, '.')
	if d <= 0 || d == len(name)-1 || !strings.HasPrefix(t[k:], ": ") {
		return false
	}
	last := name[d+1:]
	if last[0] < 'A' || last[0] > 'Z' || strings.ContainsAny(name, "/\\") {
		return false
	}
	for i := 1; i < len(last); i++ {
		if last[i] >= 'a' && last[i] <= 'z' {
			return true
		}
	}
	return false
}

// FailureKind says what a failed command's failure is, when it leaves
// work open: "Import" (ModuleNotFoundError, ImportError, Cannot find
// module), "CI job" (gh run/pr checks reporting a failed job), "Build"
// (a build, compile, install or type-check command, or compiler output
// such as "error[E0308]" or "file.go:3:4: …"); "" for anything else (a
// grep that found nothing, a missing file).
func FailureKind(cmd, output string) string {
	switch {
	case strings.Contains(output, "ModuleNotFoundError") || strings.Contains(output, "ImportError") ||
		strings.Contains(output, "Cannot find module") || strings.Contains(output, "No module named"):
		return "Import"
	}
	f := strings.Fields(strings.ToLower(cmd))
	has := func(ws ...string) bool {
		for _, w := range ws {
			for _, x := range f {
				if x == w {
					return true
				}
			}
		}
		return false
	}
	if has("gh") && (has("run") || has("checks")) || has("act") && strings.Contains(output, "Job '") {
		lo := strings.ToLower(output)
		if strings.Contains(lo, "fail") || strings.Contains(output, "✗") || strings.Contains(output, "X ") {
			return "CI job"
		}
		return ""
	}
	if has("build", "compile", "tsc", "install", "sync", "make", "mvn", "gradle", "javac", "gcc", "g++", "clang", "rustc", "mypy", "pyright", "dialyzer", "vet", "lint", "credo", "eslint", "ruff", "clippy", "check") {
		return "Build"
	}
	if IsTestCommand(cmd) {
		// A test run whose output names no test the parser knows.
		return "Test run"
	}
	if has("validate", "plan", "apply", "deploy", "backfill", "migrate", "size-limit", "dbt", "airflow", "dagster", "terraform", "helm", "kubectl") {
		return "Run"
	}
	if strings.Contains(output, "Traceback (most recent call last)") || strings.Contains(output, "panicked at") || strings.Contains(output, "panic: ") || namedException(FirstErrorLine(output)) {
		// A program that crashed: the crash is work left open.
		return "Run"
	}
	return ""
}

// failureMarkers mark a line of a failed run's output that says what
// failed: a test runner's failed test, a sanitizer's report, a limit
// exceeded.
var failureMarkers = []string{"●", "✕", "✗", " FAILED", "FAIL ", "***Failed", "Failure/Error", "==ERROR", "exceeded", " failed", "panicked at", "[ERROR]", "Error:", "error:"}

// FailureDetails returns up to max lines of a failed run's output, other
// than FirstErrorLine's, that say what failed ("● sync › uploads queued
// photos when back online", "1) MonthlyInvoicesJob skips cancelled
// subscriptions", "==1==ERROR: AddressSanitizer: heap-use-after-free"),
// or, when none does, the lines right after the first error line (the
// file and the argument an error names). Each is trimmed and capped at
// 200 bytes.
func FailureDetails(output string, max int) []string {
	first := FirstErrorLine(output)
	var out []string
	var after []string
	seenFirst := false
	for l := range strings.Lines(output) {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "Exit code ") || strings.HasPrefix(t, "#") || strings.HasPrefix(t, "File \"") {
			continue
		}
		t = capBytes(t, maxErrorLine)
		if t == first {
			seenFirst = true
			continue
		}
		if seenFirst && len(after) < max {
			after = append(after, t)
		}
		if len(out) >= max {
			continue
		}
		for _, m := range failureMarkers {
			if strings.Contains(t, m) || numberedFailure(t) {
				out = append(out, t)
				break
			}
		}
	}
	if len(out) == 0 {
		return after
	}
	return out
}

// numberedFailure reports a numbered failure of RSpec or ExUnit: "1)
// MonthlyInvoicesJob skips …", "1) test retries on SMTP 4xx (…)".
func numberedFailure(t string) bool {
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	return i > 0 && i+1 < len(t) && t[i] == ')' && t[i+1] == ' '
}

// ErrorSignature returns an error line with what changes between runs
// of the same error (line and column numbers, hex addresses, durations)
// replaced, so that one error repeated is one thread.
func ErrorSignature(line string) string {
	var b strings.Builder
	digits := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c >= '0' && c <= '9' {
			if !digits {
				b.WriteByte('#')
			}
			digits = true
			continue
		}
		digits = false
		b.WriteByte(c)
	}
	return strings.ToLower(strings.TrimSpace(b.String()))
}

// namedException reports an exception line whose exception has a name of
// its own ("SyntaxError: …", "psycopg2.errors.UniqueViolation: …"), not
// a tool's bare "Error: …".
func namedException(line string) bool {
	name, _, ok := strings.Cut(line, ":")
	return ok && isExceptionLine(line) && name != "Error" && name != "Exception" && !strings.HasSuffix(name, ".Error")
}
