package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
)

// serveMemory answers /v1/memory/… for the query server.
func (q *Server) serveMemory(w http.ResponseWriter, r *http.Request, path string, reply func(any, error)) {
	m := q.mem
	if m == nil {
		reply(nil, errors.New("memory is not open in the proxy (see its log)"))
		return
	}
	qv := r.URL.Query()
	if qv.Get("fresh") != "" {
		if err := m.Sync(); err != nil {
			reply(nil, err)
			return
		}
	}
	types := func() ([]engine.ArtifactType, error) {
		var out []engine.ArtifactType
		for _, t := range qv["type"] {
			if !engine.ArtifactType(t).Valid() {
				return nil, fmt.Errorf("%w: artifact type %q", errBadQuery, t)
			}
			out = append(out, engine.ArtifactType(t))
		}
		return out, nil
	}
	switch {
	case path == "memory/search":
		ts, err := types()
		if err != nil {
			reply(nil, err)
			return
		}
		k, _ := strconv.Atoi(qv.Get("k"))
		sq := api.SearchRequest{Text: qv.Get("q"), Session: qv.Get("session"), Task: qv.Get("task"), K: k, Types: ts, IncludeForgotten: qv.Get("all") != "",
			Project: qv.Get("project"), Dir: qv.Get("dir"), AllProjects: qv.Get("all_projects") != "", Explain: qv.Get("explain") != ""}
		if qv.Get("find") != "" {
			// Results: cards with their project and explanation.
			reply(m.Find(sq))
			return
		}
		reply(m.Search(sq))
	case path == "memory/context":
		budget := 0
		if v := qv.Get("budget"); v != "" {
			var err error
			if budget, err = strconv.Atoi(v); err != nil {
				reply(nil, fmt.Errorf("%w: budget %q is not a number", errBadQuery, v))
				return
			}
		}
		reply(m.Context(api.ContextRequest{Session: qv.Get("session"), TaskID: qv.Get("task_id"), Task: qv.Get("task"), Budget: budget, Project: qv.Get("project")}))
	case path == "memory/artifacts":
		ts, err := types()
		if err != nil {
			reply(nil, err)
			return
		}
		reply(m.List(api.ListRequest{Session: qv.Get("session"), Types: ts}))
	case strings.HasPrefix(path, "memory/artifacts/") && strings.HasSuffix(path, "/related"):
		id, _ := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(path, "memory/artifacts/"), "/related"))
		k, _ := strconv.Atoi(qv.Get("k"))
		reply(m.Related(api.RelatedRequest{ID: id, K: k}))
	case strings.HasPrefix(path, "memory/artifacts/"):
		id, _ := url.PathUnescape(strings.TrimPrefix(path, "memory/artifacts/"))
		reply(m.Get(id))
	case path == "memory/corrections" && r.Method == http.MethodPost:
		var cr exchange.Correction
		if err := json.NewDecoder(io.LimitReader(r.Body, exchange.MaxCorrection)).Decode(&cr); err != nil {
			reply(nil, fmt.Errorf("%w: correction: %v", errBadQuery, err))
			return
		}
		reply(m.Correct(cr))
	case path == "memory/notes" && r.Method == http.MethodPost:
		var n exchange.Note
		if err := decodeBody(r, &n, exchange.MaxNote); err != nil {
			reply(nil, err)
			return
		}
		reply(m.Note(n))
	default:
		reply(nil, noRoute(r))
	}
}
