package proxy

import (
	"bytes"
	"errors"
	"io"
	"sync"
	"testing"
)

// A long session's request body is 700 KB, read whole on every turn, and
// was a third of what the proxy allocated. Request bodies are read into
// buffers lent by bodyBufs and given back once nothing reads them: the
// handler (until it returns), the recorder (until it has written the
// request's frames) and the upstream transport (until it closes the
// body it was given). Each holds a reference (exch.bodyRefs).

var bodyBufs sync.Pool // of *[]byte

// maxPooledBody is the largest buffer kept for another body.
const maxPooledBody = 8 << 20

// scribbleBodies overwrites a buffer given back, so that tests find any
// reader that kept a part of a body.
var scribbleBodies = testing.Testing()

// getBody is a buffer for a body of at least n bytes, with room for the
// next turns of a session whose body grows.
func getBody(n int) []byte {
	if b, ok := bodyBufs.Get().(*[]byte); ok && cap(*b) >= n {
		return (*b)[:0]
	}
	return make([]byte, 0, n+n/4)
}

// holdBody takes a reference to x's body.
func (x *exch) holdBody() { x.bodyRefs.Add(1) }

// dropBody gives back a reference to x's body; the last one gives the
// buffer back. Nothing may read x.body's bytes after its own drop.
func (x *exch) dropBody() {
	if x.bodyRefs.Add(-1) != 0 || x.pooled == nil {
		return
	}
	b := x.pooled[:cap(x.pooled)]
	x.pooled = nil
	if cap(b) > maxPooledBody {
		return
	}
	if scribbleBodies {
		for i := range b {
			b[i] = 0xa5
		}
	}
	bodyBufs.Put(&b)
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
