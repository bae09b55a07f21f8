package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// writeSession writes l to dir and imports it.
func writeSession(t testing.TB, e *Engine, dir string, l *claudeLog) string {
	t.Helper()
	p := filepath.Join(dir, l.Session+".jsonl")
	if err := os.WriteFile(p, l.Data(), 0o644); err != nil {
		t.Fatal(err)
	}
	importPath(t, e, "claude", p)
	return "claude:" + l.Session
}

func onlyOne(t *testing.T, arts []Artifact, typ ArtifactType, has string) Artifact {
	t.Helper()
	var out []Artifact
	for _, a := range byType(arts, typ) {
		if strings.Contains(a.Title+" "+a.Text, has) {
			out = append(out, a)
		}
	}
	if len(out) != 1 {
		var titles []string
		for _, a := range byType(arts, typ) {
			titles = append(titles, a.Status+": "+a.Title)
		}
		t.Fatalf("%d %s artifacts with %q, want 1; have %q", len(out), typ, has, titles)
	}
	return out[0]
}

// TestProjectResolve: a later session of a project takes an earlier
// session's decision, constraint and failing test out of force (by
// subject, by a replaced option, by the opposite rule, by a passing
// run); another project is untouched; ProjectMemory keeps what is in
// force; and a rebuild gives the same.
func TestProjectResolve(t *testing.T) {
	dir := t.TempDir()
	e, log := memoryEngine(t, dir)
	defer log.Close()
	defer e.Close()

	one := newClaudeLog("44444444-0000-4000-8000-000000000001")
	one.User("Set up the schema migrations. For the migrations, use goose.")
	one.Reply(textBlock("We decided to use a ring buffer for the event queue because it never allocates."))
	one.User("Always squash commits before merging. Run the store tests.")
	one.Reply(use("toolu_1", "Bash", map[string]any{"command": "go test ./store/..."}))
	one.Result("toolu_1", "--- FAIL: TestMigrate (0.01s)\n    store_test.go:40: no such table: users\nFAIL\nFAIL\tgithub.com/acme/app/store\t0.02s", true)
	one.Reply(textBlock("TestMigrate fails: the users table is missing."))
	one.User("Add an audit log.")
	one.Reply(textBlock("I have a draft. Should the audit log live in its own table or in the events table?"))
	s1 := writeSession(t, e, dir, one)

	two := newClaudeLog("44444444-0000-4000-8000-000000000002")
	two.T = one.T.Add(24 * time.Hour)
	two.User("The migrations again. For the migrations, use Atlas.")
	two.Reply(textBlock("We decided to use a slice instead of a ring buffer, since the queue is tiny."))
	two.User("Never squash commits before merging. Run the store tests again.")
	two.Reply(use("toolu_2", "Bash", map[string]any{"command": "go test ./store/... -run Migrate"}))
	two.Result("toolu_2", "ok  \tgithub.com/acme/app/store\t0.03s", false)
	two.Reply(textBlock("The store tests pass now."))
	two.User("About the audit log: we decided it lives in its own table, apart from the events.")
	two.Reply(textBlock("Done."))
	s2 := writeSession(t, e, dir, two)

	other := newClaudeLog("44444444-0000-4000-8000-000000000003")
	other.Cwd = "/elsewhere"
	other.T = two.T.Add(time.Hour)
	other.User("For the migrations, use Flyway.")
	other.Reply(textBlock("Done."))
	writeSession(t, e, dir, other)

	a1, err := e.Artifacts(s1)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := e.Artifacts(s2)
	if err != nil {
		t.Fatal(err)
	}
	goose, atlas := onlyOne(t, a1, ArtifactDecision, "goose"), onlyOne(t, a2, ArtifactDecision, "Atlas")
	ring, slice := onlyOne(t, a1, ArtifactDecision, "ring buffer for"), onlyOne(t, a2, ArtifactDecision, "slice")
	squash, nosquash := onlyOne(t, a1, ArtifactConstraint, "Always squash"), onlyOne(t, a2, ArtifactConstraint, "Never squash")
	failing := onlyOne(t, a1, ArtifactThread, "TestMigrate")
	question := onlyOne(t, a1, ArtifactThread, "audit log live")
	for _, a := range []Artifact{goose, ring, squash} {
		if a.Status != "active" {
			t.Fatalf("%s is %s in its own session, want active", a.Title, a.Status)
		}
	}
	if failing.Status != "open" {
		t.Fatalf("the failing test is %s in its own session", failing.Status)
	}

	want := map[string]struct {
		by     Artifact
		status string
	}{
		goose.ID:    {atlas, "superseded"},
		ring.ID:     {slice, "superseded"},
		squash.ID:   {nosquash, "superseded"},
		failing.ID:  {Artifact{Session: s2}, "closed"},
		question.ID: {onlyOne(t, a2, ArtifactDecision, "audit log"), "closed"},
	}
	for id, w := range want {
		a, err := e.Artifact(id)
		if err != nil {
			t.Fatal(err)
		}
		r, err := e.Resolve(a)
		if err != nil {
			t.Fatal(err)
		}
		if r == nil || r.Status != w.status || r.Session != s2 || w.by.ID != "" && r.By != w.by.ID || r.Reason == "" {
			t.Errorf("%s: resolved %+v, want %s by %s of %s", a.Title, r, w.status, w.by.Title, s2)
		}
	}
	for _, a := range []Artifact{atlas, slice, nosquash} {
		if r, err := e.Resolve(a); err != nil || r != nil {
			t.Errorf("%s, the later one, resolved %+v, %v", a.Title, r, err)
		}
	}

	pm, err := e.ProjectMemory("/repo", 0)
	if err != nil {
		t.Fatal(err)
	}
	var inForce []string
	for _, a := range pm.InForce {
		inForce = append(inForce, a.ID)
	}
	for _, a := range []Artifact{atlas, slice, nosquash} {
		if !slices.Contains(inForce, a.ID) {
			t.Errorf("ProjectMemory lacks %q, in force", a.Title)
		}
	}
	for id := range want {
		if slices.Contains(inForce, id) {
			t.Errorf("ProjectMemory has %s, taken out of force", id)
		}
		if _, ok := pm.Resolved[id]; !ok {
			t.Errorf("ProjectMemory does not say why %s is out of force", id)
		}
	}
	elsewhere, err := e.ProjectMemory("/elsewhere", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(elsewhere.InForce) != 1 || !strings.Contains(elsewhere.InForce[0].Title, "Flyway") || len(elsewhere.Resolved) != 0 {
		t.Errorf("another project: %d in force, %d resolved", len(elsewhere.InForce), len(elsewhere.Resolved))
	}

	state := pm.State
	if _, err := e.RebuildMemory(context.Background()); err != nil {
		t.Fatal(err)
	}
	again, err := e.ProjectMemory("/repo", 0)
	if err != nil {
		t.Fatal(err)
	}
	if again.State != state || len(again.InForce) != len(pm.InForce) {
		t.Errorf("after a rebuild: state %s (was %s), %d in force (was %d)", again.State, state, len(again.InForce), len(pm.InForce))
	}
}

// TestProjectResolveValuesAndAnswers: a later session that sets a
// quantity anew ("go down to 5%", "bring the memory down to 512 MB")
// takes the earlier setting out of force, though it names it otherwise,
// and a quantity of the same unit about something else does not; a
// question left open at the end of a session is closed by the next
// session's first prompt that takes it up.
func TestProjectResolveValuesAndAnswers(t *testing.T) {
	e, dir := resolveRig(t)

	one := newClaudeLog("44444444-0000-4000-8000-000000000011")
	one.User("Add tail sampling: keep all errors, sample the rest at 10%.")
	one.Reply(textBlock("Done."))
	one.User("Lambda settings: 1024 MB memory, 20 s timeout.")
	one.Reply(textBlock("The export job is ready. Should invoices be grouped by customer or by billing month?"))
	s1 := writeSession(t, e, dir, one)

	two := newClaudeLog("44444444-0000-4000-8000-000000000012")
	two.T = one.T.Add(24 * time.Hour)
	two.User("Invoices are grouped by customer, one file per customer and month.")
	two.Reply(textBlock("Done."))
	two.User("Go down to 5% for the non-error traces.")
	two.Reply(textBlock("Done."))
	two.User("Bring the lambda memory down to 512 MB.")
	two.Reply(textBlock("Done."))
	two.User("Set the cache TTL to 300 s.")
	two.Reply(textBlock("Done."))
	s2 := writeSession(t, e, dir, two)

	a1, err := e.Artifacts(s1)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := e.Artifacts(s2)
	if err != nil {
		t.Fatal(err)
	}
	sampling, lambda := onlyOne(t, a1, ArtifactDecision, "10%"), onlyOne(t, a1, ArtifactDecision, "1024 mb memory: Lambda")
	question := onlyOne(t, a1, ArtifactThread, "grouped by customer")
	five, memory := onlyOne(t, a2, ArtifactDecision, "5%"), onlyOne(t, a2, ArtifactDecision, "512 MB")
	onlyOne(t, a2, ArtifactDecision, "300 s")
	for _, tt := range []struct {
		a      Artifact
		status string
		by     string
		reason string
	}{
		{sampling, "superseded", five.ID, "5%, was 10%"},
		{lambda, "superseded", memory.ID, "512 mb, was 1024 mb"},
		{question, "closed", "", "answered it in a later session"},
	} {
		r, err := e.Resolve(tt.a)
		if err != nil {
			t.Fatal(err)
		}
		if r == nil || r.Status != tt.status || r.Session != s2 || tt.by != "" && r.By != tt.by || !strings.Contains(r.Reason, tt.reason) {
			t.Errorf("%s: resolved %+v, want %s by %s (%q)", tt.a.Title, r, tt.status, tt.by, tt.reason)
		}
	}
}

// TestProjectResolveFailuresAndTodos: a run that crashed is an open
// thread, named by its error and what failed, which a later session's
// successful run of the same tool closes; a TODO the agent left is
// closed by a later session's task that takes it up and succeeds, or
// that names it in passing and reports it done in other words.
func TestProjectResolveFailuresAndTodos(t *testing.T) {
	e, dir := resolveRig(t)

	one := newClaudeLog("44444444-0000-4000-8000-000000000021")
	one.User("Start the summarizer training.")
	one.Reply(use("toolu_1", "Bash", map[string]any{"command": "python train.py --config summ.yaml"}))
	one.Result("toolu_1", "Traceback (most recent call last):\n  File \"train.py\", line 88, in step\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB\nExit code 1", true)
	one.Reply(textBlock("It ran out of GPU memory. TODO: decide whether transactional mail gets its own queue."))
	one.Reply(textBlock("TODO: make perform/1 return {:snooze, 60} on temporary SMTP errors."))
	s1 := writeSession(t, e, dir, one)

	two := newClaudeLog("44444444-0000-4000-8000-000000000022")
	two.T = one.T.Add(24 * time.Hour)
	two.User("Continue the mail work: do the snooze, and transactional mail gets its own queue with concurrency 20.")
	two.Reply(use("toolu_2", "Bash", map[string]any{"command": "python train.py --config summ.yaml --batch 8"}))
	two.Result("toolu_2", "epoch 3/3 done, rougeL 0.41", false)
	two.Reply(textBlock("Done: the queue is split and the training finished. Temporary SMTP errors snooze the job for 60 seconds."))
	s2 := writeSession(t, e, dir, two)

	a1, err := e.Artifacts(s1)
	if err != nil {
		t.Fatal(err)
	}
	oom := onlyOne(t, a1, ArtifactThread, "CUDA out of memory")
	todo := onlyOne(t, a1, ArtifactThread, "transactional mail")
	snooze := onlyOne(t, a1, ArtifactThread, "snooze")
	for _, tt := range []struct {
		a      Artifact
		reason string
	}{
		{oom, "ran python train.py and it succeeded"},
		{todo, "took it up and succeeded"},
		{snooze, "reports it done"},
	} {
		if tt.a.Status != "open" {
			t.Fatalf("%s is %s in its own session", tt.a.Title, tt.a.Status)
		}
		r, err := e.Resolve(tt.a)
		if err != nil {
			t.Fatal(err)
		}
		if r == nil || r.Status != "closed" || r.Session != s2 || !strings.Contains(r.Reason, tt.reason) {
			t.Errorf("%s: resolved %+v, want closed (%q)", tt.a.Title, r, tt.reason)
		}
	}
}

// TestFailureOneThreadPerTool: the same tool failing again with another
// error restates its open failure thread; a later success closes it.
func TestFailureOneThreadPerTool(t *testing.T) {
	e, dir := resolveRig(t)
	l := newClaudeLog("44444444-0000-4000-8000-000000000031")
	l.User("Make the type check pass.")
	l.Reply(use("toolu_1", "Bash", map[string]any{"command": "uv run pyright"}))
	l.Result("toolu_1", "/repo/a.py:3:1 - error: Type of \"x\" is unknown\n1 error\nExit code 1", true)
	l.Reply(use("toolu_2", "Bash", map[string]any{"command": "uv run pyright"}))
	l.Result("toolu_2", "/repo/b.py:9:5 - error: Unnecessary isinstance call\n1 error\nExit code 1", true)
	l.Reply(textBlock("Two errors to go."))
	s := writeSession(t, e, dir, l)
	arts, err := e.Artifacts(s)
	if err != nil {
		t.Fatal(err)
	}
	var threads []Artifact
	for _, a := range arts {
		if a.Type == ArtifactThread && a.Thread.Kind == "failure" {
			threads = append(threads, a)
		}
	}
	if len(threads) != 1 || len(threads[0].Errors) != 2 || threads[0].Status != "open" {
		t.Fatalf("want one open failure thread with both errors, got %d: %+v", len(threads), threads)
	}
}

// TestFailureReportedGone: a failure thread is closed when, right after
// a check of the work succeeded, the agent says its error is gone,
// though another command did the work: in the same session, and in a
// later session of the project. A report of no errors at all, or of
// another error, closes nothing.
func TestFailureReportedGone(t *testing.T) {
	e, dir := resolveRig(t)
	fail := func(l *claudeLog, id string) {
		l.Reply(use(id, "Bash", map[string]any{"command": "airflow tasks test orders_nightly load_orders 2026-09-17"}))
		l.Result(id, "ERROR - Task failed with exception\nKeyError: 'shipping_country'\nExit code 1", true)
		l.Reply(textBlock("The export dropped shipping_country."))
	}
	port := func(l *claudeLog, id, report string) {
		l.Reply(use(id, "Bash", map[string]any{"command": "dagster asset materialize -m assets --select orders"}))
		l.Result(id, "RUN_SUCCESS\nMaterialized orders: 41,229 rows", false)
		l.Reply(textBlock(report))
	}

	one := newClaudeLog("44444444-0000-4000-8000-000000000061")
	one.User("The nightly orders load failed. Check it.")
	fail(one, "toolu_1")
	one.User("Port it to a Dagster asset.")
	port(one, "toolu_2", "The orders asset materializes: 41,229 rows, no key errors.")
	s1 := writeSession(t, e, dir, one)
	a1, err := e.Artifacts(s1)
	if err != nil {
		t.Fatal(err)
	}
	if th := onlyOne(t, a1, ArtifactThread, "KeyError"); th.Status != "closed" || !strings.Contains(th.Thread.Why, "error gone") {
		t.Errorf("same session: %s is %s (%s), want closed by the report", th.Title, th.Status, th.Thread.Why)
	}

	two := newClaudeLog("44444444-0000-4000-8000-000000000062")
	two.T = one.T.Add(24 * time.Hour)
	two.User("The nightly orders load failed. Check it.")
	fail(two, "toolu_1")
	s2 := writeSession(t, e, dir, two)
	for i, report := range []string{"It materializes: 41,229 rows, no errors.", "It materializes: no timeout errors.", "It materializes: 41,229 rows, no key errors."} {
		three := newClaudeLog(fmt.Sprintf("44444444-0000-4000-8000-00000000007%d", i))
		three.T = two.T.Add(time.Duration(i+1) * 24 * time.Hour)
		three.User("Port the orders load to a Dagster asset.")
		port(three, "toolu_1", report)
		s3 := writeSession(t, e, dir, three)
		a2, err := e.Artifacts(s2)
		if err != nil {
			t.Fatal(err)
		}
		th := onlyOne(t, a2, ArtifactThread, "KeyError")
		if th.Status != "open" {
			t.Fatalf("%s is %s in its own session", th.Title, th.Status)
		}
		r, err := e.Resolve(th)
		if err != nil {
			t.Fatal(err)
		}
		closed := r != nil && r.Status == "closed" && r.Session == s3 && strings.Contains(r.Reason, "reports the error gone")
		if want := i == 2; closed != want {
			t.Errorf("after %q: resolved %+v, want closed %v", report, r, want)
		}
	}
}

// TestFailingTestChainedCommand: a CTest test that fails in a chain of
// commands is one thread by its name, which a later session's passing
// run of a different chain around the same test command closes.
func TestFailingTestChainedCommand(t *testing.T) {
	e, dir := resolveRig(t)
	one := newClaudeLog("44444444-0000-4000-8000-000000000081")
	one.User("Add ASan presets and run the tests.")
	for i, cmd := range []string{"cmake --preset asan && cmake --build --preset asan && ctest --preset asan", "cmake --build --preset asan && ctest --preset asan"} {
		id := fmt.Sprintf("toolu_%d", i)
		one.Reply(use(id, "Bash", map[string]any{"command": cmd}))
		one.Result(id, "==1==ERROR: AddressSanitizer: heap-use-after-free\n1/12 Test #4: lobby_kick ......***Failed\n92% tests passed, 1 tests failed out of 12\nExit code 8", true)
	}
	one.Reply(textBlock("lobby_kick still fails under ASan."))
	s1 := writeSession(t, e, dir, one)
	two := newClaudeLog("44444444-0000-4000-8000-000000000082")
	two.T = one.T.Add(24 * time.Hour)
	two.User("Fix the use-after-free in lobby_kick.")
	two.Reply(use("toolu_1", "Bash", map[string]any{"command": "cmake --build --preset asan && ctest --preset asan"}))
	two.Result("toolu_1", "100% tests passed, 0 tests failed out of 12", false)
	two.Reply(textBlock("All tests pass."))
	s2 := writeSession(t, e, dir, two)
	a1, err := e.Artifacts(s1)
	if err != nil {
		t.Fatal(err)
	}
	th := onlyOne(t, a1, ArtifactThread, "lobby_kick")
	if th.Status != "open" || th.Thread.Test != "lobby_kick" {
		t.Fatalf("%s is %s (test %q), want open for lobby_kick", th.Title, th.Status, th.Thread.Test)
	}
	r, err := e.Resolve(th)
	if err != nil {
		t.Fatal(err)
	}
	if r == nil || r.Status != "closed" || r.Session != s2 {
		t.Errorf("resolved %+v, want closed by %s", r, s2)
	}
}

// TestSettingsEachADecision: the settings of a task request are one
// decision each, so a later session that changes one of them (by its
// short name) leaves the others in force.
func TestSettingsEachADecision(t *testing.T) {
	e, dir := resolveRig(t)
	one := newClaudeLog("44444444-0000-4000-8000-000000000041")
	one.User("Kick off the fine-tune on the small split: learning rate 3e-5, batch size 16, bf16 on.")
	one.Reply(textBlock("Started."))
	s1 := writeSession(t, e, dir, one)
	two := newClaudeLog("44444444-0000-4000-8000-000000000042")
	two.T = one.T.Add(24 * time.Hour)
	two.User("The run diverged. Retry it but halve the batch and drop the LR to 2e-5.")
	two.Reply(textBlock("Restarted."))
	s2 := writeSession(t, e, dir, two)
	a1, err := e.Artifacts(s1)
	if err != nil {
		t.Fatal(err)
	}
	var settings []Artifact
	for _, a := range a1 {
		if a.Type == ArtifactDecision && a.Decision.Setting != "" {
			settings = append(settings, a)
		}
	}
	if len(settings) != 3 {
		t.Fatalf("want 3 setting decisions, got %d", len(settings))
	}
	for _, a := range settings {
		r, err := e.Resolve(a)
		if err != nil {
			t.Fatal(err)
		}
		replaced := r != nil && r.Status == "superseded" && r.Session == s2
		if want := !strings.HasPrefix(a.Decision.Setting, "bf16"); replaced != want {
			t.Errorf("%s (subject %q): resolved %+v, want replaced %v", a.Title, a.Decision.Subject, r, want)
		}
		// A setting is told with what it is a setting of, never with the
		// other settings, which may have changed since.
		if a.Title != a.Decision.Setting+": Kick off the fine-tune on the small split" || strings.Contains(a.Text, "3e-5") != strings.HasPrefix(a.Decision.Setting, "learning rate") {
			t.Errorf("title %q, text %q", a.Title, a.Text)
		}
	}
	a2, err := e.Artifacts(s2)
	if err != nil {
		t.Fatal(err)
	}
	var changes []string
	for _, a := range a2 {
		if a.Type == ArtifactDecision {
			changes = append(changes, a.Decision.Setting+" / "+a.Decision.Subject)
		}
	}
	slices.Sort(changes)
	if want := []string{"drop the lr to 2e-5 / learning rate", "halve the batch / batch size"}; !slices.Equal(changes, want) {
		t.Errorf("the retry's decisions: %q, want %q", changes, want)
	}
}

// resolveRig opens a memory engine in a temporary directory, closed when
// the test ends.
func resolveRig(t *testing.T) (*Engine, string) {
	t.Helper()
	dir := t.TempDir()
	e, log := memoryEngine(t, dir)
	t.Cleanup(func() {
		e.Close()
		log.Close()
	})
	return e, dir
}

// TestOutcomeReportsAfterPass: what the agent said right after its
// tests passed, or a build succeeded, stays in the task's outcome though
// its last message is about something else; what it said after a
// command that checks nothing (ls) does not.
func TestOutcomeReportsAfterPass(t *testing.T) {
	e, dir := resolveRig(t)
	l := newClaudeLog("44444444-0000-4000-8000-000000000051")
	l.User("Get the facet test green.")
	l.Reply(use("toolu_1", "Bash", map[string]any{"command": "go test ./search/..."}))
	l.Result("toolu_1", "ok  \tgithub.com/acme/search\t0.21s", false)
	l.Reply(textBlock("The facet test passes with the new builder; all 14 tests are green."))
	l.Reply(textBlock("About the analyzer question from before: it stays in the repository."))
	l.User("Fix the site's links.")
	l.Reply(use("toolu_2", "Bash", map[string]any{"command": "ls docs"}))
	l.Result("toolu_2", "intro.md\nsetup.md", false)
	l.Reply(textBlock("Two pages hold relative links."))
	l.Reply(use("toolu_3", "Bash", map[string]any{"command": "npm run build"}))
	l.Result("toolu_3", "[SUCCESS] Generated static files in \"build\".", false)
	l.Reply(textBlock("The build succeeds: relative links are rewritten to doc ids."))
	l.Reply(textBlock("Lesson learned: restart the preview after converting."))
	s := writeSession(t, e, dir, l)
	arts, err := e.Artifacts(s)
	if err != nil {
		t.Fatal(err)
	}
	out := onlyOne(t, arts, ArtifactOutcome, "facet test green")
	if !slices.Contains(out.Outcome.Summary, "The facet test passes with the new builder; all 14 tests are green.") {
		t.Errorf("outcome summary %q lacks the report after the tests passed", out.Outcome.Summary)
	}
	out = onlyOne(t, arts, ArtifactOutcome, "site's links")
	if !slices.Contains(out.Outcome.Summary, "The build succeeds: relative links are rewritten to doc ids.") {
		t.Errorf("outcome summary %q lacks the report after the build succeeded", out.Outcome.Summary)
	}
	if slices.Contains(out.Outcome.Summary, "Two pages hold relative links.") {
		t.Errorf("outcome summary %q holds what the agent said after ls", out.Outcome.Summary)
	}
}

// TestProjectResolveSameQuestionAnswered: a question the agent left open
// is closed when a later session asks it again through a question tool
// and the user answers; and a TODO is closed in its own session when
// the agent reports that work done.
func TestProjectResolveSameQuestionAnswered(t *testing.T) {
	e, dir := resolveRig(t)

	one := newClaudeLog("44444444-0000-4000-8000-000000000021")
	one.User("Wire the exporter.")
	one.Reply(textBlock("The exporter is wired. Should we also keep the exporter schema in the repo?"))
	s1 := writeSession(t, e, dir, one)

	two := newClaudeLog("44444444-0000-4000-8000-000000000022")
	two.T = one.T.Add(24 * time.Hour)
	two.User("Back to the exporter.")
	two.Reply(use("toolu_q", "AskUserQuestion", map[string]any{"questions": []any{map[string]any{
		"question": "Should the exporter schema live in this repo?", "header": "Schema",
		"options": []any{map[string]any{"label": "Yes, versioned with the code"}, map[string]any{"label": "No"}}}}}))
	two.Result("toolu_q", `User has answered your questions: "Should the exporter schema live in this repo?"="Yes, versioned with the code". You can now continue with the user's answers in mind.`, false)
	two.Reply(textBlock("Still need to:\n- rename the exporter files to the snake_case layout\n- update docs/export.md"))
	two.User("Go on.")
	two.Reply(textBlock("The exporter files are renamed to the snake_case layout. The docs are still to do."))
	s2 := writeSession(t, e, dir, two)

	a1, err := e.Artifacts(s1)
	if err != nil {
		t.Fatal(err)
	}
	q := onlyOne(t, a1, ArtifactThread, "exporter schema in the repo")
	r, err := e.Resolve(q)
	if err != nil {
		t.Fatal(err)
	}
	if r == nil || r.Status != "closed" || r.Session != s2 || !strings.Contains(r.Reason, "answered the same question") {
		t.Errorf("question resolved %+v, want closed by the later answer", r)
	}
	a2, err := e.Artifacts(s2)
	if err != nil {
		t.Fatal(err)
	}
	if th := onlyOne(t, a2, ArtifactThread, "rename the exporter files"); th.Status != "closed" {
		t.Errorf("renamed TODO is %s, want closed", th.Status)
	}
	if th := onlyOne(t, a2, ArtifactThread, "docs/export.md"); th.Status != "open" {
		t.Errorf("docs TODO is %s, want open", th.Status)
	}
}

// TestOutcomeRanWithoutAnswer: a task whose last command succeeded and
// reported is a success though the session ended before the agent
// answered; one whose last command failed is not.
func TestOutcomeRanWithoutAnswer(t *testing.T) {
	e, dir := resolveRig(t)
	l := newClaudeLog("44444444-0000-4000-8000-000000000061")
	l.User("Time the reindex with refresh off.")
	l.Reply(use("toolu_1", "Bash", map[string]any{"command": "./gradlew reindexBench"}))
	l.Result("toolu_1", "> Task :reindexBench\nreindexed 2,400,000 docs in 6m41s", false)
	l.User("Now time the cold start.")
	l.Reply(use("toolu_2", "Bash", map[string]any{"command": "./gradlew coldStart"}))
	l.Result("toolu_2", "FAILURE: Build failed with an exception.\nExit code 1", true)
	s := writeSession(t, e, dir, l)
	arts, err := e.Artifacts(s)
	if err != nil {
		t.Fatal(err)
	}
	if o := onlyOne(t, arts, ArtifactOutcome, "reindex with refresh off"); o.Status != "success" || !strings.Contains(o.Outcome.Reason, "last command succeeded") {
		t.Errorf("reindex task: %s (%s)", o.Status, o.Outcome.Reason)
	}
	if o := onlyOne(t, arts, ArtifactOutcome, "cold start"); o.Status != "fail" {
		t.Errorf("cold start task: %s (%s)", o.Status, o.Outcome.Reason)
	}
}

// TestAnswerLabelIsTheChoice: an option's label picked through a
// question tool is the choice itself, whatever words it has, and a later
// ratio on the same subject leaves it in force.
func TestAnswerLabelIsTheChoice(t *testing.T) {
	e, dir := resolveRig(t)
	one := newClaudeLog("44444444-0000-4000-8000-000000000071")
	one.User("Set up trace export.")
	one.Reply(use("toolu_q", "AskUserQuestion", map[string]any{"questions": []any{map[string]any{
		"question": "Where should sampled traces go?", "header": "Exporter",
		"options": []any{map[string]any{"label": "Zipkin via HTTP"}, map[string]any{"label": "Jaeger"}}}}}))
	one.Result("toolu_q", `User has answered your questions: "Where should sampled traces go?"="Zipkin via HTTP". You can now continue with the user's answers in mind.`, false)
	one.Reply(textBlock("Exporting to Zipkin."))
	s1 := writeSession(t, e, dir, one)
	two := newClaudeLog("44444444-0000-4000-8000-000000000072")
	two.T = one.T.Add(24 * time.Hour)
	two.User("Go down to 5% for the non-error traces.")
	two.Reply(textBlock("Done."))
	writeSession(t, e, dir, two)
	a1, err := e.Artifacts(s1)
	if err != nil {
		t.Fatal(err)
	}
	d := onlyOne(t, a1, ArtifactDecision, "Zipkin via HTTP")
	if !slices.Equal(d.Decision.Chooses, []string{"zipkin via http"}) || d.Decision.Subject != "tracing" {
		t.Errorf("answer decision chooses %q, subject %q", d.Decision.Chooses, d.Decision.Subject)
	}
	if r, err := e.Resolve(d); err != nil || r != nil {
		t.Errorf("resolved %+v (%v), want still in force", r, err)
	}
}

// TestProjectResolveWait: a request held back until a condition leaves a
// rule for the time being and a wait; a later session saying the
// condition happened, and giving the go-ahead, closes the wait and
// lifts the rule.
func TestProjectResolveWait(t *testing.T) {
	e, dir := resolveRig(t)
	one := newClaudeLog("44444444-0000-4000-8000-000000000081")
	one.User("Leave the v1 endpoint up until the mobile app ships, don't remove the v1 handlers yet.")
	one.Reply(textBlock("Understood."))
	s1 := writeSession(t, e, dir, one)
	two := newClaudeLog("44444444-0000-4000-8000-000000000082")
	two.T = one.T.Add(24 * time.Hour)
	two.User("The mobile app shipped on Friday. You can remove the v1 handlers now.")
	two.Reply(textBlock("Removed."))
	s2 := writeSession(t, e, dir, two)
	a1, err := e.Artifacts(s1)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []Artifact{onlyOne(t, a1, ArtifactThread, "mobile app ships"), onlyOne(t, a1, ArtifactConstraint, "v1 handlers yet")} {
		r, err := e.Resolve(a)
		if err != nil {
			t.Fatal(err)
		}
		want := "closed"
		if a.Type == ArtifactConstraint {
			want = "superseded"
		}
		if r == nil || r.Status != want || r.Session != s2 {
			t.Errorf("%s: resolved %+v, want %s by the later session", a.Title, r, want)
		}
	}
}

// TestProjectResolveQuestionAnsweredInOtherWords: the question an agent
// ended a session with is closed by the next session's first prompt
// when that prompt decides about what the question and the sentence
// before it name, in other words; a first prompt that decides about
// something else leaves it open.
func TestProjectResolveQuestionAnsweredInOtherWords(t *testing.T) {
	e, dir := resolveRig(t)
	one := newClaudeLog("44444444-0000-4000-8000-000000000091")
	one.User("Run the invoice import.")
	one.Reply(textBlock("The import stops at a ValueError: 'vat_rate' is missing on 12 rows from the legacy export. Do we default it or skip those rows?"))
	s1 := writeSession(t, e, dir, one)
	other := newClaudeLog("44444444-0000-4000-8000-000000000092")
	other.T = one.T.Add(12 * time.Hour)
	other.User("Use Postgres for the audit log.")
	other.Reply(textBlock("Done."))
	writeSession(t, e, dir, other)
	a1, err := e.Artifacts(s1)
	if err != nil {
		t.Fatal(err)
	}
	q := onlyOne(t, a1, ArtifactThread, "default it or skip")
	if r, err := e.Resolve(q); err != nil || r != nil {
		t.Fatalf("closed by an unrelated first prompt: %+v (%v)", r, err)
	}
	two := newClaudeLog("44444444-0000-4000-8000-000000000093")
	two.T = one.T.Add(24 * time.Hour)
	two.User("The legacy export never had vat_rate for those rows; use the country's standard rate as the fallback.")
	two.Reply(textBlock("Done."))
	s2 := writeSession(t, e, dir, two)
	r, err := e.Resolve(q)
	if err != nil {
		t.Fatal(err)
	}
	if r == nil || r.Status != "closed" || r.Session != s2 {
		t.Errorf("question resolved %+v, want closed by the later session's first prompt", r)
	}
}
