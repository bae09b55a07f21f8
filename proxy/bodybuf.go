package proxy

import (
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/bbengine/bbengine/internal/bodybuf"
)

// A long session's request body is 700 KB, read whole on every turn.
// Request bodies are read into buffers lent by internal/bodybuf and given
// back once nothing reads them: the
// handler (until it returns), the recorder (until it has written the
// request's frames) and the upstream transport (until it closes the
// body it was given). Each holds a reference (exch.bodyRefs).

// holdBody takes a reference to x's body.
func (x *exch) holdBody() { x.bodyRefs.Add(1) }

// dropBody gives back a reference to x's body; the last one gives the
// buffer back. Nothing may read x.body's bytes after its own drop.
func (x *exch) dropBody() {
	if x.bodyRefs.Add(-1) != 0 || x.pooled == nil {
		return
	}
	b := x.pooled
	x.pooled = nil
	bodybuf.Put(b)
}

var errBodyClosed = errors.New("bbengine proxy: request body read after it was closed")

// upstreamBody is the request body as the upstream transport reads it: a
// reference to x's body, dropped when the transport closes it. A read
// after Close fails rather than see a buffer lent to another request.
type upstreamBody struct {
	mu     sync.Mutex
	r      bytes.Reader
	x      *exch
	closed bool
}

func newUpstreamBody(x *exch) *upstreamBody {
	x.holdBody()
	b := &upstreamBody{x: x}
	b.r.Reset(x.body)
	return b
}

func (b *upstreamBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, errBodyClosed
	}
	return b.r.Read(p)
}

// WriteTo lets io.Copy hand the whole body to the connection at once.
func (b *upstreamBody) WriteTo(w io.Writer) (int64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, errBodyClosed
	}
	return b.r.WriteTo(w)
}

func (b *upstreamBody) Close() error {
	b.mu.Lock()
	closed := b.closed
	b.closed = true
	b.mu.Unlock()
	if !closed {
		b.x.dropBody()
	}
	return nil
}
