package engine

import (
	"os"
	"strings"
	"testing"
)

// TestMergeKeepsTasks: in a merged session whose exchanges carry a task,
// every event of the merged view has that task, the prompts the log's
// copy wins and the log-only records (a local command's output) too,
// and memory derives the task's outcome once, with no second outcome of
// a task without id that failed (a review found both: the prompt lost
// its task, and memory invented "Task turn-1: fail").
func TestMergeKeepsTasks(t *testing.T) {
	for _, logOnly := range []bool{false, true} {
		id := "task-claude-1"
		if logOnly {
			id = "task-claude-2"
		}
		dir, log := newData(t)
		e := open(t, dir, log, nil)
		live, path := claudePair(t, id, 3)
		for i := range live {
			live[i].task = "T1"
		}
		if logOnly {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			extra := `{"type":"user","message":{"role":"user","content":"<local-command-stdout>Total cost: $0.01</local-command-stdout>"},"sessionId":"` + id + `","timestamp":"1970-01-01T00:00:00.003Z","uuid":"uuid-extra","cwd":"/work/project"}`
			lines = append(lines[:3], append([]string{extra}, lines[3:]...)...)
			if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		var c clock
		writeWAL(t, log, &c, 0, live)
		catchUp(t, e)
		importPath(t, e, "claude", path)
		s, err := e.Session(id)
		if err != nil || s.Merged == nil {
			t.Fatalf("log-only %v: session %s not merged: %v", logOnly, id, err)
		}
		all, err := e.Events(id, EventFilter{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range all {
			if ev.Task != "T1" {
				t.Errorf("log-only %v: merged seq %d %s/%s has task %q, want T1: %.60q", logOnly, ev.Seq, ev.Kind, ev.Role, ev.Task, ev.Text)
			}
		}
		arts, err := e.Artifacts(id)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range arts {
			if a.Type == ArtifactOutcome && a.Task != "T1" {
				t.Errorf("log-only %v: an outcome of task %q: %.80s", logOnly, a.Task, a.Text)
			}
		}
		e.Close()
	}
}

// TestNoMergeWithoutImport: a proxied session that names its agent's
// session id but whose log was never imported derives no merge group (a
// review found every pass deriving one, and committing an extra batch);
// its log imported later still merges.
func TestNoMergeWithoutImport(t *testing.T) {
	const id = "lonely-claude-1"
	dir, log := newData(t)
	e := open(t, dir, log, nil)
	defer e.Close()
	live, path := claudePair(t, id, 3)
	var c clock
	for i := range live {
		writeWAL(t, log, &c, uint64(i), live[i:i+1])
		if p := catchUp(t, e); p.Merges != 0 {
			t.Fatalf("turn %d: %d merge groups derived with no log imported", i, p.Merges)
		}
	}
	importPath(t, e, "claude", path)
	if s, err := e.Session(id); err != nil || s.Merged == nil {
		t.Fatalf("the log imported later: not merged (%v)", err)
	}
}
