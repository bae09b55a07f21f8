package index

import (
	"github.com/blugelabs/bluge/search"
	"github.com/blugelabs/bluge/search/searcher"
	"github.com/blugelabs/bluge/search/similarity"
)

// Common-terms planning: Bluge scores every document that matches any
// clause of a disjunction (no WAND, and ice's Advance walks every posting
// it skips), so a query word found in most documents would make every
// search read most postings: 40 ms at 100k artifacts. So the text query
// splits its (term, field) pairs by document frequency: the selective
// ones (in at most commonCutoff of the documents, with a floor of
// minCutoff documents) match and score; the common ones are left out.
// When every pair is common, the one pair with the fewest postings
// decides alone. A common pair's idf is at most ln(1 + 1/0.01) ≈ 4.6
// against at least that for a selective one, so the loss is ordering
// among documents that share the selective words; the re-ranking
// boosts matter more. Below 12,800 documents the floor keeps every pair.
const (
	commonCutoff = 0.01
	minCutoff    = 128
)

// textQuery is the bluge.Query of Search's text: each term in each text
// field with its boost, planned as described above.
type textQuery struct {
	terms []string // distinct
	floor uint64   // minCutoff, but for tests
}

// Searcher builds the plan: it makes every term searcher first (each
// knows its document count), then keeps the selective ones.
func (q *textQuery) Searcher(r search.Reader, opts search.SearcherOptions) (_ search.Searcher, err error) {
	var all []*searcher.TermSearcher
	defer func() {
		if err != nil {
			for _, s := range all {
				_ = s.Close()
			}
		}
	}()
	for _, f := range textFields {
		for _, t := range q.terms {
			s, err := searcher.NewTermSearcher(r, t, f.name, f.boost, nil, opts)
			if err != nil {
				return nil, err
			}
			if s.Count() == 0 {
				_ = s.Close()
				continue
			}
			all = append(all, s)
		}
	}
	if len(all) == 0 {
		return searcher.NewMatchNoneSearcher(r, opts)
	}
	stats, err := r.CollectionStats(fieldID)
	if err != nil {
		return nil, err
	}
	var n uint64
	if stats != nil {
		n = stats.DocumentCount()
	}
	cutoff := max(q.floor, uint64(float64(n)*commonCutoff))
	rarest := 0
	for i, s := range all {
		if s.Count() < all[rarest].Count() {
			rarest = i
		}
	}
	var keep []search.Searcher
	for i, s := range all {
		// Every pair common: the rarest decides alone.
		if s.Count() <= cutoff || (i == rarest && all[rarest].Count() > cutoff) {
			keep = append(keep, s)
		} else {
			_ = s.Close()
		}
	}
	all = nil // closed or kept
	return searcher.NewDisjunctionSearcher(r, keep, 1, similarity.NewCompositeSumScorer(), opts)
}
