package crypt

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

func encryptAll(t testing.TB, k *Keys, chunkLog uint8, aad, plain []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, k, chunkLog, aad)
	if err != nil {
		t.Fatal(err)
	}
	// Odd write sizes cross chunk boundaries.
	for p := plain; len(p) > 0; {
		n := min(len(p), 1+len(p)%777)
		if _, err := w.Write(p[:n]); err != nil {
			t.Fatal(err)
		}
		p = p[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	return buf.Bytes()
}

func TestChunkedRoundTrip(t *testing.T) {
	k := Ephemeral()
	aad := []byte("blob abc")
	for _, n := range []int{0, 1, 1023, 1024, 1025, 4096, 5000} {
		plain := make([]byte, n)
		for i := range plain {
			plain[i] = byte(i * 7)
		}
		file := encryptAll(t, k, 10, aad, plain)
		got, err := ReadAll(file, k, aad, "f")
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		if !bytes.Equal(got, plain) {
			t.Fatalf("n=%d: round trip differs", n)
		}
		if sz, err := PlainSize(int64(len(file)), 10); err != nil || sz != int64(n) {
			t.Fatalf("n=%d: PlainSize = %d, %v", n, sz, err)
		}
		if bytes.Contains(file, []byte{0, 7, 14, 21, 28, 35, 42}) && n > 10 {
			t.Fatalf("n=%d: plaintext visible in the file", n)
		}
	}
}

func TestChunkedRandomReadAt(t *testing.T) {
	k := Ephemeral()
	plain := make([]byte, 10_000)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range plain {
		plain[i] = byte(rng.Uint32())
	}
	file := encryptAll(t, k, 10, nil, plain)
	r, err := NewReader(bytes.NewReader(file), int64(len(file)), k, nil, "f")
	if err != nil {
		t.Fatal(err)
	}
	if r.Size() != int64(len(plain)) {
		t.Fatalf("Size = %d", r.Size())
	}
	for range 2000 {
		off := rng.IntN(len(plain) + 10)
		n := rng.IntN(3000)
		p := make([]byte, n)
		got, err := r.ReadAt(p, int64(off))
		wantN := max(0, min(n, len(plain)-off))
		if got != wantN {
			t.Fatalf("ReadAt(%d, %d) = %d, want %d (%v)", n, off, got, wantN, err)
		}
		if wantN < n && !errors.Is(err, io.EOF) {
			t.Fatalf("ReadAt past end: err %v, want EOF", err)
		}
		if wantN == n && err != nil {
			t.Fatalf("ReadAt(%d,%d): %v", n, off, err)
		}
		if got > 0 && !bytes.Equal(p[:got], plain[off:off+got]) {
			t.Fatalf("ReadAt(%d, %d): wrong bytes", n, off)
		}
	}
}

// TestChunkedTamper flips every byte of a small file in turn: each flip
// is an error, never wrong plaintext.
func TestChunkedTamper(t *testing.T) {
	k := Ephemeral()
	plain := bytes.Repeat([]byte("secret!"), 400) // 2800 B: 3 chunks of 1 KiB
	file := encryptAll(t, k, 10, []byte("aad"), plain)
	for i := range file {
		if i >= 96 && i < HeaderSize {
			continue // reserved bytes are not read
		}
		bad := bytes.Clone(file)
		bad[i] ^= 0x40
		got, err := ReadAll(bad, k, []byte("aad"), "f")
		if err == nil {
			t.Fatalf("byte %d flipped: no error (%d bytes read)", i, len(got))
		}
		if i >= HeaderSize {
			var ce *CorruptionError
			if !errors.As(err, &ce) || !errors.Is(err, ErrAuth) {
				t.Fatalf("byte %d flipped: %v, want a CorruptionError unwrapping to ErrAuth", i, err)
			}
			chunk := int64(i-HeaderSize) / (1024 + ChunkOverhead)
			if ce.Offset != chunk*1024 {
				t.Fatalf("byte %d flipped: offset %d, want %d", i, ce.Offset, chunk*1024)
			}
		}
	}
	// A wrong AAD or key fails at the header.
	if _, err := ReadAll(file, k, []byte("other"), "f"); !errors.Is(err, ErrAuth) {
		t.Fatalf("wrong aad: %v", err)
	}
	if _, err := ReadAll(file, Ephemeral(), []byte("aad"), "f"); !errors.Is(err, ErrUnknownGeneration) && !errors.Is(err, ErrAuth) {
		t.Fatalf("other keys: %v", err)
	}
}

// TestChunkedTruncated cuts a file at every chunk boundary and inside
// chunks: each cut is detected.
func TestChunkedTruncated(t *testing.T) {
	k := Ephemeral()
	plain := bytes.Repeat([]byte{1, 2, 3}, 1024) // 3 KiB: 3 full chunks
	file := encryptAll(t, k, 10, nil, plain)
	for cut := 0; cut < len(file); cut++ {
		if _, err := ReadAll(file[:cut], k, nil, "f"); err == nil {
			t.Fatalf("cut at %d of %d: no error", cut, len(file))
		}
	}
}

func TestHeaderRewrap(t *testing.T) {
	k := Ephemeral()
	h, key, err := NewHeader(k, Chunked, 14, []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	b := h.Append(nil)
	h2, err := ParseHeader(b)
	if err != nil || h2 != h {
		t.Fatalf("ParseHeader: %+v, %v", h2, err)
	}
	b[20] ^= 1
	if _, err := ParseHeader(b); err == nil {
		t.Fatal("damaged header parsed")
	}
	if err := k.addGeneration(); err != nil {
		t.Fatal(err)
	}
	if err := h.Rewrap(k, []byte("x")); err != nil {
		t.Fatal(err)
	}
	if h.Gen != 2 {
		t.Fatalf("gen %d after rewrap", h.Gen)
	}
	got, err := h.Key(k, []byte("x"))
	if err != nil || got != key {
		t.Fatalf("rewrapped key differs: %v", err)
	}
}

func TestWriterAllocs(t *testing.T) {
	k := Ephemeral()
	w, err := NewWriter(io.Discard, k, 14, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 4096)
	if n := testing.AllocsPerRun(100, func() { w.Write(p) }); n != 0 {
		t.Fatalf("Write allocates %v times", n)
	}
}

func FuzzReader(f *testing.F) {
	k := Ephemeral()
	f.Add(encryptAll(f, k, 10, nil, []byte("hello")))
	f.Add(encryptAll(f, k, 10, nil, bytes.Repeat([]byte("a"), 3000)))
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewReader(bytes.NewReader(b), int64(len(b)), k, nil, "f")
		if err != nil {
			return
		}
		p := make([]byte, 100)
		for off := int64(0); off < r.Size(); off += 97 {
			if _, err := r.ReadAt(p, off); err != nil && !errors.Is(err, io.EOF) {
				return
			}
		}
	})
}
