package bodybuf

import (
	"sync"
	"sync/atomic"
	"testing"
)

var pool sync.Pool // of *[]byte

// MaxPooled is the largest buffer kept for another body.
const MaxPooled = 8 << 20

// scribble tells Put to overwrite what it is given, so that a test
// reading a buffer after giving it back sees garbage. A benchmark turns
// it off (SetScribble): the pass over every body would be charged to
// the code it measures.
var scribble atomic.Bool

func init() { scribble.Store(testing.Testing()) }

// SetScribble turns the overwriting of given-back buffers on or off and
// returns what it was; it is on in tests, off otherwise. A benchmark
// that measures code giving back large bodies turns it off and restores
// it in its cleanup.
func SetScribble(on bool) bool { return scribble.Swap(on) }

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
	if scribble.Load() {
		for i := range b {
			b[i] = 0xa5
		}
	}
	pool.Put(&b)
}
