package index

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/blugelabs/bluge"

	"github.com/bbengine/bbengine/engine"
)

// applyAll applies arts grouped by session, tasks counted from TaskN.
func applyAll(t *testing.T, x *Index, arts []engine.Artifact) {
	t.Helper()
	by := map[string][]engine.Artifact{}
	var order []string
	for _, a := range arts {
		if by[a.Session] == nil {
			order = append(order, a.Session)
		}
		by[a.Session] = append(by[a.Session], a)
	}
	for _, s := range order {
		if err := x.Apply(state(s, "d", by[s]), by[s]); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSearchRanking(t *testing.T) {
	const text = "flaky cache test"
	mk := func(id string, typ engine.ArtifactType, edit func(a *engine.Artifact)) engine.Artifact {
		a := art("s1", id, typ, text)
		if edit != nil {
			edit(&a)
		}
		return a
	}
	in := func(s, task string, n int) func(*engine.Artifact) {
		return func(a *engine.Artifact) { a.Session, a.Task, a.TaskN = s, task, n }
	}
	seg, dec := engine.ArtifactSegment, engine.ArtifactDecision
	tests := []struct {
		name string
		arts []engine.Artifact
		q    Query
		want []string
	}{
		{"type", []engine.Artifact{
			mk("seg", seg, nil), mk("out", engine.ArtifactOutcome, nil), mk("thr", engine.ArtifactThread, nil),
			mk("dec", dec, nil), mk("con", engine.ArtifactConstraint, nil),
		}, Query{}, []string{"con", "dec", "thr", "out", "seg"}},
		{"scope is a boost, not a filter", []engine.Artifact{
			mk("other", seg, in("s2", "t1", 1)), mk("task2", seg, in("s1", "t2", 2)), mk("task1", seg, in("s1", "t1", 1)),
		}, Query{Session: "s1", Task: "t1"}, []string{"task1", "task2", "other"}},
		{"scope beats type", []engine.Artifact{
			mk("dec-other", dec, in("s2", "t1", 1)), mk("seg-same", seg, in("s1", "t1", 1)),
		}, Query{Session: "s1", Task: "t1"}, []string{"seg-same", "dec-other"}},
		{"recency: last 3 of 6 tasks", []engine.Artifact{
			mk("n3", seg, in("s1", "t3", 3)), mk("n4", seg, in("s1", "t4", 4)),
			mk("n6", seg, func(a *engine.Artifact) { in("s1", "t6", 6)(a); a.Last = 2000 }),
		}, Query{Session: "s1"}, []string{"n6", "n4", "n3"}},
		{"recency only for the query's session", []engine.Artifact{
			mk("s2-old", seg, in("s2", "t1", 1)), mk("s2-new", seg, in("s2", "t9", 9)), mk("s1", seg, in("s1", "t1", 1)),
		}, Query{}, []string{"s1", "s2-new", "s2-old"}},
		{"superseded", []engine.Artifact{
			mk("old", dec, func(a *engine.Artifact) { a.Decision = &engine.Decision{SupersededBy: "new"} }),
			mk("status", engine.ArtifactConstraint, func(a *engine.Artifact) { a.Status = "superseded" }),
			mk("new", dec, nil), mk("seg", seg, nil),
		}, Query{}, []string{"new", "seg", "old", "status"}},
		{"closed thread", []engine.Artifact{
			mk("closed", engine.ArtifactThread, func(a *engine.Artifact) {
				a.Thread = &engine.Thread{Kind: "todo", ClosedBy: &engine.Evidence{Seq: 9}}
			}),
			mk("open", engine.ArtifactThread, nil), mk("seg", seg, nil),
		}, Query{}, []string{"open", "seg", "closed"}},
		{"forgotten hidden", []engine.Artifact{
			mk("gone", dec, func(a *engine.Artifact) { a.Forgotten = true }), mk("seg", seg, nil),
		}, Query{}, []string{"seg"}},
		{"forgotten included", []engine.Artifact{
			mk("gone", dec, func(a *engine.Artifact) { a.Forgotten = true }), mk("seg", seg, nil),
		}, Query{IncludeForgotten: true}, []string{"gone", "seg"}},
		{"pinned", []engine.Artifact{
			mk("out", engine.ArtifactOutcome, nil), mk("pin", seg, func(a *engine.Artifact) { a.Pinned = true }),
		}, Query{}, []string{"pin", "out"}},
		{"ties: later first, then id", []engine.Artifact{
			mk("b", seg, nil), mk("a", seg, nil), mk("z", seg, func(a *engine.Artifact) { a.Last = 5000 }),
		}, Query{}, []string{"z", "a", "b"}},
		{"types filter", []engine.Artifact{
			mk("seg", seg, nil), mk("dec", dec, nil), mk("out", engine.ArtifactOutcome, nil),
		}, Query{Types: []engine.ArtifactType{seg, engine.ArtifactOutcome}}, []string{"out", "seg"}},
		{"k", []engine.Artifact{
			mk("a", seg, nil), mk("b", seg, nil), mk("c", seg, nil),
		}, Query{K: 2}, []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := openTest(t, t.TempDir(), nil)
			applyAll(t, x, tt.arts)
			q := tt.q
			q.Text = "cache"
			got, err := x.Search(q)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ids(got), tt.want) {
				t.Errorf("ranking %v, want %v", ids(got), tt.want)
				for _, c := range got {
					t.Logf("%s %.4f", c.ID, c.Score)
				}
			}
		})
	}
}

// TestSearchScore checks that a card's score is the BM25 score times the
// factors: here a decision pinned in the query's task against a
// transcript segment of another session, with the same text.
func TestSearchScore(t *testing.T) {
	x := openTest(t, t.TempDir(), nil)
	a := art("s1", "a", engine.ArtifactDecision, "cache")
	a.Task, a.TaskN, a.Pinned = "t1", 1, true
	b := art("s2", "b", engine.ArtifactSegment, "cache")
	applyAll(t, x, []engine.Artifact{a, b})
	got, err := x.Search(Query{Text: "cache", Session: "s1", Task: "t1"})
	if err != nil || len(got) != 2 {
		t.Fatalf("search = %v, %v", got, err)
	}
	// type 1.5, session 1.5, task 1.3, recent 1.2 (task 1 of 1), pinned 1.5
	want := 1.5 * 1.5 * 1.3 * 1.2 * 1.5
	if r := got[0].Score / got[1].Score; math.Abs(r-want) > 1e-9 {
		t.Errorf("score ratio %v, want %v", r, want)
	}
}

func TestSearchCard(t *testing.T) {
	x := openTest(t, t.TempDir(), nil)
	a := engine.Artifact{
		ID: "a1", Type: engine.ArtifactOutcome, Session: "s1", Task: "t7", TaskN: 7, Run: "r2",
		Title:  "Fix parseHTTPRequest for chunked bodies",
		Text:   "The handler   now\nreads " + strings.Repeat("ünïcode ", 100),
		Status: "success", First: 10, Last: 1_700_000_000_123_456_789,
		Files:   []string{"proxy/http.go", "proxy/http_test.go"},
		Symbols: []string{"parseHTTPRequest"}, Commands: []string{"go test ./proxy/..."},
		Errors: []string{"EOF"}, Pinned: true,
	}
	applyAll(t, x, []engine.Artifact{a})
	for _, q := range []string{"http request", "proxy/http_test.go", "go test", "chunked", "ünïcode", "t7"} {
		got, err := x.Search(Query{Text: q})
		if err != nil {
			t.Fatal(err)
		}
		if q == "t7" {
			if len(got) != 0 {
				t.Errorf("search %q matched the task keyword: %v", q, ids(got))
			}
			continue
		}
		if len(got) != 1 {
			t.Fatalf("search %q = %v, want a1", q, ids(got))
		}
		c := got[0]
		want := engine.Card{ID: "a1", Type: engine.ArtifactOutcome, Title: a.Title, Snippet: c.Snippet, Score: c.Score,
			Status: "success", Session: "s1", Task: "t7", Run: "r2", Files: a.Files, Time: a.Last, Pinned: true}
		if c.Score <= 0 || !equalCard(c, want) {
			t.Errorf("card = %+v\nwant %+v", c, want)
		}
		if n := utf8.RuneCountInString(c.Snippet); n != SnippetRunes || !strings.HasPrefix(c.Snippet, "The handler now reads ünïcode") || !strings.HasSuffix(c.Snippet, "…") {
			t.Errorf("snippet (%d runes) = %q", n, c.Snippet)
		}
	}
	if _, err := x.Search(Query{Text: "  "}); !errors.Is(err, ErrEmptyQuery) {
		t.Errorf("empty query: %v", err)
	}
	if _, err := x.Search(Query{Text: "x", Types: []engine.ArtifactType{"idea"}}); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad type: %v", err)
	}
	if got, err := x.Search(Query{Text: "!!!"}); err != nil || len(got) != 0 {
		t.Errorf("query without terms = %v, %v", got, err)
	}
}

func equalCard(a, b engine.Card) bool {
	return reflect.DeepEqual(a, b)
}

func TestSnippet(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", ""},
		{"  a\n\n b\tc  ", "a b c"},
		{strings.Repeat("x", SnippetRunes), strings.Repeat("x", SnippetRunes)},
		{strings.Repeat("é", SnippetRunes+1), strings.Repeat("é", SnippetRunes-1) + "…"},
		{strings.Repeat("x", SnippetRunes-1) + " y", strings.Repeat("x", SnippetRunes-1) + "…"},
	}
	for _, tt := range tests {
		if got := Snippet(tt.in); got != tt.want {
			t.Errorf("Snippet(%.20q…) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMaxDocBytes(t *testing.T) {
	x := openTest(t, t.TempDir(), &Options{MaxDocBytes: 64})
	a := art("s1", "a", engine.ArtifactSegment, "title")
	a.Text = strings.Repeat("é", 20) + " early " + strings.Repeat("filler ", 20) + " late"
	applyAll(t, x, []engine.Artifact{a})
	if got, _ := x.Search(Query{Text: "early"}); len(got) != 1 {
		t.Errorf("early word: %v, want a", ids(got))
	}
	if got, _ := x.Search(Query{Text: "late"}); len(got) != 0 {
		t.Errorf("word past MaxDocBytes: %v, want nothing", ids(got))
	}
}

func TestRelated(t *testing.T) {
	x := openTest(t, t.TempDir(), nil)
	mk := func(id string, last int64, edit func(a *engine.Artifact)) engine.Artifact {
		a := art("s1", id, engine.ArtifactSegment, "note "+id)
		a.Last = last
		edit(&a)
		return a
	}
	a := mk("a", 10, func(a *engine.Artifact) {
		a.Type, a.Task = engine.ArtifactDecision, "t1"
		a.Files, a.Symbols = []string{"wal/segment.go", "wal/reader.go"}, []string{"Segment.Open"}
		a.Decision = &engine.Decision{SupersededBy: "g"}
	})
	arts := []engine.Artifact{
		a,
		mk("b", 20, func(a *engine.Artifact) { a.Files = []string{"wal/reader.go", "wal/segment.go"} }),
		mk("c", 30, func(a *engine.Artifact) { a.Symbols = []string{"Segment.Open"} }),
		mk("d", 40, func(a *engine.Artifact) { a.Task = "t1" }),
		mk("e", 50, func(a *engine.Artifact) { a.Files = []string{"wal/segment_test.go"}; a.Task = "t2" }),
		mk("f", 60, func(a *engine.Artifact) { a.Files = []string{"wal/segment.go"}; a.Forgotten = true }),
		mk("g", 5, func(a *engine.Artifact) { a.Type = engine.ArtifactDecision }),
		mk("h", 70, func(a *engine.Artifact) { a.Session, a.Task = "s2", "t1" }),
	}
	applyAll(t, x, arts)
	got, err := x.Related(a, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"b", "d", "c", "g"}; !slices.Equal(ids(got), want) {
		t.Errorf("related = %v, want %v", ids(got), want)
	}
	if len(got) > 0 && got[0].Score != 2 {
		t.Errorf("overlap of b = %v, want 2", got[0].Score)
	}
	if got, _ := x.Related(a, 1); !slices.Equal(ids(got), []string{"b"}) {
		t.Errorf("related k=1 = %v", ids(got))
	}
	if got, err := x.Related(engine.Artifact{ID: "lonely"}, 5); err != nil || len(got) != 0 {
		t.Errorf("related of an artifact with nothing to share = %v, %v", got, err)
	}
}

// TestBlugePanic makes Bluge panic (a stored-field visit in an index
// without segments indexes its segment offsets at -1) and checks that the
// index turns it into an error and keeps working.
func TestBlugePanic(t *testing.T) {
	x := openTest(t, t.TempDir(), nil)
	err := x.withReader("visit", func(r *bluge.Reader) error {
		return r.VisitStoredFields(0, func(string, []byte) bool { return true })
	})
	var pe *PanicError
	if !errors.As(err, &pe) || !errors.Is(err, ErrPanic) || !strings.HasPrefix(err.Error(), "index: bluge panicked: visit: ") {
		t.Fatalf("poisoned call: err = %v, want a PanicError", err)
	}
	applyAll(t, x, []engine.Artifact{art("s1", "a", engine.ArtifactSegment, "cache")})
	if got, err := x.Search(Query{Text: "cache"}); err != nil || len(got) != 1 {
		t.Fatalf("search after the panic = %v, %v", got, err)
	}
}

// TestCommonTerms checks the query plan: with more documents than the
// floor, a word in most of them does not match when the query has a
// selective word, and decides alone when it has none.
func TestCommonTerms(t *testing.T) {
	x := openTest(t, t.TempDir(), nil)
	var arts []engine.Artifact
	for i := range minCutoff + 20 {
		arts = append(arts, art("s1", fmt.Sprintf("u%03d", i), engine.ArtifactSegment, "update the notes"))
	}
	arts = append(arts, art("s1", "rare", engine.ArtifactSegment, "zebraHandler crashed"))
	applyAll(t, x, arts)
	if got, _ := x.Search(Query{Text: "update zebraHandler"}); !slices.Equal(ids(got), []string{"rare"}) {
		t.Errorf("selective and common: %v, want [rare]", ids(got))
	}
	if got, _ := x.Search(Query{Text: "update notes", K: 5}); len(got) != 5 {
		t.Errorf("only common words: %d cards, want 5", len(got))
	}
}
