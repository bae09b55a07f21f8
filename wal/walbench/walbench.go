package walbench

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"

	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/wal"
)

// Sizes are the payload sizes measured by default: an SSE chunk, a small
// request body or a batch of chunks, a large request body's slice.
var Sizes = []int{256, 4 << 10, 64 << 10}

// segmentSize is when the raw target starts a new file: the WAL's default.
const segmentSize = 64 << 20

// Target is one side of a comparison.
type Target struct {
	// Op appends (or writes) one record of the target's size.
	Op func() error
	// Close releases the target; the caller removes its directory.
	Close func() error
}

// Payload returns n bytes of LLM-stream-like JSON text that snappy
// compresses about 3x, like real response bodies.
func Payload(n int) []byte {
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

// Lone opens a log in dir with policy and returns a target appending one
// size-byte payload per Op, compressed when compress is true (the
// default of wal.Options).
func Lone(dir string, policy wal.SyncPolicy, size int, compress bool) (*Target, error) {
	l, err := wal.Open(dir, &wal.Options{Sync: policy, NoCompression: !compress})
	if err != nil {
		return nil, err
	}
	rec := wal.Record{Kind: frame.KindResponseBody, Exchange: 1, Payload: Payload(size)}
	return &Target{
		Op: func() error {
			_, err := l.Append(rec)
			return err
		},
		Close: l.Close,
	}, nil
}

// Raw returns a target writing, per Op, the frame Lone appends (without
// compression) to a file in dir, as durable as policy makes an append.
func Raw(dir string, policy wal.SyncPolicy, size int) (*Target, error) {
	rec := frame.AppendFrame(nil, frame.Header{Kind: frame.KindResponseBody, Exchange: 1}, Payload(size), false)
	r := &raw{dir: dir, sync: policy == wal.SyncAlways}
	if err := r.next(); err != nil {
		return nil, err
	}
	return &Target{Op: func() error { return r.write(rec) }, Close: r.close}, nil
}

// raw is the raw target's file.
type raw struct {
	dir  string
	sync bool
	n    int // files created
	f    *os.File
	w    *bufio.Writer
	size int64
}

// next starts the next file.
func (r *raw) next() error {
	if r.f != nil {
		if err := r.f.Close(); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(filepath.Join(r.dir, fmt.Sprintf("raw-%06d", r.n)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	r.n++
	r.f, r.size = f, 0
	if r.w == nil {
		r.w = bufio.NewWriterSize(f, 64<<10)
	} else {
		r.w.Reset(f)
	}
	return nil
}

func (r *raw) write(rec []byte) error {
	if r.size+int64(len(rec)) > segmentSize {
		if err := r.next(); err != nil {
			return err
		}
	}
	r.size += int64(len(rec))
	if r.sync {
		if _, err := r.f.Write(rec); err != nil {
			return err
		}
		return fdatasync(r.f)
	}
	if _, err := r.w.Write(rec); err != nil {
		return err
	}
	return r.w.Flush()
}

func (r *raw) close() error { return r.f.Close() }
