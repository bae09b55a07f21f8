package memtext

import (
	"slices"
	"testing"
)

// TestFindThreads covers what an assistant's message leaves open, in
// wording of our own: questions to the user in their common phrasings,
// work not done; and what is no thread: narration of the next step, a
// lesson learned.
func TestFindThreads(t *testing.T) {
	tests := []struct {
		text string
		want []Type
	}{
		{"One thing to check: should the importer skip empty files?", []Type{TypeQuestion}},
		{"Question for you: do you want the old endpoint kept behind a flag?", []Type{TypeQuestion}},
		{"Quick question — which region should the bucket live in?", []Type{TypeQuestion}},
		{"Do we want retries on the upload path too?", []Type{TypeQuestion}},
		{"Let me know whether the v1 flags should stay.", []Type{TypeQuestion}},
		{"Please confirm which of the two configs to keep.", []Type{TypeQuestion}},
		{"The importer still needs to handle gzip input.", []Type{TypeTodo}},
		{"Let me fix the three type errors and then do the remaining work.", nil},
		{"Now I'll tackle the remaining items on the list:", nil},
		{"Next, I will check what still needs to be wired.", nil},
		{"Per the docs, a stopped worker is still to be restarted by hand; you cannot resume it.", nil},
		{"Still need to:", nil},
		{"Why did it fail? Because the fixture was stale.", nil},
	}
	for _, tt := range tests {
		var got []Type
		for _, f := range Find(tt.text, FindOptions{Role: "assistant", Questions: true}) {
			got = append(got, f.Type)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Find(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
}

func TestTodoList(t *testing.T) {
	text := `Done so far: the parser.

**Still need to:**
- Wire the **exporter** into the CLI
- Add tests for ` + "`gzip`" + ` input
- Haven't yet read the exporter's README

7. Pending Tasks:
   - **epic-4** (in progress): "Unify the viewers"
     - Fix the build error in viewer.ex
     - Update the session template
   - Close the session (commit, push)

8. Current Work:
   - Editing viewer.ex
`
	got := TodoList(text)
	want := []string{"Wire the exporter into the CLI", "Add tests for `gzip` input", "Fix the build error in viewer.ex", "Update the session template", "Close the session (commit, push)"}
	if !slices.Equal(got, want) {
		t.Errorf("TodoList = %q\nwant %q", got, want)
	}
}

func TestAllDone(t *testing.T) {
	tests := []struct {
		text string
		want bool
	}{
		{"All done. Here is what changed:", true},
		{"All four subtasks are complete and the epic with them.", true},
		{"All 3 subtasks closed. Let me close the epic:", false},
		{"Everything is committed and pushed.", true},
		{"All the steps are complete.", true},
		{"All tests pass, but the docs are still missing.", false},
		{"All tasks done except the migration.", false},
		{"Done with the parser; the exporter is next.", false},
		{"All of the handlers return errors now.", false},
	}
	for _, tt := range tests {
		if got := AllDone(tt.text); got != tt.want {
			t.Errorf("AllDone(%q) = %t, want %t", tt.text, got, tt.want)
		}
	}
}

// TestReportsDone: the agent reporting a TODO's work done, in the past
// tense of its verb with its object, and nothing else.
func TestReportsDone(t *testing.T) {
	for _, c := range []struct {
		todo, text string
		want       bool
	}{
		{"rename the .up.sql files to tern's layout", "The migration files are renamed to tern's layout (001_accounts.sql).", true},
		{"update docs/runbook.md with the new commands", "I updated docs/runbook.md with the new commands.", true},
		{"copy the fixtures into testdata", "I copied the fixtures into testdata/.", true},
		{"rename the .up.sql files to tern's layout", "The files are not renamed yet.", false},
		{"rename the .up.sql files to tern's layout", "Once the files are renamed to tern's layout, run it.", false},
		{"update docs/runbook.md with the new commands", "The runbook is still to do.", false},
		{"update the README", "I updated the README.", false}, // one word of object: too little to tell
	} {
		if got := ReportsDone(c.todo, c.text); got != c.want {
			t.Errorf("ReportsDone(%q, %q) = %v, want %v", c.todo, c.text, got, c.want)
		}
	}
}

// TestReportCovers: a report restates a piece of work as done in its own
// words when one sentence holds most of its terms and says nothing is
// left.
func TestReportCovers(t *testing.T) {
	todo := Terms("make perform/1 return {:snooze, 60} on temporary SMTP errors")
	for _, c := range []struct {
		text string
		want bool
	}{
		{"All three worker tests pass; temporary SMTP errors snooze the job for 60 seconds.", true},
		{"Temporary SMTP errors still fail the job.", false},
		{"The snooze is next.", false},
		{"The job snoozes. Temporary errors happen. SMTP is slow.", false}, // spread over sentences
	} {
		if got := ReadReport(c.text).Covers(todo); got != c.want {
			t.Errorf("Covers(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	if ReadReport("add a panel").Covers(Terms("add a panel")) {
		t.Error("a todo of fewer than three terms is covered")
	}
}

// TestWait: a request held back until a condition is a rule for the
// time being and a wait; a later message saying the condition happened
// meets it, one saying it has not does not.
func TestWait(t *testing.T) {
	var kinds []Type
	cond := ""
	for _, f := range Find("Leave the v1 endpoint up until the mobile app ships, don't remove it yet.", FindOptions{Role: "user"}) {
		kinds = append(kinds, f.Type)
		if f.Type == TypeWait {
			cond = f.Sentence
		}
	}
	if !slices.Contains(kinds, TypeConstraint) || cond != "the mobile app ships" {
		t.Fatalf("kinds %v, condition %q", kinds, cond)
	}
	for text, want := range map[string]bool{
		"The mobile app shipped on Friday. You can remove v1 now.": true,
		"The mobile app hasn't shipped yet.":                       false,
		"Has the mobile app shipped?":                              false,
		"The web app shipped.":                                     false,
	} {
		if got := WaitMet(cond, text); got != want {
			t.Errorf("WaitMet(%q, %q) = %v, want %v", cond, text, got, want)
		}
	}
	if !GoAhead("QA is happy. You can remove v1 now.") || GoAhead("Can you remove v1 now?") {
		t.Error("GoAhead")
	}
}
