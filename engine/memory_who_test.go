package engine

import (
	"slices"
	"strings"
	"testing"
)

// whoSession is a session in which the user's own words sit among words
// the user never said: a subagent's prompt, a system reminder, a pasted
// document; and in which the user answers through tools: a question
// tool's answer, an approved plan, the reason for a rejected tool call.
func whoSession() *claudeLog {
	l := newClaudeLog("22222222-2222-4333-8444-555555555555")
	l.user("Wire the exporter. Do not touch the vendored parser.\n<system-reminder>CRITICAL: you must run the checklist before saying done.</system-reminder>")
	l.reply(textBlock("I'll delegate the research."), use("toolu_t", "Task", map[string]any{"description": "research", "prompt": "Never summarize; you must quote whole files."}))
	// The subagent's conversation, inline as older Claude Code wrote it:
	// a chain of its own.
	main := l.parent
	l.parent = ""
	l.add(map[string]any{"type": "user", "isSidechain": true, "message": map[string]any{"role": "user", "content": "Never summarize; you must quote whole files."}})
	l.add(map[string]any{"type": "assistant", "isSidechain": true, "requestId": "req_side", "message": map[string]any{
		"id": "msg_side", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
		"content": []any{textBlock("We decided to use the streaming reader instead of the buffered one.")}, "stop_reason": "end_turn",
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 10}}})
	l.parent = main
	l.result("toolu_t", "The exporter reads records one at a time.", false)
	l.reply(use("toolu_q", "AskUserQuestion", map[string]any{"questions": []any{map[string]any{
		"question": "Which format should the export files use?", "header": "Export format",
		"options": []any{map[string]any{"label": "JSON lines"}, map[string]any{"label": "CSV"}}}}}))
	l.result("toolu_q", `User has answered your questions: "Which format should the export files use?"="JSON lines". You can now continue with the user's answers in mind.`, false)
	l.reply(use("toolu_p1", "ExitPlanMode", map[string]any{"plan": "## Plan\n\n1. Switch to zerolog for logging in the exporter\n2. Write the files"}))
	l.result("toolu_p1", "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). The user provided the following reason for the rejection:  Let's keep slog, we just moved to it.", true)
	l.reply(use("toolu_p2", "ExitPlanMode", map[string]any{"plan": "## Plan\n\n1. Keep slog\n2. Replace the buffered writer with a bufio.Writer pool\n3. Write the files"}))
	l.result("toolu_p2", "User has approved your plan. You can now start coding.", false)
	l.reply(textBlock("Plan approved; writing the exporter."))

	long := "Here is the vendor doc, does it help?\n\n" + strings.Repeat("The exporter must be started before the reader. Callers should always close it.\n\n", 30) + "Use it as a reference only."
	l.user(long)
	l.reply(textBlock("Noted."))
	return l
}

func TestDeriveMemoryWhoSaidWhat(t *testing.T) {
	_, arts := deriveLog(t, whoSession())
	var cons, decs []string
	via := map[string]string{}
	var sub []string
	for _, a := range byType(arts, ArtifactConstraint) {
		c := a.Constraint
		if c.Scope == "subagent" {
			if c.Source != "assistant" || c.Via != "subagent prompt" {
				t.Errorf("subagent rule %q: source %s via %q", c.Statement, c.Source, c.Via)
			}
			sub = append(sub, c.Statement)
			continue
		}
		cons = append(cons, c.Statement)
	}
	if len(sub) != 1 || sub[0] != "Never summarize; you must quote whole files." {
		t.Errorf("subagent rules = %q, want the rule the agent gave its subagent", sub)
	}
	for _, a := range byType(arts, ArtifactDecision) {
		decs = append(decs, a.Decision.Statement)
		via[a.Decision.Statement] = a.Decision.Via + "/" + a.Decision.Role + "/" + a.Decision.Subject
	}
	if len(cons) != 1 || cons[0] != "Do not touch the vendored parser." {
		t.Errorf("constraints = %q, want only the user's typed rule", cons)
	}
	for _, d := range decs {
		if strings.Contains(d, "streaming reader") {
			t.Errorf("a subagent's decision is the session's: %q", d)
		}
	}
	want := map[string]string{
		"JSON lines (answer to: Which format should the export files use?)": "answer/user/export format",
		"Replace the buffered writer with a bufio.Writer pool":              "plan/user/",
	}
	for s, w := range want {
		if got, ok := via[s]; !ok || got != w {
			t.Errorf("decision %q: via/role/subject = %q (present %t), want %q; decisions %q", s, got, ok, w, decs)
		}
	}
	var qs []string
	for _, a := range byType(arts, ArtifactThread) {
		if a.Thread.Kind == "question" {
			qs = append(qs, a.Title+" ["+a.Status+"] "+a.Thread.Why)
		}
	}
	if len(qs) != 1 || qs[0] != "question: Which format should the export files use? [closed] the user answered: JSON lines" {
		t.Errorf("question threads = %q", qs)
	}
	found := false
	for s, v := range via {
		if strings.HasPrefix(s, "Let's keep slog") && strings.HasPrefix(v, "rejection/user") {
			found = true
		}
		if strings.Contains(s, "zerolog") {
			t.Errorf("a rejected plan's choice is a decision: %q", s)
		}
	}
	if !found {
		t.Errorf("the rejection's reason is no decision: %q", decs)
	}
}

// TestDeriveMemorySubjectSupersedes checks that a later decision about
// the same job, worded differently and naming another tool, supersedes
// the earlier one, and that a restatement does not.
func TestDeriveMemorySubjectSupersedes(t *testing.T) {
	l := newClaudeLog("33333333-2222-4333-8444-555555555555")
	l.user("Use goose to run the schema migrations.")
	l.reply(textBlock("Goose it is."))
	l.user("Stick with goose for migrations.")
	l.reply(textBlock("Sure."))
	l.user("Actually, we're moving off goose; Atlas from now on.")
	l.reply(textBlock("Switching."))
	_, arts := deriveLog(t, l)
	decs := byType(arts, ArtifactDecision)
	if len(decs) != 3 {
		t.Fatalf("decisions = %d: %+v", len(decs), decs)
	}
	for i, d := range decs {
		if d.Decision.Subject != "migration tool" || d.Decision.SubjectFrom == "" {
			t.Errorf("decision %d %q: subject %q (%s)", i, d.Decision.Statement, d.Decision.Subject, d.Decision.SubjectFrom)
		}
	}
	if decs[0].Status != "superseded" || decs[1].Status != "superseded" || decs[2].Status != "active" {
		t.Errorf("statuses %s %s %s, want superseded superseded active", decs[0].Status, decs[1].Status, decs[2].Status)
	}
	if decs[1].Decision.Supersedes != nil {
		t.Errorf("a restatement supersedes %v", decs[1].Decision.Supersedes)
	}
	if decs[2].Decision.SupersedesWhy != "same subject, migration tool" && !strings.HasPrefix(decs[2].Decision.SupersedesWhy, "same subject, migration tool") {
		t.Errorf("supersedes why = %q", decs[2].Decision.SupersedesWhy)
	}
	if !strings.Contains(decs[2].Text, "Subject: migration tool") || !strings.Contains(decs[2].Text, "(same subject, migration tool") {
		t.Errorf("text does not explain the subject:\n%s", decs[2].Text)
	}
}

// TestDeriveMemoryFailureThreads checks that a build error repeated is
// one thread that a later successful build closes, that the same failing
// test run two ways is one thread, and that no thread title is a shell
// command.
func TestDeriveMemoryFailureThreads(t *testing.T) {
	l := newClaudeLog("44444444-2222-4333-8444-555555555555")
	l.user("Get the build green.")
	for i, id := range []string{"b1", "b2", "b3"} {
		l.reply(use(id, "Bash", map[string]any{"command": "go build ./..."}))
		l.result(id, "Exit code 1\n# x/engine\nengine/cache.go:"+string(rune('3'+i))+":2: error: undefined: lru", true)
	}
	l.reply(use("m1", "Bash", map[string]any{"command": "python tools/gen.py"}))
	l.result("m1", "Exit code 1\nTraceback (most recent call last):\n  File \"tools/gen.py\", line 1\nModuleNotFoundError: No module named 'yaml'", true)
	l.reply(use("g1", "Bash", map[string]any{"command": "grep -rn lru engine"}))
	l.result("g1", "Exit code 1", true)
	l.reply(use("t1", "Bash", map[string]any{"command": "go test ./engine"}))
	l.result("t1", "Exit code 1\n--- FAIL: TestEvict (0.00s)\nFAIL\tx/engine\t0.01s", true)
	l.reply(use("t2", "Bash", map[string]any{"command": "go test -run TestEvict ./engine"}))
	l.result("t2", "Exit code 1\n--- FAIL: TestEvict (0.00s)\nFAIL\tx/engine\t0.01s", true)
	l.reply(use("b4", "Bash", map[string]any{"command": "go build ./..."}))
	l.result("b4", "", false)
	l.reply(use("n1", "Bash", map[string]any{"command": "npm run build"}))
	l.result("n1", "Exit code 1\nerror: Cannot resolve theme", true)
	l.reply(use("n2", "Bash", map[string]any{"command": "npm run dev"}))
	l.result("n2", "ready on :3000", false)
	l.reply(use("p1", "Bash", map[string]any{"command": "pytest tests/test_io.py"}))
	l.result("p1", "FAILED tests/test_io.py::test_roundtrip - AssertionError\n1 failed, 3 passed in 0.1s", true)
	l.reply(use("p2", "Bash", map[string]any{"command": "pytest tests/test_io.py::test_roundtrip"}))
	l.result("p2", "1 passed in 0.05s", false)
	l.reply(textBlock("The build passes; TestEvict still fails."))
	_, arts := deriveLog(t, l)
	kinds := map[string][]Artifact{}
	for _, a := range byType(arts, ArtifactThread) {
		kinds[a.Thread.Kind] = append(kinds[a.Thread.Kind], a)
		if strings.Contains(a.Title, "go build") || strings.Contains(a.Title, "go test") || strings.Contains(a.Title, "grep") {
			t.Errorf("title is a command: %q", a.Title)
		}
	}
	f := kinds["failure"]
	if len(f) != 3 {
		t.Fatalf("failure threads = %d, want 3 (go build, import, npm run build): %+v", len(f), f)
	}
	if f[2].Status != "open" || !strings.Contains(f[2].Title, "Cannot resolve theme") {
		t.Errorf("npm run build thread closed by npm run dev: %s %q %s", f[2].Status, f[2].Title, f[2].Thread.Why)
	}
	if f[0].Status != "closed" || !strings.HasPrefix(f[0].Title, "Build fails: ") || len(f[0].Evidence) < 3 {
		t.Errorf("build thread: %s %q evidence %d", f[0].Status, f[0].Title, len(f[0].Evidence))
	}
	if f[1].Status != "open" || !strings.Contains(f[1].Title, "No module named 'yaml'") {
		t.Errorf("import thread: %s %q", f[1].Status, f[1].Title)
	}
	ft := kinds["failing_test"]
	if len(ft) != 2 || !strings.HasPrefix(ft[0].Title, "Test TestEvict fails") || ft[0].Status != "open" || len(ft[0].Commands) != 2 {
		t.Fatalf("failing test threads = %+v", ft)
	}
	if ft[1].Thread.Test != "tests/test_io.py::test_roundtrip" || ft[1].Status != "closed" {
		t.Errorf("pytest thread: %q %s, want closed by the run naming it", ft[1].Thread.Test, ft[1].Status)
	}
}

// TestDeriveMemorySummaryTodos checks that a compaction summary's list of
// work still to do becomes one thread per item, and that the agent's
// report that all is done closes them.
func TestDeriveMemorySummaryTodos(t *testing.T) {
	l := newClaudeLog("55555555-2222-4333-8444-555555555555")
	l.user("Ship the exporter.")
	l.reply(textBlock("Working on it. Let me fix the two errors in exporter.go and then do the remaining work."))
	l.add(map[string]any{"type": "user", "isCompactSummary": true, "message": map[string]any{"role": "user", "content": "This session is being continued from a previous conversation.\n\nThe user asked: never write CSV by hand. The plan is to split the writer into two files.\n\nStill need to:\n- Fix the compile error in exporter.go\n- Add tests for the CSV writer\n\n7. Pending Tasks:\n   - Add tests for the CSV writer output\n"}})
	l.reply(textBlock("All done: the exporter compiles and its tests pass."))
	_, arts := deriveLog(t, l)
	var titles []string
	for _, a := range byType(arts, ArtifactThread) {
		titles = append(titles, a.Title+" ["+a.Status+"]")
	}
	if cons := byType(arts, ArtifactConstraint); len(cons) != 0 {
		t.Errorf("a summary's quote of the user is a constraint: %+v", cons[0].Constraint)
	}
	if decs := byType(arts, ArtifactDecision); len(decs) != 1 || decs[0].Decision.Via != "summary" || decs[0].Decision.Role != "assistant" {
		t.Errorf("summary decisions = %+v", decs)
	}
	slices.Sort(titles)
	want := []string{"todo: Add tests for the CSV writer [closed]", "todo: Fix the compile error in exporter.go [closed]"}
	if strings.Join(titles, "|") != strings.Join(want, "|") {
		t.Errorf("threads = %q, want %q", titles, want)
	}
}
