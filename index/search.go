package index

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/blugelabs/bluge"

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
	// Types, when not empty, keeps only artifacts of these types.
	Types []engine.ArtifactType
	// K is the number of cards wanted. The default is 10; at most 100.
	K int
	// IncludeForgotten returns artifacts the user forgot too.
	IncludeForgotten bool
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
)

// Search returns the best cards for q, best first. The first stage is
// BM25 (the correct one) over title (boost 2), text, files, symbols,
// commands and errors, which yields the top max(50, 5K) candidates (in an
// index of more than 12,800 documents, words found in more than 1% of
// them match only when the query has no rarer word: see textQuery); then
// each candidate's score is multiplied by its type's weight (decision and
// constraint 1.5, open thread 1.3, outcome 1.2, transcript 1), by 1.5 when
// it is of q.Session and by 1.3 more when also of q.Task, by 1.2 when it
// belongs to one of the last Options.RecentTasks tasks of q.Session, by
// 0.5 when superseded, by 0.6 when a closed thread, by 1.5 when pinned.
// Forgotten artifacts are left out unless q.IncludeForgotten. Ties go to
// the later artifact, then the smaller id. A card's Score is the final
// score.
func (x *Index) Search(q Query) ([]engine.Card, error) { return x.search(q, false) }

// search is Search; viaBluge runs the first stage as Bluge's searchers
// and collector (the reference the direct scorer is checked against)
// instead of topText.
func (x *Index) search(q Query, viaBluge bool) ([]engine.Card, error) {
	if strings.TrimSpace(q.Text) == "" {
		return nil, ErrEmptyQuery
	}
	k := clampK(q.K)
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
	n := max(50, 5*k)
	var hits []hit
	var err error
	if viaBluge {
		hits, err = x.collect("search", bluge.NewTopNSearch(n, textSearch(terms, q, x.minCutoff)))
	} else {
		hits, err = x.collectText(terms, q, n)
	}
	if err != nil {
		return nil, fmt.Errorf("index: search %q: %w", q.Text, err)
	}
	rerank(hits, q, recentFrom)
	return cards(hits, k), nil
}

// rerank sets each hit's score: its BM25 score times the factors Search
// describes.
func rerank(hits []hit, q Query, recentFrom int) {
	for i := range hits {
		h := &hits[i]
		s := h.bm25 * typeWeight[engine.ArtifactType(h.typ)]
		if q.Session != "" && h.session == q.Session {
			s *= boostSession
			if q.Task != "" && h.task == q.Task {
				s *= boostTask
			}
			if recentFrom > 0 && h.taskN >= recentFrom {
				s *= boostRecent
			}
		}
		if h.flags&bitSuperseded != 0 {
			s *= factorSupersede
		}
		if h.flags&bitClosed != 0 {
			s *= factorClosed
		}
		if h.flags&bitPinned != 0 {
			s *= boostPinned
		}
		h.score = s
	}
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
// the type and forgotten filters.
func textSearch(terms []string, q Query, floor uint64) bluge.Query {
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
	return query
}

// collectText runs topText for Search and reads the stored fields of the
// n best. The caller holds mu.
func (x *Index) collectText(terms []string, q Query, n int) ([]hit, error) {
	var hits []hit
	err := x.withReader("search", func(r *bluge.Reader) error {
		var err error
		hits, err = textHits(r, terms, q, n, x.minCutoff)
		return err
	})
	return hits, err
}

// textHits runs topText on r and reads the stored fields of the n best.
func textHits(r *bluge.Reader, terms []string, q Query, n int, floor uint64) ([]hit, error) {
	snap, err := snapshot(r)
	if err != nil {
		return nil, err
	}
	top, err := topText(snap, terms, q.Types, q.IncludeForgotten, n, floor)
	if err != nil {
		return nil, err
	}
	hits := make([]hit, len(top))
	for i, d := range top {
		hits[i].bm25 = d.score
		if err := r.VisitStoredFields(d.doc, hits[i].visit); err != nil {
			return nil, err
		}
	}
	return hits, nil
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
		hits = append(hits, hit{bm25: m.Score})
		if err := m.VisitStoredFields(hits[len(hits)-1].visit); err != nil {
			return nil, err
		}
	}
}

// cards sorts hits by score, time (latest first) and id, and returns the
// cards of the first k.
func cards(hits []hit, k int) []engine.Card {
	slices.SortFunc(hits, func(a, b hit) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		if c := cmp.Compare(b.time, a.time); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	hits = hits[:min(k, len(hits))]
	out := make([]engine.Card, len(hits))
	for i := range hits {
		out[i] = hits[i].card()
	}
	return out
}
