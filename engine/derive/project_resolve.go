package derive

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"math"
	"slices"
	"strings"

	"github.com/bbengine/bbengine/engine/schema"

	"github.com/bbengine/bbengine/internal/memtext"
)

// A session's miner decides what is in force within the session. What a
// later session of the same project says can take an earlier session's
// decision, constraint or thread out of force: "switch to Atlas" two
// sessions after "use goose for the migrations", a test that failed
// yesterday passing today. That is resolved when memory is read, from
// the project index (project.go), never written into the earlier
// session's artifacts: a session's derived state depends on its own
// events alone, so derivation stays incremental and rebuild identical.
//
// The rules are the miner's own, applied across sessions, and the later
// statement wins (the latest evidence, then the later session):
//   - a decision is superseded by a later one on the same subject, or one
//     that replaces an option it chose (conflicts);
//   - a constraint by a later one saying the opposite about the same
//     thing (similar cores, one negative);
//   - an open failing test is closed by a later session's passing run of
//     the same command, and a failing test open again in a later session
//     is the same thread: the earlier one is superseded by it;
//   - an open question is closed by a later decision about the same
//     things (most of the question's terms).

// projectView is what the project index says about some of a project's
// artifacts, loaded: the candidates that may take another out of force.
type projectView struct {
	e       *Pipeline
	project string
	arts    map[string]*Artifact // loaded, by id; nil for a forgotten or missing one
	ords    map[string]uint64    // session ordinal, by artifact id
	lasts   map[string]int64     // the artifact's latest time, by id; -1 when the entry does not say
	// By the index's kinds and terms.
	subject   map[string][]string // ProjectSubject
	terms     map[string][]string // ProjectTerm
	replaced  map[string][]string // ProjectReplaced
	cores     map[string][]string // ProjectConstraint
	questions map[string][]string // ProjectQuestion
	tests     map[string][]string // ProjectTest
	passed    map[string][]string // ProjectPassed
	units     map[string][]string // ProjectUnit
	prompts   map[string][]string // ProjectPrompt
	succeeded map[string][]string // ProjectSucceeded
	fixed     map[string][]string // ProjectFixed
	negated   map[string][]string // ProjectNegated
	// digest, when set, takes every entry scan reads (scanProject).
	digest hash.Hash
}

func newProjectView(e *Pipeline, project string) *projectView {
	return &projectView{e: e, project: project, arts: map[string]*Artifact{}, ords: map[string]uint64{}, lasts: map[string]int64{},
		subject: map[string][]string{}, terms: map[string][]string{}, replaced: map[string][]string{}, cores: map[string][]string{}, questions: map[string][]string{},
		tests: map[string][]string{}, passed: map[string][]string{}, units: map[string][]string{}, prompts: map[string][]string{}, succeeded: map[string][]string{}, negated: map[string][]string{}, fixed: map[string][]string{}}
}

// add takes one entry of the project index.
func (v *projectView) add(kind byte, term, id string, ord uint64, last int64) {
	v.ords[id] = ord
	v.lasts[id] = last
	var m map[string][]string
	switch kind {
	case ProjectSubject:
		m = v.subject
	case ProjectTerm:
		m = v.terms
	case ProjectReplaced:
		m = v.replaced
	case ProjectConstraint:
		m = v.cores
	case ProjectQuestion:
		m = v.questions
	case ProjectTest:
		m = v.tests
	case ProjectPassed:
		m = v.passed
	case ProjectUnit:
		m = v.units
	case ProjectPrompt:
		m = v.prompts
	case ProjectSucceeded:
		m = v.succeeded
	case ProjectNegated:
		m = v.negated
	case ProjectFixed:
		m = v.fixed
	default:
		return
	}
	if !slices.Contains(m[term], id) {
		m[term] = append(m[term], id)
	}
}

// scan adds the entries under kind and term (every term when term is
// "", and every kind when kind is 0).
func (v *projectView) scan(kind byte, term string) error {
	var p []byte
	switch {
	case kind == 0:
		p = append(append([]byte{schema.PrefixIndex, schema.MemProject}, v.project...), 0)
	case term == "":
		p = append(append(append([]byte{schema.PrefixIndex, schema.MemProject}, v.project...), 0), kind)
	default:
		p = schema.ProjectPrefix(v.project, kind, term)
	}
	return v.e.scanLocked(p, func(k, val []byte) error {
		if v.digest != nil {
			v.digest.Write(k)
			v.digest.Write(val)
		}
		if len(val) != 8 && len(val) != 16 {
			return nil
		}
		rest := k[len(v.project)+3:] // after 'i' 'p' project 0x00
		kd, rest := rest[0], rest[1:]
		i := bytes.IndexByte(rest, 0)
		if i < 0 {
			return nil
		}
		last := int64(-1)
		if len(val) == 16 {
			last = int64(binary.BigEndian.Uint64(val[8:]))
		}
		v.add(kd, string(rest[:i]), string(rest[i+1:]), binary.BigEndian.Uint64(val), last)
		return nil
	})
}

// get loads an artifact of the view, nil when it is gone or forgotten.
func (v *projectView) get(id string) (*Artifact, error) {
	if a, ok := v.arts[id]; ok {
		return a, nil
	}
	a, err := v.e.artifact(id)
	if errors.Is(err, ErrNotFound) || err == nil && a.Forgotten {
		v.arts[id] = nil
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	v.arts[id] = &a
	return &a, nil
}

// later reports whether b was stated after a: its latest evidence, then
// its session, then its id.
func (v *projectView) later(b, a *Artifact) bool {
	if c := cmp.Compare(b.Last, a.Last); c != 0 {
		return c > 0
	}
	if c := cmp.Compare(v.ords[b.ID], v.ords[a.ID]); c != 0 {
		return c > 0
	}
	return b.ID > a.ID
}

// maxConsider bounds the candidates one index list loads when resolving
// an artifact: the latest first, so what it misses is a replacement
// older than that many later statements of the same subject, unit or
// term.
const maxConsider = 48

// resolve says whether a later session took a out of force, and why.
func (v *projectView) resolve(a *Artifact) (*Resolution, error) {
	var best *Artifact
	var why string
	// consider loads the candidates ids that may be later than a (and
	// than best), latest first as the index entries say, at most
	// maxConsider of them, and keeps the latest that ok accepts.
	consider := func(ids []string, ok func(b *Artifact) (string, bool)) error {
		cands := make([]string, 0, len(ids))
		for _, id := range ids {
			if id == a.ID {
				continue
			}
			if l, known := v.lasts[id]; known && l >= 0 && (l < a.Last || best != nil && l < best.Last) {
				continue // stated before a (or before best): never later
			}
			cands = append(cands, id)
		}
		slices.SortStableFunc(cands, func(x, y string) int {
			lx, ly := v.lasts[x], v.lasts[y]
			if lx < 0 {
				lx = math.MaxInt64
			}
			if ly < 0 {
				ly = math.MaxInt64
			}
			return cmp.Compare(ly, lx)
		})
		for n, id := range cands {
			if n >= maxConsider {
				break
			}
			b, err := v.get(id)
			if err != nil {
				return err
			}
			if b == nil || b.Session == a.Session || !v.later(b, a) {
				continue
			}
			reason, yes := ok(b)
			if yes && (best == nil || v.later(b, best)) {
				best, why = b, reason
				if v.lasts[id] >= 0 {
					break // the rest were stated no later
				}
			}
		}
		return nil
	}
	status := "superseded"
	switch {
	case a.Decision != nil && a.Status == "active":
		d := a.Decision
		ok := func(b *Artifact) (string, bool) {
			if b.Decision == nil || b.Status != "active" || !conflicts(b.Decision, d) {
				return "", false
			}
			if d.Subject != "" && b.Decision.Subject == d.Subject {
				return fmt.Sprintf("a later decision on the same subject (%s)", d.Subject), true
			}
			if why, ok := valueChange(b.Decision, d); ok {
				return "a later decision: " + why, true
			}
			return fmt.Sprintf("a later decision replaces %q", strings.Join(b.Decision.Replaces, ", ")), true
		}
		if d.Subject != "" {
			if err := consider(v.subject[d.Subject], ok); err != nil {
				return nil, err
			}
		}
		for _, c := range decisionOptions(d) {
			if err := consider(v.replaced[c], ok); err != nil {
				return nil, err
			}
		}
		for _, x := range memtext.Values(d.Statement) {
			if err := consider(v.units[x.Unit], ok); err != nil {
				return nil, err
			}
		}
		for _, t := range negatableTerms(d) {
			if err := consider(v.negated[t], func(b *Artifact) (string, bool) {
				if b.Decision == nil || b.Status != "active" || !negates(b.Decision.Statement, d.Statement) {
					return "", false
				}
				return "a later decision says not to do it", true
			}); err != nil {
				return nil, err
			}
		}
	case a.Constraint != nil && a.Status == "active":
		c := a.Constraint
		core := constraintCore(c.Statement)
		ok := func(b *Artifact) (string, bool) {
			if b.Constraint == nil || b.Status != "active" || negative(b.Constraint.Modal) == negative(c.Modal) ||
				!similar(core, constraintCore(b.Constraint.Statement)) {
				return "", false
			}
			return "a later constraint says the opposite", true
		}
		for _, t := range core {
			if err := consider(v.cores[t], ok); err != nil {
				return nil, err
			}
		}
		if cond := c.Until; best == nil && cond != "" {
			// A rule for the time being ("don't delete them yet, until
			// finance signs off") ends when a later session says the
			// condition happened or gives the go-ahead.
			for _, t := range core {
				if err := consider(v.prompts[t], func(b *Artifact) (string, bool) {
					if b.Outcome == nil || !answers(core, promptTerms(b.Outcome.Prompt)) {
						return "", false
					}
					if memtext.WaitMet(cond, b.Outcome.Prompt) || memtext.GoAhead(b.Outcome.Prompt) {
						return "lifted in a later session: " + capText(b.Outcome.Prompt, 120), true
					}
					return "", false
				}); err != nil {
					return nil, err
				}
			}
		}
	case a.Thread != nil && a.Status == "open" && a.Thread.Kind == "question":
		status = "closed"
		q := memtext.Terms(a.Thread.Text)
		for _, t := range q {
			if err := consider(v.terms[t], func(b *Artifact) (string, bool) {
				if b.Decision == nil || b.Status != "active" {
					return "", false
				}
				if b.Decision.Via == "answer" && similar(q, memtext.Terms(answered(b.Decision))) {
					return "the user answered the same question later: " + capText(answered(b.Decision), 120), true
				}
				if !similar(q, memtext.Terms(b.Decision.Statement)) {
					return "", false
				}
				return "a later decision answers it", true
			}); err != nil {
				return nil, err
			}
		}
		if best == nil {
			// The user's first words to a later session answer it:
			// "About the open question: amounts are int64 minor units."
			// Or, in other words, a first prompt that decides about what
			// the question and the sentence before it name ("Upstream
			// confirmed shipping_country is gone, use billing_country" for
			// "… a KeyError: 'shipping_country'. Do we default it or fail
			// the run?").
			qc := questionTerms(a.Thread)
			for _, t := range qc {
				if err := consider(v.prompts[t], func(b *Artifact) (string, bool) {
					if b.Outcome == nil {
						return "", false
					}
					p := promptTerms(b.Outcome.Prompt)
					if answers(q, p) || b.TaskN == 1 && shared(qc, p) >= 2 && memtext.Decides(b.Outcome.Prompt) {
						return "the user answered it in a later session: " + capText(b.Outcome.Prompt, 120), true
					}
					return "", false
				}); err != nil {
					return nil, err
				}
			}
		}
	case a.Thread != nil && a.Status == "open" && a.Thread.Kind == "todo" && a.Thread.File == "":
		// A later session's task that takes the work up and succeeds:
		// "Continue the mail work: … transactional mail gets its own
		// queue" for "todo: decide whether transactional mail gets its
		// own queue".
		status = "closed"
		q := memtext.Terms(a.Thread.Text)
		for _, t := range q {
			if err := consider(v.prompts[t], func(b *Artifact) (string, bool) {
				if b.Outcome == nil || b.Outcome.Status != "success" {
					return "", false
				}
				if answers(q, promptTerms(b.Outcome.Prompt)) {
					return "a later session's task took it up and succeeded: " + capText(b.Outcome.Prompt, 120), true
				}
				// A task that names it in passing ("do the snooze") and
				// reports it done in its own words.
				if memtext.ReadReport(strings.Join(b.Outcome.Summary, "\n")).Covers(q) {
					return "a later session's task reports it done: " + capText(b.Outcome.Prompt, 120), true
				}
				return "", false
			}); err != nil {
				return nil, err
			}
		}
	case a.Thread != nil && a.Status == "open" && a.Thread.Kind == "waiting":
		status = "closed"
		q := memtext.Terms(a.Thread.Text)
		for _, t := range q {
			if err := consider(v.prompts[t], func(b *Artifact) (string, bool) {
				if b.Outcome == nil || !memtext.WaitMet(a.Thread.Text, b.Outcome.Prompt) {
					return "", false
				}
				return "a later session says it happened: " + capText(b.Outcome.Prompt, 120), true
			}); err != nil {
				return nil, err
			}
		}
	case a.Thread != nil && a.Status == "open" && a.Thread.Kind == "failure" && a.Thread.Test != "":
		status = "closed"
		tool := a.Thread.Test
		if err := consider(v.succeeded[tool], func(b *Artifact) (string, bool) {
			return fmt.Sprintf("a later session ran %s and it succeeded", tool), b.Type == ArtifactOutcome
		}); err != nil {
			return nil, err
		}
		if last := lastError(a); best == nil && last != "" {
			// Or another command did the work and its task reports the
			// error gone: "41,229 rows, no key errors" for "KeyError:
			// 'shipping_country'".
			for _, w := range memtext.ErrorWords(last) {
				if err := consider(v.fixed[w], func(b *Artifact) (string, bool) {
					if b.Outcome == nil || b.Outcome.Status != "success" || !memtext.ErrorFixed(strings.Join(b.Outcome.Summary, "\n"), last) {
						return "", false
					}
					return "a later session reports the error gone: " + capText(b.Outcome.Prompt, 120), true
				}); err != nil {
					return nil, err
				}
			}
		}
	case a.Thread != nil && a.Status == "open" && a.Thread.Kind == "failing_test":
		key := testKey(a)
		if key == "" {
			break
		}
		if err := consider(v.passed[key], func(b *Artifact) (string, bool) {
			return fmt.Sprintf("a later session ran %q and it passed", key), b.Type == ArtifactOutcome
		}); err != nil {
			return nil, err
		}
		if best != nil {
			status = "closed"
			break
		}
		if err := consider(v.tests[key], func(b *Artifact) (string, bool) {
			return fmt.Sprintf("the same failing test (%s) is open in a later session", key), b.Thread != nil && b.Status == "open"
		}); err != nil {
			return nil, err
		}
	}
	if best == nil {
		return nil, nil
	}
	return &Resolution{Status: status, By: best.ID, Session: best.Session, Reason: why}, nil
}

// decisionOptions are the words a later decision may replace: the
// options a decision chose and the terms of its statement.
func decisionOptions(d *Decision) []string {
	out := slices.Clone(d.Chooses)
	out = append(out, memtext.Terms(d.Statement)...)
	slices.Sort(out)
	return slices.Compact(out)
}

// commandKey is what the project index files a test command under: the
// first two words of the part of it that runs the tests, so "go test
// ./..." and "go test ./store" meet, and so do "cmake --preset asan &&
// ctest --preset asan" and "cmake --build --preset asan && ctest
// --preset asan".
func commandKey(cmd string) string {
	for _, part := range strings.FieldsFunc(strings.ReplaceAll(cmd, "&&", ";"), func(r rune) bool { return r == ';' || r == '\n' }) {
		if memtext.IsTestCommand(part) {
			cmd = part
			break
		}
	}
	f := strings.Fields(cmd)
	return strings.Join(f[:min(2, len(f))], " ")
}

// testKey is the key of a failing test thread: its command's.
func testKey(a *Artifact) string {
	if len(a.Commands) == 0 {
		return ""
	}
	return commandKey(a.Commands[0])
}

// passedKeys are the keys of the passing test runs of an outcome.
func passedKeys(o *Outcome) []string {
	var out []string
	for _, c := range o.Commands {
		if k := commandKey(c.Command); c.Test == "passed" && k != "" {
			out = append(out, k)
		}
	}
	return out
}

// Resolve says whether a later session of a's project took a out of force
// (nil when it did not, or a has no project): a decision or constraint
// replaced, a failing test that passed. It reads only the project index
// entries that could apply.
func (e *Pipeline) Resolve(a Artifact) (*Resolution, error) {
	if a.Decision == nil && a.Constraint == nil && a.Thread == nil {
		return nil, nil
	}
	st, err := e.memoryState(a.Session)
	if err != nil || st.Project == "" {
		return nil, err
	}
	v := newProjectView(e, st.Project)
	v.ords[a.ID] = st.Ordinal
	switch {
	case a.Decision != nil:
		if s := a.Decision.Subject; s != "" {
			if err := v.scan(ProjectSubject, s); err != nil {
				return nil, err
			}
		}
		for _, c := range decisionOptions(a.Decision) {
			if err := v.scan(ProjectReplaced, c); err != nil {
				return nil, err
			}
		}
		for _, x := range memtext.Values(a.Decision.Statement) {
			if err := v.scan(ProjectUnit, x.Unit); err != nil {
				return nil, err
			}
		}
		for _, t := range negatableTerms(a.Decision) {
			if err := v.scan(ProjectNegated, t); err != nil {
				return nil, err
			}
		}
	case a.Constraint != nil:
		temporary := a.Constraint.Until != ""
		for _, t := range constraintCore(a.Constraint.Statement) {
			if err := v.scan(ProjectConstraint, t); err != nil {
				return nil, err
			}
			if temporary {
				if err := v.scan(ProjectPrompt, t); err != nil {
					return nil, err
				}
			}
		}
	case a.Thread != nil && a.Thread.Kind == "waiting":
		for _, t := range memtext.Terms(a.Thread.Text) {
			if err := v.scan(ProjectPrompt, t); err != nil {
				return nil, err
			}
		}
	case a.Thread != nil && a.Thread.Kind == "question":
		for _, t := range questionTerms(a.Thread) {
			if err := v.scan(ProjectTerm, t); err != nil {
				return nil, err
			}
			if err := v.scan(ProjectPrompt, t); err != nil {
				return nil, err
			}
		}
	case a.Thread != nil && a.Thread.Kind == "todo" && a.Thread.File == "":
		for _, t := range memtext.Terms(a.Thread.Text) {
			if err := v.scan(ProjectPrompt, t); err != nil {
				return nil, err
			}
		}
	case a.Thread != nil && a.Thread.Kind == "failure":
		if a.Thread.Test != "" {
			if err := v.scan(ProjectSucceeded, a.Thread.Test); err != nil {
				return nil, err
			}
		}
		for _, w := range memtext.ErrorWords(lastError(&a)) {
			if err := v.scan(ProjectFixed, w); err != nil {
				return nil, err
			}
		}
	case a.Thread != nil:
		if k := testKey(&a); k != "" {
			if err := v.scan(ProjectPassed, k); err != nil {
				return nil, err
			}
			if err := v.scan(ProjectTest, k); err != nil {
				return nil, err
			}
		}
	}
	v.arts[a.ID] = &a
	return v.resolve(&a)
}

// ProjectMemory is what the sessions of one project leave in force for
// the next: its active decisions and constraints and its open threads,
// less those a later session replaced or closed.
type ProjectMemory struct {
	Project string
	// InForce are the artifacts in force, sorted by id (without those of
	// the session skipped).
	InForce []Artifact
	// Resolved are the artifacts a later session took out of force, by
	// id.
	Resolved map[string]Resolution
	// State identifies what InForce and Resolved were built from
	// (ProjectState).
	State string
}

// scanProject reads the whole project index of v's project into v, and
// returns its state: a digest of the entries and of the memory digests
// (artifacts and corrections) of the sessions they belong to.
func (e *Pipeline) scanProject(v *projectView) (string, error) {
	h := sha256.New()
	v.digest = h
	err := v.scan(0, "")
	v.digest = nil
	if err != nil {
		return "", err
	}
	ords := map[uint64]bool{}
	for _, o := range v.ords {
		ords[o] = true
	}
	sorted := make([]uint64, 0, len(ords))
	for o := range ords {
		sorted = append(sorted, o)
	}
	slices.Sort(sorted)
	for _, o := range sorted {
		var st MemoryState
		if _, err := e.getJSON(schema.MemStateKey(o), &st); err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%d %s\n", o, st.Digest)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// ProjectState returns a digest that changes whenever ProjectMemory of
// the project would: it reads the project index and the memory state of
// its sessions, not their artifacts.
func (e *Pipeline) ProjectState(project string) (string, error) {
	if project == "" {
		return "", nil
	}
	return e.scanProject(newProjectView(e, project))
}

// ProjectMemory returns the memory in force of project (a working
// directory, as ProjectOf gives it), from every session of it but the
// one whose ordinal is skip (0: none): a session's own pack has its own
// artifacts. Resolved still says which of the skipped session's
// artifacts a later session took out of force; of those, only the ones
// some other session's entry could apply to are read.
func (e *Pipeline) ProjectMemory(project string, skip uint64) (*ProjectMemory, error) {
	pm := &ProjectMemory{Project: project, Resolved: map[string]Resolution{}}
	if project == "" {
		return pm, nil
	}
	v := newProjectView(e, project)
	state, err := e.scanProject(v)
	if err != nil {
		return nil, err
	}
	pm.State = state
	var own map[string]bool
	if skip != 0 {
		own = v.reachable(skip)
	}
	ids := make([]string, 0, len(v.ords))
	for id, o := range v.ords {
		if inForceKind(id) && (o != skip || own[id]) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		a, err := v.get(id)
		if err != nil {
			return nil, err
		}
		if a == nil || a.Status != "active" && a.Status != "open" {
			continue // gone, forgotten, or the index is behind it
		}
		r, err := v.resolve(a)
		if err != nil {
			return nil, err
		}
		if r != nil {
			pm.Resolved[a.ID] = *r
			continue
		}
		if v.ords[id] != skip {
			pm.InForce = append(pm.InForce, *a)
		}
	}
	return pm, nil
}

// reachable returns the artifacts of the session with ordinal skip that
// another session's entry could take out of force: one of the
// artifact's terms sits, for another session, under the kind that could
// replace or close it (resolve's candidates).
func (v *projectView) reachable(skip uint64) map[string]bool {
	other := func(m map[string][]string, term string) bool {
		for _, id := range m[term] {
			if v.ords[id] != skip {
				return true
			}
		}
		return false
	}
	out := map[string]bool{}
	mark := func(m map[string][]string, match func(term string) bool) {
		for term, ids := range m {
			if !match(term) {
				continue
			}
			for _, id := range ids {
				if v.ords[id] == skip {
					out[id] = true
				}
			}
		}
	}
	mark(v.subject, func(t string) bool { return other(v.subject, t) })
	mark(v.terms, func(t string) bool { return other(v.replaced, t) })
	mark(v.cores, func(t string) bool { return other(v.cores, t) })
	mark(v.tests, func(t string) bool { return other(v.passed, t) || other(v.tests, t) })
	mark(v.questions, func(t string) bool { return other(v.terms, t) })
	return out
}

// answers reports whether a prompt with terms p takes up question q: they
// share at least two terms, and at least 30% of the smaller set.
func answers(q, p []string) bool {
	n := 0
	for _, t := range q {
		if _, ok := slices.BinarySearch(p, t); ok {
			n++
		}
	}
	return n >= 2 && n*10 >= min(len(q), len(p))*3
}

// negatableTerms are the terms of a decision under which a later one
// that says not to do it is indexed: its statement's, at most 12, the
// longest first.
func negatableTerms(d *Decision) []string {
	ts := slices.Clone(memtext.Terms(d.Statement))
	slices.SortStableFunc(ts, func(a, b string) int { return len(b) - len(a) })
	return ts[:min(len(ts), 12)]
}

// questionTerms are the terms of a question and of the sentence before
// it, sorted.
func questionTerms(th *Thread) []string {
	if th.Context == "" {
		return memtext.Terms(th.Text)
	}
	return memtext.Terms(th.Text + " " + th.Context)
}

// shared counts the terms of a found in b; both are sorted.
func shared(a, b []string) int {
	n := 0
	for _, t := range a {
		if _, ok := slices.BinarySearch(b, t); ok {
			n++
		}
	}
	return n
}

// lastError is the latest error a failure thread records: the one its
// last run ended on.
func lastError(a *Artifact) string {
	if len(a.Errors) == 0 {
		return ""
	}
	return a.Errors[len(a.Errors)-1]
}
