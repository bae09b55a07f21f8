package proxy

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// TimeoutError is a timeout of one exchange, recorded as its error
// frame: the upstream's response headers (What "header"), a stalled
// response stream ("idle") or a stalled request body ("body").
type TimeoutError struct {
	What     string
	After    time.Duration
	Received int64 // request body bytes received, for "body"
}

func (e *TimeoutError) Error() string {
	switch e.What {
	case "header":
		return fmt.Sprintf("timeout: the upstream sent no response headers within %v (--upstream-header-timeout)", e.After)
	case "idle":
		return fmt.Sprintf("timeout: the upstream sent no bytes of its response for %v (--stream-idle-timeout)", e.After)
	case "body":
		return fmt.Sprintf("timeout: the client sent no bytes of its request body for %v after %d bytes (--client-body-timeout)", e.After, e.Received)
	}
	return fmt.Sprintf("timeout: %s after %v", e.What, e.After)
}

// Timeout reports true, as net.Error does for a timeout.
func (e *TimeoutError) Timeout() bool { return true }

// idleWatch cancels an exchange's upstream request when a read of the
// response body has waited d without a byte. It checks once per d: the
// body's Read stores when it started waiting in reading (0 while it is
// not waiting, such as while the client is slow to take what was
// read), so the hot path costs two atomic stores and no timer resets.
type idleWatch struct {
	d       time.Duration
	cancel  context.CancelCauseFunc
	reading atomic.Int64 // UnixNano when the pending Read started, 0 for none

	mu      sync.Mutex
	t       *time.Timer
	stopped bool
}

func newIdleWatch(d time.Duration, cancel context.CancelCauseFunc) *idleWatch {
	w := &idleWatch{d: d, cancel: cancel}
	w.mu.Lock()
	w.t = time.AfterFunc(d, w.fire)
	w.mu.Unlock()
	return w
}

func (w *idleWatch) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	next := w.d
	if start := w.reading.Load(); start != 0 {
		waited := time.Since(time.Unix(0, start))
		if waited >= w.d {
			w.stopped = true
			w.cancel(&TimeoutError{What: "idle", After: w.d})
			return
		}
		next = w.d - waited
	}
	w.t.Reset(next)
}

func (w *idleWatch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.t.Stop()
}
