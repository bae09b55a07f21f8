package wal

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/internal/crypt"
)

// benchPayload returns n bytes of LLM-stream-like JSON text that snappy
// compresses about 2x, like real response bodies.
func benchPayload(n int) []byte {
	words := []string{"the", "function", "returns", "error", "file", "path", "test", "go", "value", "context",
		`"type":"text_delta"`, `{"delta":`, "}\n\n", "data: ", "Read", "Edit", "0x3f2a", "config", "fails", "because"}
	b := make([]byte, 0, n+32)
	x := uint64(0x9e3779b97f4a7c15)
	for len(b) < n {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b = append(b, words[x%uint64(len(words))]...)
		if x&0x700 == 0 {
			b = append(b, byte('a'+x>>20%26), byte('a'+x>>30%26), byte('0'+x>>40%10))
		}
		b = append(b, ' ')
	}
	return b[:n]
}

// BenchmarkAppend measures one appender. sync=raw is the baseline: the same
// payload bytes written with a 64 KiB bufio.Writer over an os.File, in the
// same run, so append MB/s can be read as a ratio of it.
func BenchmarkAppend(b *testing.B) {
	for _, size := range []int{256, 4096, 65536} {
		p := benchPayload(size)
		b.Run("size="+strconv.Itoa(size)+"/sync=raw", func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "raw"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			w := bufio.NewWriterSize(f, 64<<10)
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				w.Write(p)
			}
			w.Flush()
		})
		for _, policy := range []SyncPolicy{SyncNone, SyncInterval} {
			for _, codec := range []string{"none", "snappy"} {
				// enc=aes256gcm: the same with Options.Keys, every frame
				// encrypted (the clear runs keep their names, so
				// benchstat compares them with older runs).
				for _, enc := range []string{"", "/enc=aes256gcm"} {
					b.Run("size="+strconv.Itoa(size)+"/sync="+policy.String()+"/codec="+codec+enc, func(b *testing.B) {
						o := &Options{Sync: policy, NoCompression: codec == "none"}
						if enc != "" {
							o.Keys = crypt.Ephemeral()
						}
						l, err := Open(b.TempDir(), o)
						if err != nil {
							b.Fatal(err)
						}
						defer l.Close()
						rec := Record{Kind: frame.KindResponseBody, Exchange: 1, Payload: p}
						b.ReportAllocs()
						b.SetBytes(int64(size))
						for b.Loop() {
							if _, err := l.Append(rec); err != nil {
								b.Fatal(err)
							}
						}
					})
				}
			}
			// One appender handing over 64 frames at a time (the proxy's
			// recorder does this): one handoff and one write per batch.
			b.Run("size="+strconv.Itoa(size)+"/sync="+policy.String()+"/codec=none/batch=64", func(b *testing.B) {
				l, err := Open(b.TempDir(), &Options{Sync: policy, NoCompression: true})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				recs := make([]Record, 64)
				for i := range recs {
					recs[i] = Record{Kind: frame.KindResponseBody, Exchange: 1, Payload: p}
				}
				b.ReportAllocs()
				b.SetBytes(int64(size * len(recs)))
				for b.Loop() {
					if _, err := l.AppendBatch(recs); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkAppendAlways measures durable appends with SyncAlways: each
// iteration is one round in which every writer appends one 4 KiB frame
// concurrently; group commit lets a round share fdatasyncs.
func BenchmarkAppendAlways(b *testing.B) {
	for _, writers := range []int{1, 8, 64} {
		b.Run("writers="+strconv.Itoa(writers), func(b *testing.B) {
			l, err := Open(b.TempDir(), &Options{Sync: SyncAlways})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Close()
			p := benchPayload(4096)
			start := make([]chan struct{}, writers)
			var done sync.WaitGroup
			for w := range writers {
				start[w] = make(chan struct{})
				go func() {
					for range start[w] {
						if _, err := l.Append(Record{Kind: frame.KindResponseBody, Payload: p}); err != nil {
							b.Error(err)
						}
						done.Done()
					}
				}()
			}
			b.ReportAllocs()
			b.SetBytes(int64(writers * len(p)))
			t0 := time.Now()
			n := 0
			for b.Loop() {
				done.Add(writers)
				for w := range writers {
					start[w] <- struct{}{}
				}
				done.Wait()
				n += writers
			}
			b.ReportMetric(float64(n)/time.Since(t0).Seconds(), "appends/s")
			for _, c := range start {
				close(c)
			}
		})
	}
}

// writeLog fills a log in dir with about total bytes of size-byte frames.
func writeLog(b *testing.B, dir string, opts *Options, size int, total int64) int64 {
	l, err := Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	p := benchPayload(size)
	var n int64
	for n < total {
		if _, err := l.Append(Record{Kind: frame.KindResponseBody, Payload: p}); err != nil {
			b.Fatal(err)
		}
		n += int64(size)
	}
	if err := l.Close(); err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkReplay reads 64 MiB of 4 KiB frames from the start, checking
// every CRC and self-offset and returning every payload.
func BenchmarkReplay(b *testing.B) {
	for _, run := range []struct{ codec, enc string }{{"none", ""}, {"snappy", ""}, {"none", "/enc=aes256gcm"}, {"snappy", "/enc=aes256gcm"}} {
		codec := run.codec
		b.Run("size=4096/codec="+codec+run.enc, func(b *testing.B) {
			var keys *crypt.Keys
			if run.enc != "" {
				keys = crypt.Ephemeral()
			}
			dir := b.TempDir()
			n := writeLog(b, dir, &Options{Sync: SyncNone, NoCompression: codec == "none", Keys: keys}, 4096, 64<<20)
			l, err := Open(dir, &Options{ReadOnly: true, Keys: keys})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetBytes(n)
			for b.Loop() {
				r := l.NewReader()
				var got int64
				for r.Next() {
					p, err := r.Payload()
					if err != nil {
						b.Fatal(err)
					}
					if r.Header().Kind != frame.KindSegmentHeader {
						got += int64(len(p))
					}
				}
				if r.Err() != nil || got != n {
					b.Fatalf("read %d of %d bytes: %v", got, n, r.Err())
				}
				r.Close()
			}
		})
	}
}

// BenchmarkRecovery opens a log whose last segment is a full 64 MiB: Open
// reads and checks every frame of it.
func BenchmarkRecovery(b *testing.B) {
	dir := b.TempDir()
	writeLog(b, dir, &Options{Sync: SyncNone, NoCompression: true, SegmentSize: 128 << 20}, 4096, 64<<20-4096)
	b.ReportAllocs()
	b.SetBytes(64 << 20)
	for b.Loop() {
		l, err := Open(dir, nil)
		if err != nil {
			b.Fatal(err)
		}
		l.Close()
	}
}
