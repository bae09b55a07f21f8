package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/index"
	"github.com/bbengine/bbengine/wal"
)

// TestServerAnswers checks the query endpoint's contract over a real
// engine and index: the bearer token, the loopback Host, and the status
// each kind of error answers with.
func TestServerAnswers(t *testing.T) {
	dir := t.TempDir()
	log, err := wal.Open(filepath.Join(dir, "wal"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	e, err := engine.Open(dir, &engine.Options{WAL: log})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ix, err := index.Open(api.IndexDir(dir), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	srv, err := Start(e, api.NewLocal(e, &api.LocalOptions{Index: ix, WAL: log}), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	h, held, err := engine.ReadHolder(dir)
	if err != nil || !held || h.Addr == "" || h.Token == "" {
		t.Fatalf("lock file: %+v %v %v", h, held, err)
	}

	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "keep"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method, path, body, host, token string
		code                            int
		want                            string
	}{
		{"GET", "/v1/sessions", "", "", "nope", 401, "bad or missing bearer token"},
		{"GET", "/v1/sessions", "", "evil.example", h.Token, 421, ""},
		{"POST", "/v1/goal", `{"session":"s1","goal":"Ship the cache"}`, "", h.Token, 200, `"op":"goal"`},
		{"POST", "/v1/goal", `{"session":"s1","goal":"x","colour":"red"}`, "", h.Token, 400, `unknown field \"colour\" (the fields are session, goal)`},
		{"GET", "/v1/goal", "", "", h.Token, 405, "GET /v1/goal: use POST"},
		{"GET", "/v1/memory/search?q=", "", "", h.Token, 400, "an empty query"},
		{"GET", "/v1/memory/artifacts/ffffffffffff", "", "", h.Token, 404, `"not_found":true`},
		{"GET", "/v1/exchanges/x", "", "", h.Token, 400, `bad query: exchange id \"x\" is not a number`},
		{"GET", "/v1/nothing", "", "", h.Token, 404, "no route GET /v1/nothing"},
		{"GET", "/v1/breaker", "", "", h.Token, 500, "this process runs no circuit breaker"},
		{"POST", "/v1/pack", `{"session":"s1"}`, "", h.Token, 200, `"goal":"Ship the cache"`},
		{"GET", "/v1/backup", "", "", h.Token, 405, "GET /v1/backup: use POST"},
		{"POST", "/v1/backup", `{"dest":"relative/dir"}`, "", h.Token, 400, `the destination \"relative/dir\" must be an absolute path`},
		{"POST", "/v1/backup", `{"dest":"` + full + `"}`, "", h.Token, 400, "is not empty (it holds keep)"},
		{"POST", "/v1/backup", `{"dest":"` + filepath.Join(t.TempDir(), "b") + `","raw":true}`, "", h.Token, 200, `"format":"bbengine-backup/1"`},
	} {
		req, err := http.NewRequest(tc.method, "http://"+h.Addr+tc.path, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		if tc.host != "" {
			req.Host = tc.host
		}
		req.Header.Set("Authorization", "Bearer "+tc.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s: %d %s, want %d with %q", tc.method, tc.path, resp.StatusCode, b, tc.code, tc.want)
		}
		if tc.code != 421 && !json.Valid(b) {
			t.Errorf("%s %s: the answer is not JSON: %s", tc.method, tc.path, b)
		}
	}
}

// TestBreakerRecordsEverySession: Service.Breakers with no session gives
// every session's records, in process and through the query endpoint
// (api.Remote), and a session's own stay its own.
func TestBreakerRecordsEverySession(t *testing.T) {
	dir := t.TempDir()
	log, err := wal.Open(filepath.Join(dir, "wal"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	for i, s := range []string{"sess-b", "sess-a", "sess-b"} {
		p, err := exchange.AppendBreaker(nil, exchange.Breaker{Op: "trip", Session: s, State: exchange.BreakerOpen, From: exchange.BreakerClosed,
			Reason: "stagnation", Detail: "the same call 3 times", Time: int64(i + 1), Source: "proxy"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := log.Append(wal.Record{Kind: frame.KindBreaker, Time: int64(i + 1), Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	e, err := engine.Open(dir, &engine.Options{WAL: log})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.CatchUp(t.Context()); err != nil {
		t.Fatal(err)
	}
	local := api.NewLocal(e, nil)
	srv, err := Start(e, local, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	remote := api.Dial(dir)
	if remote == nil {
		t.Fatal("no server in the lock file")
	}
	for name, svc := range map[string]api.Service{"local": local, "remote": remote} {
		all, err := svc.Breakers("")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got []string
		for _, r := range all {
			got = append(got, fmt.Sprintf("%s@%d", r.Session, r.Time))
		}
		if want := []string{"sess-a@2", "sess-b@1", "sess-b@3"}; !slices.Equal(got, want) {
			t.Errorf("%s: every session's records %v, want %v", name, got, want)
		}
		one, err := svc.Breakers("sess-a")
		if err != nil || len(one) != 1 || one[0].Session != "sess-a" {
			t.Errorf("%s: sess-a's records %+v, %v", name, one, err)
		}
	}
}
