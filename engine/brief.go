package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/redact"
	"github.com/bbengine/bbengine/internal/memtext"
)

// Brief is what was said about a session as a whole rather than derived
// from its events: its goal and the latest checkpoint summary a harness
// recorded. Each comes from a WAL frame, so a rebuild gives it again.
type Brief struct {
	Session string `json:"session"`
	// Goal is the session's north star; GoalSource says where it came
	// from: "run" (bbengine run --goal), "harness" (the harness API) or
	// "header" (an X-Bb-Session-Goal request header). GoalOffset is the
	// WAL offset of the frame that set it.
	//
	// A goal from run or the harness API beats one from a header; among
	// goals of equal rank the latest frame wins. Header goals are taken
	// in the order their exchanges end in the WAL; a request repeating
	// the goal in force changes nothing, so GoalOffset stays at the
	// first request that stated it.
	Goal       string `json:"goal,omitempty"`
	GoalSource string `json:"goal_source,omitempty"`
	GoalOffset uint64 `json:"goal_offset,omitempty"`
	// Checkpoint is the latest session summary, with the time and WAL
	// offset of its frame.
	Checkpoint       string `json:"checkpoint,omitempty"`
	CheckpointTime   int64  `json:"checkpoint_ns,omitempty"`
	CheckpointOffset uint64 `json:"checkpoint_offset,omitempty"`
}

// Brief returns the brief of a session id, exactly as recorded (a
// session may have a brief before its first request). It is the zero
// Brief with the id when nothing was recorded.
func (e *Engine) Brief(session string) (Brief, error) {
	b := Brief{Session: session}
	_, err := e.getJSON(briefKey(session), &b)
	return b, err
}

// Reports returns the outcome reports of a session id, in the order
// their notes were written.
func (e *Engine) Reports(session string) ([]Report, error) {
	var out []Report
	err := e.scan(reportPrefix(session), func(k, v []byte) error {
		var r Report
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("engine: decode report %q: %w", k[2:], err)
		}
		out = append(out, r)
		return nil
	})
	slices.SortFunc(out, func(a, b Report) int { return compareU64(a.Offset, b.Offset) })
	return out, err
}

// OutcomeID is the id of the outcome artifact of a session's task.
func OutcomeID(session, task string) string { return artifactID("out", session, task) }

// brief returns the cached brief of a session, loading it.
func (c *canonicalizer) brief(session string) (*Brief, error) {
	if b := c.briefs[session]; b != nil {
		return b, nil
	}
	b, err := c.e.Brief(session)
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
	return c.setJSON(briefKey(session), b)
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
		return c.setJSON(briefKey(n.Session), b)
	}
	// An outcome: keep the task's latest report and derive the session's
	// memory again. A session no request has reached yet is created, so
	// the reported task has an artifact to hold it.
	r := Report{Session: n.Session, Task: n.TaskID, Status: n.Status, Summary: strings.TrimSpace(n.Text), Files: n.Files,
		Changes: n.Changes, Exit: n.Exit, Source: n.Source, Time: t, Offset: off}
	if err := c.setJSON(reportKey(r.Session, r.Task), &r); err != nil {
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
	c.batch.Set(memPendingKey(n.Session), nil, nil)
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

// ArtifactsOf returns the session's memory state and those of its
// artifacts that have one of the types (all when none is given), with
// their corrections, sorted by id. Artifact ids start with their type's
// prefix, so artifacts of other types are not read.
func (e *Engine) ArtifactsOf(session string, types ...ArtifactType) ([]Artifact, MemoryState, error) {
	st, err := e.MemoryState(session)
	if err != nil {
		return nil, st, err
	}
	var prefixes []string
	for _, t := range types {
		prefixes = append(prefixes, idPrefix(t))
	}
	out := make([]Artifact, 0, len(st.Artifacts))
	for _, id := range st.Artifacts {
		if len(prefixes) > 0 && !hasAnyPrefix(id, prefixes) {
			continue
		}
		a, err := e.artifact(id)
		if err != nil {
			return nil, st, err
		}
		out = append(out, a)
	}
	return out, st, nil
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// idPrefix is the prefix of the ids of artifacts of type t.
func idPrefix(t ArtifactType) string {
	switch t {
	case ArtifactDecision:
		return "dec-"
	case ArtifactConstraint:
		return "con-"
	case ArtifactOutcome:
		return "out-"
	case ArtifactThread:
		return "thr-"
	case ArtifactSegment:
		return "seg-"
	}
	return string(t) + "-"
}

// MemoryDigest returns the digest of a session's memory state (see
// MemoryState.Digest) and the session's full id, without decoding the
// state's list of artifact ids: a pack cache checks it on every lookup,
// and a session of 100k artifacts keeps a list of 1.7 MB.
func (e *Engine) MemoryDigest(session string) (id, digest string, err error) {
	s, err := e.Session(session)
	if err != nil {
		return "", "", err
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return "", "", ErrClosed
	}
	b, closer, err := e.db.Get(memStateKey(s.Ordinal))
	if errors.Is(err, pebble.ErrNotFound) {
		return s.ID, "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("engine: read: %w", err)
	}
	defer closer.Close()
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", "", fmt.Errorf("engine: decode memory state of %s: not an object", s.ID)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return "", "", fmt.Errorf("engine: decode memory state of %s: %w", s.ID, err)
		}
		if k == "digest" {
			var d string
			if err := dec.Decode(&d); err != nil {
				return "", "", fmt.Errorf("engine: decode memory state of %s: %w", s.ID, err)
			}
			return s.ID, d, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", "", fmt.Errorf("engine: decode memory state of %s: %w", s.ID, err)
		}
	}
	return s.ID, "", nil
}
