package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/wal"
)

// appendNote writes a note to the WAL as a memory frame and returns its
// offset.
func appendNote(t testing.TB, log *wal.Log, c *clock, n exchange.Note) uint64 {
	t.Helper()
	p, err := exchange.AppendNote(nil, n)
	if err != nil {
		t.Fatal(err)
	}
	off, err := log.Append(wal.Record{Kind: frame.KindMemory, Time: c.tick(1e6), Payload: p})
	if err != nil {
		t.Fatal(err)
	}
	return off
}

func withTask(xs []fx, task, goal string) []fx {
	for i := range xs {
		xs[i].task, xs[i].goal = task, goal
	}
	return xs
}

func brief(t *testing.T, e *Engine, session string) Brief {
	t.Helper()
	b, err := e.Brief(session)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGoalPrecedence: a goal recorded before the session's first request
// holds against the X-Bb-Session-Goal header its requests carry; a later
// harness goal replaces it; a session with header goals alone takes the
// latest, and a repeated header goal changes nothing.
func TestGoalPrecedence(t *testing.T) {
	dir, log := newData(t)
	var c clock
	e := open(t, dir, log, nil)
	runGoal := appendNote(t, log, &c, exchange.Note{Op: "goal", Session: "s1", Text: "  Ship the session cache  ", Source: "run"})
	catchUp(t, e)
	if b := brief(t, e, "s1"); b != (Brief{Session: "s1", Goal: "Ship the session cache", GoalSource: "run", GoalOffset: runGoal}) {
		t.Fatalf("brief before the first request = %+v", b)
	}
	if _, err := e.Session("s1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a goal note created session s1: %v", err)
	}
	id := writeWAL(t, log, &c, 0, withTask(toolLoop("s1", 2), "t1", "a header goal"))
	id = writeWAL(t, log, &c, id, withTask(toolLoop("s2", 1), "", "first header goal"))
	catchUp(t, e)
	if b := brief(t, e, "s1"); b.Goal != "Ship the session cache" || b.GoalSource != "run" {
		t.Errorf("a header goal replaced the run goal: %+v", b)
	}
	if b := brief(t, e, "s2"); b.Goal != "first header goal" || b.GoalSource != "header" || b.GoalOffset == 0 {
		t.Errorf("header goal of a session without one: %+v", b)
	}
	id = writeWAL(t, log, &c, id, withTask(toolLoop("s2", 1), "", "second header goal"))
	catchUp(t, e)
	b2 := brief(t, e, "s2")
	if b2.Goal != "second header goal" {
		t.Errorf("the latest header goal does not win: %+v", b2)
	}
	id = writeWAL(t, log, &c, id, withTask(toolLoop("s2", 1), "", "second header goal"))
	catchUp(t, e)
	if b := brief(t, e, "s2"); b != b2 {
		t.Errorf("a repeated header goal changed the brief: %+v, was %+v", b, b2)
	}
	harness := appendNote(t, log, &c, exchange.Note{Op: "goal", Session: "s1", Text: "Ship the cache and its docs", Source: "harness"})
	writeWAL(t, log, &c, id, withTask(toolLoop("s1", 1), "t2", "a later header goal"))
	catchUp(t, e)
	if b := brief(t, e, "s1"); b.Goal != "Ship the cache and its docs" || b.GoalSource != "harness" || b.GoalOffset != harness {
		t.Errorf("brief after a harness goal and a later header goal = %+v", b)
	}
	assertRebuild(t, e)
}

// TestCheckpoint: the latest checkpoint wins, with its frame's time and
// offset; secrets are redacted.
func TestCheckpoint(t *testing.T) {
	dir, log := newData(t)
	var c clock
	e := open(t, dir, log, nil)
	appendNote(t, log, &c, exchange.Note{Op: "checkpoint", Session: "s1", Text: "Cache done.", Source: "harness"})
	off := appendNote(t, log, &c, exchange.Note{Op: "checkpoint", Session: "s1", Text: "Cache and docs done; key sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA rotated.", Source: "run"})
	catchUp(t, e)
	b := brief(t, e, "s1")
	if b.Checkpoint != "Cache and docs done; key [redacted:anthropic_key] rotated." || b.CheckpointOffset != off || b.CheckpointTime != c.ns || b.Goal != "" {
		t.Errorf("brief = %+v", b)
	}
	assertRebuild(t, e)
}

// TestOutcomeReports: an outcome note decides its task's outcome status
// and leads its summary, with evidence at the note's WAL offset; a task
// no event belongs to, and a session no request reached, get an outcome
// from the note alone; the latest note of a task wins.
func TestOutcomeReports(t *testing.T) {
	dir, log := newData(t)
	var c clock
	e := open(t, dir, log, nil)
	id := writeWAL(t, log, &c, 0, withTask(toolLoop("s1", 3), "t1", ""))
	catchUp(t, e)
	before, err := e.Artifact(OutcomeID("s1", "t1"))
	if err != nil || before.Status != "success" || before.Outcome.Report != nil {
		t.Fatalf("derived outcome = %+v, %v", before, err)
	}
	st0, _ := e.MemoryState("s1")

	appendNote(t, log, &c, exchange.Note{Op: "outcome", Session: "s1", TaskID: "t1", Status: "blocked", Text: "first report", Source: "harness"})
	exit := 1
	off := appendNote(t, log, &c, exchange.Note{Op: "outcome", Session: "s1", TaskID: "t1", Status: "fail",
		Text: "The integration test still fails.\nTestCacheEvict times out in CI.", Files: []string{"engine/cache.go"}, Exit: &exit, Source: "run"})
	offNew := appendNote(t, log, &c, exchange.Note{Op: "outcome", Session: "s1", TaskID: "t9", Status: "success", Text: "Wrote the README section.", Files: []string{"README.md"}, Source: "harness"})
	offS3 := appendNote(t, log, &c, exchange.Note{Op: "outcome", Session: "s3", TaskID: "t1", Status: "fail", Source: "run", Exit: &exit})
	catchUp(t, e)

	a, err := e.Artifact(OutcomeID("s1", "t1"))
	if err != nil {
		t.Fatal(err)
	}
	o := a.Outcome
	if a.Status != "fail" || o.Status != "fail" || o.Report == nil || o.Report.Offset != off || o.Report.Summary == "" {
		t.Fatalf("reported outcome = status %s, %+v", a.Status, o)
	}
	if want := "reported by bbengine run (exit code 1); the events said success: the agent finished"; o.Reason != want {
		t.Errorf("reason %q, want %q", o.Reason, want)
	}
	if len(o.Summary) < 3 || o.Summary[0] != "The integration test still fails." || o.Summary[1] != "TestCacheEvict times out in CI." || o.Summary[2] != before.Outcome.Summary[0] {
		t.Errorf("summary %q (derived %q)", o.Summary, before.Outcome.Summary)
	}
	if !slices.Contains(a.Files, "engine/cache.go") || !slices.ContainsFunc(o.Files, func(f FileChange) bool { return f.Path == "engine/cache.go" && f.Op == "reported" }) {
		t.Errorf("files %v / %+v", a.Files, o.Files)
	}
	last := a.Evidence[len(a.Evidence)-1]
	if last.Kind != EvidenceNote || last.Prov.Side != "note" || last.Prov.First != off || last.Prov.Last != off || last.Seq != 0 {
		t.Errorf("note evidence = %+v, want offset %d", last, off)
	}
	if !strings.Contains(a.Title, "(t1, fail)") || !strings.Contains(a.Text, "Task t1: fail. reported by bbengine run") || !strings.Contains(a.Text, "Reported files: engine/cache.go") {
		t.Errorf("title %q text %q", a.Title, a.Text)
	}
	if !slices.Contains(a.Symbols, "TestCacheEvict") {
		t.Errorf("symbols %v lack the report's", a.Symbols)
	}

	n, err := e.Artifact(OutcomeID("s1", "t9"))
	if err != nil {
		t.Fatal(err)
	}
	st, _ := e.MemoryState("s1")
	if n.Status != "success" || n.Task != "t9" || n.TaskN != st0.Tasks+1 || st.Tasks != st0.Tasks+1 || n.Title != "Wrote the README section. (t9, success)" ||
		len(n.Evidence) != 1 || n.Evidence[0].Prov.First != offNew || n.First != n.Last || n.First == 0 || n.Outcome.Summary[0] != "Wrote the README section." {
		t.Errorf("outcome from a report alone = %+v (tasks %d → %d)", n, st0.Tasks, st.Tasks)
	}
	if st.Digest == st0.Digest {
		t.Error("reports did not change the session's digest")
	}

	s3, err := e.Session("s3")
	if err != nil || s3.Source != "note" || s3.First == 0 || s3.Requests != 0 {
		t.Fatalf("session of an outcome note = %+v, %v", s3, err)
	}
	a3, err := e.Artifact(OutcomeID("s3", "t1"))
	if err != nil || a3.Status != "fail" || a3.Outcome.Reason != "reported by bbengine run (exit code 1)" || a3.Evidence[0].Prov.First != offS3 || a3.Title != "task t1 (t1, fail)" {
		t.Errorf("outcome of a session no request reached = %+v, %v", a3, err)
	}
	// The session's first request later: its events join the note's session.
	writeWAL(t, log, &c, id, withTask(toolLoop("s3", 1), "t1", ""))
	catchUp(t, e)
	s3, _ = e.Session("s3")
	if s3.Requests != 1 || s3.Agent == "" || s3.First > s3.Last {
		t.Errorf("session s3 after its first request = %+v", s3)
	}
	if a3, _ = e.Artifact(OutcomeID("s3", "t1")); a3.Status != "fail" || a3.Outcome.Calls != 1 {
		t.Errorf("s3 outcome after its request = %+v", a3.Outcome)
	}
	assertRebuild(t, e)
}

// TestMemoryFrameSkipped: a memory frame that does not decode is logged
// and skipped; the frames after it are applied.
func TestMemoryFrameSkipped(t *testing.T) {
	dir, log := newData(t)
	var c clock
	var logged []string
	e := open(t, dir, log, &Options{Logf: func(f string, a ...any) { logged = append(logged, f) }})
	if _, err := log.Append(wal.Record{Kind: frame.KindMemory, Time: c.tick(1), Payload: []byte(`{"op":"goal","session":"s1","source":"run"}`)}); err != nil {
		t.Fatal(err)
	}
	appendNote(t, log, &c, exchange.Note{Op: "goal", Session: "s1", Text: "the goal", Source: "run"})
	catchUp(t, e)
	if b := brief(t, e, "s1"); b.Goal != "the goal" || len(logged) != 1 {
		t.Errorf("brief %+v, logged %q", b, logged)
	}
}

// assertRebuild checks that Rebuild and RebuildMemory give the state the
// incremental canonicalizer wrote, byte for byte.
func assertRebuild(t *testing.T, e *Engine) {
	t.Helper()
	before := dump(t, e)
	if _, err := e.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := dump(t, e); after != before {
		t.Errorf("rebuild differs from incremental derivation:\n%s", firstDiff(before, after))
	}
	if _, err := e.RebuildMemory(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := dump(t, e); after != before {
		t.Errorf("RebuildMemory differs:\n%s", firstDiff(before, after))
	}
}
