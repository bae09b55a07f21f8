package index

import (
	"fmt"
	"math"

	"github.com/blugelabs/bluge/search"
	segment "github.com/blugelabs/bluge_segment_api"
)

// BM25 is Okapi BM25 as Lucene computes it, for Bluge's
// search.Similarity:
//
//	score = boost · idf · tf
//	idf   = ln(1 + (N − n + 0.5) / (n + 0.5))
//	tf    = f / (f + k1 · (1 − b + b · dl / avgdl))
//
// where N is the number of documents with the field, n the number that
// contain the term, f the term's frequency in the document, dl the
// field's length in tokens and avgdl its average. Bluge's own
// BM25Similarity (v0.2.2) computes idf as ln(1 + (N − n) + 0.5/(n + 0.5))
// (blugelabs/bluge#151), which barely separates a rare identifier from a
// word in every document; BM25 is the fix.
type BM25 struct {
	K1 float64 // term frequency saturation; 1.2 in NewBM25
	B  float64 // length normalisation; 0.75 in NewBM25
}

// NewBM25 returns BM25 with k1 = 1.2 and b = 0.75.
func NewBM25() *BM25 { return &BM25{K1: 1.2, B: 0.75} }

// ComputeNorm encodes a field's length as Bluge's BM25Similarity does (the
// length's bits in a float32). It must: Bluge computes norms at indexing
// time with the similarity its default config captured, not with the one
// set later in Config.DefaultSimilarity.
func (s *BM25) ComputeNorm(numTerms int) float32 {
	return math.Float32frombits(uint32(numTerms))
}

// Idf returns ln(1 + (N − n + 0.5) / (n + 0.5)) for docFreq n and
// docCount N. Segment statistics count deleted documents in N but not in
// n, so n is clamped to N; the result is never negative.
func (s *BM25) Idf(docFreq, docCount uint64) float64 {
	if docFreq > docCount {
		docCount = docFreq
	}
	n, N := float64(docFreq), float64(docCount)
	return math.Log(1 + (N-n+0.5)/(n+0.5))
}

// Scorer returns the scorer of one term in one field.
func (s *BM25) Scorer(boost float64, coll segment.CollectionStats, term segment.TermStats) search.Scorer {
	var docCount, sumTF uint64
	if coll != nil {
		docCount = coll.DocumentCount()
		sumTF = coll.SumTotalTermFrequency()
	}
	var docFreq uint64
	if term != nil {
		docFreq = term.DocumentFrequency()
	}
	avgdl := 1.0
	if docCount > 0 && sumTF > 0 {
		avgdl = float64(sumTF) / float64(docCount)
	}
	idf := s.Idf(docFreq, docCount)
	return &bm25Scorer{
		k1: s.K1, b: s.B, boost: boost, avgdl: avgdl,
		idf: idf, docFreq: docFreq, docCount: max(docCount, docFreq),
	}
}

// bm25Scorer scores one term; its fields are fixed when it is made.
type bm25Scorer struct {
	k1, b, boost, avgdl, idf float64
	docFreq, docCount        uint64
}

// dl decodes a norm made by ComputeNorm.
func dl(norm float64) float64 { return float64(math.Float32bits(float32(norm))) }

func (s *bm25Scorer) tf(freq int, norm float64) float64 {
	f := float64(freq)
	return f / (f + s.k1*(1-s.b+s.b*dl(norm)/s.avgdl))
}

// Score returns boost · idf · tf.
func (s *bm25Scorer) Score(freq int, norm float64) float64 {
	return s.boost * s.idf * s.tf(freq, norm)
}

// Explain returns the terms of Score; its value is Score's.
func (s *bm25Scorer) Explain(freq int, norm float64) *search.Explanation {
	tf := s.tf(freq, norm)
	return search.NewExplanation(s.boost*s.idf*tf,
		fmt.Sprintf("score(freq=%d), computed as boost * idf * tf from:", freq),
		search.NewExplanation(s.boost, "boost"),
		search.NewExplanation(s.idf, "idf, computed as ln(1 + (N - n + 0.5) / (n + 0.5)) from:",
			search.NewExplanation(float64(s.docFreq), "n, number of documents containing term"),
			search.NewExplanation(float64(s.docCount), "N, total number of documents with field")),
		search.NewExplanation(tf, "tf, computed as freq / (freq + k1 * (1 - b + b * dl / avgdl)) from:",
			search.NewExplanation(float64(freq), "freq, occurrences of term within document"),
			search.NewExplanation(s.k1, "k1, term saturation parameter"),
			search.NewExplanation(s.b, "b, length normalization parameter"),
			search.NewExplanation(dl(norm), "dl, length of field"),
			search.NewExplanation(s.avgdl, "avgdl, average length of field")))
}
