package index

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/blugelabs/bluge"

	"github.com/bbengine/bbengine/engine"
)

// TestScoreEquivalence checks the direct scorer against Bluge's searchers
// and collector on a generated index of several segments with updated,
// deleted, forgotten and pinned documents: for every query the same
// candidates in the same order with the same BM25 scores as Bluge's
// searchers and as a brute-force reference, on one reader, and the same
// cards. Equal to rounding: with more than 10 (term, field) pairs
// Bluge's disjunction sums a document's scores in its heap's order, so
// two documents whose scores are mathematically equal may come out in
// either order, and the last of them at the cut in either set; within
// such a run of near-equal scores (relative 1e-12) ids are compared as
// sets, and a run at the cut is left out. The common-terms floor is
// lowered so that the cutoff applies.
func TestScoreEquivalence(t *testing.T) {
	x := openTest(t, t.TempDir(), &Options{MaxBatch: 300})
	x.minCutoff = 20
	g := newGen(11)
	const sessions, per = 12, 100
	var all [][]engine.Artifact
	for i := range sessions {
		s := fmt.Sprintf("eq%02d", i)
		arts := make([]engine.Artifact, per)
		for j := range arts {
			arts[j] = g.artifact(s, j)
			arts[j].Forgotten = j%37 == 5
			arts[j].Pinned = j%41 == 3
		}
		st := state(s, "v1", arts)
		st.Project = fmt.Sprintf("/proj/%d", i%3)
		if err := x.Apply(st, arts); err != nil {
			t.Fatal(err)
		}
		all = append(all, arts)
	}
	// Updates and deletions leave deleted documents in older segments.
	for i := 0; i < sessions; i += 3 {
		arts := all[i][:per-10]
		for j := 0; j < len(arts); j += 4 {
			arts[j].Text += " " + g.sentence()
		}
		st := state(arts[0].Session, "v2", arts)
		st.Project = fmt.Sprintf("/proj/%d", i%3)
		if err := x.Apply(st, arts); err != nil {
			t.Fatal(err)
		}
	}

	queries := append([]Query(nil), benchQueries...)
	for i := range 150 {
		q := Query{Text: g.sentence()}
		switch i % 5 {
		case 0:
			q.Text = g.id() + " " + g.path()
		case 1:
			q.Types = []engine.ArtifactType{engine.ArtifactDecision, engine.ArtifactThread}
		case 2:
			q.IncludeForgotten = true
			q.Session, q.Task = "eq03", "turn-2"
		case 3:
			q.Text = g.word()
			q.K = 30
		case 4:
			q.Project = fmt.Sprintf("/proj/%d", i%3)
			if i%2 == 0 {
				q.Text = g.word()
			}
		}
		queries = append(queries, q)
	}
	hitsN := 0
	for _, q := range queries {
		terms := Tokens(q.Text)
		if len(terms) == 0 {
			continue
		}
		slices.Sort(terms)
		sortedTerms := slices.Compact(terms)
		n := max(50, 5*clampK(q.K))
		var got, want, old []hit
		scope, scoped := q.Project, q.Project != ""
		// One reader for the three: a merge between them would change
		// the collection statistics, and so the scores.
		err := x.withReader("test", func(r *bluge.Reader) (err error) {
			if got, _, err = textHits(r, sortedTerms, q, n, x.minCutoff, scope, scoped); err != nil {
				return err
			}
			if want, err = bruteCandidates(r, sortedTerms, q, n, x.minCutoff, scope, scoped); err != nil {
				return err
			}
			old, err = blugeHits(r, sortedTerms, q, n, x.minCutoff, scope, scoped)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		hitsN += len(got)
		// Scoped, each list (the project's, the others') compares alone.
		for _, other := range []bool{false, true} {
			pick := func(hs []hit) []hit {
				return slices.DeleteFunc(slices.Clone(hs), func(h hit) bool { return h.other != other })
			}
			if err := sameRanking(ranked(pick(got)), ranked(pick(want)), n); err != nil {
				t.Fatalf("%+v (other %v): candidates against the reference: %v", q, other, err)
			}
			if err := sameRanking(ranked(pick(old)), ranked(pick(want)), n); err != nil {
				t.Fatalf("%+v (other %v): Bluge's candidates against the reference: %v", q, other, err)
			}
			if scoped {
				for _, h := range pick(got) {
					if (h.project != scope) != other {
						t.Fatalf("%+v: %s of project %s in the other=%v list", q, h.id, h.project, other)
					}
				}
			}
		}
		// Explain: each result's (term, field) contributions sum to the
		// BM25 score its candidate had, and the factors give its score
		// (on one reader again).
		eq := q
		eq.Explain = true
		var res []Result
		var cands []hit
		err = x.withReader("test", func(r *bluge.Reader) (err error) {
			if cands, _, err = textHits(r, sortedTerms, q, n, x.minCutoff, scope, scoped); err != nil {
				return err
			}
			res, err = results(r, eq, sortedTerms, x.minCutoff, 0, scope, scoped, false)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		bm25 := map[string]float64{}
		for _, h := range cands {
			bm25[h.id] = h.bm25
		}
		for _, r := range res {
			e := r.Explain
			if e == nil {
				t.Fatalf("%+v: %s has no explanation", q, r.ID)
			}
			if e.Lifted != "" {
				continue
			}
			var sum float64
			for _, ts := range e.Terms {
				sum += ts.Score
				if want := ts.Boost * ts.IDF * ts.TF; !near(ts.Score, want) {
					t.Fatalf("%+v: %s: %+v: score is not boost·idf·tf", q, r.ID, ts)
				}
			}
			want, ok := bm25[r.ID]
			if !ok || !near(e.BM25, want) || !near(sum, want) {
				t.Fatalf("%+v: %s: explained BM25 %v (terms sum to %v), candidate's %v", q, r.ID, e.BM25, sum, want)
			}
			s := e.BM25
			for _, f := range e.Factors {
				s *= f.Value
			}
			if e.Below == "" && e.Raised == "" && !near(s, r.Score) {
				t.Fatalf("%+v: %s: BM25 times factors %v, score %v", q, r.ID, s, r.Score)
			}
		}
		recentFrom := 0
		if st := x.states[q.Session]; st != nil {
			recentFrom = max(1, st.Tasks-x.opts.RecentTasks+1)
		}
		rerank(got, q, recentFrom)
		rerank(old, q, recentFrom)
		k := clampK(q.K)
		if err := sameRanking(cardRanks(cards(got, k)), cardRanks(cards(old, k)), k); err != nil {
			t.Fatalf("%+v: cards: %v", q, err)
		}
	}
	if hitsN < 1000 {
		t.Fatalf("only %d candidates over %d queries: the test compares too little", hitsN, len(queries))
	}
}

// bruteCandidates is Search's first stage computed the long way on r,
// as the reference: each (term, field) pair searched alone with Bluge's
// term searcher (which scores with BM25), the common-terms cut applied,
// the scores summed per document in pair order, the filters applied
// from stored fields, then sorted by score and document number.
func bruteCandidates(r *bluge.Reader, terms []string, q Query, n int, floor uint64, project string, scoped bool) ([]hit, error) {
	type pairHits struct {
		count  int
		scores map[uint64]float64
	}
	var pairs []pairHits
	snap, err := snapshot(r)
	if err != nil {
		return nil, err
	}
	st, err := snap.CollectionStats(fieldID)
	if err != nil {
		return nil, err
	}
	for _, f := range textFields {
		for _, t := range terms {
			p := pairHits{scores: map[uint64]float64{}}
			ms, err := r.Search(context.Background(), bluge.NewAllMatches(bluge.NewTermQuery(t).SetField(f.name).SetBoost(f.boost)))
			if err != nil {
				return nil, err
			}
			for {
				m, err := ms.Next()
				if err != nil {
					return nil, err
				}
				if m == nil {
					break
				}
				p.scores[m.Number] = m.Score
			}
			if p.count = len(p.scores); p.count > 0 {
				pairs = append(pairs, p)
			}
		}
	}
	if len(pairs) == 0 {
		return nil, nil
	}
	cutoff := max(int(floor), int(float64(st.DocumentCount())*commonCutoff))
	rarest := 0
	for i, p := range pairs {
		if p.count < pairs[rarest].count {
			rarest = i
		}
	}
	var kept []pairHits
	for i, p := range pairs {
		if p.count <= cutoff || i == rarest {
			kept = append(kept, p)
		}
	}
	if len(kept) > 1 && pairs[rarest].count > cutoff {
		kept = slices.DeleteFunc(kept, func(p pairHits) bool { return p.count > cutoff })
	}
	sums := map[uint64]float64{}
	for _, p := range kept {
		for d := range p.scores {
			sums[d] = 0
		}
	}
	var all []scored
	for d := range sums {
		var s float64
		for _, p := range kept {
			if v, ok := p.scores[d]; ok {
				s += v
			}
		}
		all = append(all, scored{d, s})
	}
	slices.SortFunc(all, func(a, b scored) int {
		switch {
		case worse(a, b):
			return 1
		case worse(b, a):
			return -1
		}
		return 0
	})
	var hits []hit
	var counts [2]int
	for _, d := range all {
		h := hit{bm25: d.score}
		if err := r.VisitStoredFields(d.doc, h.visit); err != nil {
			return nil, err
		}
		if h.flags&bitForgotten != 0 && !q.IncludeForgotten ||
			len(q.Types) > 0 && !slices.Contains(q.Types, engine.ArtifactType(h.typ)) {
			continue
		}
		h.other = scoped && h.project != project
		l := 0
		if h.other {
			l = 1
		}
		if counts[l] == n {
			continue
		}
		counts[l]++
		hits = append(hits, h)
	}
	return hits, nil
}

// rank is an id and its score, in ranking order.
type rank struct {
	id    string
	score float64
}

func ranked(hs []hit) []rank {
	out := make([]rank, len(hs))
	for i, h := range hs {
		out[i] = rank{h.id, h.bm25}
	}
	return out
}

func cardRanks(cs []engine.Card) []rank {
	out := make([]rank, len(cs))
	for i, c := range cs {
		out[i] = rank{c.ID, c.Score}
	}
	return out
}

// sameRanking compares two rankings cut at n as TestScoreEquivalence
// says: runs of near-equal scores compare as sets, a run at the cut is
// left out.
func sameRanking(got, want []rank, n int) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d results, Bluge %d", len(got), len(want))
	}
	for i := 0; i < len(got); {
		j := i + 1
		for j < len(got) && (near(got[j].score, got[i].score) || near(want[j].score, want[i].score)) {
			j++
		}
		if j == len(got) && len(got) == n {
			// A run at the cut, even of one: its tie may go on past
			// the cut, and which of the tied documents make it depends
			// on the segments' document order (merges move it).
			for k := i; k < j; k++ {
				if !near(got[k].score, want[k].score) {
					return fmt.Errorf("result %d: %s (%v), Bluge's %s (%v)", k, got[k].id, got[k].score, want[k].id, want[k].score)
				}
			}
			return nil
		}
		var g, w []string
		for k := i; k < j; k++ {
			if !near(got[k].score, want[k].score) {
				return fmt.Errorf("result %d: %s (%v), Bluge's %s (%v)", k, got[k].id, got[k].score, want[k].id, want[k].score)
			}
			g, w = append(g, got[k].id), append(w, want[k].id)
		}
		slices.Sort(g)
		slices.Sort(w)
		if !slices.Equal(g, w) {
			return fmt.Errorf("results %d-%d: %v, Bluge's %v", i, j-1, g, w)
		}
		i = j
	}
	return nil
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b)) }
