package httpapi

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/internal/guard"
	"github.com/bbengine/bbengine/pack"
)

// The harness API is what a harness driving agents calls (spec 12.4):
// build a context pack, record a task outcome, checkpoint a session, set
// its goal, search and get. It is plain JSON over HTTP on a loopback
// address of its own (bbengine proxy --api), behind a bearer token from
// the configuration. Its routes are served by the query server's
// handlers, so the proxy's query endpoint answers them too.
//
//	POST /v1/pack         {session, task, task_id, budget}              the pack, plus "markdown"
//	POST /v1/outcomes     {session, task_id, status, summary, files, exit_code}
//	POST /v1/checkpoints  {session, summary}
//	POST /v1/goal         {session, goal}
//	GET  /v1/search?q=&session=&task=&k=&type=                          cards
//	GET  /v1/artifacts/ID                                               the artifact, evidence and provenance
//
// Errors are {"error": "..."} with 400 (a bad body or query, naming the
// field), 401 (no or a wrong token), 403 (a web page's origin not
// allowed by --allow-origin), 404 (an unknown artifact, session or
// route), 405 (a wrong method), 421 (a Host other than localhost,
// 127.0.0.1 or [::1]: DNS rebinding).

// PackReply is a pack with its Markdown, as the harness API answers.
type PackReply struct {
	*pack.Pack
	Markdown string `json:"markdown"`
}

// outcomeRequest is the body of POST /v1/outcomes.
type outcomeRequest struct {
	Session  string   `json:"session"`
	TaskID   string   `json:"task_id"`
	Status   string   `json:"status"`
	Summary  string   `json:"summary"`
	Files    []string `json:"files"`
	ExitCode *int     `json:"exit_code"`
}

// checkpointRequest is the body of POST /v1/checkpoints.
type checkpointRequest struct {
	Session string `json:"session"`
	Summary string `json:"summary"`
}

// goalRequest is the body of POST /v1/goal.
type goalRequest struct {
	Session string `json:"session"`
	Goal    string `json:"goal"`
}

// serveHarness answers the harness API's routes and reports whether path
// is one of them. Reads wait (briefly) for the engine to reach the WAL's
// end, so that what a harness recorded or proxied just before is seen.
func (q *Server) serveHarness(w http.ResponseWriter, r *http.Request, path string, reply func(any, error)) bool {
	method := http.MethodPost
	switch {
	case path == "pack", path == "outcomes", path == "checkpoints", path == "goal":
	case path == "search", strings.HasPrefix(path, "artifacts/"):
		method = http.MethodGet
	default:
		return false
	}
	if r.Method != method {
		reply(nil, &methodError{r.Method, r.URL.Path, method})
		return true
	}
	m := q.mem
	if m == nil {
		reply(nil, errors.New("memory is not open in the proxy (see its log)"))
		return true
	}
	if method == http.MethodGet || path == "pack" {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		q.e.WaitCaughtUp(ctx)
		cancel()
		if err := m.Sync(); err != nil {
			reply(nil, err)
			return true
		}
	}
	qv := r.URL.Query()
	switch path {
	case "pack":
		var req api.ContextRequest
		if err := decodeBody(r, &req, 64<<10); err != nil {
			reply(nil, err)
			return true
		}
		if err := required("session", req.Session); err != nil {
			reply(nil, err)
			return true
		}
		if req.Budget < 0 {
			reply(nil, fmt.Errorf("%w: budget %d: want a positive number of tokens, or 0 for the default", errBadRequest, req.Budget))
			return true
		}
		p, err := m.Context(req)
		if err != nil {
			reply(nil, err)
			return true
		}
		reply(PackReply{p, p.Markdown()}, nil)
	case "outcomes":
		var req outcomeRequest
		if err := decodeBody(r, &req, exchange.MaxNote); err != nil {
			reply(nil, err)
			return true
		}
		err := cmp.Or(required("session", req.Session), required("task_id", req.TaskID), required("status", req.Status),
			maxLen("summary", req.Summary, exchange.MaxNoteText))
		if err != nil {
			reply(nil, err)
			return true
		}
		reply(m.Note(exchange.Note{Op: "outcome", Session: req.Session, TaskID: req.TaskID, Status: req.Status, Text: req.Summary,
			Files: req.Files, Exit: req.ExitCode, Source: "harness"}))
	case "checkpoints":
		var req checkpointRequest
		if err := decodeBody(r, &req, exchange.MaxNote); err != nil {
			reply(nil, err)
			return true
		}
		if err := cmp.Or(required("session", req.Session), required("summary", req.Summary), maxLen("summary", req.Summary, exchange.MaxNoteText)); err != nil {
			reply(nil, err)
			return true
		}
		reply(m.Note(exchange.Note{Op: "checkpoint", Session: req.Session, Text: req.Summary, Source: "harness"}))
	case "goal":
		var req goalRequest
		if err := decodeBody(r, &req, 64<<10); err != nil {
			reply(nil, err)
			return true
		}
		if err := cmp.Or(required("session", req.Session), required("goal", req.Goal), maxLen("goal", req.Goal, exchange.MaxGoal)); err != nil {
			reply(nil, err)
			return true
		}
		reply(m.Note(exchange.Note{Op: "goal", Session: req.Session, Text: req.Goal, Source: "harness"}))
	case "search":
		k := 0
		if v := qv.Get("k"); v != "" {
			var err error
			if k, err = strconv.Atoi(v); err != nil || k < 0 {
				reply(nil, fmt.Errorf("%w: k %q: want a positive number of results", errBadQuery, v))
				return true
			}
		}
		var types []engine.ArtifactType
		for _, t := range qv["type"] {
			if !engine.ArtifactType(t).Valid() {
				reply(nil, fmt.Errorf("%w: type %q (want one of %v)", errBadQuery, t, engine.ArtifactTypes))
				return true
			}
			types = append(types, engine.ArtifactType(t))
		}
		if strings.TrimSpace(qv.Get("q")) == "" {
			reply(nil, fmt.Errorf("%w: q: required (the words to search for)", errBadQuery))
			return true
		}
		reply(m.Search(api.SearchRequest{Text: qv.Get("q"), Session: qv.Get("session"), Task: qv.Get("task"), K: k, Types: types}))
	default:
		id, err := url.PathUnescape(strings.TrimPrefix(path, "artifacts/"))
		if err != nil || id == "" {
			reply(nil, fmt.Errorf("%w: artifact id %q", errBadQuery, strings.TrimPrefix(path, "artifacts/")))
			return true
		}
		reply(m.Get(id))
	}
	return true
}

// required reports a missing field.
func required(field, v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("%w: %s: required", errBadRequest, field)
	}
	return nil
}

// maxLen reports a field over its limit in bytes.
func maxLen(field, v string, n int) error {
	if len(v) > n {
		return fmt.Errorf("%w: %s: %d bytes (at most %d)", errBadRequest, field, len(v), n)
	}
	return nil
}

// decodeBody decodes a request body that must be one JSON object of the
// type of v, with no unknown fields, of at most limit bytes. Its errors
// wrap errBadRequest and name the field at fault.
func decodeBody(r *http.Request, v any, limit int) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil {
		return fmt.Errorf("%w: reading the body: %v", errBadRequest, err)
	}
	if len(b) > limit {
		return fmt.Errorf("%w: a body over %d bytes", errBadRequest, limit)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %s", errBadRequest, jsonProblem(err, v))
	}
	if dec.More() {
		return fmt.Errorf("%w: more than one JSON value in the body (want one object)", errBadRequest)
	}
	return nil
}

// jsonProblem says what is wrong with a JSON body in the terms of its
// fields rather than Go's.
func jsonProblem(err error, v any) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.EOF):
		return "an empty body (want a JSON object)"
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends early"
	case errors.As(err, &se):
		return fmt.Sprintf("invalid JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "json: "))
	case errors.As(err, &te) && te.Field == "":
		return fmt.Sprintf("want a JSON object with %s, got %s", fieldList(v), jsonKind(te.Value))
	case errors.As(err, &te):
		return fmt.Sprintf("%s: want %s, got %s", te.Field, typeName(te.Type), jsonKind(te.Value))
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return fmt.Sprintf("unknown field %s (the fields are %s)", strings.TrimPrefix(err.Error(), "json: unknown field "), fieldList(v))
	}
	return err.Error()
}

func jsonKind(v string) string {
	switch v {
	case "number", "string", "array", "object", "bool":
		return "a JSON " + v
	}
	return v
}

// typeName names a Go type as a JSON value.
func typeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list of " + strings.TrimPrefix(strings.TrimPrefix(typeName(t.Elem()), "a "), "an ") + "s"
	}
	return "an object"
}

// fieldList names the JSON fields of the struct v points to.
func fieldList(v any) string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return "its fields"
	}
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return strings.Join(names, ", ")
}

// Harness serves the harness API on its own loopback address with its
// own token. Until the proxy's engine is open it answers 503.
type Harness struct {
	token string
	// query returns the query server whose handlers answer, or nil while
	// the engine is not open.
	query func() *Server
	// guard refuses requests for a host other than loopback (DNS
	// rebinding) and those of web pages whose origin is not allowed.
	guard *guard.Policy
	srv   *http.Server
	ln    net.Listener
	wg    sync.WaitGroup
}

// Listen listens on addr for the harness API, whose requests must carry
// token. query returns the query server whose handlers answer, or nil
// while the engine is not open; pol refuses requests for a host other
// than loopback and those of web pages whose origin is not allowed.
func Listen(addr, token string, query func() *Server, pol *guard.Policy) (*Harness, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("proxy: harness API: listen on %s: %w", addr, err)
	}
	h := &Harness{token: token, query: query, ln: ln, guard: pol}
	h.srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.srv.Serve(ln)
	}()
	return h, nil
}

// Addr is the address the API listens on.
func (h *Harness) Addr() string { return h.ln.Addr().String() }

func (h *Harness) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := h.guard.Check(r); err != nil {
		guard.WriteRefusal(w, err.(*guard.Refusal))
		return
	}
	if !authorized(w, r, h.token, "the proxy's api-token; it logs the file that holds it") {
		return
	}
	reply := replier(w)
	q := h.query()
	if q == nil {
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		json.NewEncoder(w).Encode(map[string]string{"error": "the proxy's engine is not open yet (see its log); retry"})
		return
	}
	if path, ok := strings.CutPrefix(r.URL.Path, "/v1/"); !ok || !q.serveHarness(w, r, path, reply) {
		reply(nil, noRoute(r))
	}
}

// Close stops the API, letting requests in flight finish (bounded).
func (h *Harness) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := h.srv.Shutdown(ctx)
	h.wg.Wait()
	return err
}
