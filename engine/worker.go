package engine

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// workerPanic carries a panic of a derivation worker goroutine to the
// goroutine that waits for its result, which panics again there
// (rethrow): callers recover panics at the derivation boundary (the
// proxy's canonicalizer does, so that a panic never takes the proxy
// down), and a recover sees only its own goroutine's panics.
type workerPanic struct {
	v     any
	stack []byte
}

func (p *workerPanic) Error() string { return fmt.Sprintf("a derivation worker panicked: %v", p.v) }

// catch, deferred in a worker, turns its panic into a *workerPanic in
// *err.
func catch(err *error) {
	if v := recover(); v != nil {
		*err = &workerPanic{v: v, stack: debug.Stack()}
	}
}

// rethrow panics again, on the calling goroutine, with what a worker
// panicked with, when err is a *workerPanic.
func rethrow(err error) {
	var p *workerPanic
	if errors.As(err, &p) {
		panic(fmt.Sprintf("%v (in a derivation worker)\n%s", p.v, p.stack))
	}
}
