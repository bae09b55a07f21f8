package httpapi

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
)

// serveImports answers the import endpoints of the query server.
func (q *Server) serveImports(w http.ResponseWriter, r *http.Request, path string, reply func(any, error)) {
	switch {
	case path == "imports" && r.Method == http.MethodGet:
		st, ok, err := q.e.ImportState(r.URL.Query().Get("path"))
		reply(struct {
			Found bool                   `json:"found"`
			State engine.ImportFileState `json:"state"`
		}{ok, st}, err)
	case path == "imports" && r.Method == http.MethodPost:
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<30))
		if err != nil {
			reply(nil, fmt.Errorf("%w: read the records: %v", errBadQuery, err))
			return
		}
		var recs []exchange.Import
		for off := 0; off < len(body); {
			n, k := binary.Uvarint(body[off:])
			if k <= 0 || n > uint64(len(body)-off-k) {
				reply(nil, fmt.Errorf("%w: record at byte %d is cut short", errBadQuery, off))
				return
			}
			rec, err := exchange.DecodeImport(body[off+k : off+k+int(n)])
			if err != nil {
				reply(nil, fmt.Errorf("%w: record at byte %d: %v", errBadQuery, off, err))
				return
			}
			recs = append(recs, rec)
			off += k + int(n)
		}
		reply(struct {
			Records int `json:"records"`
		}{len(recs)}, engine.AppendImport(q.e.WAL(), recs))
	case path == "imports/wait":
		ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
		err := q.e.WaitCaughtUp(ctx)
		cancel()
		reply(struct {
			CaughtUp bool `json:"caught_up"`
		}{err == nil}, nil)
	default:
		reply(nil, noRoute(r))
	}
}
