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
	l.User("Wire the exporter. Do not touch the vendored parser.\n<system-reminder>CRITICAL: you must run the checklist before saying done.</system-reminder>")
	l.Reply(textBlock("I'll delegate the research."), use("toolu_t", "Task", map[string]any{"description": "research", "prompt": "Never summarize; you must quote whole files."}))
	// The subagent's conversation, inline as older Claude Code wrote it:
	// a chain of its own.
	main := l.Parent
	l.Parent = ""
	l.Add(map[string]any{"type": "user", "isSidechain": true, "message": map[string]any{"role": "user", "content": "Never summarize; you must quote whole files."}})
	l.Add(map[string]any{"type": "assistant", "isSidechain": true, "requestId": "req_side", "message": map[string]any{
		"id": "msg_side", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
		"content": []any{textBlock("We decided to use the streaming reader instead of the buffered one.")}, "stop_reason": "end_turn",
		"usage": map[string]any{"input_tokens": 10, "output_tokens": 10}}})
	l.Parent = main
	l.Result("toolu_t", "The exporter reads records one at a time.", false)
	l.Reply(use("toolu_q", "AskUserQuestion", map[string]any{"questions": []any{map[string]any{
		"question": "Which format should the export files use?", "header": "Export format",
		"options": []any{map[string]any{"label": "JSON lines"}, map[string]any{"label": "CSV"}}}}}))
	l.Result("toolu_q", `User has answered your questions: "Which format should the export files use?"="JSON lines". You can now continue with the user's answers in mind.`, false)
	l.Reply(use("toolu_p1", "ExitPlanMode", map[string]any{"plan": "## Plan\n\n1. Switch to zerolog for logging in the exporter\n2. Write the files"}))
	l.Result("toolu_p1", "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, the new_string was NOT written to the file). The user provided the following reason for the rejection:  Let's keep slog, we just moved to it.", true)
	l.Reply(use("toolu_p2", "ExitPlanMode", map[string]any{"plan": "## Plan\n\n1. Keep slog\n2. Replace the buffered writer with a bufio.Writer pool\n3. Write the files"}))
	l.Result("toolu_p2", "User has approved your plan. You can now start coding.", false)
	l.Reply(textBlock("Plan approved; writing the exporter."))

	long := "Here is the vendor doc, does it help?\n\n" + strings.Repeat("The exporter must be started before the reader. Callers should always close it.\n\n", 30) + "Use it as a reference only."
	l.User(long)
	l.Reply(textBlock("Noted."))
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
	l.User("Use goose to run the schema migrations.")
	l.Reply(textBlock("Goose it is."))
	l.User("Stick with goose for migrations.")
	l.Reply(textBlock("Sure."))
	l.User("Actually, we're moving off goose; Atlas from now on.")
	l.Reply(textBlock("Switching."))
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
	l.User("Get the build green.")
	for i, id := range []string{"b1", "b2", "b3"} {
		l.Reply(use(id, "Bash", map[string]any{"command": "go build ./..."}))
		l.Result(id, "Exit code 1\n# x/engine\nengine/cache.go:"+string(rune('3'+i))+":2: error: undefined: lru", true)
	}
	l.Reply(use("m1", "Bash", map[string]any{"command": "python tools/gen.py"}))
	l.Result("m1", "Exit code 1\nTraceback (most recent call last):\n  File \"tools/gen.py\", line 1\nModuleNotFoundError: No module named 'yaml'", true)
	l.Reply(use("g1", "Bash", map[string]any{"command": "grep -rn lru engine"}))
	l.Result("g1", "Exit code 1", true)
	l.Reply(use("t1", "Bash", map[string]any{"command": "go test ./engine"}))
	l.Result("t1", "Exit code 1\n--- FAIL: TestEvict (0.00s)\nFAIL\tx/engine\t0.01s", true)
	l.Reply(use("t2", "Bash", map[string]any{"command": "go test -run TestEvict ./engine"}))
	l.Result("t2", "Exit code 1\n--- FAIL: TestEvict (0.00s)\nFAIL\tx/engine\t0.01s", true)
	l.Reply(use("b4", "Bash", map[string]any{"command": "go build ./..."}))
	l.Result("b4", "", false)
	l.Reply(use("n1", "Bash", map[string]any{"command": "npm run build"}))
	l.Result("n1", "Exit code 1\nerror: Cannot resolve theme", true)
	l.Reply(use("n2", "Bash", map[string]any{"command": "npm run dev"}))
	l.Result("n2", "ready on :3000", false)
	l.Reply(use("p1", "Bash", map[string]any{"command": "pytest tests/test_io.py"}))
	l.Result("p1", "FAILED tests/test_io.py::test_roundtrip - AssertionError\n1 failed, 3 passed in 0.1s", true)
	l.Reply(use("p2", "Bash", map[string]any{"command": "pytest tests/test_io.py::test_roundtrip"}))
	l.Result("p2", "1 passed in 0.05s", false)
	l.Reply(textBlock("The build passes; TestEvict still fails."))
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
	l.User("Ship the exporter.")
	l.Reply(textBlock("Working on it. Let me fix the two errors in exporter.go and then do the remaining work."))
	l.Add(map[string]any{"type": "user", "isCompactSummary": true, "message": map[string]any{"role": "user", "content": "This session is being continued from a previous conversation.\n\nThe user asked: never write CSV by hand. The plan is to split the writer into two files.\n\nStill need to:\n- Fix the compile error in exporter.go\n- Add tests for the CSV writer\n\n7. Pending Tasks:\n   - Add tests for the CSV writer output\n"}})
	l.Reply(textBlock("All done: the exporter compiles and its tests pass."))
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
