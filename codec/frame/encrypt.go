package frame

import (
	"crypto/cipher"
	"encoding/binary"

	"github.com/golang/snappy"
)

// An encrypted frame is laid out like any other, with FlagEncrypted set
// and a stored payload of nonce || ciphertext || tag:
//
//	 0 u32 crc      masked CRC-32C of bytes [4, 40+len): covers the ciphertext
//	 4 u32 len      stored length = NonceLen + n + TagLen
//	 8 ...   header bytes [4, 40) are the AEAD's associated data
//	40 [12] nonce
//	52 [n]  ciphertext of the plaintext stored payload (snappy block or raw)
//	52+n [16] tag
//
// Because the CRC covers the ciphertext, checking a frame (Decode) needs
// no key. Because the header is associated data, a header rewritten
// together with its CRC (another offset, exchange, time, kind or length)
// fails Decrypt.
//
// Writing one takes two steps, so that a writer can lay the frame out
// before its offset is final and encrypt it once it is: AppendEncrypted
// (or AppendSnappyEncrypted) lays it out with room for the nonce and the
// tag and no CRC, and Encrypt encrypts it in place and checksums it.

// AppendEncrypted appends the frame described by h and payload to dst,
// laid out for Encrypt: FlagEncrypted set, len final, the nonce and tag
// zero and no CRC. It compresses as AppendFrame does and panics as it
// does. Until Encrypt is called the frame holds the payload in the clear
// and fails its checksum.
func AppendEncrypted(dst []byte, h Header, payload []byte, compress bool) []byte {
	if len(payload) > MaxPayload {
		panic("frame: payload exceeds MaxPayload")
	}
	if !h.Kind.Valid() {
		panic("frame: invalid kind " + h.Kind.String())
	}
	start := len(dst)
	body := start + HeaderLen + NonceLen
	h.Flags = h.Flags&FlagLast | FlagEncrypted
	h.RawLen = uint32(len(payload))
	stored := len(payload)
	if compress && len(payload) >= MinCompressLen {
		need := HeaderLen + NonceLen + snappy.MaxEncodedLen(len(payload)) + TagLen
		dst = grow(dst, need)
		enc := snappy.Encode(dst[body:start+need-TagLen], payload)
		if len(enc) < len(payload) {
			h.Flags |= FlagSnappy
			stored = len(enc)
		} else {
			copy(dst[body:], payload)
		}
		dst = dst[:body+stored+TagLen]
	} else {
		dst = grow(dst, HeaderLen+NonceLen+len(payload)+TagLen)
		copy(dst[body:], payload)
	}
	clear(dst[start+HeaderLen : body])
	clear(dst[body+stored:])
	h.Len = uint32(stored + Overhead)
	putFields(dst[start:], &h)
	binary.LittleEndian.PutUint32(dst[start:], 0)
	return dst
}

// AppendSnappyEncrypted is AppendSnappy laid out for Encrypt, as
// AppendEncrypted is AppendFrame.
func AppendSnappyEncrypted(dst []byte, h Header, rawLen int, block []byte) []byte {
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
	h.Flags = h.Flags&FlagLast | FlagSnappy | FlagEncrypted
	h.RawLen = uint32(rawLen)
	h.Len = uint32(len(block) + Overhead)
	dst = grow(dst, HeaderLen+NonceLen+len(block)+TagLen)
	body := start + HeaderLen + NonceLen
	clear(dst[start+HeaderLen : body])
	copy(dst[body:], block)
	clear(dst[body+len(block):])
	putFields(dst[start:], &h)
	binary.LittleEndian.PutUint32(dst[start:], 0)
	return dst
}

// Encrypt encrypts the frame f, laid out by AppendEncrypted or
// AppendSnappyEncrypted and with its final offset, in place under aead
// (AES-256-GCM: a 12-byte nonce and a 16-byte tag) with nonce, which
// must never be used twice with the same key, and then sets its CRC. f
// must be exactly one frame. The caller supplies the nonce (from
// crypto/rand) so that the package holds no randomness and its output
// can be checked against golden bytes. Encrypt panics if f is not laid
// out for it or aead is not a 12-byte-nonce, 16-byte-tag AEAD. It
// allocates nothing.
func Encrypt(f []byte, aead cipher.AEAD, nonce []byte) {
	if len(f) < HeaderLen+Overhead || Flags(f[33])&FlagEncrypted == 0 ||
		int(binary.LittleEndian.Uint32(f[4:])) != len(f)-HeaderLen {
		panic("frame: Encrypt of a frame not laid out by AppendEncrypted")
	}
	if aead.NonceSize() != NonceLen || aead.Overhead() != TagLen || len(nonce) != NonceLen {
		panic("frame: Encrypt needs a 12-byte nonce and a 16-byte tag")
	}
	copy(f[HeaderLen:], nonce)
	body := HeaderLen + NonceLen
	aead.Seal(f[body:body], f[HeaderLen:body], f[body:len(f)-TagLen], f[4:HeaderLen])
	binary.LittleEndian.PutUint32(f[0:], Checksum(f[4:]))
}

// Decrypt authenticates and decrypts the encrypted frame f and appends
// its plaintext stored payload (a snappy block when f.Compressed) to
// dst, returning the extended buffer. f must come from Decode: the
// associated data is the header bytes Decode checked, which f keeps. It
// returns ErrAuth when the frame fails authentication and ErrInvalid
// when f is not an encrypted frame from Decode. It allocates only when
// dst lacks capacity; dst must not overlap the buffer f was decoded
// from.
func (f *Frame) Decrypt(dst []byte, aead cipher.AEAD) ([]byte, error) {
	if !f.Encrypted() || len(f.Payload) < Overhead || len(f.Payload) != int(f.Len) || len(f.ad) != HeaderLen-4 {
		return dst, errNotEncrypted
	}
	start := len(dst)
	out, err := aead.Open(dst, f.Payload[:NonceLen], f.Payload[NonceLen:], f.ad)
	if err != nil {
		return dst[:start], ErrAuth
	}
	return out, nil
}
