package api_test

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/api/httpapi"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/index"
	"github.com/bbengine/bbengine/wal"
)

// openLocal opens a data directory in dir with a writable WAL and an
// index, and returns its service.
func openLocal(t *testing.T, dir string) (*api.Local, *engine.Engine) {
	t.Helper()
	log, err := wal.Open(filepath.Join(dir, "wal"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	e, err := engine.Open(dir, &engine.Options{WAL: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ix, err := index.Open(api.IndexDir(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return api.NewLocal(e, &api.LocalOptions{Index: ix, WAL: log}), e
}

func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestLocalAndRemoteAgree writes notes through the service in process
// and through its query endpoint (httpapi.Server on loopback, found by
// api.Dial in the lock file), and checks that both implementations of
// api.Service answer every read the same.
func TestLocalAndRemoteAgree(t *testing.T) {
	dir := t.TempDir()
	local, e := openLocal(t, dir)
	srv, err := httpapi.Start(e, local, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	remote := api.Dial(dir)
	if remote == nil {
		t.Fatal("Dial found no endpoint in the lock file")
	}

	// Writes through either implementation.
	if _, err := local.Note(api.Note{Op: "goal", Session: "s1", Text: "Ship the session cache", Source: "run"}); err != nil {
		t.Fatal(err)
	}
	n, err := remote.Note(api.Note{Op: "outcome", Session: "s1", TaskID: "t1", Status: "success", Text: "Wrote the ARC cache for the session store.",
		Files: []string{"store/cache.go"}, Source: "run"})
	if err != nil || n.Artifact != engine.OutcomeID("s1", "t1") {
		t.Fatalf("remote Note = %+v, %v", n, err)
	}
	if _, err := local.Note(api.Note{Op: "outcome", Session: "s1", TaskID: "t2", Status: "fail", Text: "The cache eviction test fails.", Source: "run"}); err != nil {
		t.Fatal(err)
	}

	// Blobs: the same bytes from both, and the same errors.
	text := strings.Repeat("a long tool output <&> \x00\xff\n", 1000)
	sum, err := e.Blobs().PutString(text)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []api.Service{local, remote} {
		if b, err := s.Blob(sum); err != nil || string(b) != text {
			t.Errorf("%T Blob: %d bytes, %v; want the %d put", s, len(b), err, len(text))
		}
		if _, err := s.Blob(strings.Repeat("0", 64)); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("%T Blob of no blob: %v, want engine.ErrNotFound", s, err)
		}
		if _, err := s.Blob("../../api.token"); !errors.Is(err, api.ErrBadQuery) {
			t.Errorf("%T Blob of a path: %v, want api.ErrBadQuery", s, err)
		}
	}

	for _, s := range []api.Service{local, remote} {
		if _, err := s.Get("ffffffffffff"); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("%T Get of an unknown id: %v, want engine.ErrNotFound", s, err)
		}
		if _, err := s.Search(api.SearchRequest{Text: "  "}); err == nil {
			t.Errorf("%T Search of nothing: no error", s)
		}
	}

	type answers struct {
		Cards    []engine.Card
		Results  []api.Result
		Artifact engine.Artifact
		Related  *api.Related
		List     []engine.Card
		Pack     any
		Sessions []engine.Session
	}
	ask := func(s api.Service) answers {
		t.Helper()
		var a answers
		var err error
		if a.Cards, err = s.Search(api.SearchRequest{Text: "ARC cache session store", K: 5}); err != nil || len(a.Cards) == 0 {
			t.Fatalf("%T Search: %v, %v", s, a.Cards, err)
		}
		if a.Results, err = s.Find(api.SearchRequest{Text: "cache", Explain: true}); err != nil {
			t.Fatalf("%T Find: %v", s, err)
		}
		if a.Artifact, err = s.Get(a.Cards[0].ID[:10]); err != nil || a.Artifact.ID != a.Cards[0].ID {
			t.Fatalf("%T Get by prefix: %v, %v", s, a.Artifact.ID, err)
		}
		if a.Related, err = s.Related(api.RelatedRequest{ID: a.Cards[0].ID, K: 3}); err != nil {
			t.Fatalf("%T Related: %v", s, err)
		}
		if a.List, err = s.List(api.ListRequest{Session: "s1", Types: []engine.ArtifactType{engine.ArtifactOutcome}}); err != nil {
			t.Fatalf("%T List: %v", s, err)
		}
		p, err := s.Context(api.ContextRequest{Session: "s1", Task: "fix the cache eviction"})
		if err != nil || p.Goal != "Ship the session cache" {
			t.Fatalf("%T Context: %+v, %v", s, p, err)
		}
		a.Pack = asJSON(t, p)
		if a.Sessions, err = s.Sessions(api.SessionsRequest{}); err != nil {
			t.Fatalf("%T Sessions: %v", s, err)
		}
		return a
	}
	// Scores are left out: each note re-indexes its session's artifacts,
	// and BM25's statistics count the replaced documents until Bluge's
	// background merge drops them, so a score moves a little between two
	// asks. The order, the cards and the explanations' terms must not.
	unscored := func(a answers) answers {
		for i := range a.Cards {
			a.Cards[i].Score = 0
		}
		for i := range a.Results {
			if a.Results[i].Explain == nil || len(a.Results[i].Explain.Terms) == 0 {
				t.Errorf("Find with Explain: result %s has no explanation", a.Results[i].ID)
			}
			a.Results[i].Score, a.Results[i].Explain = 0, nil
		}
		return a
	}
	want, got := unscored(ask(local)), unscored(ask(remote))
	if len(want.List) != 2 {
		t.Errorf("List of the outcomes: %+v, want the two tasks", want.List)
	}
	g, w := asJSON(t, got).(map[string]any), asJSON(t, want).(map[string]any)
	for k := range w {
		if !reflect.DeepEqual(g[k], w[k]) {
			t.Errorf("%s: api.Remote answers\n%v\napi.Local\n%v", k, g[k], w[k])
		}
	}

	// A correction through the endpoint is in force for both on return.
	if _, err := remote.Correct(api.Correction{Op: "forget", ID: n.Artifact, Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []api.Service{local, remote} {
		cards, err := s.Search(api.SearchRequest{Text: "ARC cache session store"})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cards {
			if c.ID == n.Artifact {
				t.Errorf("%T Search after forget still finds %s", s, c.ID)
			}
		}
	}
}
