package wal

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/internal/crypt"
)

// TestReaderReset reads a log, compressed, encrypted and plain frames
// across segments, then resets the reader and reads it again while the
// log grows: every frame comes back whole, from the first, the buffers
// of the first read reused (the decompression and decryption buffers
// would hold the previous pass's bytes if Reset left a stale position).
func TestReaderReset(t *testing.T) {
	for _, enc := range []bool{false, true} {
		o := &Options{SegmentSize: 4096}
		if enc {
			o.Keys = crypt.Ephemeral()
		}
		l := mustOpen(t, t.TempDir(), o)
		big := func(i int) []byte { return []byte(strings.Repeat(string(payloadFor(i)), 40)) }
		add := func(from, n int) {
			for i := from; i < from+n; i++ {
				if _, err := l.Append(Record{Kind: frame.KindResponseBody, Exchange: uint64(i), Payload: big(i)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		read := func(r *Reader) []int {
			var got []int
			for r.Next() {
				h := r.Header()
				if h.Kind == frame.KindSegmentHeader {
					continue
				}
				p, err := r.Payload()
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(p, big(int(h.Exchange))) {
					t.Fatalf("encrypted %v: frame %d at %d: wrong payload after Reset", enc, h.Exchange, r.Offset())
				}
				got = append(got, int(h.Exchange))
			}
			if err := r.Err(); err != nil {
				t.Fatal(err)
			}
			return got
		}
		add(0, 20)
		r := l.NewReader()
		if got := read(r); len(got) != 20 {
			t.Fatalf("encrypted %v: first read %d frames, want 20", enc, len(got))
		}
		dcap := cap(r.dbuf) + cap(r.ebuf)
		add(20, 10)
		r.Reset()
		if cap(r.dbuf)+cap(r.ebuf) != dcap || dcap == 0 {
			t.Fatalf("encrypted %v: Reset kept %d bytes of buffers, want %d", enc, cap(r.dbuf)+cap(r.ebuf), dcap)
		}
		got := read(r)
		if len(got) != 30 || got[0] != 0 || got[29] != 29 {
			t.Fatalf("encrypted %v: after Reset read %v, want 0..29", enc, got)
		}
		r.Close()
		r.dbuf = make([]byte, 0, maxKeptBuf+1)
		r.Reset()
		if r.dbuf != nil {
			t.Fatal("Reset kept a buffer over maxKeptBuf")
		}
		if got := read(r); len(got) != 30 {
			t.Fatalf("encrypted %v: read %d frames after a Reset that dropped its buffers, want 30", enc, len(got))
		}
		r.Close()
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
