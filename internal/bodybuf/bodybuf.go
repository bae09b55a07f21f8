package bodybuf

import (
	"flag"
	"sync"
	"testing"
)

var pool sync.Pool // of *[]byte

// MaxPooled is the largest buffer kept for another body.
const MaxPooled = 8 << 20

// scribble tells Put to overwrite what it is given, so that a test
// reading a buffer after giving it back sees garbage. Not in benchmarks
// (-test.bench set): it costs a pass over every body, which would be
// charged to the code measured. It is decided at the first Put, once
// the test flags are parsed.
var scribble = sync.OnceValue(func() bool {
	if !testing.Testing() {
		return false
	}
	f := flag.Lookup("test.bench")
	return f == nil || f.Value.String() == ""
})

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
	if scribble() {
		for i := range b {
			b[i] = 0xa5
		}
	}
	pool.Put(&b)
}
