package cli

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/wal"
)

// TestControlSurfacesGuarded: the harness API and the proxy's query
// endpoint answer only loopback Host names (421 otherwise: DNS
// rebinding) and no web page whose origin --allow-origin does not name
// (403), even with the right token; and every state-changing endpoint
// refuses a request without the token (401) and writes nothing.
func TestControlSurfacesGuarded(t *testing.T) {
	up := sseUpstream(t)
	dir := t.TempDir()
	_, apiAddr, _ := startProxy(t, dir, proxy.Options{Upstreams: map[string]string{"anthropic": up.URL},
		AllowOrigins: []string{"http://localhost:5173"}}, true)
	b, err := os.ReadFile(filepath.Join(dir, "api.token"))
	if err != nil {
		t.Fatal(err)
	}
	apiToken := strings.TrimSpace(string(b))
	var h engine.Holder
	for deadline := time.Now().Add(10 * time.Second); h.Addr == ""; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the proxy wrote no query endpoint into the lock file")
		}
		h, _, _ = engine.ReadHolder(dir)
	}
	do := func(addr, method, path, token, host string, hdr map[string]string, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+addr+path, strings.NewReader(body))
		if host != "" {
			req.Host = host
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	surfaces := []struct {
		name, addr, token string
		writes            []string // POST paths that change state
	}{
		{"harness API", apiAddr, apiToken, []string{"/v1/goal", "/v1/outcomes", "/v1/checkpoints"}},
		{"query endpoint", h.Addr, h.Token, []string{"/v1/goal", "/v1/outcomes", "/v1/checkpoints",
			"/v1/memory/corrections", "/v1/memory/notes", "/v1/breaker/s1/reset", "/v1/breaker/s1/trip", "/v1/imports"}},
	}
	walEnd := func() uint64 {
		t.Helper()
		l, err := wal.Open(filepath.Join(dir, "wal"), &wal.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		end, err := l.End()
		if err != nil {
			t.Fatal(err)
		}
		return end
	}
	before := walEnd()
	for _, s := range surfaces {
		search := "/v1/search?q=anything"
		if code, b := do(s.addr, "GET", search, s.token, "", nil, ""); code != http.StatusOK {
			t.Fatalf("%s: a plain request: %d %s", s.name, code, b)
		}
		for _, host := range []string{"evil.example", "evil.example:" + strings.Split(s.addr, ":")[1], "attacker.localhost.example"} {
			if code, b := do(s.addr, "GET", search, s.token, host, nil, ""); code != http.StatusMisdirectedRequest || !strings.Contains(b, "127.0.0.1") {
				t.Errorf("%s: Host %s: %d %s, want 421", s.name, host, code, b)
			}
		}
		if code, b := do(s.addr, "GET", search, s.token, "localhost:1", nil, ""); code != http.StatusOK {
			t.Errorf("%s: Host localhost: %d %s", s.name, code, b)
		}
		for _, hdr := range []map[string]string{{"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}} {
			if code, b := do(s.addr, "GET", search, s.token, "", hdr, ""); code != http.StatusForbidden {
				t.Errorf("%s: %v: %d %s, want 403", s.name, hdr, code, b)
			}
			if code, b := do(s.addr, "POST", "/v1/goal", s.token, "", hdr, `{"session":"s1","goal":"from a web page"}`); code != http.StatusForbidden {
				t.Errorf("%s: goal with %v: %d %s, want 403", s.name, hdr, code, b)
			}
		}
		if code, b := do(s.addr, "GET", search, s.token, "", map[string]string{"Origin": "http://localhost:5173"}, ""); code != http.StatusOK {
			t.Errorf("%s: the allowed origin: %d %s", s.name, code, b)
		}
		for _, path := range s.writes {
			for _, token := range []string{"", "wrong-token-0123456789"} {
				if code, b := do(s.addr, "POST", path, token, "", nil, `{"session":"s1","goal":"g","summary":"x","task_id":"t","status":"success"}`); code != http.StatusUnauthorized {
					t.Errorf("%s: POST %s with token %q: %d %s, want 401", s.name, path, token, code, b)
				}
			}
		}
	}
	if after := walEnd(); after != before {
		t.Errorf("refused requests wrote to the WAL: end %d -> %d", before, after)
	}
}
