package index

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/blugelabs/bluge"
	"github.com/blugelabs/bluge/search"
	"github.com/blugelabs/bluge/search/similarity"
	segment "github.com/blugelabs/bluge_segment_api"
)

func TestBM25Idf(t *testing.T) {
	s := NewBM25()
	tests := []struct {
		n, N uint64
		want float64
	}{
		{1, 1000, math.Log(1 + 999.5/1.5)},
		{500, 1000, math.Log(1 + 500.5/500.5)},
		{1000, 1000, math.Log(1 + 0.5/1000.5)},
		{5, 3, math.Log(1 + 0.5/5.5)}, // n clamped to N
	}
	for _, tt := range tests {
		if got := s.Idf(tt.n, tt.N); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("Idf(%d, %d) = %v, want %v", tt.n, tt.N, got, tt.want)
		}
	}
	// The idf of a term in half the documents is ln 2; Bluge's is ln 501.
	if got := (&similarity.BM25Similarity{}).Idf(500, 1000); math.Abs(got-math.Log(501+0.5/500.5)) > 1e-9 {
		t.Errorf("bluge Idf(500, 1000) = %v: the bug this package works around is gone", got)
	}
}

// stats are made-up term and collection statistics.
type stats struct{ n, N, sum uint64 }

func (s stats) DocumentFrequency() uint64     { return s.n }
func (s stats) DocumentCount() uint64         { return s.N }
func (s stats) TotalDocumentCount() uint64    { return s.N }
func (s stats) SumTotalTermFrequency() uint64 { return s.sum }
func (s stats) Merge(segment.CollectionStats) {}

func TestBM25ExplainMatchesScore(t *testing.T) {
	s := NewBM25()
	st := stats{n: 7, N: 100, sum: 1234}
	sc := s.Scorer(2, st, st)
	for _, freq := range []int{1, 2, 9} {
		for _, length := range []int{1, 12, 300} {
			norm := float64(s.ComputeNorm(length))
			score := sc.Score(freq, norm)
			ex := sc.Explain(freq, norm)
			avgdl := 1234.0 / 100
			want := 2 * math.Log(1+93.5/7.5) * float64(freq) / (float64(freq) + 1.2*(0.25+0.75*float64(length)/avgdl))
			if math.Abs(score-want) > 1e-9 || ex.Value != score {
				t.Errorf("freq %d len %d: score %v, explain %v, want %v", freq, length, score, ex.Value, want)
			}
			prod := 1.0
			for _, c := range ex.Children {
				prod *= c.Value
			}
			if math.Abs(prod-score) > 1e-9 {
				t.Errorf("freq %d len %d: explanation's factors multiply to %v, score %v", freq, length, prod, score)
			}
		}
	}
}

// rankCorpus indexes a corpus where the word "update" is in 90 of 100
// documents and the identifier "parseHTTPRequest" in one long document,
// with sim as the similarity, and returns the ids ranked for the query
// "update parseHTTPRequest".
func rankCorpus(t *testing.T, sim search.Similarity) []string {
	cfg := bluge.DefaultConfig(filepath.Join(t.TempDir(), "bluge"))
	cfg.DefaultSimilarity = sim
	cfg.PerFieldSimilarity[fieldText] = sim
	w, err := bluge.OpenWriter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	b := bluge.NewBatch()
	add := func(id, text string) {
		d := bluge.NewDocument(id).AddField(bluge.NewTextField(fieldText, text).WithAnalyzer(codeAnalyzer))
		b.Update(d.ID(), d)
	}
	// The identifier, once, in a long transcript segment (about 20 times
	// the average length) that also says update once.
	add("ident", "update: "+strings.Repeat("the handler now reads the body in chunks and ", 16)+"fixes parseHTTPRequest")
	// A short message that says update again and again.
	add("common", "update update update update update")
	for i := range 88 {
		add(fmt.Sprintf("u%02d", i), fmt.Sprintf("update note %d about the build", i))
	}
	for i := range 10 {
		add(fmt.Sprintf("o%02d", i), fmt.Sprintf("other note %d about the build", i))
	}
	if err := w.Batch(b); err != nil {
		t.Fatal(err)
	}
	r, err := w.Reader()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	q := bluge.NewBooleanQuery().SetMinShould(1)
	for _, term := range Tokens("update parseHTTPRequest") {
		q.AddShould(bluge.NewTermQuery(term).SetField(fieldText))
	}
	it, err := r.Search(context.Background(), bluge.NewTopNSearch(3, q))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for {
		m, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		if m == nil {
			return ids
		}
		m.VisitStoredFields(func(f string, v []byte) bool {
			if f == fieldID {
				ids = append(ids, string(v))
			}
			return true
		})
	}
}

// TestBM25RareIdentifier shows Bluge's bug and the fix: with BM25 the
// document holding the rare identifier ranks first; with Bluge's own
// similarity the document that repeats the common word does.
func TestBM25RareIdentifier(t *testing.T) {
	if got := rankCorpus(t, NewBM25()); len(got) == 0 || got[0] != "ident" {
		t.Errorf("BM25: ranking %v, want ident first", got)
	}
	if got := rankCorpus(t, similarity.NewBM25Similarity()); len(got) == 0 || got[0] != "common" {
		t.Errorf("bluge's BM25Similarity: ranking %v, want common first (blugelabs/bluge#151); if Bluge fixed its idf, this test can go", got)
	}
}
