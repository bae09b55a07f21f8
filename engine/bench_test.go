package engine

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkCanonicalize derives a WAL of Claude-Code-like sessions (8
// sessions of 25 tool-loop turns, frames interleaved by round) from
// scratch, as Rebuild does. It reports MB/s of WAL (SetBytes is the WAL's
// size), exchanges/s, and x-read: the time as a multiple of just reading
// and decompressing every frame of the same WAL in the same process.
func BenchmarkCanonicalize(b *testing.B) {
	dir, log := newData(b)
	var c clock
	var loops [][]fx
	exchanges := 0
	for i := 0; i < 8; i++ {
		l := toolLoop(fmt.Sprintf("s%d", i), 25)
		exchanges += len(l)
		loops = append(loops, l)
	}
	interleaveWAL(b, log, &c, 0, loops...)
	end, _ := log.End()
	e := open(b, dir, log, nil)

	read := func() time.Duration {
		t0 := time.Now()
		r := log.NewReader()
		defer r.Close()
		for r.Next() {
			if _, err := r.Payload(); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(t0)
	}
	readTime := min(read(), read(), read())
	b.SetBytes(int64(end))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if _, err := e.Rebuild(context.Background()); err != nil {
			b.Fatal(err)
		}
		n++
	}
	per := b.Elapsed() / time.Duration(n)
	b.ReportMetric(float64(exchanges)/per.Seconds(), "exchanges/s")
	b.ReportMetric(float64(per)/float64(readTime), "x-read")
}
