package cli

import (
	"encoding/json"

	"github.com/bbengine/bbengine/api"
	ucli "github.com/urfave/cli/v2"
)

// openService returns the service of the data directory (api.Open): the
// running proxy's, or the engine and index opened here, caught up with
// the WAL. write opens the WAL for corrections and notes.
func openService(c *ucli.Context, write bool) (api.Service, func() error, error) {
	return api.Open(c.Context, c.String("dir"), write)
}

// openReader returns the service of the data directory for the session
// queries alone (api.OpenReader): no index is opened here.
func openReader(c *ucli.Context) (api.Service, func() error, error) {
	return api.OpenReader(c.Context, c.String("dir"))
}

// writeJSON prints v as indented JSON.
func writeJSON(c *ucli.Context, v any) error {
	enc := json.NewEncoder(c.App.Writer)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
