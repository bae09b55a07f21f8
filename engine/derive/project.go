package derive

import (
	"cmp"
	"encoding/binary"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bbengine/bbengine/engine/schema"

	"github.com/cockroachdb/pebble/v2"

	"github.com/bbengine/bbengine/internal/memtext"
)

// ProjectOf returns the project of a session: its working directory,
// cleaned, or "" when it has none.
func ProjectOf(s *Session) string {
	if s.CWD == "" {
		return ""
	}
	return filepath.Clean(s.CWD)
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
				keys = append(keys, string(schema.ProjectPrefix(project, kind, t))+a.ID)
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
		if a.Outcome.Status == "success" {
			for _, g := range memtext.FixedErrors(strings.Join(a.Outcome.Summary, "\n")) {
				add(ProjectFixed, g...)
			}
		}
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
