package schema

import "errors"

// ErrNotFound reports an unknown session, exchange or artifact; the
// engine's queries return it (engine.ErrNotFound is this error), and
// the pipeline's reads of them tell a missing record by it.
var ErrNotFound = errors.New("engine: not found")
