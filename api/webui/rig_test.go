package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/index"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/wal"
)

// testCookie returns the cookie of a browser signed in now.
func (u *UI) testCookie() *http.Cookie {
	return &http.Cookie{Name: u.cookie, Value: u.newSession(time.Now())}
}

// testToken is the UI token of the tests.
const testToken = "0123456789abcdef0123456789abcdef"

// xss is tool output and model text that must render inert.
const xss = `<script>alert(1)</script> <a href="javascript:alert(1)">click</a> <img src=x onerror=alert(1)>`

// rig records traffic through a real proxy on 127.0.0.1 into a WAL in a
// temp data directory, against a fake Anthropic upstream; then a real
// engine derives it and the UI serves it from an httptest server.
type rig struct {
	dir   string
	log   *wal.Log
	p     *proxy.Proxy
	front *httptest.Server // the proxy
	e     *engine.Engine
	ix    *index.Index
	svc   *api.Local // over e and ix, as the proxy's
	ui    *UI
	srv   *httptest.Server // the UI
}

// newRig starts the proxy and its fake upstream.
func newRig(t testing.TB) *rig {
	t.Helper()
	r := &rig{dir: t.TempDir()}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body struct {
			Messages []json.RawMessage `json:"messages"`
		}
		json.NewDecoder(req.Body).Decode(&body)
		text, model := "Done.", "claude-sonnet-4-5"
		if m := req.Header.Get("X-Test-Model"); m != "" {
			model = m
		}
		switch reply := req.Header.Get("X-Test-Reply"); {
		case strings.Contains(reply, "xss"):
			text = "Here is what the tool said: " + xss
		case strings.HasPrefix(reply, "text:"):
			text = strings.TrimPrefix(reply, "text:")
		}
		b, _ := json.Marshal(map[string]any{
			"id": fmt.Sprintf("msg_%d", len(body.Messages)), "type": "message", "role": "assistant", "model": model,
			"content":     []any{map[string]any{"type": "text", "text": text}},
			"stop_reason": "end_turn", "usage": map[string]any{"input_tokens": 120, "output_tokens": 7},
		})
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}))
	t.Cleanup(up.Close)
	var err error
	r.log, err = wal.Open(filepath.Join(r.dir, "wal"), &wal.Options{Sync: wal.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.log.Close() })
	r.p, err = proxy.New(r.log, &proxy.Options{Upstreams: map[string]string{"anthropic": up.URL}, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	r.front = httptest.NewServer(r.p)
	t.Cleanup(func() { r.front.Close(); r.p.Close() })
	return r
}

// send posts one Messages request of session with messages (JSON) through
// the proxy; reply "xss" makes the fake answer with the XSS text,
// "text:<t>" with t.
func (r *rig) send(t testing.TB, session, messages, reply string) {
	t.Helper()
	r.sendModel(t, session, "", messages, reply)
}

// sendModel is send with the fake answering as model (its default when
// model is "").
func (r *rig) sendModel(t testing.TB, session, model, messages, reply string) {
	t.Helper()
	body := `{"model":"claude-sonnet-4-5","max_tokens":256,"messages":` + messages + `}`
	req, _ := http.NewRequest("POST", r.front.URL+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "test-key")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("X-Bb-Session-Id", session)
	req.Header.Set("X-Test-Reply", reply)
	if model != "" {
		req.Header.Set("X-Test-Model", model)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("proxy answered %d", resp.StatusCode)
	}
}

// serve stops the proxy (its recorder flushes), derives the WAL with a
// real engine, brings a real Bluge index up to its memory and serves the
// UI over both, as the proxy does.
func (r *rig) serve(t testing.TB) {
	t.Helper()
	r.front.Close()
	if err := r.p.Close(); err != nil {
		t.Fatal(err)
	}
	var err error
	r.e, err = engine.Open(r.dir, &engine.Options{WAL: r.log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.e.Close() })
	if _, err := r.e.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.ix, err = index.Open(api.IndexDir(r.dir), &index.Options{Keys: r.e.Keys()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.ix.Close() })
	r.svc = api.NewLocal(r.e, &api.LocalOptions{Index: r.ix, WAL: r.log})
	if err := r.svc.Sync(); err != nil {
		t.Fatal(err)
	}
	r.ui, err = New(&Options{Service: r.svc, WAL: r.log, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	r.srv = httptest.NewServer(r.ui)
	t.Cleanup(func() { r.ui.Close(); r.srv.Close() })
}

// client returns an HTTP client signed in to the UI (through the token
// URL), which does not follow redirects.
func (r *rig) client(t testing.TB) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(r.srv.URL + Prefix + "?token=" + Ticket(testToken, time.Now()))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d", resp.StatusCode)
	}
	return c
}

// get fetches path with c and returns the status and body.
func get(t testing.TB, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// xssSession records a session whose tool output and reply hold xss.
func (r *rig) xssSession(t testing.TB, session string) {
	t.Helper()
	args, _ := json.Marshal(map[string]string{"command": "cat page.html", "note": xss})
	result, _ := json.Marshal(xss)
	msgs := `[{"role":"user","content":"show me page.html ` + jsonEsc(xss) + `"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":` + string(args) + `}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":` + string(result) + `}]}]`
	r.send(t, session, msgs, "xss")
}

// jsonEsc returns s escaped for the inside of a JSON string.
func jsonEsc(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// longMessages returns a conversation of n messages, user and assistant
// in turn.
func longMessages(n int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		fmt.Fprintf(&b, `{"role":%q,"content":"message %d: the cache keeps entries for an hour; line two of it"}`, role, i)
	}
	b.WriteByte(']')
	return b.String()
}
