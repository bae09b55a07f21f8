package cli

import (
	"context"
	"net/url"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/pack"
)

// The names below keep hook.go building while it moves to its agents'
// directories. Its pack should come from api.Remote.ContextWithin (a
// proxy owns the directory: engine.ReadHolder gives its address and
// token) or api.NewLocal(e, nil).Context (an engine opened here), after
// which this file goes.

// ContextRequest asks for the context pack of a task (api.ContextRequest).
type ContextRequest = api.ContextRequest

// remote is the running proxy as hook.go names it.
type remote struct {
	addr, token string
	pid         int
}

func (r *remote) doContext(ctx context.Context, method, path string, q url.Values, body []byte, v any) error {
	return (&api.Remote{Addr: r.addr, Token: r.token, PID: r.pid}).DoContext(ctx, method, path, q, body, v)
}

// contextQuery is api.ContextQuery.
func contextQuery(req ContextRequest) url.Values { return api.ContextQuery(req) }

// localMemory builds packs from an engine opened here (api.Local).
type localMemory struct{ e *engine.Engine }

func (m *localMemory) Context(req ContextRequest) (*pack.Pack, error) {
	return api.NewLocal(m.e, nil).Context(req)
}
