package wal

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/frame"
)

// mixedPayloads returns n payloads that alternate at random between
// compressible text (stored as snappy blocks) and random bytes (stored as
// is), of sizes from a few bytes to a few hundred KiB.
func mixedPayloads(rng *rand.Rand, n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		size := rng.IntN(4 << 10)
		if rng.IntN(4) == 0 {
			size = rng.IntN(300 << 10)
		}
		p := make([]byte, size)
		if rng.IntN(2) == 0 {
			for j := range p {
				p[j] = byte(rng.Uint32())
			}
		} else {
			word := []byte("the quick brown fox ")
			for j := range p {
				p[j] = word[j%len(word)]
			}
			if size > 0 {
				p[rng.IntN(size)] = byte(i)
			}
		}
		out[i] = p
	}
	return out
}

// TestMixedFramesReadBack is the property the false "checksum mismatch"
// broke: a random sequence of compressed and uncompressed frames reads
// back identical through every way of reading the log: from the start,
// following the writer, and from each frame's offset. Before the fix a
// compressed frame after an uncompressed one was decompressed over the
// reader's segment buffer, and later frames failed their checksum.
func TestMixedFramesReadBack(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		rng := rand.New(rand.NewPCG(seed, seed))
		payloads := mixedPayloads(rng, 120)
		dir := t.TempDir()
		l := mustOpen(t, dir, &Options{SegmentSize: 2 << 20})

		// A follower reads while the writer appends.
		type got struct {
			off uint64
			p   []byte
		}
		follow := make(chan []got, 1)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		go func() {
			var out []got
			r := l.NewReader()
			defer r.Close()
			for len(out) < len(payloads) {
				if !r.Next() {
					if r.Err() != nil || r.Wait(ctx) != nil {
						break
					}
					continue
				}
				if r.Header().Kind == frame.KindSegmentHeader {
					continue
				}
				p, err := r.Payload()
				if err != nil {
					t.Errorf("follow: frame at %d: %v", r.Offset(), err)
					break
				}
				out = append(out, got{r.Offset(), bytes.Clone(p)})
			}
			if err := r.Err(); err != nil {
				t.Errorf("follow: %v", err)
			}
			follow <- out
		}()

		offs := make([]uint64, len(payloads))
		for i, p := range payloads {
			off, err := l.Append(Record{Kind: frame.KindResponseBody, Exchange: uint64(i + 1), Payload: p})
			if err != nil {
				t.Fatal(err)
			}
			offs[i] = off
		}
		followed := <-follow
		cancel()
		if len(followed) != len(payloads) {
			t.Fatalf("seed %d: follower read %d frames, want %d", seed, len(followed), len(payloads))
		}
		for i, g := range followed {
			if g.off != offs[i] || !bytes.Equal(g.p, payloads[i]) {
				t.Fatalf("seed %d: follower frame %d at %d differs (len %d, want %d at %d)", seed, i, g.off, len(g.p), len(payloads[i]), offs[i])
			}
		}

		check := func(name string, l *Log) {
			// From the start.
			r := l.NewReader()
			i := 0
			for r.Next() {
				if r.Header().Kind == frame.KindSegmentHeader {
					continue
				}
				p, err := r.Payload()
				if err != nil {
					t.Fatalf("%s seed %d: frame at %d: %v", name, seed, r.Offset(), err)
				}
				if r.Offset() != offs[i] || !bytes.Equal(p, payloads[i]) {
					t.Fatalf("%s seed %d: frame %d differs", name, seed, i)
				}
				i++
			}
			if err := r.Err(); err != nil {
				t.Fatalf("%s seed %d: %v", name, seed, err)
			}
			r.Close()
			if i != len(payloads) {
				t.Fatalf("%s seed %d: read %d frames, want %d", name, seed, i, len(payloads))
			}
			// From every frame, reading a few on (as trace and replay
			// --from do), with one Reader reused across seeks.
			r = l.NewReader()
			defer r.Close()
			for _, j := range rng.Perm(len(payloads)) {
				if err := r.Seek(offs[j]); err != nil {
					t.Fatalf("%s seed %d: seek %d: %v", name, seed, offs[j], err)
				}
				for k := j; k < min(j+3, len(payloads)); k++ {
					for r.Next() && r.Header().Kind == frame.KindSegmentHeader {
					}
					if r.Err() != nil {
						t.Fatalf("%s seed %d: after seek %d: %v", name, seed, offs[j], r.Err())
					}
					p, err := r.Payload()
					if err != nil || r.Offset() != offs[k] || !bytes.Equal(p, payloads[k]) {
						t.Fatalf("%s seed %d: frame %d after seek to %d differs (err %v)", name, seed, k, j, err)
					}
				}
			}
		}
		check("writer", l)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		ro, err := Open(dir, &Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		check("read-only", ro)
		ro.Close()
	}
}
