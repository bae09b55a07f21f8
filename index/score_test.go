package index

import (
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
// candidates in the same order with the same BM25 scores (to rounding:
// Bluge's heap disjunction may sum in another order), and the same
// cards. The common-terms floor is lowered so that the cutoff applies.
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
		if err := x.Apply(state(s, "v1", arts), arts); err != nil {
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
		if err := x.Apply(state(arts[0].Session, "v2", arts), arts); err != nil {
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
		want, err := x.collect("search", bluge.NewTopNSearch(n, textSearch(sortedTerms, q, x.minCutoff)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := x.collectText(sortedTerms, q, n)
		if err != nil {
			t.Fatal(err)
		}
		hitsN += len(got)
		if len(got) != len(want) {
			t.Fatalf("%+v: %d candidates, Bluge %d", q, len(got), len(want))
		}
		for i := range got {
			if got[i].id != want[i].id || !near(got[i].bm25, want[i].bm25) {
				t.Fatalf("%+v: candidate %d is %s (%v), Bluge's %s (%v)", q, i, got[i].id, got[i].bm25, want[i].id, want[i].bm25)
			}
		}
		gotCards, err := x.search(q, false)
		if err != nil {
			t.Fatal(err)
		}
		wantCards, err := x.search(q, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(gotCards) != len(wantCards) {
			t.Fatalf("%+v: %d cards, Bluge %d", q, len(gotCards), len(wantCards))
		}
		for i := range gotCards {
			if gotCards[i].ID != wantCards[i].ID || !near(gotCards[i].Score, wantCards[i].Score) {
				t.Fatalf("%+v: card %d is %s (%v), Bluge's %s (%v)", q, i, gotCards[i].ID, gotCards[i].Score, wantCards[i].ID, wantCards[i].Score)
			}
		}
	}
	if hitsN < 1000 {
		t.Fatalf("only %d candidates over %d queries: the test compares too little", hitsN, len(queries))
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b)) }
