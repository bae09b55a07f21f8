package frame

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/golang/snappy"
)

var text = []byte(strings.Repeat(`{"type":"content_block_delta","delta":{"text":"hello world"}}`+"\n", 64))

func TestRoundTrip(t *testing.T) {
	random := make([]byte, 4096)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range random {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		random[i] = byte(x)
	}
	tests := []struct {
		name       string
		payload    []byte
		compress   bool
		wantSnappy bool
	}{
		{"empty", nil, true, false},
		{"tiny", []byte("hi"), true, false},
		{"text compressed", text, true, true},
		{"text raw", text, false, false},
		{"random stays raw", random, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := Header{Offset: 1 << 40, Exchange: 77, Time: -5, Kind: KindResponseBody, Flags: FlagLast}
			b := AppendFrame([]byte("prefix"), h, tt.payload, tt.compress)
			f, err := Decode(b[6:])
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Compressed(); got != tt.wantSnappy {
				t.Errorf("Compressed() = %v, want %v", got, tt.wantSnappy)
			}
			if f.Size() != len(b)-6 {
				t.Errorf("Size() = %d, want %d", f.Size(), len(b)-6)
			}
			if f.Offset != h.Offset || f.Exchange != h.Exchange || f.Time != h.Time || f.Kind != h.Kind || f.Flags&FlagLast == 0 {
				t.Errorf("header = %+v, want fields of %+v", f.Header, h)
			}
			got, err := f.AppendPayload(nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.payload) {
				t.Errorf("payload mismatch: got %d bytes, want %d", len(got), len(tt.payload))
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	good := AppendFrame(nil, Header{Offset: 40, Kind: KindRequestStart}, []byte("GET /v1/messages"), false)
	mut := func(f func(b []byte)) []byte {
		b := bytes.Clone(good)
		f(b)
		return b
	}
	fix := func(f func(b []byte)) []byte {
		return mut(func(b []byte) { f(b); binary.LittleEndian.PutUint32(b, Checksum(b[4:])) })
	}
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"zeroed", make([]byte, 64), ErrInvalid},
		{"short header", good[:39], ErrShort},
		{"short payload", good[:len(good)-1], ErrShort},
		{"bit flip in payload", mut(func(b []byte) { b[45] ^= 1 }), ErrChecksum},
		{"bit flip in offset", mut(func(b []byte) { b[8] ^= 1 }), ErrChecksum},
		{"unknown kind", fix(func(b []byte) { b[32] = 200 }), ErrInvalid},
		{"unknown flag", fix(func(b []byte) { b[33] = 0x80 }), ErrInvalid},
		{"codec 2", fix(func(b []byte) { b[33] = 2 }), ErrInvalid},
		{"reserved", fix(func(b []byte) { b[35] = 1 }), ErrInvalid},
		{"rawLen too large", fix(func(b []byte) { binary.LittleEndian.PutUint32(b[36:], MaxPayload+1) }), ErrInvalid},
		{"len disagrees", fix(func(b []byte) { binary.LittleEndian.PutUint32(b[36:], 3) }), ErrInvalid},
		{"huge len", mut(func(b []byte) {
			binary.LittleEndian.PutUint32(b[4:], 1<<31)
			binary.LittleEndian.PutUint32(b[36:], 1<<31)
		}), ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.b)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Decode: got %v, want %v", err, tt.want)
			}
		})
	}
}

func TestSnappyLengthChecked(t *testing.T) {
	b := AppendFrame(nil, Header{Kind: KindImport}, text, true)
	// Claim a smaller uncompressed length and re-checksum: the frame parses,
	// but decompression must refuse before allocating.
	binary.LittleEndian.PutUint32(b[36:], binary.LittleEndian.Uint32(b[4:])+1)
	binary.LittleEndian.PutUint32(b, Checksum(b[4:]))
	f, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.AppendPayload(nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("AppendPayload: got %v, want ErrInvalid", err)
	}
}

func TestSetOffset(t *testing.T) {
	b := AppendFrame(nil, Header{Kind: KindError}, text, true)
	SetOffset(b, 12345)
	f, err := Decode(b)
	if err != nil || f.Offset != 12345 {
		t.Fatalf("Decode after SetOffset: %+v, %v", f.Header, err)
	}
}

func TestKindNames(t *testing.T) {
	for k := KindSegmentHeader; k < kindEnd; k++ {
		got, ok := ParseKind(k.String())
		if !ok || got != k {
			t.Errorf("ParseKind(%q) = %v, %v", k.String(), got, ok)
		}
	}
	for _, s := range []string{"", "invalid", "0", itoa(uint64(kindEnd)), "255", "1000", "x"} {
		if _, ok := ParseKind(s); ok {
			t.Errorf("ParseKind(%q) succeeded", s)
		}
	}
	if k, ok := ParseKind("5"); !ok || k != KindResponseBody {
		t.Errorf("ParseKind(5) = %v, %v", k, ok)
	}
}

func TestZeroAllocs(t *testing.T) {
	for _, compress := range []bool{false, true} {
		buf := make([]byte, 0, 64<<10)
		out := make([]byte, 0, 64<<10)
		h := Header{Offset: 99, Kind: KindResponseBody}
		allocs := testing.AllocsPerRun(100, func() {
			b := AppendFrame(buf[:0], h, text, compress)
			f, err := Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.AppendPayload(out[:0]); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("compress=%v: %v allocs per encode+decode, want 0", compress, allocs)
		}
	}
}

func FuzzDecodeFrame(f *testing.F) {
	f.Add([]byte{}, uint64(0), uint64(0), int64(0), uint8(1), false)
	f.Add(AppendFrame(nil, Header{Offset: 40, Kind: KindRequestStart}, []byte("GET /"), false), uint64(40), uint64(1), int64(1), uint8(2), false)
	f.Add(AppendFrame(nil, Header{Kind: KindResponseBody}, text, true), uint64(1<<33), uint64(9), int64(-1), uint8(5), true)
	f.Add(make([]byte, 80), uint64(0), uint64(0), int64(0), uint8(9), true)
	f.Add(encrypt(f, nil, Header{Offset: 40, Kind: KindRequestStart}, []byte("GET /"), false), uint64(40), uint64(1), int64(1), uint8(2), false)
	f.Add(encrypt(f, nil, Header{Kind: KindResponseBody, Flags: FlagLast}, text, true), uint64(7), uint64(2), int64(3), uint8(5), true)
	f.Fuzz(func(t *testing.T, data []byte, off, ex uint64, ts int64, kind uint8, compress bool) {
		// Arbitrary bytes: never panic; a frame that decodes has a good CRC.
		check := func(b []byte) {
			fr, err := Decode(b)
			if err != nil {
				return
			}
			if binary.LittleEndian.Uint32(b) != Checksum(b[4:fr.Size()]) {
				t.Fatal("decoded a frame whose checksum does not match")
			}
			p, err := fr.AppendPayload(nil)
			if err == nil && len(p) != int(fr.RawLen) {
				t.Fatalf("payload is %d bytes, header says %d", len(p), fr.RawLen)
			}
		}
		check(data)
		// The same bytes with a corrected checksum get past the CRC gate
		// and exercise the header checks and the decompressor.
		if len(data) >= HeaderLen {
			b := bytes.Clone(data)
			if n := binary.LittleEndian.Uint32(b[4:]); uint64(n) <= uint64(len(b)-HeaderLen) {
				binary.LittleEndian.PutUint32(b, Checksum(b[4:HeaderLen+int(n)]))
				check(b)
			}
		}
		// decode(encode(x)) == x.
		k := Kind(kind%uint8(kindEnd-1)) + 1
		if len(data) > MaxPayload {
			return
		}
		h := Header{Offset: off, Exchange: ex, Time: ts, Kind: k, Flags: FlagLast}
		b := AppendFrame(nil, h, data, compress)
		fr, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(AppendFrame(x)): %v", err)
		}
		if fr.Size() != len(b) || fr.Offset != off || fr.Exchange != ex || fr.Time != ts || fr.Kind != k || fr.Flags&FlagLast == 0 {
			t.Fatalf("header round trip: got %+v", fr.Header)
		}
		p, err := fr.AppendPayload(nil)
		if err != nil || !bytes.Equal(p, data) {
			t.Fatalf("payload round trip failed: %v", err)
		}
		// A payload compressed by the caller makes the same frame.
		if fr.Compressed() {
			block := snappy.Encode(nil, data)
			if got := AppendSnappy(nil, h, len(data), block); !bytes.Equal(got, b) {
				t.Fatal("AppendSnappy made another frame than AppendFrame")
			}
		}
	})
}
