package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/index"
	"github.com/bbengine/bbengine/pack"
)

// Remote is the Service of a running proxy, asked over loopback HTTP
// (package httpapi serves it). Dial returns one. It is safe for
// concurrent use.
type Remote struct {
	// Addr is the query endpoint's host:port and Token its bearer token,
	// as the data directory's lock file holds them.
	Addr, Token string
	// PID is the proxy's process id, for messages.
	PID int
	// Proxy is the address of the owner's recording proxy, if it runs one.
	Proxy string
}

// GetJSON asks for path with the query q and decodes the JSON answer into v.
func (r *Remote) GetJSON(path string, q url.Values, v any) error {
	return r.Do(http.MethodGet, path, q, nil, v)
}

// Do sends a request with an optional JSON body and decodes the JSON
// answer into v; an error answer becomes an error (wrapping
// engine.ErrNotFound for a 404).
func (r *Remote) Do(method, path string, q url.Values, body []byte, v any) error {
	return r.DoContext(context.Background(), method, path, q, body, v)
}

// DoContext is Do within ctx: the hook gives up on a proxy that does not
// answer in time.
func (r *Remote) DoContext(ctx context.Context, method, path string, q url.Values, body []byte, v any) error {
	return r.doWithin(ctx, 30*time.Second, method, path, q, body, v)
}

// doWithin is DoContext giving up after timeout; 0 means no limit but
// ctx's (a backup takes as long as the data directory is large).
func (r *Remote) doWithin(ctx context.Context, timeout time.Duration, method, path string, q url.Values, body []byte, v any) error {
	u := "http://" + r.Addr + path
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
	req.Header.Set("Authorization", "Bearer "+r.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	client := &http.Client{Timeout: timeout}
	if _, ok := ctx.Deadline(); ok {
		// The caller bounds the request itself (du and gc read the
		// whole store, and may take longer).
		client.Timeout = 0
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("ask the running proxy (pid %d) at %s: %w", r.PID, r.Addr, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	if err != nil {
		return fmt.Errorf("ask the running proxy (pid %d): %w", r.PID, err)
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
			return fmt.Errorf("the running proxy (pid %d): %s", r.PID, e.Error)
		}
		return fmt.Errorf("the running proxy (pid %d) at %s answered %s", r.PID, r.Addr, resp.Status)
	}
	return json.Unmarshal(b, v)
}

// Sessions implements Service by asking the running proxy.
func (r *Remote) Sessions(f SessionsRequest) ([]engine.Session, error) {
	q := url.Values{"fresh": {"1"}}
	if f.Since != 0 {
		q.Set("since", strconv.FormatInt(f.Since, 10))
	}
	if f.Agent != "" {
		q.Set("agent", f.Agent)
	}
	if f.Unmerged {
		q.Set("unmerged", "1")
	}
	var out []engine.Session
	return out, r.GetJSON("/v1/sessions", q, &out)
}

// Session implements Service by asking the running proxy.
func (r *Remote) Session(id string) (engine.Session, error) {
	var out engine.Session
	return out, r.GetJSON("/v1/sessions/"+url.PathEscape(id), url.Values{"fresh": {"1"}}, &out)
}

// Events implements Service by asking the running proxy.
func (r *Remote) Events(id string, f engine.EventFilter) ([]engine.Event, error) {
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
	if f.Raw {
		q.Set("raw", "1")
	}
	var out []engine.Event
	return out, r.GetJSON("/v1/sessions/"+url.PathEscape(id)+"/events", q, &out)
}

// Exchange implements Service by asking the running proxy.
func (r *Remote) Exchange(id uint64) (engine.Exchange, error) {
	var out engine.Exchange
	return out, r.GetJSON("/v1/exchanges/"+strconv.FormatUint(id, 10), url.Values{"fresh": {"1"}}, &out)
}

// Blob returns a blob from the running proxy.
func (r *Remote) Blob(sum string) ([]byte, error) {
	if err := checkBlobName(sum); err != nil {
		return nil, err
	}
	var out []byte
	return out, r.GetJSON("/v1/blobs/"+sum, nil, &out)
}

// Breakers returns a session's breaker records from the running proxy.
func (r *Remote) Breakers(id string) ([]engine.BreakerRecord, error) {
	var out []engine.BreakerRecord
	if id == "" {
		return out, r.GetJSON("/v1/breaker", url.Values{"records": {"1"}, "fresh": {"1"}}, &out)
	}
	return out, r.GetJSON("/v1/breaker/"+url.PathEscape(id)+"/records", url.Values{"fresh": {"1"}}, &out)
}

// Search implements Service by asking the running proxy.
func (r *Remote) Search(q SearchRequest) ([]engine.Card, error) {
	var out []engine.Card
	return out, r.GetJSON("/v1/memory/search", SearchQuery(q), &out)
}

// Find implements Service by asking the running proxy.
func (r *Remote) Find(q SearchRequest) ([]index.Result, error) {
	v := SearchQuery(q)
	v.Set("find", "1")
	var out []index.Result
	return out, r.GetJSON("/v1/memory/search", v, &out)
}

// SearchQuery is the query of /v1/memory/search that asks for q.
func SearchQuery(q SearchRequest) url.Values {
	v := url.Values{"q": {q.Text}, "fresh": {"1"}}
	for name, val := range map[string]string{"session": q.Session, "task": q.Task, "project": q.Project, "dir": q.Dir} {
		if val != "" {
			v.Set(name, val)
		}
	}
	if q.K != 0 {
		v.Set("k", strconv.Itoa(q.K))
	}
	for _, t := range q.Types {
		v.Add("type", string(t))
	}
	for name, on := range map[string]bool{"all": q.IncludeForgotten, "all_projects": q.AllProjects, "explain": q.Explain} {
		if on {
			v.Set(name, "1")
		}
	}
	return v
}

// Get implements Service by asking the running proxy.
func (r *Remote) Get(id string) (engine.Artifact, error) {
	var out engine.Artifact
	return out, r.GetJSON("/v1/memory/artifacts/"+url.PathEscape(id), url.Values{"fresh": {"1"}}, &out)
}

// Related implements Service by asking the running proxy.
func (r *Remote) Related(req RelatedRequest) (*Related, error) {
	var out Related
	return &out, r.GetJSON("/v1/memory/artifacts/"+url.PathEscape(req.ID)+"/related", url.Values{"fresh": {"1"}, "k": {strconv.Itoa(req.K)}}, &out)
}

// List implements Service by asking the running proxy.
func (r *Remote) List(req ListRequest) ([]engine.Card, error) {
	v := url.Values{"fresh": {"1"}}
	if req.Session != "" {
		v.Set("session", req.Session)
	}
	for _, t := range req.Types {
		v.Add("type", string(t))
	}
	var out []engine.Card
	return out, r.GetJSON("/v1/memory/artifacts", v, &out)
}

// Correct implements Service by asking the running proxy.
func (r *Remote) Correct(cr exchange.Correction) (*Corrected, error) {
	body, err := json.Marshal(cr)
	if err != nil {
		return nil, err
	}
	var out Corrected
	return &out, r.Do(http.MethodPost, "/v1/memory/corrections", nil, body, &out)
}

// Note implements Service by asking the running proxy.
func (r *Remote) Note(n exchange.Note) (*Noted, error) {
	body, err := json.Marshal(n)
	if err != nil {
		return nil, err
	}
	var out Noted
	return &out, r.Do(http.MethodPost, "/v1/memory/notes", nil, body, &out)
}

// Context implements Service by asking the running proxy.
func (r *Remote) Context(req ContextRequest) (*pack.Pack, error) {
	return r.ContextWithin(context.Background(), req)
}

// ContextWithin is Context bounded by ctx: a hook gives up on a proxy
// that does not answer in time.
func (r *Remote) ContextWithin(ctx context.Context, req ContextRequest) (*pack.Pack, error) {
	var out pack.Pack
	if err := r.DoContext(ctx, http.MethodGet, "/v1/memory/context", ContextQuery(req), nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ContextQuery is the query of /v1/memory/context that asks for req.
func ContextQuery(req ContextRequest) url.Values {
	v := url.Values{"fresh": {"1"}, "session": {req.Session}}
	if req.TaskID != "" {
		v.Set("task_id", req.TaskID)
	}
	if req.Task != "" {
		v.Set("task", req.Task)
	}
	if req.Budget != 0 {
		v.Set("budget", strconv.Itoa(req.Budget))
	}
	if req.Project != "" {
		v.Set("project", req.Project)
	}
	return v
}

// Interface checks.
var (
	_ Service = (*Remote)(nil)
	_ Service = (*Local)(nil)
)
