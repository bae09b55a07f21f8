package derive

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bbengine/bbengine/engine/schema"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/redact"
	"github.com/bbengine/bbengine/internal/memtext"
)

// OutcomeID is the id of the outcome artifact of a session's task.
func OutcomeID(session, task string) string { return artifactID("out", session, task) }

// brief returns the cached brief of a session, loading it.
func (c *canonicalizer) brief(session string) (*Brief, error) {
	if b := c.briefs[session]; b != nil {
		return b, nil
	}
	b, err := c.e.brief(session)
	if err != nil {
		return nil, err
	}
	c.briefs[session] = &b
	return &b, nil
}

// goalRank orders goal sources: a goal someone stated for the session
// (run, harness) outranks one a request header carried.
func goalRank(source string) int {
	switch source {
	case "":
		return 0
	case "header":
		return 1
	}
	return 2
}

// setGoal makes text the session's goal unless a goal of higher rank is
// in force, or the same header goal is.
func (c *canonicalizer) setGoal(session, text, source string, off uint64) error {
	b, err := c.brief(session)
	if err != nil {
		return err
	}
	if goalRank(source) < goalRank(b.GoalSource) || source == "header" && b.GoalSource == "header" && b.Goal == text {
		return nil
	}
	b.Goal, b.GoalSource, b.GoalOffset = text, source, off
	c.ensureBatch()
	return c.setJSON(schema.BriefKey(session), b)
}

// headerGoal takes the goal an exchange's X-Bb-Session-Goal header
// stated; off is the offset of its request start frame.
func (c *canonicalizer) headerGoal(session, goal string, off uint64) error {
	return c.setGoal(session, c.redact(goal), "header", off)
}

func (c *canonicalizer) redact(s string) string {
	if r := c.e.opts.Redactor; r != nil {
		return r.String(s)
	}
	return s
}

// note applies a harness note.
func (c *canonicalizer) note(off uint64, t int64, n *exchange.Note) error {
	switch n.Op {
	case "goal":
		return c.setGoal(n.Session, c.redact(strings.TrimSpace(n.Text)), n.Source, off)
	case "checkpoint":
		b, err := c.brief(n.Session)
		if err != nil {
			return err
		}
		b.Checkpoint, b.CheckpointTime, b.CheckpointOffset = c.redact(strings.TrimSpace(n.Text)), t, off
		return c.setJSON(schema.BriefKey(n.Session), b)
	}
	// An outcome: keep the task's latest report and derive the session's
	// memory again. A session no request has reached yet is created, so
	// the reported task has an artifact to hold it.
	r := Report{Session: n.Session, Task: n.TaskID, Status: n.Status, Summary: strings.TrimSpace(n.Text), Files: n.Files,
		Changes: n.Changes, Exit: n.Exit, Source: n.Source, Time: t, Offset: off}
	if err := c.setJSON(schema.ReportKey(r.Session, r.Task), &r); err != nil {
		return err
	}
	st, err := c.session(n.Session)
	if err != nil {
		return err
	}
	if st.s.First == 0 && st.s.Source == "" {
		// Created here: neither an exchange nor an import has touched it.
		st.s.First, st.s.Last, st.s.Source = t, t, "note"
		st.dirty = true
	}
	c.batch.Set(schema.MemPendingKey(n.Session), nil, nil)
	c.memPending[n.Session] = true
	return nil
}

// EvidenceNote is the Kind of an artifact's evidence that is a harness
// note rather than an event: its Seq is 0 and its Prov has Side "note"
// and the offset of the note's frame as First and Last.
const EvidenceNote Kind = "note"

// foldReports folds a session's outcome reports into its derived
// artifacts and task count: a report decides its task's outcome status,
// leads its summary and adds its files and its note as evidence; a task
// no event belongs to gets an outcome from its report alone, numbered
// after the derived tasks in the order the reports were written. Texts
// go through red (nil means none). It is a pure function.
func foldReports(session string, arts []Artifact, tasks int, reports []Report, red *redact.Redactor) ([]Artifact, int) {
	text := func(s string) string {
		if red == nil {
			return s
		}
		return red.String(s)
	}
	for _, r := range reports {
		id := OutcomeID(session, r.Task)
		i := slices.IndexFunc(arts, func(a Artifact) bool { return a.ID == id })
		if i < 0 {
			tasks++
			arts = append(arts, Artifact{ID: id, Type: ArtifactOutcome, Session: session, Task: r.Task, TaskN: tasks,
				First: r.Time, Last: r.Time, Outcome: &Outcome{Summary: []string{}}})
			i = len(arts) - 1
		}
		a := &arts[i]
		o := a.Outcome
		r.Summary = capText(text(r.Summary), 16<<10)
		files := make([]string, 0, len(r.Files))
		for _, f := range r.Files {
			files = append(files, text(f))
		}
		r.Files = slices.Clip(files)
		if len(r.Files) == 0 {
			r.Files = nil
		}
		derived, why := o.Status, o.Reason
		o.Report = &r
		o.Status, o.Reason = r.Status, "reported by "+map[string]string{"run": "bbengine run", "harness": "the harness"}[r.Source]
		if r.Exit != nil {
			o.Reason += fmt.Sprintf(" (exit code %d)", *r.Exit)
		}
		if derived != "" && derived != r.Status {
			o.Reason += "; the events said " + derived + ": " + why
		}
		var lead []string
		for _, l := range strings.Split(r.Summary, "\n") {
			if l = strings.TrimSpace(l); l != "" && len(lead) < 3 {
				lead = append(lead, capText(l, 240))
			}
		}
		o.Summary = append(lead, o.Summary...)
		for _, f := range r.Files {
			a.Files = addUnique(a.Files, f)
			o.Files = addChange(o.Files, FileChange{Path: f, Op: "reported"})
		}
		for _, c := range r.Changes {
			path := text(c.Path)
			a.Files = addUnique(a.Files, path)
			op := "diff"
			if c.SHA256 == "" {
				op = "delete"
			}
			o.Files = addChange(o.Files, FileChange{Path: path, Op: op})
			for j := range o.Files {
				if o.Files[j].Path == path {
					o.Files[j].Added, o.Files[j].Deleted, o.Files[j].SHA256 = c.Added, c.Deleted, c.SHA256
				}
			}
		}
		a.Symbols = addUnique(a.Symbols, memtext.Identifiers(r.Summary)...)
		a.Status = o.Status
		a.First, a.Last = min(a.First, r.Time), max(a.Last, r.Time)
		a.Title, a.Text = outcomeTitle(a), outcomeText(a)
		a.Evidence = append(a.Evidence, Evidence{Kind: EvidenceNote, Time: r.Time, Prov: Provenance{Side: "note", First: r.Offset, Last: r.Offset}})
		finishArtifact(a)
	}
	return arts, tasks
}
