package wal

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/frame"
)

// FuzzOpenSegment opens a log whose only segment holds arbitrary bytes, both
// read-only and for writing: it never panics, and every frame a Reader
// returns has a matching checksum and its own offset.
func FuzzOpenSegment(f *testing.F) {
	seg := appendHeaderFrame(nil, 0, timeZero)
	seg = frame.AppendFrame(seg, frame.Header{Offset: uint64(len(seg)), Kind: frame.KindRequestStart}, []byte("POST /v1/messages"), false)
	seg = frame.AppendFrame(seg, frame.Header{Offset: uint64(len(seg)), Kind: frame.KindResponseBody, Exchange: 3}, []byte(text300), true)
	f.Add(seg)
	f.Add(seg[:len(seg)-3])
	f.Add(append(seg[:len(seg):len(seg)], make([]byte, 100)...))
	f.Add([]byte{})
	f.Add(make([]byte, 48))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, readOnly := range []bool{true, false} {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, segName(0)), data, 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := Open(dir, &Options{ReadOnly: readOnly, Sync: SyncNone})
			if err != nil {
				continue
			}
			r := l.NewReader()
			for r.Next() {
				b := r.Stored()
				h := r.Header()
				seg, _ := os.ReadFile(filepath.Join(dir, segName(0)))
				at := r.Offset()
				if at+uint64(h.Size()) > uint64(len(seg)) {
					t.Fatalf("frame at %d runs past the file", at)
				}
				fb := seg[at : at+uint64(h.Size())]
				if binary.LittleEndian.Uint32(fb) != frame.Checksum(fb[4:]) || binary.LittleEndian.Uint64(fb[8:]) != at {
					t.Fatalf("returned a frame at %d whose checksum or offset does not match", at)
				}
				if string(fb[frame.HeaderLen:]) != string(b) {
					t.Fatalf("payload at %d differs from the file", at)
				}
				r.Payload()
			}
			r.Close()
			if !readOnly {
				if _, err := l.Append(Record{Kind: frame.KindError, Payload: []byte("after")}); err != nil {
					t.Fatalf("Append after recovery: %v", err)
				}
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			Check(dir)
		}
	})
}

var timeZero = time.Unix(0, 0)

const text300 = `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}} {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}} {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":15}}`
