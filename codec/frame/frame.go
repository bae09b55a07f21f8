package frame

import (
	"encoding/binary"
	"hash/crc32"

	"github.com/golang/snappy"
)

// HeaderLen is the length of the fixed frame header in bytes.
const HeaderLen = 40

// MaxPayload is the largest uncompressed payload a frame may carry (16 MiB).
// Larger bodies are split into several chunk frames by the writer.
const MaxPayload = 16 << 20

// MinCompressLen is the payload length below which AppendFrame never tries
// to compress: snappy cannot win enough on small payloads to pay for
// itself. A proxied stream's chunk is mostly one SSE event: on the
// recorded provider streams (../shared/provider-streams) snappy stores
// the events of 256-511 bytes in 97% of their size and those of 64-255
// in 86%, and it costs a quarter of the write system call that follows
// (about 300 ns for 256 bytes, BenchmarkAppendLone); from 512 bytes on
// it stores them in 58-66%.
const MinCompressLen = 512

// Kind says what a frame's payload is. Kind 0 is invalid.
type Kind uint8

// Frame kinds. Their payload encodings are owned by the packages that write
// them (the proxy, the importers); the log treats payloads as opaque bytes.
const (
	KindInvalid       Kind = 0  // never written; a zeroed header has this kind
	KindSegmentHeader Kind = 1  // first frame of every WAL segment (magic, version)
	KindRequestStart  Kind = 2  // method, path, headers, session/task/run/request ids
	KindRequestBody   Kind = 3  // one chunk of a request body
	KindResponseStart Kind = 4  // status and headers
	KindResponseBody  Kind = 5  // one chunk of a response body, as received
	KindResponseEnd   Kind = 6  // durations, byte totals, trailers
	KindError         Kind = 7  // a transport or upstream error of an exchange
	KindImport        Kind = 8  // one record imported from an agent's own log
	KindToolEvent     Kind = 9  // a tool call or result reported by a hook or harness
	KindMemory        Kind = 10 // a user's correction of memory: forget, pin (codec/exchange.Correction)
	KindBreaker       Kind = 11 // a change of a session's circuit breaker (codec/exchange.Breaker)
	kindEnd           Kind = 12 // first unknown kind
)

var kindNames = [kindEnd]string{
	"invalid", "segment-header", "request-start", "request-body", "response-start",
	"response-body", "response-end", "error", "import", "tool-event", "memory", "breaker",
}

// String returns the kind's name as used by the command line
// ("request-start"), or "kind(N)" for an unknown kind.
func (k Kind) String() string {
	if k < kindEnd {
		return kindNames[k]
	}
	return "kind(" + itoa(uint64(k)) + ")"
}

// Valid reports whether k is a known kind other than KindInvalid.
func (k Kind) Valid() bool { return k > KindInvalid && k < kindEnd }

// ParseKind returns the kind named s (a name as returned by String, or its
// decimal number).
func ParseKind(s string) (Kind, bool) {
	for i, n := range kindNames {
		if n == s && i > 0 {
			return Kind(i), true
		}
	}
	var n uint64
	if s == "" || len(s) > 3 {
		return 0, false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	if k := Kind(n); n < uint64(kindEnd) && k.Valid() {
		return k, true
	}
	return 0, false
}

// Flags are the frame's flag bits.
type Flags uint8

// Flag bits. Every bit not defined here must be zero.
const (
	FlagSnappy Flags = 1 << 0 // the payload is one snappy block
	FlagLast   Flags = 1 << 2 // the last chunk of a body
	// FlagEncrypted says the stored payload is nonce || AES-256-GCM
	// ciphertext || tag (see Encrypt). The codec applies before
	// encryption: a snappy frame encrypts its compressed bytes.
	FlagEncrypted Flags = 1 << 3

	codecMask = Flags(3)
	knownMask = codecMask | FlagLast | FlagEncrypted
)

// Sizes of an encrypted frame's additions to its stored payload: a
// random nonce before the ciphertext and the GCM tag after it.
const (
	NonceLen = 12
	TagLen   = 16
	// Overhead is how much longer an encrypted frame's stored payload is
	// than the plaintext stored payload (compressed or raw).
	Overhead = NonceLen + TagLen
)

// Header is the decoded fixed header of a frame.
type Header struct {
	Offset   uint64 // the frame's own logical offset in the log
	Exchange uint64 // exchange id, 0 when none
	Time     int64  // unix nanoseconds
	Kind     Kind
	Flags    Flags
	Len      uint32 // stored payload length
	RawLen   uint32 // uncompressed payload length
}

// Size returns the encoded length of the frame: header plus stored payload.
func (h *Header) Size() int { return HeaderLen + int(h.Len) }

// Compressed reports whether the payload is stored as a snappy block
// (before encryption, for an encrypted frame).
func (h *Header) Compressed() bool { return h.Flags&codecMask == FlagSnappy }

// Encrypted reports whether the stored payload is encrypted.
func (h *Header) Encrypted() bool { return h.Flags&FlagEncrypted != 0 }

// Plain returns the header of the frame as it would be stored
// unencrypted: FlagEncrypted cleared and Len less Overhead. A caller that
// decrypted a frame's payload with Decrypt decompresses it as the payload
// of Frame{Header: h.Plain(), Payload: plain}.
func (h *Header) Plain() Header {
	p := *h
	if p.Encrypted() {
		p.Flags &^= FlagEncrypted
		p.Len -= Overhead
	}
	return p
}

// Frame is a decoded frame. Payload is the stored payload and aliases the
// buffer passed to Decode: it is only valid as long as that buffer is, and
// it is still compressed when Header.Compressed reports true (use
// AppendPayload to get the original bytes).
type Frame struct {
	Header
	Payload []byte
	// ad is the header bytes [4, 40) the frame was decoded from: the
	// associated data of an encrypted frame (see Decrypt).
	ad []byte
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

const maskDelta = 0xa282ead8

// mask returns the masked form of a CRC, as LevelDB and Pebble store it.
func mask(c uint32) uint32 { return (c>>15 | c<<17) + maskDelta }

// Checksum returns the masked CRC-32C that a frame whose bytes after the CRC
// field are b must carry.
func Checksum(b []byte) uint32 { return mask(crc32.Checksum(b, castagnoli)) }

// AppendFrame appends the frame described by h and payload to dst and
// returns the extended buffer. h.Len, h.RawLen and the codec bits of
// h.Flags are ignored and computed: when compress is true and the payload is
// at least MinCompressLen bytes, it is stored as a snappy block if, and only
// if, that is shorter. AppendFrame panics if the payload exceeds MaxPayload
// or h.Kind is not valid; those are programming errors. It allocates only
// when dst lacks capacity; dst may be reused once the caller is done with
// the returned frame. payload is not retained.
func AppendFrame(dst []byte, h Header, payload []byte, compress bool) []byte {
	if len(payload) > MaxPayload {
		panic("frame: payload exceeds MaxPayload")
	}
	if !h.Kind.Valid() {
		panic("frame: invalid kind " + h.Kind.String())
	}
	start := len(dst)
	h.Flags &= FlagLast
	h.RawLen = uint32(len(payload))
	stored := len(payload)
	if compress && len(payload) >= MinCompressLen {
		need := HeaderLen + snappy.MaxEncodedLen(len(payload))
		dst = grow(dst, need)
		room := dst[start+HeaderLen : start+need]
		enc := snappy.Encode(room, payload)
		if len(enc) < len(payload) {
			h.Flags |= FlagSnappy
			stored = len(enc)
			dst = dst[:start+HeaderLen+stored]
		} else {
			dst = dst[:start+HeaderLen]
			dst = append(dst, payload...)
		}
	} else {
		dst = grow(dst, HeaderLen+len(payload))
		dst = dst[:start+HeaderLen]
		dst = append(dst, payload...)
	}
	h.Len = uint32(stored)
	putHeader(dst[start:], &h)
	return dst
}

// AppendSnappy appends the frame described by h whose payload, rawLen
// bytes, the caller has already compressed into block, a snappy block no
// longer than rawLen (as AppendFrame would store it). It is for a caller
// that writes the same payload again and keeps its compressed form; it
// panics as AppendFrame does, and if block is not shorter than rawLen.
func AppendSnappy(dst []byte, h Header, rawLen int, block []byte) []byte {
	if rawLen > MaxPayload {
		panic("frame: payload exceeds MaxPayload")
	}
	if !h.Kind.Valid() {
		panic("frame: invalid kind " + h.Kind.String())
	}
	if len(block) == 0 || len(block) >= rawLen {
		panic("frame: a snappy block must be shorter than its payload")
	}
	start := len(dst)
	h.Flags = h.Flags&FlagLast | FlagSnappy
	h.RawLen = uint32(rawLen)
	h.Len = uint32(len(block))
	dst = grow(dst, HeaderLen)
	dst = append(dst, block...)
	putHeader(dst[start:], &h)
	return dst
}

// grow returns dst with room for n more bytes, its length extended by n.
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) < n {
		nb := make([]byte, len(dst), 2*cap(dst)+n)
		copy(nb, dst)
		dst = nb
	}
	return dst[:len(dst)+n]
}

// putHeader writes h into the complete frame b and checksums it.
func putHeader(b []byte, h *Header) {
	putFields(b, h)
	binary.LittleEndian.PutUint32(b[0:], Checksum(b[4:HeaderLen+int(h.Len)]))
}

// putFields writes the fields of h, all but the CRC, into b.
func putFields(b []byte, h *Header) {
	_ = b[HeaderLen-1]
	binary.LittleEndian.PutUint32(b[4:], h.Len)
	binary.LittleEndian.PutUint64(b[8:], h.Offset)
	binary.LittleEndian.PutUint64(b[16:], h.Exchange)
	binary.LittleEndian.PutUint64(b[24:], uint64(h.Time))
	b[32] = byte(h.Kind)
	b[33] = byte(h.Flags)
	b[34], b[35] = 0, 0
	binary.LittleEndian.PutUint32(b[36:], h.RawLen)
}

// SetOffset rewrites the self-offset of the complete frame f (as returned
// by AppendFrame) and recomputes its checksum in place.
func SetOffset(f []byte, off uint64) {
	binary.LittleEndian.PutUint64(f[8:], off)
	binary.LittleEndian.PutUint32(f[0:], Checksum(f[4:]))
}

// ParseHeader decodes and validates the fixed header at the start of b
// without looking at the payload or the checksum. It returns ErrShort if b
// holds fewer than HeaderLen bytes and ErrInvalid (wrapped with the reason)
// if a field is out of range.
func ParseHeader(b []byte) (Header, error) {
	if len(b) < HeaderLen {
		return Header{}, ErrShort
	}
	h := Header{
		Len:      binary.LittleEndian.Uint32(b[4:]),
		Offset:   binary.LittleEndian.Uint64(b[8:]),
		Exchange: binary.LittleEndian.Uint64(b[16:]),
		Time:     int64(binary.LittleEndian.Uint64(b[24:])),
		Kind:     Kind(b[32]),
		Flags:    Flags(b[33]),
		RawLen:   binary.LittleEndian.Uint32(b[36:]),
	}
	switch {
	case h.Kind == KindInvalid:
		return h, errZeroKind
	case !h.Kind.Valid():
		return h, errUnknownKind
	case h.Flags&^knownMask != 0 || h.Flags&codecMask > FlagSnappy:
		return h, errFlags
	case b[34] != 0 || b[35] != 0:
		return h, errReserved
	case h.RawLen > MaxPayload:
		return h, errTooLarge
	}
	stored := h.Len
	if h.Encrypted() {
		if stored < Overhead {
			return h, errLength
		}
		stored -= Overhead
	}
	switch {
	case h.Flags&codecMask == 0 && stored != h.RawLen:
		return h, errLength
	case h.Flags&codecMask == FlagSnappy && (stored >= h.RawLen || stored == 0):
		return h, errLength
	}
	return h, nil
}

// Decode decodes the frame at the start of b, verifying the header and the
// checksum. The returned frame's Payload aliases b. It returns ErrShort if b
// ends before the frame does (the rest may not have been written yet),
// ErrChecksum if the checksum does not match, and ErrInvalid (wrapped) for a
// malformed header. It does not check the self-offset: callers that know
// where the frame was read compare Frame.Offset themselves. Decode allocates
// nothing and does not decompress.
func Decode(b []byte) (Frame, error) {
	h, err := ParseHeader(b)
	if err != nil {
		return Frame{Header: h}, err
	}
	end := HeaderLen + int(h.Len)
	if len(b) < end {
		return Frame{Header: h}, ErrShort
	}
	if binary.LittleEndian.Uint32(b) != Checksum(b[4:end]) {
		return Frame{Header: h}, ErrChecksum
	}
	return Frame{Header: h, Payload: b[HeaderLen:end:end], ad: b[4:HeaderLen:HeaderLen]}, nil
}

// AppendPayload appends f's uncompressed payload to dst and returns the
// extended buffer. It checks the length snappy announces against
// Header.RawLen before it grows dst, so a damaged frame cannot make it
// allocate more than MaxPayload bytes. It allocates only when dst lacks
// capacity. It returns ErrEncrypted for an encrypted frame: use Decrypt.
func (f *Frame) AppendPayload(dst []byte) ([]byte, error) {
	if f.Encrypted() {
		return dst, ErrEncrypted
	}
	if !f.Compressed() {
		return append(dst, f.Payload...), nil
	}
	n, err := snappy.DecodedLen(f.Payload)
	if err != nil || n != int(f.RawLen) {
		return dst, errDecompress
	}
	start := len(dst)
	dst = grow(dst, n)
	out, err := snappy.Decode(dst[start:], f.Payload)
	if err != nil || len(out) != n {
		return dst[:start], errDecompress
	}
	return dst, nil
}

func itoa(n uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return string(b[i:])
}
