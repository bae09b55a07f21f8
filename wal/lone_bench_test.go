package wal_test

import (
	"strconv"
	"testing"

	"github.com/bbengine/bbengine/wal"
	"github.com/bbengine/bbengine/wal/walbench"
)

// BenchmarkAppendLone measures one goroutine appending to a log, per sync
// policy and payload size, next to its baseline in the same run: impl=raw
// writes the same frame bytes to a plain file as durably as the policy
// makes an acknowledged append (one flushed buffered write for interval
// and none, a write and an fdatasync for always; see package walbench).
// impl=wal appends without compression, so both write the same bytes;
// impl=snappy appends with the default compression. The ratio of MB/s,
// wal over raw, is what `go run ./bench/cmd/walbench` prints.
func BenchmarkAppendLone(b *testing.B) {
	for _, policy := range []wal.SyncPolicy{wal.SyncInterval, wal.SyncAlways, wal.SyncNone} {
		for _, size := range walbench.Sizes {
			name := "sync=" + policy.String() + "/size=" + strconv.Itoa(size)
			b.Run(name+"/impl=raw", func(b *testing.B) {
				benchTarget(b, size, func(dir string) (*walbench.Target, error) { return walbench.Raw(dir, policy, size) })
			})
			b.Run(name+"/impl=wal", func(b *testing.B) {
				benchTarget(b, size, func(dir string) (*walbench.Target, error) { return walbench.Lone(dir, policy, size, false) })
			})
			b.Run(name+"/impl=snappy", func(b *testing.B) {
				benchTarget(b, size, func(dir string) (*walbench.Target, error) { return walbench.Lone(dir, policy, size, true) })
			})
		}
	}
}

func benchTarget(b *testing.B, size int, open func(dir string) (*walbench.Target, error)) {
	t, err := open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer t.Close()
	b.ReportAllocs()
	b.SetBytes(int64(size))
	for b.Loop() {
		if err := t.Op(); err != nil {
			b.Fatal(err)
		}
	}
}
