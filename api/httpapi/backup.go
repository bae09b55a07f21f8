package httpapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"

	"github.com/bbengine/bbengine/api"
)

// serveBackup answers the backup route of the query endpoint:
//
//	POST /v1/backup    {"dest": "/abs/dir", "raw": false}
//
// The proxy owns the data directory, so it makes the backup itself
// (api.Local.Backup) while it records; the answer is an api.Backup. A
// client that goes away stops the backup before its manifest is written.
func (q *Server) serveBackup(w http.ResponseWriter, r *http.Request, reply func(any, error)) {
	if r.Method != http.MethodPost {
		reply(nil, &methodError{r.Method, r.URL.Path, http.MethodPost})
		return
	}
	var req api.BackupRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req); err != nil {
		reply(nil, fmt.Errorf("%w: %v", errBadRequest, err))
		return
	}
	if !filepath.IsAbs(req.Dest) {
		reply(nil, fmt.Errorf("%w: backup: the destination %q must be an absolute path", errBadRequest, req.Dest))
		return
	}
	reply(api.NewLocal(q.e, nil).Backup(r.Context(), req))
}
