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

// TestSearchStems checks that English words match their other forms
// through stems, and that identifiers match whole and by their parts.
func TestSearchStems(t *testing.T) {
	x := openTest(t, t.TempDir(), nil)
	arts := []engine.Artifact{
		art("s1", "tag", engine.ArtifactDecision, "tag releases from the main branch"),
		art("s1", "tagging", engine.ArtifactDecision, "tagging releases is done by CI"),
		art("s1", "ident", engine.ArtifactSegment, "call parseConfig before load_user_settings in cmd/run_tests.go"),
		art("s1", "other", engine.ArtifactSegment, "nothing relevant here"),
	}
	applyAll(t, x, arts)
	tests := []struct {
		q    string
		want []string
	}{
		{"tagging", []string{"tag", "tagging"}},
		{"tags", []string{"tag", "tagging"}},
		{"parseConfig", []string{"ident"}},
		{"parseconfig", []string{"ident"}},
		{"parse", []string{"ident"}},
		{"config", []string{"ident"}},
		{"parsing configs", []string{"ident"}},
		{"user settings", []string{"ident"}},
		{"load_user_settings", []string{"ident"}},
		{"running tests", []string{"ident"}},
	}
	for _, tt := range tests {
		got, err := x.Search(Query{Text: tt.q})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(got), tt.want) {
			t.Errorf("%q: %v, want %v", tt.q, ids(got), tt.want)
		}
	}
}

// TestSearchFields checks the decision and constraint fields: a
// decision's subject and context find it though its sentence does not
// name them, and a subject match outranks the same words in a
// transcript.
func TestSearchFields(t *testing.T) {
	x := openTest(t, t.TempDir(), nil)
	dec := art("s1", "dec", engine.ArtifactDecision, "use clap")
	dec.Text = "Decision (active): use clap"
	dec.Decision = &engine.Decision{Statement: "use clap", Subject: "argument parsing", Rationale: "the flags grew past what os.Args handles"}
	con := art("s1", "con", engine.ArtifactConstraint, "never run migrations against prod by hand")
	con.Text = "Constraint"
	con.Constraint = &engine.Constraint{Statement: "never run migrations against prod by hand; the pipeline does it after review"}
	seg := art("s1", "seg", engine.ArtifactSegment, "we talked about argument parsing for a while")
	arts := []engine.Artifact{dec, con, seg}
	// More decisions with subjects: a field's idf counts the documents
	// that have it.
	for i, subj := range []string{"database", "logging library", "cache key", "migration tool", "ci", "http router"} {
		d := art("s1", fmt.Sprintf("d%d", i), engine.ArtifactDecision, "use something")
		d.Decision = &engine.Decision{Statement: "use something", Subject: subj}
		arts = append(arts, d)
	}
	applyAll(t, x, arts)
	for _, tt := range []struct {
		q    string
		want []string
	}{
		{"argument parsing", []string{"dec", "seg"}},
		{"os.Args flags", []string{"dec", "seg"}}, // "Args" is short for the segment's "argument"
		{"pipeline review", []string{"con"}},
	} {
		got, err := x.Search(Query{Text: tt.q})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids(got), tt.want) {
			t.Errorf("%q: %v, want %v", tt.q, ids(got), tt.want)
		}
	}
	// The subject's weight shows in the explanation.
	rs, err := x.Find(Query{Text: "argument", Explain: true})
	if err != nil || len(rs) == 0 {
		t.Fatalf("find = %v, %v", rs, err)
	}
	fields := map[string]bool{}
	for _, ts := range rs[0].Explain.Terms {
		fields[ts.Field] = true
		if ts.Field == fieldSubject && ts.Boost != 2 {
			t.Errorf("subject boost %v, want 2", ts.Boost)
		}
	}
	if !fields[fieldSubject] {
		t.Errorf("explained fields %v, want subject among them", fields)
	}
}

// TestSearchOutdated checks that a superseded decision ranks below what
// replaced it however much better its words match, the replacement
// taking its place, that the end of its chain is added when it did not
// match, and that a closed thread ranks below the result that holds the
// event that closed it.
func TestSearchOutdated(t *testing.T) {
	mk := func(id string, typ engine.ArtifactType, title string, edit func(a *engine.Artifact)) engine.Artifact {
		a := art("s1", id, typ, title)
		a.Status = "active"
		if edit != nil {
			edit(&a)
		}
		return a
	}
	superseded := func(by string) func(*engine.Artifact) {
		return func(a *engine.Artifact) {
			a.Status = "superseded"
			a.Decision = &engine.Decision{SupersededBy: by}
		}
	}
	dec, thr := engine.ArtifactDecision, engine.ArtifactThread
	tests := []struct {
		name string
		arts []engine.Artifact
		q    string
		want []string
		// below maps a result to the one it must be placed below.
		below map[string]string
		// why maps a replacement to "raised ID" or "lifted ID".
		why map[string]string
	}{
		{"replacement matches less", []engine.Artifact{
			mk("old", dec, "use goose for database migrations, goose migrations are simple migrations", superseded("new")),
			mk("new", dec, "switch to Atlas for migrations", nil),
			mk("seg", engine.ArtifactSegment, "migrations migrations migrations database", nil),
		}, "database migrations", []string{"new", "seg", "old"}, map[string]string{"old": "new"}, map[string]string{"new": "raised old"}},
		{"replacement lifted", []engine.Artifact{
			mk("old", dec, "use goose for database migrations", superseded("new")),
			mk("new", dec, "switch to Atlas", nil),
			mk("seg", engine.ArtifactSegment, "unrelated words only", nil),
		}, "goose", []string{"new", "old"}, map[string]string{"old": "new"}, map[string]string{"new": "lifted old"}},
		{"chain: the end in force is lifted", []engine.Artifact{
			mk("a", dec, "use goose for migrations", superseded("b")),
			mk("b", dec, "use dbmate", superseded("c")),
			mk("c", dec, "switch to Atlas", nil),
		}, "goose", []string{"c", "a"}, map[string]string{"a": "c"}, map[string]string{"c": "lifted a"}},
		{"chain: the first that matches", []engine.Artifact{
			mk("a", dec, "use goose for migrations migrations", superseded("b")),
			mk("b", dec, "use dbmate", superseded("c")),
			mk("c", dec, "switch to Atlas for migrations", nil),
		}, "migrations", []string{"c", "a"}, map[string]string{"a": "c"}, nil},
		{"lifted only if not forgotten", []engine.Artifact{
			mk("old", dec, "use goose", superseded("new")),
			mk("new", dec, "switch to Atlas", func(a *engine.Artifact) { a.Forgotten = true }),
		}, "goose", []string{"old"}, nil, nil},
		{"closed thread below its closer", []engine.Artifact{
			mk("thr", thr, "flaky test TestCache flaky flaky", func(a *engine.Artifact) {
				a.Status = "closed"
				a.Thread = &engine.Thread{Kind: "failing_test", ClosedBy: &engine.Evidence{Seq: 40}}
				a.Evidence = []engine.Evidence{{Seq: 10}}
			}),
			mk("out", engine.ArtifactOutcome, "fixed TestCache", func(a *engine.Artifact) {
				a.Status = "success"
				a.Evidence = []engine.Evidence{{Seq: 30}, {Seq: 45}}
			}),
			mk("later", engine.ArtifactOutcome, "TestCache again", func(a *engine.Artifact) {
				a.Status = "success"
				a.Evidence = []engine.Evidence{{Seq: 50}, {Seq: 60}}
			}),
		}, "flaky TestCache", []string{"later", "out", "thr"}, map[string]string{"thr": "out"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := openTest(t, t.TempDir(), nil)
			applyAll(t, x, tt.arts)
			rs, err := x.Find(Query{Text: tt.q, Explain: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rs {
				got = append(got, r.ID)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("ranking %v, want %v", got, tt.want)
			}
			for i, r := range rs {
				// The explanation says why a replacement ranks where it
				// does: it took the score of the one it replaced, or was
				// added for it.
				if want := tt.why[r.ID]; want != "" {
					if got := "raised " + r.Explain.Raised + "lifted " + r.Explain.Lifted; !strings.Contains(got, want) {
						t.Errorf("%s: explanation %+v, want %s", r.ID, r.Explain, want)
					}
				}
				if want, ok := tt.below[r.ID]; ok && !slices.Contains(got[:i], want) {
					t.Errorf("%s ranks above %s, which replaced or closed it", r.ID, want)
				}
				if i > 0 && r.Score > rs[i-1].Score {
					t.Errorf("%s scores %v above %s's %v", r.ID, r.Score, rs[i-1].ID, rs[i-1].Score)
				}
			}
		})
	}
}

// TestSearchProject checks the project scope: the scope's results only,
// the other projects' when nothing in the scope matches or with
// AllProjects (after the scope's, marked), the scope found from a
// directory inside a project or from the query's session, and none from
// a directory outside all.
func TestSearchProject(t *testing.T) {
	x := openTest(t, t.TempDir(), nil)
	apply := func(session, project string, arts ...engine.Artifact) {
		st := state(session, "d", arts)
		st.Project = project
		if err := x.Apply(st, arts); err != nil {
			t.Fatal(err)
		}
	}
	// Project b's decision matches better than a's.
	apply("a1", "/src/a", art("a1", "a-dec", engine.ArtifactDecision, "use redis for the cache"))
	apply("a2", "/src/a", art("a2", "a-seg", engine.ArtifactSegment, "the cache is slow"))
	apply("b1", "/src/b", art("b1", "b-dec", engine.ArtifactDecision, "cache cache: use memcached for the cache"),
		art("b1", "b-only", engine.ArtifactSegment, "kafka topics"))
	apply("n1", "", art("n1", "n-seg", engine.ArtifactSegment, "cache"))

	type res struct {
		id    string
		other bool
	}
	tests := []struct {
		name string
		q    Query
		want []res
	}{
		{"no scope", Query{Text: "cache"}, []res{{"b-dec", false}, {"n-seg", false}, {"a-dec", false}, {"a-seg", false}}},
		{"scope", Query{Text: "cache", Project: "/src/a"}, []res{{"a-dec", false}, {"a-seg", false}}},
		{"scope from a directory inside", Query{Text: "cache", Project: "/src/a/internal/x"}, []res{{"a-dec", false}, {"a-seg", false}}},
		{"dir inside", Query{Text: "cache", Dir: "/src/a/cmd"}, []res{{"a-dec", false}, {"a-seg", false}}},
		{"dir outside: no scope", Query{Text: "cache", Dir: "/home/me"}, []res{{"b-dec", false}, {"n-seg", false}, {"a-dec", false}, {"a-seg", false}}},
		{"prefix is not a parent", Query{Text: "cache", Project: "/src/ab"}, []res{{"b-dec", true}, {"n-seg", true}, {"a-dec", true}, {"a-seg", true}}},
		{"all projects", Query{Text: "cache", Project: "/src/a", AllProjects: true},
			[]res{{"a-dec", false}, {"a-seg", false}, {"b-dec", true}, {"n-seg", true}}},
		{"nothing in the scope", Query{Text: "kafka", Project: "/src/a"}, []res{{"b-only", true}}},
		{"the session's project", Query{Text: "cache", Session: "b1"}, []res{{"b-dec", false}}},
		{"the session's project before the directory's", Query{Text: "cache", Session: "b1", Dir: "/src/a"}, []res{{"b-dec", false}}},
		{"a session without a project", Query{Text: "cache", Session: "n1", Dir: "/src/a"}, []res{{"a-dec", false}, {"a-seg", false}}},
		{"k cuts the scope first", Query{Text: "cache", Project: "/src/a", AllProjects: true, K: 3},
			[]res{{"a-dec", false}, {"a-seg", false}, {"b-dec", true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs, err := x.Find(tt.q)
			if err != nil {
				t.Fatal(err)
			}
			var got []res
			for _, r := range rs {
				got = append(got, res{r.ID, r.Other})
				if want := map[string]string{"a": "/src/a", "b": "/src/b", "n": ""}[r.ID[:1]]; r.Project != want {
					t.Errorf("%s: project %q, want %q", r.ID, r.Project, want)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSearchProjectName: within a project, the words of its own name
// are left out of a query that asks about two other things, so that the
// documents naming the project most do not outrank the answer; a query
// about little else keeps them.
func TestSearchProjectName(t *testing.T) {
	x := openTest(t, t.TempDir(), nil)
	arts := []engine.Artifact{
		art("l1", "dec", engine.ArtifactDecision, "amounts are stored as int64 minor units"),
		art("l1", "seg", engine.ArtifactSegment, "ledger ledger: go test ./ledger/... in the ledger service, currency table"),
	}
	st := state("l1", "d", arts)
	st.Project = "/home/dev/ledger"
	if err := x.Apply(st, arts); err != nil {
		t.Fatal(err)
	}
	rs, err := x.Find(Query{Text: "how are currency amounts stored in the ledger", Session: "l1", Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 || rs[0].ID != "dec" || !slices.Equal(rs[0].Explain.LeftOut, []string{"ledger"}) {
		t.Fatalf("results %+v, want the decision first with ledger left out", rs)
	}
	rs, err = x.Find(Query{Text: "what is the ledger about", Session: "l1", Explain: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) == 0 || rs[0].ID != "seg" || len(rs[0].Explain.LeftOut) != 0 {
		t.Fatalf("results %+v, want the segment that names the ledger, nothing left out", rs)
	}
}

// TestSearchProjectMoved checks that a session whose project changes
// while its memory does not is indexed again, and that the index forgets
// a project no session has.
func TestSearchProjectMoved(t *testing.T) {
	x := openTest(t, t.TempDir(), nil)
	arts := []engine.Artifact{art("s1", "a", engine.ArtifactDecision, "use redis")}
	src := &memSource{arts: map[string][]engine.Artifact{"s1": arts}}
	src.set("s1", "d1", arts...)
	src.states[0].Project = "/old"
	if _, err := x.Sync(src); err != nil {
		t.Fatal(err)
	}
	src.states[0].Project = "/new"
	if stats, err := x.Sync(src); err != nil || stats.Applied != 1 {
		t.Fatalf("sync after the move = %+v, %v; want the session applied", stats, err)
	}
	rs, err := x.Find(Query{Text: "redis", Project: "/new"})
	if err != nil || len(rs) != 1 || rs[0].Other || rs[0].Project != "/new" {
		t.Fatalf("find = %+v, %v", rs, err)
	}
	// The old project is gone: a directory in it gives no scope.
	if rs, err := x.Find(Query{Text: "redis", Dir: "/old/cmd"}); err != nil || len(rs) != 1 || rs[0].Other {
		t.Fatalf("find in the old project's directory = %+v, %v; want no scope", rs, err)
	}
	if err := x.Remove("s1"); err != nil {
		t.Fatal(err)
	}
	if len(x.projects) != 0 {
		t.Errorf("projects after the last session went: %v", x.projects)
	}
}

// TestExplain checks an explanation: the matched (term, field) pairs
// with their BM25 parts, which sum to the BM25 score, and the factors,
// which give the score.
func TestExplain(t *testing.T) {
	x := openTest(t, t.TempDir(), nil)
	a := art("s1", "a", engine.ArtifactDecision, "tagging releases")
	a.Text = "tagging releases from main"
	a.Task, a.TaskN, a.Pinned = "t1", 1, true
	b := art("s2", "b", engine.ArtifactSegment, "unrelated")
	applyAll(t, x, []engine.Artifact{a, b})
	rs, err := x.Find(Query{Text: "tags", Session: "s1", Explain: true})
	if err != nil || len(rs) != 1 {
		t.Fatalf("find = %+v, %v", rs, err)
	}
	e := rs[0].Explain
	var pairs []string
	var sum float64
	for _, ts := range e.Terms {
		pairs = append(pairs, ts.Term+"@"+ts.Field)
		sum += ts.Score
		if ts.Freq != 1 || ts.IDF <= 0 || ts.TF <= 0 || math.Abs(ts.Score-ts.Boost*ts.IDF*ts.TF) > 1e-12 {
			t.Errorf("%+v: not boost·idf·tf", ts)
		}
	}
	if want := []string{"tag@title", "tag@text"}; !slices.Equal(pairs, want) {
		t.Errorf("pairs %v, want %v", pairs, want)
	}
	if math.Abs(sum-e.BM25) > 1e-12 || e.BM25 == 0 {
		t.Errorf("terms sum to %v, BM25 %v", sum, e.BM25)
	}
	var names []string
	s := e.BM25
	for _, f := range e.Factors {
		names = append(names, f.Name)
		s *= f.Value
	}
	if want := []string{"type decision", "session", "recent task", "pinned"}; !slices.Equal(names, want) {
		t.Errorf("factors %v, want %v", names, want)
	}
	if math.Abs(s-rs[0].Score) > 1e-12*s {
		t.Errorf("BM25 times factors %v, score %v", s, rs[0].Score)
	}
}
