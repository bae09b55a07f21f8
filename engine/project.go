package engine

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"

	"github.com/bbengine/bbengine/internal/memtext"
)

// The project index lists, per project, the memory that a session of the
// same project may replace or close: active decisions and constraints,
// and open threads, keyed by what makes one replace or close another.
// It lives in the 'i' family:
//
//	'i' 'p' project 0x00 'S' subject 0x00 artifact id     active decision, by subject
//	'i' 'p' project 0x00 'T' term 0x00 artifact id        active decision, by chosen option and statement term
//	'i' 'p' project 0x00 'K' term 0x00 artifact id        active constraint, by core term
//	'i' 'p' project 0x00 'X' command 0x00 artifact id     open failing test, by the command's first two words
//	'i' 'p' project 0x00 'F' path 0x00 artifact id        open TODO or FIXME, by file
//	'i' 'p' project 0x00 'W' term 0x00 artifact id        open prose thread (TODO, blocker said), by term
//	'i' 'p' project 0x00 'R' option 0x00 artifact id      active decision, by an option it replaces
//	'i' 'p' project 0x00 'P' command 0x00 artifact id     outcome with a passing test run, by the command's first two words
//	'i' 'p' project 0x00 'Q' term 0x00 artifact id        open question, by term
//	'i' 'p' project 0x00 'U' unit 0x00 artifact id        active decision, by the unit of a value it states
//	'i' 'p' project 0x00 'A' term 0x00 artifact id        outcome, by a term of its task's prompt (answers)
//	'i' 'p' project 0x00 'O' tool 0x00 artifact id        outcome with a command that succeeded, by its tool (toolWord)
//	'i' 'p' project 0x00 'N' term 0x00 artifact id        active decision, by a term of a "don't …" clause it states
//
// Each value is the session's ordinal and the artifact's latest time
// (unix ns), 8 bytes each, big-endian (an entry written before memory/5
// has the ordinal alone). The entries
// of an artifact change only when the artifact does, so keeping the index
// costs what the changed artifacts cost: a session of a project with
// hundreds of earlier sessions reads and writes only its own entries,
// and finding what a new decision may supersede is one prefix scan per
// subject or term, not a pass over the project.
//
// The project of a session is its working directory (ProjectOf); a
// session without one has no entries. Whether and how a session's
// memory replaces another session's is the memory rules' to say: the
// index only finds the candidates.
const memProject = 'p'

// Project index kinds.
const (
	ProjectSubject    = 'S'
	ProjectTerm       = 'T'
	ProjectConstraint = 'K'
	ProjectTest       = 'X'
	ProjectFile       = 'F'
	ProjectProse      = 'W'
	ProjectReplaced   = 'R'
	ProjectPassed     = 'P'
	ProjectQuestion   = 'Q'
	ProjectUnit       = 'U'
	ProjectPrompt     = 'A'
	ProjectSucceeded  = 'O'
	ProjectNegated    = 'N'
)

// ProjectOf returns the project of a session: its working directory,
// cleaned, or "" when it has none.
func ProjectOf(s *Session) string {
	if s.CWD == "" {
		return ""
	}
	return filepath.Clean(s.CWD)
}

func projectPrefix(project string, kind byte, term string) []byte {
	k := append([]byte{prefixIndex, memProject}, project...)
	k = append(k, 0, kind)
	return append(append(k, term...), 0)
}

// projectKeys returns the project index keys of a, sorted.
func projectKeys(project string, a *Artifact) []string {
	if project == "" {
		return nil
	}
	var keys []string
	add := func(kind byte, terms ...string) {
		for _, t := range terms {
			if t = strings.ReplaceAll(t, "\x00", ""); t != "" {
				keys = append(keys, string(projectPrefix(project, kind, t))+a.ID)
			}
		}
	}
	switch {
	case a.Decision != nil && a.Status == "active":
		d := a.Decision
		add(ProjectSubject, d.Subject)
		add(ProjectTerm, decisionOptions(d)...)
		if d.Via == "answer" {
			// An answer is found by the words of its question.
			add(ProjectTerm, memtext.Terms(answered(d))...)
		}
		add(ProjectReplaced, d.Replaces...)
		for _, v := range memtext.Values(d.Statement) {
			add(ProjectUnit, v.Unit)
		}
		for _, c := range negatedClauses(d.Statement) {
			for _, t := range memtext.Terms(c) {
				add(ProjectNegated, t)
				if k := strings.LastIndexByte(t, '-'); k >= 0 {
					add(ProjectNegated, t[k+1:]) // "hard-pin" is found by "pin"
				}
			}
		}
	case a.Outcome != nil:
		add(ProjectPassed, passedKeys(a.Outcome)...)
		add(ProjectPrompt, promptTerms(a.Outcome.Prompt)...)
		add(ProjectSucceeded, succeededTools(a.Outcome)...)
	case a.Constraint != nil && a.Status == "active":
		add(ProjectConstraint, constraintCore(a.Constraint.Statement)...)
	case a.Thread != nil && a.Status == "open":
		th := a.Thread
		switch {
		case th.Kind == "failing_test" && testKey(a) != "":
			add(ProjectTest, testKey(a))
		case th.File != "":
			add(ProjectFile, th.File)
		case th.Kind == "question":
			add(ProjectQuestion, memtext.Terms(th.Text)...)
		default:
			add(ProjectProse, memtext.Terms(th.Text)...)
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// putProjectKeys puts in b the change from the index keys old to new,
// for an artifact of session ordinal ord last stated at last (unix ns).
// Every key of new is written, so that its value carries the artifact's
// latest time: resolving reads it to skip candidates that cannot be
// later without loading them.
func putProjectKeys(b *pebble.Batch, old, new []string, ord uint64, last int64) error {
	v := binary.BigEndian.AppendUint64(nil, ord)
	v = binary.BigEndian.AppendUint64(v, uint64(last))
	for _, k := range old {
		if _, ok := slices.BinarySearch(new, k); !ok {
			if err := b.Delete([]byte(k), nil); err != nil {
				return err
			}
		}
	}
	for _, k := range new {
		if err := b.Set([]byte(k), v, nil); err != nil {
			return err
		}
	}
	return nil
}

// ProjectEntry is one entry of the project index.
type ProjectEntry struct {
	Artifact string
	Ordinal  uint64 // of the artifact's session
}

// ProjectIndex returns the artifacts of project indexed under kind
// (ProjectSubject, …) and term: the active decisions about a subject,
// the open failing tests of a command, and so on. It reads only those
// entries.
func (e *Engine) ProjectIndex(project string, kind byte, term string) ([]ProjectEntry, error) {
	p := projectPrefix(project, kind, term)
	var out []ProjectEntry
	err := e.scan(p, func(k, v []byte) error {
		id := k[len(p):]
		if bytes.IndexByte(id, 0) >= 0 || len(v) != 8 && len(v) != 16 {
			return nil
		}
		out = append(out, ProjectEntry{Artifact: string(id), Ordinal: binary.BigEndian.Uint64(v)})
		return nil
	})
	return out, err
}

// maxPromptTerms bounds the project index entries of one task's prompt.
const maxPromptTerms = 24

// promptTerms are the terms of a task's prompt that the project index
// keeps: those of its first 400 bytes, at most maxPromptTerms, the
// longest first (the most telling), so that a question an earlier
// session left open finds the prompt that answers it.
func promptTerms(p string) []string {
	if len(p) > 400 {
		p = p[:400]
	}
	ts := memtext.Terms(p)
	if len(ts) <= maxPromptTerms {
		return ts
	}
	ts = slices.Clone(ts)
	slices.SortStableFunc(ts, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	ts = ts[:maxPromptTerms]
	slices.Sort(ts)
	return ts
}

// succeededTools are the tools (toolWord) of the commands of an outcome
// that ran without an error: a later session's success closes an earlier
// failure of the same tool.
func succeededTools(o *Outcome) []string {
	var out []string
	for _, c := range o.Commands {
		if c.Error == "" && (c.Exit == nil || *c.Exit == 0) && c.Test != "failed" {
			out = append(out, commandTools(c.Command)...)
		}
	}
	return out
}

// answered is the question an answer (Via "answer") answers: its
// context, or its statement, which then quotes the question.
func answered(d *Decision) string {
	if d.Context != "" {
		return d.Context
	}
	return d.Statement
}
