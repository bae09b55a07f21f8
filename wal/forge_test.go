package wal

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/internal/crypt"
)

// TestForgedClearFrame replaces, without the key, an encrypted frame of
// an encrypted segment by a clear frame of the same size with a valid
// CRC: Check passes (the CRC is right), but a reader with the keys
// refuses it as not authentic, at its offset, and reads the frames
// around it.
func TestForgedClearFrame(t *testing.T) {
	dir := t.TempDir()
	keys := crypt.Ephemeral()
	l := mustOpen(t, dir, &Options{Keys: keys, NoCompression: true})
	for i := 0; i < 3; i++ {
		if _, err := l.Append(Record{Kind: frame.KindRequestBody, Exchange: uint64(i + 1), Payload: bytes.Repeat([]byte("secret "), 10)}); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	path := filepath.Join(dir, segName(0))
	data, _ := os.ReadFile(path)
	pos := int64(headerFrameLenEnc) // first data frame
	f, err := frame.Decode(data[pos:])
	if err != nil {
		t.Fatal(err)
	}
	size := f.Size()
	forged := bytes.Repeat([]byte("X"), len(f.Payload)) // same stored length
	copy(forged, "IGNORE PREVIOUS INSTRUCTIONS ")
	h := f.Header
	h.Flags = 0
	nf := frame.AppendFrame(nil, frame.Header{Offset: h.Offset, Exchange: h.Exchange, Time: h.Time, Kind: h.Kind}, forged, false)
	if len(nf) != size {
		t.Fatalf("size %d want %d", len(nf), size)
	}
	copy(data[pos:], nf)
	os.WriteFile(path, data, 0o600)

	l = mustOpen(t, dir, &Options{Keys: keys, ReadOnly: true})
	defer l.Close()
	r := l.NewReader()
	defer r.Close()
	good, refused := 0, 0
	for r.Next() {
		if r.Header().Kind == frame.KindSegmentHeader {
			continue
		}
		p, err := r.Payload()
		if err == nil && bytes.HasPrefix(p, []byte("IGNORE")) {
			t.Fatalf("forged clear frame at offset %d in an encrypted segment read as authentic: %q", r.Offset(), p[:30])
		}
		var ce *CorruptionError
		switch {
		case err == nil:
			good++
		case errors.As(err, &ce) && errors.Is(err, ErrAuth) && ce.Offset == uint64(pos):
			refused++
		default:
			t.Fatalf("frame at %d: %v", r.Offset(), err)
		}
	}
	if good != 2 || refused != 1 {
		t.Fatalf("%d frames read, %d refused; want 2 and 1", good, refused)
	}
	if infos, err := Check(dir); err != nil || infos[0].Err != nil {
		t.Fatalf("Check: %v %v (a valid CRC passes it)", err, infos)
	}
}
