package crypt

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// writeRecords writes plain as records of the given sizes, cycled.
func writeRecords(t testing.TB, k *Keys, aad, plain []byte, sizes ...int) ([]byte, []int) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewRecordWriter(&buf, k, aad)
	if err != nil {
		t.Fatal(err)
	}
	var ends []int // file size after each record
	for i, p := 0, plain; len(p) > 0; i++ {
		n := min(len(p), sizes[i%len(sizes)])
		if m, err := w.Write(p[:n]); err != nil || m != n {
			t.Fatalf("Write = %d, %v", m, err)
		}
		p = p[n:]
		ends = append(ends, buf.Len())
	}
	if w.Size() != int64(len(plain)) || w.FileSize() != int64(buf.Len()) {
		t.Fatalf("Size, FileSize = %d, %d; want %d, %d", w.Size(), w.FileSize(), len(plain), buf.Len())
	}
	return buf.Bytes(), ends
}

func readAllRecords(file []byte, k *Keys, aad []byte) ([]byte, error) {
	r, err := NewRecordReader(bytes.NewReader(file), int64(len(file)), k, aad, "f")
	if err != nil {
		return nil, err
	}
	return io.ReadAll(r)
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

func TestRecordsRoundTrip(t *testing.T) {
	k := Ephemeral()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 100, 5000, MaxRecord + 10} {
		plain := randBytes(rng, n)
		file, _ := writeRecords(t, k, []byte("pebble"), plain, 1, 7, 300, 2*MaxRecord)
		got, err := readAllRecords(file, k, []byte("pebble"))
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("n=%d: round trip: %v (equal %v)", n, err, bytes.Equal(got, plain))
		}
		if n > 16 && bytes.Contains(file, plain[:16]) {
			t.Fatalf("n=%d: plaintext visible in the file", n)
		}
		if _, err := readAllRecords(file, k, []byte("other")); !errors.Is(err, ErrAuth) {
			t.Fatalf("n=%d: another aad: %v, want ErrAuth", n, err)
		}
	}
}

// TestRecordsRandomReadAt reads random ranges against the plaintext
// model, from several goroutines.
func TestRecordsRandomReadAt(t *testing.T) {
	k := Ephemeral()
	rng := rand.New(rand.NewPCG(5, 6))
	plain := randBytes(rng, 20_000)
	file, _ := writeRecords(t, k, nil, plain, 1, 33, 700, 4096, 5)
	r, err := NewRecordReader(bytes.NewReader(file), int64(len(file)), k, nil, "f")
	if err != nil {
		t.Fatal(err)
	}
	if size, err := r.Size(); err != nil || size != int64(len(plain)) {
		t.Fatalf("Size = %d, %v", size, err)
	}
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for range 500 {
				off := rng.IntN(len(plain) + 10)
				p := make([]byte, rng.IntN(3000))
				n, err := r.ReadAt(p, int64(off))
				want := max(0, min(len(p), len(plain)-off))
				if n != want || !bytes.Equal(p[:n], plain[min(off, len(plain)):min(off, len(plain))+want]) {
					t.Errorf("ReadAt(%d, %d) = %d, %v; want %d bytes of the model", len(p), off, n, err, want)
					return
				}
				if n < len(p) && err != io.EOF || n == len(p) && err != nil {
					t.Errorf("ReadAt(%d, %d) = %d, %v", len(p), off, n, err)
					return
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}

// TestRecordsTornTail cuts the file at every byte of its last record:
// the reader sees the records before it and then end of file.
func TestRecordsTornTail(t *testing.T) {
	k := Ephemeral()
	plain := randBytes(rand.New(rand.NewPCG(7, 8)), 300)
	file, ends := writeRecords(t, k, nil, plain, 100)
	prev := ends[len(ends)-2]
	for cut := prev; cut < len(file); cut++ {
		got, err := readAllRecords(file[:cut], k, nil)
		if err != nil || !bytes.Equal(got, plain[:200]) {
			t.Fatalf("cut at %d: %d bytes, %v; want the first 200", cut, len(got), err)
		}
		// A torn tail that the file system filled with zeros, or with
		// garbage, reads the same.
		for _, fill := range []byte{0, 0xa5} {
			f := append([]byte(nil), file[:cut]...)
			f = append(f, bytes.Repeat([]byte{fill}, len(file)-cut)...)
			if bytes.Equal(f, file) {
				continue // the fill rewrote the bytes it replaced
			}
			got, err := readAllRecords(f, k, nil)
			if err != nil || !bytes.Equal(got, plain[:200]) {
				t.Fatalf("cut at %d, filled with %#x: %d bytes, %v", cut, fill, len(got), err)
			}
		}
		r, _ := NewRecordReader(bytes.NewReader(file[:cut]), int64(cut), k, nil, "f")
		if size, err := r.Size(); err != nil || size != 200 {
			t.Fatalf("cut at %d: Size = %d, %v", cut, size, err)
		}
	}
	// A header cut while the file was created is an empty file.
	for cut := range HeaderSize {
		got, err := readAllRecords(file[:cut], k, nil)
		if err != nil || len(got) != 0 {
			t.Fatalf("header cut at %d: %d bytes, %v", cut, len(got), err)
		}
	}
}

// TestRecordsFlippedByte flips every byte of a small file in turn: each
// change is an error, never other plaintext. A flip in the last record
// reads as a torn tail (end of file before it), as the format says.
func TestRecordsFlippedByte(t *testing.T) {
	k := Ephemeral()
	plain := randBytes(rand.New(rand.NewPCG(9, 10)), 90)
	file, ends := writeRecords(t, k, nil, plain, 30)
	last := ends[len(ends)-2]
	for i := range file {
		f := append([]byte(nil), file...)
		f[i] ^= 0x40
		got, err := readAllRecords(f, k, nil)
		switch {
		case i >= last:
			if err != nil || !bytes.Equal(got, plain[:60]) {
				t.Fatalf("flip at %d (last record): %d bytes, %v; want the first 60", i, len(got), err)
			}
		case err == nil:
			t.Fatalf("flip at %d: not detected", i)
		case i >= HeaderSize && !errors.Is(err, ErrCorruption):
			t.Fatalf("flip at %d: %v, want a CorruptionError", i, err)
		}
		if err != nil && i >= HeaderSize {
			var ce *CorruptionError
			if !errors.As(err, &ce) || ce.Path != "f" {
				t.Fatalf("flip at %d: %v does not name the file", i, err)
			}
		}
	}
}

func FuzzRecords(f *testing.F) {
	k := Ephemeral()
	file, _ := writeRecords(f, k, nil, []byte("hello, records of the pebble wal"), 5)
	f.Add(file)
	f.Add(file[:HeaderSize+10])
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewRecordReader(bytes.NewReader(b), int64(len(b)), k, nil, "f")
		if err != nil {
			return
		}
		io.ReadAll(r)
		r.Size()
		p := make([]byte, 64)
		r.ReadAt(p, 3)
		// The valid file with these bytes appended after it.
		g := append(append([]byte(nil), file...), b...)
		r, err = NewRecordReader(bytes.NewReader(g), int64(len(g)), k, nil, "f")
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(r)
		r.ReadAt(p, 7)
	})
}

// TestRecordsAllocs: appending a record and reading the next one in
// order allocate nothing once the buffers have grown.
func TestRecordsAllocs(t *testing.T) {
	k := Ephemeral()
	w, err := NewRecordWriter(io.Discard, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 4096)
	w.Write(p)
	if n := testing.AllocsPerRun(100, func() { w.Write(p) }); n != 0 {
		t.Errorf("RecordWriter.Write: %v allocs", n)
	}
	file, _ := writeRecords(t, k, nil, make([]byte, 300*4096), 4096)
	r, err := NewRecordReader(bytes.NewReader(file), int64(len(file)), k, nil, "f")
	if err != nil {
		t.Fatal(err)
	}
	r.Read(p)
	if n := testing.AllocsPerRun(100, func() { r.Read(p) }); n != 0 {
		t.Errorf("RecordReader.Read: %v allocs", n)
	}
}
