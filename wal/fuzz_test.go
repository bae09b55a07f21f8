package wal

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/internal/crypt"
)

// FuzzOpenSegment opens a log whose only segment holds arbitrary bytes, both
// read-only and for writing, without keys and with them: it never panics,
// and every frame a Reader returns has a matching checksum and its own
// offset.
func FuzzOpenSegment(f *testing.F) {
	keys := seededKeys(f, "fuzz", 1)
	seg := appendHeaderFrame(nil, 0, timeZero)
	seg = frame.AppendFrame(seg, frame.Header{Offset: uint64(len(seg)), Kind: frame.KindRequestStart}, []byte("POST /v1/messages"), false)
	seg = frame.AppendFrame(seg, frame.Header{Offset: uint64(len(seg)), Kind: frame.KindResponseBody, Exchange: 3}, []byte(text300), true)
	f.Add(seg)
	f.Add(seg[:len(seg)-3])
	f.Add(append(seg[:len(seg):len(seg)], make([]byte, 100)...))
	f.Add([]byte{})
	f.Add(make([]byte, 48))
	// An encrypted segment (format version 2), and it torn.
	enc, aead, err := newKeyHeader(nil, 0, timeZero, keys)
	if err != nil {
		f.Fatal(err)
	}
	nonce := make([]byte, frame.NonceLen)
	for _, p := range []struct {
		kind     frame.Kind
		payload  string
		compress bool
	}{{frame.KindRequestStart, "POST /v1/messages", false}, {frame.KindResponseBody, text300, true}} {
		n := len(enc)
		enc = frame.AppendEncrypted(enc, frame.Header{Offset: uint64(n), Kind: p.kind, Exchange: 3}, []byte(p.payload), p.compress)
		nonce[0]++
		frame.Encrypt(enc[n:], aead, nonce)
	}
	f.Add(enc)
	f.Add(enc[:len(enc)-3])
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, c := range []struct {
			readOnly bool
			keys     *crypt.Keys
		}{{true, nil}, {false, nil}, {true, keys}, {false, keys}} {
			readOnly := c.readOnly
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, segName(0)), data, 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := Open(dir, &Options{ReadOnly: readOnly, Sync: SyncNone, Keys: c.keys})
			if err != nil {
				continue
			}
			r := l.NewReader()
			for r.Next() {
				b := r.Stored()
				h := r.Header()
				at := r.Offset()
				// Opened with keys, a clear segment is followed by a
				// new, encrypted one.
				segs, _ := listSegments(dir)
				base := uint64(0)
				for _, s := range segs {
					if s.base <= at {
						base = s.base
					}
				}
				seg, _ := os.ReadFile(filepath.Join(dir, segName(base)))
				at -= base
				if at+uint64(h.Size()) > uint64(len(seg)) {
					t.Fatalf("frame at %d runs past the file", at)
				}
				fb := seg[at : at+uint64(h.Size())]
				if binary.LittleEndian.Uint32(fb) != frame.Checksum(fb[4:]) || binary.LittleEndian.Uint64(fb[8:]) != at+base {
					t.Fatalf("returned a frame at %d whose checksum or offset does not match", at)
				}
				if string(fb[frame.HeaderLen:]) != string(b) {
					t.Fatalf("payload at %d differs from the file", at)
				}
				if p, err := r.Payload(); err == nil && len(p) != int(h.RawLen) {
					t.Fatalf("payload at %d is %d bytes, its header says %d", at, len(p), h.RawLen)
				}
			}
			r.Close()
			if !readOnly {
				// Without keys an encrypted segment is not appended to.
				if _, err := l.Append(Record{Kind: frame.KindError, Payload: []byte("after")}); err != nil && (c.keys != nil || !errors.Is(err, ErrNoKey)) {
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
