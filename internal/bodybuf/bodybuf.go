// Package bodybuf lends the buffers request bodies are read or gathered
// in. A long session's turn carries a 700 KB body, resent every turn and
// growing a little each time: allocating and zeroing one per turn was
// most of what the proxy process allocated. A buffer comes with a
// quarter of headroom, so one serves the turns of a growing session.
//
// In a test binary a buffer given back is overwritten, so that any
// reader that kept a part of one fails its test.
package bodybuf

import (
	"sync"
	"testing"
)

var pool sync.Pool // of *[]byte

// MaxPooled is the largest buffer kept for another body.
const MaxPooled = 8 << 20

var scribble = testing.Testing()

// Get returns an empty buffer with room for at least n bytes.
func Get(n int) []byte {
	if b, ok := pool.Get().(*[]byte); ok && cap(*b) >= n {
		return (*b)[:0]
	}
	return make([]byte, 0, n+n/4)
}

// Put gives b's array back: nothing may read or write it after.
func Put(b []byte) {
	if cap(b) == 0 || cap(b) > MaxPooled {
		return
	}
	b = b[:cap(b)]
	if scribble {
		for i := range b {
			b[i] = 0xa5
		}
	}
	pool.Put(&b)
}
