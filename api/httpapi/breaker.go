package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/proxy/breaker"
)

// serveBreaker answers the breaker routes of the query endpoint:
//
//	GET  /v1/breaker                  every session's status
//	GET  /v1/breaker?records=1        every session's records as the engine keeps them
//	GET  /v1/breaker/ID               one session's status
//	GET  /v1/breaker/ID/records       its records as the engine keeps them
//	POST /v1/breaker/ID/reset         {"by": "who"}
//	POST /v1/breaker/ID/trip          {"reason": "why"}
func (q *Server) serveBreaker(w http.ResponseWriter, r *http.Request, path string, reply func(any, error)) {
	rest := strings.TrimPrefix(strings.TrimPrefix(path, "breaker"), "/")
	id, op, _ := strings.Cut(rest, "/")
	if u, err := url.PathUnescape(id); err == nil {
		id = u
	}
	method := http.MethodGet
	if op == "reset" || op == "trip" {
		method = http.MethodPost
	}
	if r.Method != method {
		reply(nil, &methodError{r.Method, r.URL.Path, method})
		return
	}
	if op == "records" || (id == "" && op == "" && r.URL.Query().Get("records") != "") {
		reply(q.e.Breakers(id))
		return
	}
	if q.brk == nil {
		reply(nil, errors.New("this process runs no circuit breaker"))
		return
	}
	switch op {
	case "":
		if id == "" {
			reply(q.brk.List(), nil)
			return
		}
		st, ok := q.brk.Status(id)
		if !ok {
			reply(nil, api.NoBreakerError(id))
			return
		}
		reply(st, nil)
	case "reset", "trip":
		var in struct{ By, Reason string }
		if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&in); err != nil {
			reply(nil, fmt.Errorf("%w: %v", errBadRequest, err))
			return
		}
		var st breaker.Status
		var err error
		if op == "reset" {
			if _, ok := q.brk.Status(id); !ok {
				reply(nil, api.NoBreakerError(id))
				return
			}
			st, err = q.brk.Reset(id, in.By)
		} else {
			st, err = q.brk.Trip(id, in.Reason)
		}
		if err != nil {
			err = fmt.Errorf("%w: %v", errBadRequest, err)
		}
		reply(st, err)
	default:
		reply(nil, noRoute(r))
	}
}
