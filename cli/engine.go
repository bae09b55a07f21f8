package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/internal/guard"
	"github.com/bbengine/bbengine/proxy/breaker"
	ucli "github.com/urfave/cli/v2"
)

// openReader returns what answers queries about the data directory: the
// running proxy's query endpoint when a proxy owns the directory, else
// the engine opened here and caught up with the WAL. close releases it.
func openReader(c *ucli.Context) (engine.Reader, func() error, error) {
	dir := c.String("dir")
	if r := runningProxy(dir); r != nil {
		return r, func() error { return nil }, nil
	}
	e, err := openEngine(c.Context, dir)
	if err != nil {
		return nil, nil, err
	}
	return e, e.Close, nil
}

// runningProxy returns a client of the proxy that owns dir, or nil when
// none does. A proxy that is starting holds the directory a moment
// before it writes its endpoint: it waits for that briefly.
func runningProxy(dir string) *remote {
	for deadline := time.Now().Add(3 * time.Second); ; {
		h, held, err := engine.ReadHolder(dir)
		if err != nil || !held {
			return nil
		}
		if h.Addr != "" {
			return &remote{addr: h.Addr, token: h.Token, pid: h.PID, proxy: h.Proxy}
		}
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// openEngine opens the data directory's engine and derives what the WAL
// holds beyond the applied offset.
func openEngine(ctx context.Context, dir string) (*engine.Engine, error) {
	e, err := engine.Open(dir, nil)
	if err != nil {
		var le *engine.LockedError
		if errors.As(err, &le) {
			return nil, fmt.Errorf("%w; it serves no queries (no endpoint in the lock file; a proxy may still be rebuilding), so stop it or retry later", err)
		}
		return nil, err
	}
	if _, err := e.CatchUp(ctx); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// remote is a Reader that asks a running proxy over loopback HTTP.
type remote struct {
	addr, token string
	pid         int
	// proxy is the address of the owner's recording proxy, if it runs one.
	proxy string
}

func (r *remote) get(path string, q url.Values, v any) error {
	return r.do(http.MethodGet, path, q, nil, v)
}

// do sends a request with an optional JSON body and decodes the JSON
// answer into v; an error answer becomes an error (wrapping
// engine.ErrNotFound for a 404).
func (r *remote) do(method, path string, q url.Values, body []byte, v any) error {
	return r.doContext(context.Background(), method, path, q, body, v)
}

// doContext is do within ctx: the hook gives up on a proxy that does not
// answer in time.
func (r *remote) doContext(ctx context.Context, method, path string, q url.Values, body []byte, v any) error {
	u := "http://" + r.addr + path
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+r.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("ask the running proxy (pid %d) at %s: %w", r.pid, r.addr, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	if err != nil {
		return fmt.Errorf("ask the running proxy (pid %d): %w", r.pid, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error    string `json:"error"`
			NotFound bool   `json:"not_found"`
		}
		if json.Unmarshal(b, &e) == nil && e.Error != "" {
			if e.NotFound {
				return fmt.Errorf("%w: %s", engine.ErrNotFound, strings.TrimPrefix(e.Error, engine.ErrNotFound.Error()+": "))
			}
			return fmt.Errorf("the running proxy (pid %d): %s", r.pid, e.Error)
		}
		return fmt.Errorf("the running proxy (pid %d) at %s answered %s", r.pid, r.addr, resp.Status)
	}
	return json.Unmarshal(b, v)
}

func (r *remote) Sessions(f engine.SessionFilter) ([]engine.Session, error) {
	q := url.Values{"fresh": {"1"}}
	if f.Since != 0 {
		q.Set("since", strconv.FormatInt(f.Since, 10))
	}
	if f.Agent != "" {
		q.Set("agent", f.Agent)
	}
	var out []engine.Session
	return out, r.get("/v1/sessions", q, &out)
}

func (r *remote) Session(id string) (engine.Session, error) {
	var out engine.Session
	return out, r.get("/v1/sessions/"+url.PathEscape(id), url.Values{"fresh": {"1"}}, &out)
}

func (r *remote) Events(id string, f engine.EventFilter) ([]engine.Event, error) {
	q := url.Values{"fresh": {"1"}}
	if f.Task != "" {
		q.Set("task", f.Task)
	}
	if f.Thread != 0 {
		q.Set("thread", strconv.Itoa(f.Thread))
	}
	if f.After != 0 {
		q.Set("after", strconv.FormatUint(f.After, 10))
	}
	var out []engine.Event
	return out, r.get("/v1/sessions/"+url.PathEscape(id)+"/events", q, &out)
}

func (r *remote) Exchange(id uint64) (engine.Exchange, error) {
	var out engine.Exchange
	return out, r.get("/v1/exchanges/"+strconv.FormatUint(id, 10), url.Values{"fresh": {"1"}}, &out)
}

// Breakers returns a session's breaker records from the running proxy.
func (r *remote) Breakers(id string) ([]engine.BreakerRecord, error) {
	var out []engine.BreakerRecord
	return out, r.get("/v1/breaker/"+url.PathEscape(id)+"/records", url.Values{"fresh": {"1"}}, &out)
}

// errBadQuery marks a malformed query; errBadRequest a malformed request
// body. Both answer 400.
var (
	errBadQuery   = errors.New("bad query")
	errBadRequest = errors.New("bad request")
)

// queryServer serves an engine's Reader on loopback for commands run
// while the proxy owns the directory. Every request must carry the token
// written in the lock file (readable only by the directory's owner). The
// harness API (harness.go) answers its routes with the same handlers.
type queryServer struct {
	e   *engine.Engine
	mem *localMemory
	// brk is the proxy's circuit breaker.
	brk   *breaker.Breaker
	token string
	// guard refuses requests for a host other than loopback and those
	// of web pages whose origin is not allowed.
	guard *guard.Policy
	srv   *http.Server
	ln    net.Listener
}

// startQueryServer serves the query endpoint on a loopback port and
// writes its address into the lock file. The server is returned even
// when it could not listen, with the error: the harness API still uses
// its handlers.
func startQueryServer(e *engine.Engine, mem *localMemory, brk *breaker.Breaker, pol *guard.Policy) (*queryServer, error) {
	var b [16]byte
	rand.Read(b[:])
	q := &queryServer{e: e, mem: mem, brk: brk, token: hex.EncodeToString(b[:]), guard: pol}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return q, fmt.Errorf("query endpoint: %w", err)
	}
	q.ln = ln
	q.srv = &http.Server{Handler: q, ReadHeaderTimeout: 10 * time.Second}
	go q.srv.Serve(ln)
	if err := e.SetEndpoint(ln.Addr().String(), q.token); err != nil {
		q.Close()
		q.srv = nil
		return q, err
	}
	return q, nil
}

func (q *queryServer) Close() error {
	if q.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return q.srv.Shutdown(ctx)
}

// authorized reports whether r carries the bearer token; when it does
// not it answers 401 with hint, which says where the token is.
func authorized(w http.ResponseWriter, r *http.Request, token, hint string) bool {
	if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte("Bearer "+token)) == 1 {
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("WWW-Authenticate", "Bearer")
	w.WriteHeader(http.StatusUnauthorized)
	json.NewEncoder(w).Encode(map[string]string{"error": "bad or missing bearer token (" + hint + ")"})
	return false
}

// replier returns the function handlers answer with: v as JSON, or the
// error as {"error": …} with 404 for engine.ErrNotFound, 400 for a bad
// query or body, 405 for a wrong method, else 500.
func replier(w http.ResponseWriter) func(any, error) {
	return func(v any, err error) {
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			status := http.StatusInternalServerError
			var me *methodError
			switch {
			case errors.Is(err, engine.ErrNotFound):
				status = http.StatusNotFound
			case errors.Is(err, errBadQuery), errors.Is(err, errBadRequest):
				status = http.StatusBadRequest
			case errors.As(err, &me):
				status = http.StatusMethodNotAllowed
				w.Header().Set("Allow", me.allow)
			}
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(map[string]any{"error": err.Error(), "not_found": status == http.StatusNotFound})
			return
		}
		json.NewEncoder(w).Encode(v)
	}
}

// noRoute is the error of a request for a path nothing serves.
func noRoute(r *http.Request) error {
	return fmt.Errorf("%w: no route %s %s", engine.ErrNotFound, r.Method, r.URL.Path)
}

// methodError answers 405: the route takes another method.
type methodError struct{ method, path, allow string }

func (e *methodError) Error() string {
	return fmt.Sprintf("%s %s: use %s", e.method, e.path, e.allow)
}

func (q *queryServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := q.guard.Check(r); err != nil {
		guard.WriteRefusal(w, err.(*guard.Refusal))
		return
	}
	if !authorized(w, r, q.token, "it is in the data directory's engine.lock") {
		return
	}
	reply := replier(w)
	qv := r.URL.Query()
	if qv.Get("fresh") != "" {
		// Let the canonicalizer reach what the WAL holds now.
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		q.e.WaitCaughtUp(ctx)
		cancel()
	}
	path := strings.TrimPrefix(r.URL.Path, "/v1/")
	if q.serveHarness(w, r, path, reply) {
		return
	}
	if path == "imports" || strings.HasPrefix(path, "imports/") {
		q.serveImports(w, r, path, reply)
		return
	}
	if strings.HasPrefix(path, "memory/") {
		q.serveMemory(w, r, path, reply)
		return
	}
	if path == "breaker" || strings.HasPrefix(path, "breaker/") {
		q.serveBreaker(w, r, path, reply)
		return
	}
	switch {
	case path == "sessions":
		since, _ := strconv.ParseInt(qv.Get("since"), 10, 64)
		reply(q.e.Sessions(engine.SessionFilter{Since: since, Agent: qv.Get("agent")}))
	case strings.HasPrefix(path, "sessions/") && strings.HasSuffix(path, "/events"):
		id, _ := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(path, "sessions/"), "/events"))
		thread, _ := strconv.Atoi(qv.Get("thread"))
		after, _ := strconv.ParseUint(qv.Get("after"), 10, 64)
		reply(q.e.Events(id, engine.EventFilter{Task: qv.Get("task"), Thread: thread, After: after}))
	case strings.HasPrefix(path, "sessions/"):
		id, _ := url.PathUnescape(strings.TrimPrefix(path, "sessions/"))
		reply(q.e.Session(id))
	case strings.HasPrefix(path, "exchanges/"):
		id, err := strconv.ParseUint(strings.TrimPrefix(path, "exchanges/"), 10, 64)
		if err != nil {
			reply(nil, fmt.Errorf("%w: exchange id %q is not a number", errBadQuery, strings.TrimPrefix(path, "exchanges/")))
			return
		}
		reply(q.e.Exchange(id))
	default:
		reply(nil, noRoute(r))
	}
}

// writeJSON prints v as indented JSON.
func writeJSON(c *ucli.Context, v any) error {
	enc := json.NewEncoder(c.App.Writer)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
