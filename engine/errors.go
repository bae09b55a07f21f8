package engine

import "errors"

var (
	// ErrLocked reports a data directory owned by another process.
	ErrLocked = errors.New("engine: data directory in use")
	// ErrNotFound reports an unknown session or exchange.
	ErrNotFound = errors.New("engine: not found")
	// ErrClosed reports use of a closed Engine.
	ErrClosed = errors.New("engine: closed")
)
