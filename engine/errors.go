package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/bbengine/bbengine/engine/schema"
	"github.com/cockroachdb/pebble/v2"
)

var (
	// ErrLocked reports a data directory owned by another process.
	ErrLocked = errors.New("engine: data directory in use")
	// ErrNotFound reports an unknown session or exchange (it is
	// schema.ErrNotFound, which the pipeline tells by).
	ErrNotFound = schema.ErrNotFound
	// ErrClosed reports use of a closed Engine.
	ErrClosed = errors.New("engine: closed")
)

// ErrDamaged reports derived state that cannot be read. It is wrapped by
// *DamagedError.
var ErrDamaged = errors.New("engine: derived state cannot be read")

// DamagedError reports that the Pebble store of derived state at Path
// cannot be read: a damaged file, a missing one, or Pebble panicking on
// it. Everything in it is derived from the WAL, so `bbengine rebuild` sets
// it aside and derives it again.
type DamagedError struct {
	Path string // the store's directory, <dir>/db
	Err  error  // what Pebble reported
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("engine: the derived state in %s cannot be read (%s); run `bbengine rebuild` to set it aside and derive it again from the WAL",
		e.Path, headLine(e.Err.Error()))
}

// Unwrap returns ErrDamaged and the cause.
func (e *DamagedError) Unwrap() []error { return []error{ErrDamaged, e.Err} }

// IsDamaged reports whether err means the derived state cannot be read:
// a *DamagedError, or Pebble's corruption error met while reading.
func IsDamaged(err error) bool {
	return errors.Is(err, ErrDamaged) || pebble.IsCorruptionError(err)
}

// errPanicked marks an error made from a panic inside Pebble.
var errPanicked = errors.New("pebble panicked")

// damaged returns err as a *DamagedError of the store at path when it
// means the store cannot be read, and err unchanged otherwise (a lock, a
// permission, a full disk, a closed engine).
func damaged(path string, err error) error {
	var de *DamagedError
	switch {
	case err == nil || errors.As(err, &de):
		return err
	case pebble.IsCorruptionError(err) || errors.Is(err, errPanicked):
		return &DamagedError{Path: path, Err: err}
	}
	return err
}

// recoverDamage turns a panic inside Pebble (its logger's Fatalf panics on
// on-disk corruption) into a *DamagedError in *errp. Use it deferred.
func recoverDamage(path string, errp *error) {
	if r := recover(); r != nil {
		*errp = &DamagedError{Path: path, Err: fmt.Errorf("%w: %v", errPanicked, r)}
	}
}

// headLine returns s up to its first newline: Pebble's corruption
// errors carry a stack trace after it.
func headLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
