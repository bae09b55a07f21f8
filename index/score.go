package index

import (
	"context"
	"slices"

	"github.com/blugelabs/bluge"
	"github.com/blugelabs/bluge/search"
	"github.com/blugelabs/bluge/search/searcher"
	segment "github.com/blugelabs/bluge_segment_api"

	"github.com/bbengine/bbengine/engine"
)

// Search's first stage scores the text query with BM25 directly over
// Bluge's postings: one iterator per selected (term, field) pair, merged
// in document order, each document's score summed in pair order (fields
// in textFields order, then terms in sorted order), as Bluge's
// disjunction searcher sums it; the type and forgotten filters are
// checked on the merged stream, and a bounded heap keeps the best n.
// It returns the documents and BM25 scores textQuery under Bluge's
// boolean query and top-N collector gives (ties to the lower document
// number, as Bluge's collector breaks them), without Bluge's searcher
// tree, document match pool and per-hit sort keys, which were most of a
// search's time. TestScoreEquivalence checks the two against each other.

// scored is a document and its BM25 score.
type scored struct {
	doc   uint64
	score float64
}

// worse reports whether a ranks below b: a lower score, or the same
// score and a higher document number.
func worse(a, b scored) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.doc > b.doc
}

// textPair is one (term, field) pair of a text query.
type textPair struct {
	it     segment.PostingsIterator
	scorer *bm25Scorer
	cur    segment.Posting // nil when exhausted
	doc    uint64          // cur.Number()
}

// next moves p to its next posting.
func (p *textPair) next() (err error) {
	if p.cur, err = p.it.Next(); err == nil && p.cur != nil {
		p.doc = p.cur.Number()
	}
	return err
}

// readerQuery is a bluge.Query that only records the search.Reader it
// is given: the index snapshot of a bluge.Reader, which is what the
// direct scorer reads.
type readerQuery struct{ r search.Reader }

func (q *readerQuery) Searcher(r search.Reader, opts search.SearcherOptions) (search.Searcher, error) {
	q.r = r
	return searcher.NewMatchNoneSearcher(r, opts)
}

// snapshot returns the index snapshot r reads; it is valid until r is
// closed.
func snapshot(r *bluge.Reader) (search.Reader, error) {
	q := &readerQuery{}
	it, err := r.Search(context.Background(), bluge.NewTopNSearch(1, q))
	if err != nil {
		return nil, err
	}
	if _, err := it.Next(); err != nil {
		return nil, err
	}
	return q.r, nil
}

// textOpts are topText's options.
type textOpts struct {
	// types, when not empty, keeps only documents of these types.
	types []engine.ArtifactType
	// forgotten keeps forgotten documents too.
	forgotten bool
	// n is how many documents each list holds at most.
	n int
	// floor is the common-terms cutoff's floor (minCutoff).
	floor uint64
	// scoped splits the documents by project: those of project go to
	// the first list, the others to the second.
	scoped  bool
	project string
}

// termPair is a (term, field) pair topText scored, with its scorer.
type termPair struct {
	term, field string
	scorer      *bm25Scorer
}

// topText returns the o.n best documents of r for the text query terms
// (distinct), of one of o.types when not empty, leaving out forgotten
// ones unless o.forgotten, best first: in lists[0], or, when o.scoped,
// those of o.project in lists[0] and the others in lists[1]. It also
// returns the (term, field) pairs it scored, in the order their scores
// were summed. See the comment above and textQuery.
func topText(r search.Reader, terms []string, o textOpts) (lists [2][]scored, kept []termPair, err error) {
	n := o.n
	var pairs []textPair
	var filters []segment.PostingsIterator
	defer func() {
		for _, p := range pairs {
			_ = p.it.Close()
		}
		for _, f := range filters {
			_ = f.Close()
		}
	}()
	counts := make([]uint64, 0, len(textFields)*len(terms))
	var names []termPair
	sim := NewBM25() // as config gives every field
	for _, f := range textFields {
		var stats segment.CollectionStats
		for _, t := range terms {
			it, err := r.PostingsIterator([]byte(t), f.name, true, true, false)
			if err != nil {
				return lists, nil, err
			}
			c := it.Count()
			if c == 0 {
				_ = it.Close()
				continue
			}
			if stats == nil {
				if stats, err = r.CollectionStats(f.name); err != nil {
					_ = it.Close()
					return lists, nil, err
				}
			}
			sc := sim.Scorer(f.boost, stats, docFreq(c)).(*bm25Scorer)
			pairs = append(pairs, textPair{it: it, scorer: sc})
			names = append(names, termPair{term: t, field: f.name, scorer: sc})
			counts = append(counts, c)
		}
	}
	if len(pairs) == 0 {
		return lists, nil, nil
	}
	stats, err := r.CollectionStats(fieldID)
	if err != nil {
		return lists, nil, err
	}
	var docs uint64
	if stats != nil {
		docs = stats.DocumentCount()
	}
	cutoff := max(o.floor, uint64(float64(docs)*commonCutoff))
	rarest := 0
	for i, c := range counts {
		if c < counts[rarest] {
			rarest = i
		}
	}
	keep := pairs[:0]
	for i, p := range pairs {
		// Every pair common: the rarest decides alone.
		if counts[i] <= cutoff || (i == rarest && counts[rarest] > cutoff) {
			keep = append(keep, p)
			kept = append(kept, names[i])
		} else {
			_ = p.it.Close()
		}
	}
	clear(pairs[len(keep):])
	pairs = keep

	var forgot *filter
	if !o.forgotten {
		it, err := r.PostingsIterator([]byte(flagForgotten), fieldFlag, false, false, false)
		if err != nil {
			return lists, nil, err
		}
		filters = append(filters, it)
		forgot = &filter{it: it}
	}
	var typeFilters []filter
	for _, t := range o.types {
		it, err := r.PostingsIterator([]byte(t), fieldType, false, false, false)
		if err != nil {
			return lists, nil, err
		}
		filters = append(filters, it)
		typeFilters = append(typeFilters, filter{it: it})
	}
	var inProject *filter
	if o.scoped {
		it, err := r.PostingsIterator([]byte(o.project), fieldProject, false, false, false)
		if err != nil {
			return lists, nil, err
		}
		filters = append(filters, it)
		inProject = &filter{it: it}
	}

	h := heaps{n: n, scoped: o.scoped}
	h.top[0] = make([]scored, 0, n)
	// offer adds d to its list if it passes the filters; docs come in
	// increasing order.
	offer := func(d scored) error {
		if forgot != nil {
			hit, err := forgot.has(d.doc)
			if err != nil || hit {
				return err
			}
		}
		if len(typeFilters) > 0 {
			ok := false
			for i := range typeFilters {
				hit, err := typeFilters[i].has(d.doc)
				if err != nil {
					return err
				}
				ok = ok || hit
			}
			if !ok {
				return nil
			}
		}
		l := 0
		if inProject != nil {
			hit, err := inProject.has(d.doc)
			if err != nil {
				return err
			}
			if !hit {
				l = 1
			}
		}
		if t := h.top[l]; len(t) < n || worse(t[0], d) {
			h.top[l] = push(t, d, n)
		}
		return nil
	}
	for i := range pairs {
		if err := pairs[i].next(); err != nil {
			return lists, nil, err
		}
	}
	if len(pairs) == 1 {
		if err := topOne(&pairs[0], &h, offer); err != nil {
			return lists, nil, err
		}
		pairs[0].cur = nil
	}
	for {
		doc, any := uint64(0), false
		for i := range pairs {
			if p := &pairs[i]; p.cur != nil && (!any || p.doc < doc) {
				doc, any = p.doc, true
			}
		}
		if !any {
			break
		}
		var s float64
		for i := range pairs {
			p := &pairs[i]
			if p.cur == nil || p.doc != doc {
				continue
			}
			s += p.scorer.Score(p.cur.Frequency(), p.cur.Norm())
			if err := p.next(); err != nil {
				return lists, nil, err
			}
		}
		d := scored{doc: doc, score: s}
		if h.closed(d) {
			continue // cannot enter: skip the filters
		}
		if err := offer(d); err != nil {
			return lists, nil, err
		}
	}
	// Best first.
	for l := range h.top {
		slices.SortFunc(h.top[l], func(a, b scored) int {
			if worse(a, b) {
				return 1
			}
			if worse(b, a) {
				return -1
			}
			return 0
		})
	}
	return h.top, kept, nil
}

// heaps are topText's bounded min-heaps (worst at [0]): one, or, when
// scoped, one for the query's project and one for the others.
type heaps struct {
	top    [2][]scored
	n      int
	scoped bool
}

// closed reports whether d can enter no heap: each that takes documents
// is full and its worst ranks above d.
func (h *heaps) closed(d scored) bool {
	for l := range h.top {
		if l == 1 && !h.scoped {
			break
		}
		if t := h.top[l]; len(t) < h.n || worse(t[0], d) {
			return false
		}
	}
	return true
}

// floor returns the score below which no document enters a heap, and
// false while one has room.
func (h *heaps) floor() (float64, bool) {
	var f float64
	for l := range h.top {
		if l == 1 && !h.scoped {
			break
		}
		t := h.top[l]
		if len(t) < h.n {
			return 0, false
		}
		if l == 0 || t[0].score < f {
			f = t[0].score
		}
	}
	return f, true
}

// topOne is topText's loop for a query of one pair (a common word alone:
// tens of thousands of postings). A posting scores bi · f / (f + k(dl))
// (bm25Scorer.Score), which can only enter full heaps whose worst is θ
// when bi · f > θ · (f + k): a test without a division once k(dl) is
// known, and k is cached by field length. Postings that fail it by a
// margin of 1e-9 are skipped; the others are scored exactly, so the
// result is the general loop's.
func topOne(p *textPair, h *heaps, offer func(scored) error) error {
	s := p.scorer
	bi := s.boost * s.idf
	var ks [256]float64      // 0: not computed; k ≥ k1 · (1 − b) > 0
	theta, full := h.floor() // changes only when offer does
	for p.cur != nil {
		freq, norm := p.cur.Frequency(), p.cur.Norm()
		if full {
			f, d := float64(freq), dl(norm)
			var k float64
			if d < float64(len(ks)) {
				if k = ks[int(d)]; k == 0 {
					k = s.k1 * (1 - s.b + s.b*d/s.avgdl)
					ks[int(d)] = k
				}
			} else {
				k = s.k1 * (1 - s.b + s.b*d/s.avgdl)
			}
			if bi*f < theta*(f+k)*(1-1e-9) {
				if err := p.next(); err != nil {
					return err
				}
				continue
			}
		}
		d := scored{doc: p.doc, score: s.Score(freq, norm)}
		if !h.closed(d) {
			if err := offer(d); err != nil {
				return err
			}
			theta, full = h.floor()
		}
		if err := p.next(); err != nil {
			return err
		}
	}
	return nil
}

// docFreq is a segment.TermStats of a postings count.
type docFreq uint64

func (d docFreq) DocumentFrequency() uint64 { return uint64(d) }

// filter answers whether documents, asked in increasing order, are in a
// postings list.
type filter struct {
	it   segment.PostingsIterator
	cur  segment.Posting
	done bool
}

func (f *filter) has(doc uint64) (bool, error) {
	if f.done {
		return false, nil
	}
	if f.cur == nil || f.cur.Number() < doc {
		var err error
		if f.cur, err = f.it.Advance(doc); err != nil {
			return false, err
		}
		if f.cur == nil {
			f.done = true
			return false, nil
		}
	}
	return f.cur.Number() == doc, nil
}

// push adds d to the min-heap top (its worst at top[0]) of at most n
// documents, replacing the worst when full. The caller checked that d
// ranks above the worst.
func push(top []scored, d scored, n int) []scored {
	if len(top) < n {
		top = append(top, d)
		for i := len(top) - 1; i > 0; {
			parent := (i - 1) / 2
			if !worse(top[i], top[parent]) {
				break
			}
			top[i], top[parent] = top[parent], top[i]
			i = parent
		}
		return top
	}
	top[0] = d
	for i := 0; ; {
		l, m := 2*i+1, i
		if l < len(top) && worse(top[l], top[m]) {
			m = l
		}
		if r := l + 1; r < len(top) && worse(top[r], top[m]) {
			m = r
		}
		if m == i {
			return top
		}
		top[i], top[m] = top[m], top[i]
		i = m
	}
}
