package httpapi

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/internal/guard"
	"github.com/bbengine/bbengine/proxy/breaker"
)

// errBadQuery and errBadRequest answer 400.
var (
	errBadQuery   = api.ErrBadQuery
	errBadRequest = api.ErrBadRequest
)

// Server is the query endpoint: it serves a proxy's engine and memory on
// loopback to api.Remote, for commands run while the proxy owns the
// directory. Every request must carry the token written in the lock file
// (readable only by the directory's owner). The harness API (Harness)
// answers its routes with the same handlers.
type Server struct {
	e   *engine.Engine
	mem *api.Local
	// brk is the proxy's circuit breaker.
	brk   *breaker.Breaker
	token string
	// guard refuses requests for a host other than loopback and those
	// of web pages whose origin is not allowed.
	guard *guard.Policy
	srv   *http.Server
	ln    net.Listener
}

// Start serves the query endpoint of e on a loopback port and writes its
// address into the lock file. mem answers the memory routes (nil: they
// fail), brk the breaker routes (nil: this process runs no breaker), and
// pol refuses requests for a host other than loopback and those of web
// pages whose origin is not allowed. The server is returned even when it
// could not listen, with the error: the harness API still uses its
// handlers.
func Start(e *engine.Engine, mem *api.Local, brk *breaker.Breaker, pol *guard.Policy) (*Server, error) {
	var b [16]byte
	rand.Read(b[:])
	q := &Server{e: e, mem: mem, brk: brk, token: hex.EncodeToString(b[:]), guard: pol}
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

// Close stops the server (bounded). It is safe to call twice.
func (q *Server) Close() error {
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

func (q *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
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
	if path == "backup" {
		q.serveBackup(w, r, reply)
		return
	}
	if strings.HasPrefix(path, "storage/") {
		q.serveStorage(w, r, path, reply)
		return
	}
	if path == "usage" {
		q.serveUsage(w, r, reply)
		return
	}
	if path == "breaker" || strings.HasPrefix(path, "breaker/") {
		q.serveBreaker(w, r, path, reply)
		return
	}
	switch {
	case path == "sessions":
		since, _ := strconv.ParseInt(qv.Get("since"), 10, 64)
		reply(q.e.Sessions(api.SessionsRequest{Since: since, Agent: qv.Get("agent"), Unmerged: qv.Get("unmerged") == "1"}))
	case strings.HasPrefix(path, "sessions/") && strings.HasSuffix(path, "/events"):
		id, _ := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(path, "sessions/"), "/events"))
		thread, _ := strconv.Atoi(qv.Get("thread"))
		after, _ := strconv.ParseUint(qv.Get("after"), 10, 64)
		reply(q.e.Events(id, engine.EventFilter{Task: qv.Get("task"), Thread: thread, After: after, Raw: qv.Get("raw") == "1"}))
	case strings.HasPrefix(path, "sessions/"):
		id, _ := url.PathUnescape(strings.TrimPrefix(path, "sessions/"))
		reply(q.e.Session(id))
	case strings.HasPrefix(path, "blobs/"):
		st := q.mem
		if st == nil {
			st = api.NewLocal(q.e, nil)
		}
		reply(st.Blob(strings.TrimPrefix(path, "blobs/")))
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

// serveUsage answers bbengine usage (api.Service.Usage): POST /v1/usage
// with an api.UsageRequest.
func (q *Server) serveUsage(w http.ResponseWriter, r *http.Request, reply func(any, error)) {
	if r.Method != http.MethodPost {
		reply(nil, &methodError{r.Method, r.URL.Path, http.MethodPost})
		return
	}
	var req api.UsageRequest
	// A price table can be long: 8 MiB is far more than every model.
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<20)).Decode(&req); err != nil {
		reply(nil, fmt.Errorf("%w: usage: %v", errBadRequest, err))
		return
	}
	st := q.mem
	if st == nil {
		st = api.NewLocal(q.e, nil)
	}
	reply(st.Usage(req))
}

// serveStorage answers bbengine du and gc (api.Storage) for the data
// directory this process owns.
func (q *Server) serveStorage(w http.ResponseWriter, r *http.Request, path string, reply func(any, error)) {
	st := q.mem
	if st == nil {
		st = api.NewLocal(q.e, nil)
	}
	switch path {
	case "storage/du":
		if r.Method != http.MethodGet {
			reply(nil, &methodError{r.Method, r.URL.Path, http.MethodGet})
			return
		}
		reply(st.DU(api.DURequest{}))
	case "storage/gc":
		if r.Method != http.MethodPost {
			reply(nil, &methodError{r.Method, r.URL.Path, http.MethodPost})
			return
		}
		var req api.GCRequest
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
			reply(nil, fmt.Errorf("%w: gc: %v", errBadRequest, err))
			return
		}
		reply(st.GC(req))
	default:
		reply(nil, noRoute(r))
	}
}
