package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/bbengine/bbengine/api"
)

// serveRetention answers POST /v1/retention: run retention now, or say
// what it would remove (api.Local.Retain).
func (q *Server) serveRetention(w http.ResponseWriter, r *http.Request, reply func(any, error)) {
	if r.Method != http.MethodPost {
		reply(nil, &methodError{method: r.Method, path: r.URL.Path, allow: http.MethodPost})
		return
	}
	if q.mem == nil {
		reply(nil, errors.New("memory is not open in the proxy (see its log)"))
		return
	}
	var req api.RetainRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4<<10)).Decode(&req); err != nil {
		reply(nil, fmt.Errorf("%w: retention request: %v", api.ErrBadRequest, err))
		return
	}
	reply(q.mem.Retain(req))
}
