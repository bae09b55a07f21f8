package index

import (
	"errors"
	"fmt"
)

// Sentinel errors.
var (
	// ErrClosed is returned by every method of a closed Index.
	ErrClosed = errors.New("index: closed")
	// ErrCorruption means the state file is not one this package wrote. It
	// is wrapped by *CorruptionError.
	ErrCorruption = errors.New("index: corrupt state file")
	// ErrPanic means Bluge (or the analyzer inside it) panicked; the panic
	// was turned into this error.
	ErrPanic = errors.New("index: bluge panicked")
	// ErrEmptyQuery is returned by Search for a query without text.
	ErrEmptyQuery = errors.New("index: empty query")
	// ErrInvalid is wrapped by errors about arguments: an artifact of
	// another session, a duplicate id, an unknown type.
	ErrInvalid = errors.New("index: invalid argument")
	// ErrEncryption means the index is encrypted and Open was given no
	// keys (Options.Keys), or it is in the clear and Open was given
	// keys.
	ErrEncryption = errors.New("index: encryption does not match")
)

// CorruptionError reports a state file that cannot be read. It unwraps to
// ErrCorruption and to Err.
type CorruptionError struct {
	File   string // path of the state file
	Offset int64  // byte offset of the first bad byte
	Err    error  // what is wrong there
}

func (e *CorruptionError) Error() string {
	return fmt.Sprintf("index: corrupt state file %s at offset %d: %v; run `bbengine rebuild --index` to rebuild the index from the store",
		e.File, e.Offset, e.Err)
}

// Unwrap returns ErrCorruption and the reason.
func (e *CorruptionError) Unwrap() []error { return []error{ErrCorruption, e.Err} }

// PanicError is a panic inside Bluge turned into an error. It unwraps to
// ErrPanic.
type PanicError struct {
	Op    string // what the index was doing: "batch", "search", ...
	Value any    // the value the panic carried
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("index: bluge panicked: %s: %v", e.Op, e.Value)
}

// Unwrap returns ErrPanic.
func (e *PanicError) Unwrap() error { return ErrPanic }

// guard calls f and turns a panic in it into a *PanicError. Every call
// into Bluge goes through it: Bluge v0.2.2 is unmaintained and has open
// reports of index-out-of-range panics (blugelabs/bluge#123, #142).
func guard(op string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Op: op, Value: r}
		}
	}()
	return f()
}
