package index

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/blugelabs/bluge"
	segment "github.com/blugelabs/bluge_segment_api"

	"github.com/bbengine/bbengine/engine"
)

// Query is a search of the index.
type Query struct {
	// Text is what to look for; it is analyzed like the indexed text.
	// It must not be empty.
	Text string
	// Session and Task are the scope of the search: artifacts of the
	// same session, and more of the same task, rank higher. They boost,
	// they do not filter.
	Session, Task string
	// Project is the project to search: a directory. Its scope is the
	// project of the index's sessions that holds it (the longest such
	// directory), else the directory itself. Artifacts of the scope come
	// first; others only with AllProjects, or when nothing in the scope
	// matches, and then marked Other. When Project is empty, the scope
	// is Session's project, else the project of the index's sessions
	// that holds Dir; when there is none, the search has no scope.
	Project string
	// Dir is where the caller runs (see Project).
	Dir string
	// AllProjects returns the other projects' artifacts after the
	// scope's.
	AllProjects bool
	// Types, when not empty, keeps only artifacts of these types.
	Types []engine.ArtifactType
	// K is the number of cards wanted. The default is 10; at most 100.
	K int
	// IncludeForgotten returns artifacts the user forgot too.
	IncludeForgotten bool
	// Explain fills each Result's Explain.
	Explain bool
}

// Result is one artifact Find returns: its card, its project, and why it
// ranks where it does.
type Result struct {
	engine.Card
	// Project is the artifact's project (its session's); Other says it
	// is outside the query's scope.
	Project string `json:"project,omitempty"`
	Other   bool   `json:"other_project,omitempty"`
	// Explain is set when the query asked for it.
	Explain *Explanation `json:"explain,omitempty"`
}

// Explanation is how a result's score came about: the BM25 contribution
// of each matched (term, field) pair, which sum to BM25; the factors
// BM25 was multiplied by, which give Score; and the ordering rules that
// moved it.
type Explanation struct {
	BM25    float64     `json:"bm25"`
	Terms   []TermScore `json:"terms,omitempty"`
	Factors []Factor    `json:"factors,omitempty"`
	// Lifted is the id of the matching result that this artifact
	// replaced: it did not match, and ranks right above that result.
	Lifted string `json:"lifted,omitempty"`
	// Raised is the id of the result this artifact replaced whose
	// higher score it took: it ranks right above that result.
	Raised string `json:"raised,omitempty"`
	// Below is the id of a result this one ranks below by rule: the one
	// that replaced it, or one that holds the event that closed it. Its
	// score is lowered under that result's when it was not already.
	Below string `json:"below,omitempty"`
	// Scope says where the project put it: "project" (the query's),
	// "other project", or "" for a search without a scope.
	Scope string `json:"scope,omitempty"`
	// LeftOut are the query's terms that were not searched for: the
	// words of the scope project's own name (see Index.Find).
	LeftOut []string `json:"left_out,omitempty"`
}

// TermScore is one (term, field) pair's BM25 contribution:
// Score = Boost · IDF · TF.
type TermScore struct {
	Term  string  `json:"term"`
	Field string  `json:"field"`
	Freq  int     `json:"freq"`
	Boost float64 `json:"boost"`
	IDF   float64 `json:"idf"`
	TF    float64 `json:"tf"`
	Score float64 `json:"score"`
}

// Factor is a ranking factor BM25 was multiplied by.
type Factor struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// Ranking factors applied to the BM25 score of a candidate.
var typeWeight = map[engine.ArtifactType]float64{
	engine.ArtifactDecision:   1.5,
	engine.ArtifactConstraint: 1.5,
	engine.ArtifactThread:     1.3,
	engine.ArtifactOutcome:    1.2,
	engine.ArtifactSegment:    1.0,
}

const (
	boostSession    = 1.5
	boostTask       = 1.3 // on top of boostSession
	boostRecent     = 1.2
	boostPinned     = 1.5
	factorSupersede = 0.5
	factorClosed    = 0.6
	// DefaultK and MaxK bound Query.K and the k of Related.
	DefaultK = 10
	MaxK     = 100
	// maxChain bounds how far a supersession chain is followed.
	maxChain = 16
)

// Search returns the cards of Find's results.
func (x *Index) Search(q Query) ([]engine.Card, error) { return x.search(q, false) }

// search is Search; viaBluge runs the first stage as Bluge's searchers
// and collector (the reference the direct scorer is checked against)
// instead of topText.
func (x *Index) search(q Query, viaBluge bool) ([]engine.Card, error) {
	rs, err := x.find(q, viaBluge)
	if err != nil || rs == nil {
		return nil, err
	}
	out := make([]engine.Card, len(rs))
	for i := range rs {
		out[i] = rs[i].Card
	}
	return out, nil
}

// Find returns the best results for q, best first.
//
// The first stage is BM25 (the correct one) over title (boost 2),
// subject (a decision's, 2), statement (a decision's or constraint's, 1),
// context (a decision's rationale, 0.5), text, files, symbols, commands
// and errors, which yields the top max(50, 5K) candidates of the query's
// project and, when it has one, the top max(50, 5K) of the other
// projects (in an index of more than 12,800 documents, words found in
// more than 1% of them match only when the query has no rarer word: see
// textQuery). Then each candidate's score is multiplied by its type's
// weight (decision and constraint 1.5, open thread 1.3, outcome 1.2,
// transcript 1), by 1.6 when its type is the one the question's form
// asks for (intentOf), by 1.5 when it is of q.Session and by 1.3 more when also
// of q.Task, by 1.2 when it belongs to one of the last
// Options.RecentTasks tasks of q.Session, by 0.5 when superseded, by 0.6
// when a closed thread, by 1.5 when pinned.
//
// Results rank by project first (the scope's, then, with AllProjects or
// when the scope has none, the others'), then by score, then the later
// artifact, then the smaller id. Whatever the scores, a superseded
// decision or constraint ranks right below the artifact in force that
// replaced it (the end of its supersession chain, added to the results
// when it did not match, and taking the superseded one's score when that
// is higher), and a closed thread below the best result that holds the
// event that closed it. A result's Score is its final score.
// Forgotten artifacts are left out unless q.IncludeForgotten.
func (x *Index) Find(q Query) ([]Result, error) { return x.find(q, false) }

func (x *Index) find(q Query, viaBluge bool) ([]Result, error) {
	if strings.TrimSpace(q.Text) == "" {
		return nil, ErrEmptyQuery
	}
	for _, t := range q.Types {
		if !t.Valid() {
			return nil, fmt.Errorf("%w: search: unknown type %q", ErrInvalid, t)
		}
	}
	terms := Tokens(q.Text)
	slices.Sort(terms)
	terms = slices.Compact(terms)
	if len(terms) == 0 {
		return nil, nil
	}

	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return nil, ErrClosed
	}
	// Tasks of q.Session numbered from recentFrom on are recent; 0 means
	// none (an artifact without a task has TaskN 0).
	recentFrom := 0
	if st := x.states[q.Session]; q.Session != "" && st != nil && st.Tasks > 0 {
		recentFrom = max(1, st.Tasks-x.opts.RecentTasks+1)
	}
	scope, scoped := x.scope(q)
	var left []string
	if scoped {
		terms, left = withoutName(terms, scope)
	}
	var out []Result
	err := x.withReader("search", func(r *bluge.Reader) error {
		var err error
		out, err = results(r, q, terms, x.minCutoff, recentFrom, scope, scoped, viaBluge)
		return err
	})
	if q.Explain {
		for i := range out {
			if out[i].Explain != nil {
				out[i].Explain.LeftOut = left
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("index: search %q: %w", q.Text, err)
	}
	return out, nil
}

// withoutName returns terms without the words of the project's own name
// (the last element of its path: "ledger" for /home/dev/ledger), and
// those words. Within the project they tell nothing apart: its files,
// commands and transcripts all name it. A query that asks about little
// else ("what was the spotter-dov epic about", in a worktree named for
// the epic) keeps them: fewer than two of its other terms are words
// other than function words.
func withoutName(terms []string, project string) (kept, left []string) {
	name := Tokens(filepath.Base(project))
	content := 0
	for _, t := range terms {
		switch {
		case slices.Contains(name, t):
			left = append(left, t)
			continue
		case !functionWords[t]:
			content++
		}
		kept = append(kept, t)
	}
	if content < 2 {
		return terms, nil
	}
	return kept, left
}

// functionWords are English words that carry no subject of their own.
var functionWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a about after all an and any are as at be been before both but by can could
		did do does doing done for from had has have how i if in into is it its me more my no not now of on once
		only or our out over same should so some still such than that the their them then there these they this
		those to too under up very was we were what when where which while who whom why will with would you your`) {
		functionWords[w] = true
	}
}

// results is find on r, once the query is checked and analyzed (terms
// sorted, distinct) and its scope known.
func results(r *bluge.Reader, q Query, terms []string, floor uint64, recentFrom int, scope string, scoped, viaBluge bool) ([]Result, error) {
	k := clampK(q.K)
	n := max(50, 5*k)
	var hits []hit
	var pairs []termPair
	var err error
	if viaBluge {
		hits, err = blugeHits(r, terms, q, n, floor, scope, scoped)
	} else {
		hits, pairs, err = textHits(r, terms, q, n, floor, scope, scoped)
	}
	if err != nil {
		return nil, err
	}
	rerank(hits, q, recentFrom)
	hits = arrange(hits, q.AllProjects)
	if hits, err = lift(r, hits, q, k, scope, scoped); err != nil {
		return nil, err
	}
	hits = hits[:min(k, len(hits))]
	out := make([]Result, len(hits))
	for i := range hits {
		out[i] = Result{Card: hits[i].card(), Project: hits[i].project, Other: hits[i].other}
	}
	if q.Explain {
		if err := explain(r, hits, pairs, out, scoped); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// scope returns the project q searches first, and whether it has one.
// The caller holds mu.
func (x *Index) scope(q Query) (string, bool) {
	if q.Project == "" && q.Session != "" {
		if st := x.states[q.Session]; st != nil && st.Project != "" {
			return st.Project, true
		}
	}
	dir := q.Project
	if dir == "" {
		dir = q.Dir
	}
	if dir == "" {
		return "", false
	}
	dir = filepath.Clean(dir)
	best := ""
	for p := range x.projects {
		if len(p) > len(best) && within(dir, p) {
			best = p
		}
	}
	switch {
	case best != "":
		return best, true
	case q.Project != "":
		return dir, true
	}
	return "", false
}

// within reports whether dir is the directory p or inside it.
func within(dir, p string) bool {
	if !strings.HasPrefix(dir, p) {
		return false
	}
	if len(dir) == len(p) || os.IsPathSeparator(p[len(p)-1]) {
		return true
	}
	return os.IsPathSeparator(dir[len(p)])
}

// rerank sets each hit's score: its BM25 score times the factors Find
// describes, and records them when q.Explain.
func rerank(hits []hit, q Query, recentFrom int) {
	intent := intentOf(q.Text)
	for i := range hits {
		h := &hits[i]
		h.factors = h.factors[:0]
		s := h.bm25
		f := func(name string, v float64) {
			s *= v
			if q.Explain {
				h.factors = append(h.factors, Factor{Name: name, Value: v})
			}
		}
		f("type "+h.typ, typeWeight[engine.ArtifactType(h.typ)])
		if intent != "" && engine.ArtifactType(h.typ) == intent {
			f("the question asks for: "+h.typ, boostIntent)
		}
		if q.Session != "" && h.session == q.Session {
			f("session", boostSession)
			if q.Task != "" && h.task == q.Task {
				f("task", boostTask)
			}
			if recentFrom > 0 && h.taskN >= recentFrom {
				f("recent task", boostRecent)
			}
		}
		if h.flags&bitPinned != 0 {
			f("pinned", boostPinned)
		}
		h.inForce = s
		if h.flags&bitSuperseded != 0 {
			f("superseded", factorSupersede)
		}
		if h.flags&bitClosed != 0 {
			f("closed", factorClosed)
		}
		h.score = s
	}
}

// arrange orders hits as Find describes, without the rules about
// superseded and closed ones (order applies those), and drops the other
// projects' unless all or the scope has none.
func arrange(hits []hit, all bool) []hit {
	if !all && anyHit(hits, func(h *hit) bool { return !h.other }) {
		keep := hits[:0]
		for i := range hits {
			if !hits[i].other {
				keep = append(keep, hits[i])
			}
		}
		hits = keep
	}
	return order(hits)
}

// compareHits is the ranking order: scope, score, time (latest first),
// id.
func compareHits(a, b *hit) int {
	if a.other != b.other {
		if b.other {
			return -1
		}
		return 1
	}
	if c := cmp.Compare(b.score, a.score); c != 0 {
		return c
	}
	if c := cmp.Compare(b.time, a.time); c != 0 {
		return c
	}
	return cmp.Compare(a.id, b.id)
}

// order sorts hits after two rules. A superseded hit's replacement (the
// first hit along its supersession chain: the hit's replacedBy, as far as
// known) takes the score the superseded hit would have had in force
// (without the superseded factor) when that is higher, so that what is
// in force answers where the outdated choice matched, and the superseded
// hit goes right below it. A closed thread goes below the best
// hit of its session that holds the event that closed it. A hit goes
// below another by taking a score just under the other's, and only below
// a hit of its own scope. A replacement's score only goes up to a score
// some hit had, an outdated hit's only down, so this settles; a cycle of
// replacements (which derivation does not make) is cut after len(hits)
// rounds.
func order(hits []hit) []hit {
	if !anyHit(hits, func(h *hit) bool { return h.replacedBy != "" || h.closedSeq != 0 }) {
		return sortHits(hits)
	}
	byID := make(map[string]int, len(hits))
	for i := range hits {
		byID[hits[i].id] = i
	}
	for range len(hits) + 1 {
		changed := false
		for i := range hits {
			h := &hits[i]
			place := func(j int) {
				c := &hits[j]
				if j == i || c.other != h.other {
					return
				}
				h.below = c.id
				if h.score >= c.score {
					h.score = math.Nextafter(c.score, math.Inf(-1))
					changed = true
				}
			}
			if h.replacedBy != "" {
				if j, ok := byID[h.replacedBy]; ok && hits[j].other == h.other {
					if c := &hits[j]; c.score < h.inForce {
						c.score = h.inForce
						c.raised = h.id
						changed = true
					}
					place(j)
				}
			}
			if h.closedSeq != 0 {
				best := -1
				for j := range hits {
					c := &hits[j]
					if j != i && c.other == h.other && c.session == h.session && c.typ != string(engine.ArtifactThread) &&
						c.seqLo <= h.closedSeq && h.closedSeq <= c.seqHi && (best < 0 || compareHits(c, &hits[best]) < 0) {
						best = j
					}
				}
				if best >= 0 {
					place(best)
				}
			}
		}
		if !changed {
			break
		}
	}
	return sortHits(hits)
}

// anyHit reports whether f holds for a hit (without copying hits).
func anyHit(hits []hit, f func(*hit) bool) bool {
	for i := range hits {
		if f(&hits[i]) {
			return true
		}
	}
	return false
}

// sortHits sorts hits by compareHits. It sorts their indices, not the
// hits, which are large to move.
func sortHits(hits []hit) []hit {
	idx := make([]int, len(hits))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return compareHits(&hits[a], &hits[b]) })
	out := make([]hit, len(hits))
	for i, j := range idx {
		out[i] = hits[j]
	}
	return out
}

// lift adds, for each superseded hit among the first k whose replacement
// is not a hit, the artifact at the end of its supersession chain (or
// the first one along it that is a hit, which order then uses), read
// from r, with the score the superseded hit would have had in force;
// then orders again.
func lift(r *bluge.Reader, hits []hit, q Query, k int, scope string, scoped bool) ([]hit, error) {
	top := hits[:min(k, len(hits))]
	if !anyHit(top, func(h *hit) bool { return h.replacedBy != "" }) {
		return hits, nil
	}
	byID := make(map[string]bool, len(hits))
	for i := range hits {
		byID[hits[i].id] = true
	}
	var added []hit
	for i := range hits[:min(k, len(hits))] {
		h := &hits[i]
		if h.replacedBy == "" || byID[h.replacedBy] {
			continue
		}
		var end *hit
		id := h.replacedBy
		for range maxChain {
			d, ok, err := docByID(r, id)
			if err != nil {
				return nil, err
			}
			if !ok {
				break
			}
			end = &d
			if d.replacedBy == "" || byID[d.replacedBy] {
				break
			}
			id = d.replacedBy
		}
		if end == nil || byID[end.id] || end.flags&bitForgotten != 0 && !q.IncludeForgotten ||
			len(q.Types) > 0 && !slices.Contains(q.Types, engine.ArtifactType(end.typ)) {
			continue
		}
		if end.replacedBy != "" {
			// The chain ends at a hit: point the superseded hit at it.
			h.replacedBy = end.replacedBy
			continue
		}
		end.other = scoped && end.project != scope
		if end.other != h.other {
			continue
		}
		h.replacedBy = end.id // order places h below it
		end.score = h.inForce
		end.inForce = h.inForce
		end.lifted = h.id
		end.factors = []Factor{{Name: "replaces " + h.id, Value: 1}}
		byID[end.id] = true
		added = append(added, *end)
	}
	if len(added) == 0 {
		return hits, nil
	}
	return order(append(hits, added...)), nil
}

// docByID reads the stored fields of the document with id.
func docByID(r *bluge.Reader, id string) (hit, bool, error) {
	hs, err := matches(r, bluge.NewTopNSearch(1, bluge.NewTermQuery(id).SetField(fieldID)))
	if err != nil || len(hs) == 0 {
		return hit{}, false, err
	}
	return hs[0], true, nil
}

// explain fills out[i].Explain for hits[i]: each pair's contribution,
// read again from r's postings, and the factors.
func explain(r *bluge.Reader, hits []hit, pairs []termPair, out []Result, scoped bool) error {
	snap, err := snapshot(r)
	if err != nil {
		return err
	}
	order := make([]int, len(hits))
	for i := range order {
		order[i] = i
		out[i].Explain = &Explanation{Factors: hits[i].factors, Lifted: hits[i].lifted, Raised: hits[i].raised, Below: hits[i].below}
		if scoped {
			out[i].Explain.Scope = "project"
			if hits[i].other {
				out[i].Explain.Scope = "other project"
			}
		}
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(hits[a].doc, hits[b].doc) })
	for _, p := range pairs {
		it, err := snap.PostingsIterator([]byte(p.term), p.field, true, true, false)
		if err != nil {
			return err
		}
		var pst segment.Posting
		for _, i := range order {
			// Advance only forwards: Bluge's Advance to a document at or
			// before the current one recycles the iterator while it is
			// still in use, which corrupts later searches.
			if pst == nil || pst.Number() < hits[i].doc {
				if pst, err = it.Advance(hits[i].doc); err != nil {
					_ = it.Close()
					return err
				}
			}
			if pst == nil {
				break
			}
			if pst.Number() != hits[i].doc {
				continue
			}
			s := p.scorer
			freq, norm := pst.Frequency(), pst.Norm()
			ts := TermScore{Term: p.term, Field: p.field, Freq: freq, Boost: s.boost, IDF: s.idf,
				TF: s.tf(freq, norm), Score: s.Score(freq, norm)}
			e := out[i].Explain
			e.Terms = append(e.Terms, ts)
			e.BM25 += ts.Score
		}
		if err := it.Close(); err != nil {
			return err
		}
	}
	return nil
}

// Related returns up to k cards of the artifacts adjacent to a: those
// that mention one of its files (the exact path) or symbols, belong to
// its session and task, or supersede it or are superseded by it. a
// itself and forgotten artifacts are left out. Cards rank by overlap (one
// point per shared file or symbol, one for the same task, one for a
// supersession link), which is their Score, then by time, latest first.
// k 0 means DefaultK; it is at most MaxK.
func (x *Index) Related(a engine.Artifact, k int) ([]engine.Card, error) {
	k = clampK(k)
	links := supersession(&a)
	should := bluge.NewBooleanQuery().SetMinShould(1)
	n := 0
	for _, f := range a.Files {
		should.AddShould(bluge.NewTermQuery(truncate(f, maxEntryBytes)).SetField(fieldFile))
		n++
	}
	for _, s := range a.Symbols {
		should.AddShould(bluge.NewTermQuery(truncate(s, maxEntryBytes)).SetField(fieldSymbol))
		n++
	}
	if a.Session != "" && a.Task != "" {
		should.AddShould(bluge.NewBooleanQuery().
			AddMust(bluge.NewTermQuery(a.Session).SetField(fieldSession)).
			AddMust(bluge.NewTermQuery(a.Task).SetField(fieldTask)))
		n++
	}
	for _, id := range links {
		should.AddShould(bluge.NewTermQuery(id).SetField(fieldID))
		n++
	}
	if n == 0 {
		return nil, nil
	}
	query := bluge.NewBooleanQuery().AddMust(should).
		AddMustNot(bluge.NewTermQuery(a.ID).SetField(fieldID)).
		AddMustNot(bluge.NewTermQuery(flagForgotten).SetField(fieldFlag))

	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.closed {
		return nil, ErrClosed
	}
	hits, err := x.collect("related", bluge.NewTopNSearch(max(200, 20*k), query))
	if err != nil {
		return nil, fmt.Errorf("index: related %s: %w", a.ID, err)
	}
	files := set(a.Files)
	symbols := set(a.Symbols)
	for i := range hits {
		h := &hits[i]
		o := 0
		for _, f := range h.files {
			if files[f] {
				o++
			}
		}
		for _, s := range h.symbols {
			if symbols[s] {
				o++
			}
		}
		if a.Task != "" && h.session == a.Session && h.task == a.Task {
			o++
		}
		if slices.Contains(links, h.id) {
			o++
		}
		h.score = float64(o)
	}
	return cards(hits, k), nil
}

// supersession returns the ids a supersedes or is superseded by.
func supersession(a *engine.Artifact) []string {
	var ids []string
	if d := a.Decision; d != nil {
		ids = append(ids, d.Supersedes...)
		if d.SupersededBy != "" {
			ids = append(ids, d.SupersededBy)
		}
	}
	if c := a.Constraint; c != nil {
		ids = append(ids, c.Supersedes...)
		if c.SupersededBy != "" {
			ids = append(ids, c.SupersededBy)
		}
	}
	return ids
}

func set(l []string) map[string]bool {
	m := make(map[string]bool, len(l))
	for _, s := range l {
		m[s] = true
	}
	return m
}

func clampK(k int) int {
	if k <= 0 {
		return DefaultK
	}
	return min(k, MaxK)
}

// textSearch is the Bluge query of Search's first stage: textQuery with
// the type and forgotten filters, and, when scoped, only documents of
// project (in) or only documents of other projects (!in).
func textSearch(terms []string, q Query, floor uint64, project string, scoped, in bool) bluge.Query {
	query := bluge.NewBooleanQuery().AddMust(&textQuery{terms: terms, floor: floor})
	if len(q.Types) > 0 {
		types := bluge.NewBooleanQuery().SetMinShould(1)
		for _, t := range q.Types {
			// Boost 0: a filter, it adds nothing to the score.
			types.AddShould(bluge.NewTermQuery(string(t)).SetField(fieldType).SetBoost(0))
		}
		query.AddMust(types.SetBoost(0))
	}
	if !q.IncludeForgotten {
		query.AddMustNot(bluge.NewTermQuery(flagForgotten).SetField(fieldFlag))
	}
	if scoped {
		p := bluge.NewTermQuery(project).SetField(fieldProject).SetBoost(0)
		if in {
			query.AddMust(p)
		} else {
			query.AddMustNot(p)
		}
	}
	return query
}

// blugeHits is textHits through Bluge's searchers and collector.
func blugeHits(r *bluge.Reader, terms []string, q Query, n int, floor uint64, project string, scoped bool) ([]hit, error) {
	hits, err := matches(r, bluge.NewTopNSearch(n, textSearch(terms, q, floor, project, scoped, true)))
	if err != nil || !scoped {
		return hits, err
	}
	others, err := matches(r, bluge.NewTopNSearch(n, textSearch(terms, q, floor, project, scoped, false)))
	for i := range others {
		others[i].other = true
	}
	return append(hits, others...), err
}

// textHits runs topText on r and reads the stored fields of the n best
// (of the project, then of the others, when scoped). It returns the
// (term, field) pairs it scored too.
func textHits(r *bluge.Reader, terms []string, q Query, n int, floor uint64, project string, scoped bool) ([]hit, []termPair, error) {
	snap, err := snapshot(r)
	if err != nil {
		return nil, nil, err
	}
	lists, pairs, err := topText(snap, terms, textOpts{types: q.Types, forgotten: q.IncludeForgotten, n: n, floor: floor,
		scoped: scoped, project: project})
	if err != nil {
		return nil, nil, err
	}
	hits := make([]hit, 0, len(lists[0])+len(lists[1]))
	for l, top := range lists {
		for _, d := range top {
			hits = append(hits, hit{bm25: d.score, doc: d.doc, other: l == 1})
			if err := r.VisitStoredFields(d.doc, hits[len(hits)-1].visit); err != nil {
				return nil, nil, err
			}
		}
	}
	return hits, pairs, nil
}

// collect runs req and reads each match's stored fields. The caller holds
// mu.
func (x *Index) collect(op string, req bluge.SearchRequest) ([]hit, error) {
	var hits []hit
	err := x.withReader(op, func(r *bluge.Reader) error {
		var err error
		hits, err = matches(r, req)
		return err
	})
	return hits, err
}

// matches runs req on r and reads each match's stored fields.
func matches(r *bluge.Reader, req bluge.SearchRequest) ([]hit, error) {
	var hits []hit
	it, err := r.Search(context.Background(), req)
	if err != nil {
		return nil, err
	}
	for {
		m, err := it.Next()
		if err != nil {
			return nil, err
		}
		if m == nil {
			return hits, nil
		}
		hits = append(hits, hit{bm25: m.Score, doc: m.Number})
		if err := m.VisitStoredFields(hits[len(hits)-1].visit); err != nil {
			return nil, err
		}
	}
}

// cards sorts hits by score, time (latest first) and id, and returns the
// cards of the first k.
func cards(hits []hit, k int) []engine.Card {
	hits = sortHits(hits)
	hits = hits[:min(k, len(hits))]
	out := make([]engine.Card, len(hits))
	for i := range hits {
		out[i] = hits[i].card()
	}
	return out
}
