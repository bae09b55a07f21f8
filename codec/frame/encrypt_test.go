package frame

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/golang/snappy"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// testAEAD returns AES-256-GCM under the key 0, 1, ..., 31.
func testAEAD(tb testing.TB) cipher.AEAD {
	var key [32]byte
	for i := range key {
		key[i] = byte(i)
	}
	b, err := aes.NewCipher(key[:])
	if err != nil {
		tb.Fatal(err)
	}
	a, err := cipher.NewGCM(b)
	if err != nil {
		tb.Fatal(err)
	}
	return a
}

var testNonce = []byte{0xa0, 0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xab}

// encrypt lays out and encrypts one frame.
func encrypt(tb testing.TB, dst []byte, h Header, payload []byte, compress bool) []byte {
	b := AppendEncrypted(dst, h, payload, compress)
	Encrypt(b[len(dst):], testAEAD(tb), testNonce)
	return b
}

// plain returns the decrypted, decompressed payload of the encrypted
// frame f.
func plain(f *Frame, aead cipher.AEAD) ([]byte, error) {
	p, err := f.Decrypt(nil, aead)
	if err != nil {
		return nil, err
	}
	pf := Frame{Header: f.Header.Plain(), Payload: p}
	return pf.AppendPayload(nil)
}

// TestEncryptedGolden pins the bytes of an encrypted frame made with a
// fixed key and nonce: testdata/encrypted.frame (go test -update
// rewrites it).
func TestEncryptedGolden(t *testing.T) {
	h := Header{Offset: 4096, Exchange: 7, Time: 1_767_225_600_000_000_000, Kind: KindResponseBody, Flags: FlagLast}
	got := encrypt(t, nil, h, text, true)
	path := filepath.Join("testdata", "encrypted.frame")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encrypted frame differs from %s (run go test -update if the format changed on purpose)", path)
	}
	f, err := Decode(want)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Encrypted() || !f.Compressed() || f.Offset != h.Offset || f.Exchange != h.Exchange || f.Time != h.Time || int(f.RawLen) != len(text) {
		t.Fatalf("header = %+v", f.Header)
	}
	if !bytes.Equal(f.Payload[:NonceLen], testNonce) {
		t.Errorf("nonce = %x, want %x", f.Payload[:NonceLen], testNonce)
	}
	if bytes.Contains(want, []byte("hello world")) {
		t.Error("the golden frame holds its payload in the clear")
	}
	p, err := plain(&f, testAEAD(t))
	if err != nil || !bytes.Equal(p, text) {
		t.Fatalf("decrypted payload: %d bytes, %v", len(p), err)
	}
	if _, err := f.AppendPayload(nil); !errors.Is(err, ErrEncrypted) {
		t.Errorf("AppendPayload of an encrypted frame: %v, want ErrEncrypted", err)
	}
}

func TestEncryptedRoundTrip(t *testing.T) {
	aead := testAEAD(t)
	for _, tt := range []struct {
		name       string
		payload    []byte
		compress   bool
		wantSnappy bool
	}{
		{"empty", nil, true, false},
		{"tiny", []byte("hi"), true, false},
		{"text compressed", text, true, true},
		{"text raw", text, false, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := Header{Offset: 1 << 40, Exchange: 77, Time: -5, Kind: KindResponseBody, Flags: FlagLast}
			b := encrypt(t, []byte("prefix"), h, tt.payload, tt.compress)
			f, err := Decode(b[6:])
			if err != nil {
				t.Fatal(err)
			}
			if f.Compressed() != tt.wantSnappy || !f.Encrypted() {
				t.Errorf("flags = %b", f.Flags)
			}
			if f.Size() != len(b)-6 {
				t.Errorf("Size() = %d, want %d", f.Size(), len(b)-6)
			}
			p, err := plain(&f, aead)
			if err != nil || !bytes.Equal(p, tt.payload) {
				t.Fatalf("payload: %q, %v", p, err)
			}
			if tt.wantSnappy {
				block := snappy.Encode(nil, tt.payload)
				c := AppendSnappyEncrypted(nil, h, len(tt.payload), block)
				Encrypt(c, aead, testNonce)
				if !bytes.Equal(c, b[6:]) {
					t.Error("AppendSnappyEncrypted made another frame than AppendEncrypted")
				}
			}
		})
	}
}

// TestEncryptedTamper: a frame changed anywhere after its CRC, with the
// CRC fixed up so that Decode passes it, fails Decrypt; under another
// key it fails too.
func TestEncryptedTamper(t *testing.T) {
	aead := testAEAD(t)
	good := encrypt(t, nil, Header{Offset: 4096, Exchange: 3, Time: 9, Kind: KindRequestBody}, text, true)
	fix := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		binary.LittleEndian.PutUint32(b, Checksum(b[4:]))
		return b
	}
	for _, tt := range []struct {
		name string
		b    []byte
	}{
		{"ciphertext", fix(func(b []byte) { b[HeaderLen+NonceLen+3] ^= 1 })},
		{"nonce", fix(func(b []byte) { b[HeaderLen] ^= 1 })},
		{"tag", fix(func(b []byte) { b[len(b)-1] ^= 1 })},
		{"offset", fix(func(b []byte) { b[8] ^= 1 })},
		{"exchange", fix(func(b []byte) { b[16] ^= 1 })},
		{"time", fix(func(b []byte) { b[24] ^= 1 })},
		{"kind", fix(func(b []byte) { b[32] = byte(KindResponseBody) })},
		{"last flag", fix(func(b []byte) { b[33] ^= byte(FlagLast) })},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Decode(tt.b)
			if err != nil {
				t.Fatalf("Decode: %v (the CRC was fixed up)", err)
			}
			if _, err := f.Decrypt(nil, aead); !errors.Is(err, ErrAuth) {
				t.Fatalf("Decrypt = %v, want ErrAuth", err)
			}
		})
	}
	var other [32]byte
	b, _ := aes.NewCipher(other[:])
	wrong, _ := cipher.NewGCM(b)
	f, _ := Decode(good)
	if _, err := f.Decrypt(nil, wrong); !errors.Is(err, ErrAuth) {
		t.Fatalf("Decrypt under another key = %v, want ErrAuth", err)
	}
	clear := AppendFrame(nil, Header{Kind: KindError}, text, false)
	if f, _ := Decode(clear); true {
		if _, err := f.Decrypt(nil, aead); !errors.Is(err, ErrInvalid) {
			t.Fatalf("Decrypt of a clear frame = %v, want ErrInvalid", err)
		}
	}
}

func TestEncryptedLengthRules(t *testing.T) {
	good := encrypt(t, nil, Header{Kind: KindImport}, []byte("0123456789"), false)
	fix := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		binary.LittleEndian.PutUint32(b, Checksum(b[4:]))
		return b
	}
	for _, tt := range []struct {
		name string
		b    []byte
	}{
		{"len below overhead", fix(func(b []byte) { binary.LittleEndian.PutUint32(b[4:], Overhead-1) })},
		{"stored differs from rawLen", fix(func(b []byte) { binary.LittleEndian.PutUint32(b[36:], 9) })},
		{"snappy not shorter", fix(func(b []byte) { b[33] |= byte(FlagSnappy) })},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := ParseHeader(tt.b); !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseHeader = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestEncryptedZeroAllocs(t *testing.T) {
	aead := testAEAD(t)
	for _, compress := range []bool{false, true} {
		buf := make([]byte, 0, 64<<10)
		ebuf := make([]byte, 0, 64<<10)
		out := make([]byte, 0, 64<<10)
		h := Header{Offset: 99, Kind: KindResponseBody}
		allocs := testing.AllocsPerRun(100, func() {
			b := AppendEncrypted(buf[:0], h, text, compress)
			Encrypt(b, aead, testNonce)
			f, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			p, err := f.Decrypt(ebuf[:0], aead)
			if err != nil {
				t.Fatal(err)
			}
			pf := Frame{Header: f.Header.Plain(), Payload: p}
			if _, err := pf.AppendPayload(out[:0]); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("compress=%v: %v allocs per encrypt+decrypt, want 0", compress, allocs)
		}
	}
}

// FuzzEncrypted: decrypt(encrypt(x)) == x for any header and payload,
// and a byte flipped anywhere in [4, 40+len), with the CRC fixed up,
// makes the frame fail Decode or Decrypt.
func FuzzEncrypted(f *testing.F) {
	f.Add([]byte{}, uint64(0), uint64(0), int64(0), uint8(1), false, uint32(0))
	f.Add([]byte("GET /"), uint64(40), uint64(1), int64(1), uint8(2), false, uint32(30))
	f.Add(text, uint64(1<<33), uint64(9), int64(-1), uint8(5), true, uint32(100))
	aead := testAEAD(f)
	f.Fuzz(func(t *testing.T, data []byte, off, ex uint64, ts int64, kind uint8, compress bool, at uint32) {
		if len(data) > MaxPayload {
			return
		}
		k := Kind(kind%uint8(kindEnd-1)) + 1
		h := Header{Offset: off, Exchange: ex, Time: ts, Kind: k, Flags: FlagLast}
		b := AppendEncrypted(nil, h, data, compress)
		Encrypt(b, aead, testNonce)
		fr, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(Encrypt(x)): %v", err)
		}
		if fr.Size() != len(b) || fr.Offset != off || fr.Exchange != ex || fr.Time != ts || fr.Kind != k || fr.Flags&FlagLast == 0 || !fr.Encrypted() {
			t.Fatalf("header round trip: got %+v", fr.Header)
		}
		p, err := plain(&fr, aead)
		if err != nil || !bytes.Equal(p, data) {
			t.Fatalf("payload round trip failed: %v", err)
		}
		// Flip one byte after the CRC and fix the CRC up.
		i := 4 + int(at%uint32(len(b)-4))
		c := bytes.Clone(b)
		c[i] ^= 1 << (at >> 29)
		if n := binary.LittleEndian.Uint32(c[4:]); uint64(n) <= uint64(len(c)-HeaderLen) {
			binary.LittleEndian.PutUint32(c, Checksum(c[4:HeaderLen+int(n)]))
		}
		fc, err := Decode(c)
		if err != nil {
			return
		}
		if _, err := fc.Decrypt(nil, aead); err == nil {
			t.Fatalf("flipped byte %d: Decrypt succeeded", i)
		}
	})
}
