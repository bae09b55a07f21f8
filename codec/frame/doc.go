// Package frame is the binary frame of the bbengine write-ahead log: a fixed
// 40-byte little-endian header followed by a payload that is stored either as
// is or as one snappy block.
//
// Layout (offsets in bytes; every integer is little-endian):
//
//	 0 u32 crc       masked CRC-32C (Castagnoli) of bytes [4, 40+len)
//	 4 u32 len       stored payload length (after compression)
//	 8 u64 off       the frame's own logical offset in the log
//	16 u64 exchange  exchange id; 0 when the frame belongs to none
//	24 i64 time      unix nanoseconds
//	32 u8  kind      Kind; 0 is invalid, so a zeroed header never parses
//	33 u8  flags     bits 0-1 codec (0 none, 1 snappy), bit 2 last chunk,
//	                 bit 3 encrypted
//	34 u16 reserved  must be 0
//	36 u32 rawLen    uncompressed payload length; equals len when not compressed
//	40 ...           payload (len bytes)
//
// An encrypted frame (FlagEncrypted) stores nonce[12] || AES-256-GCM
// ciphertext of the stored payload || tag[16], so len is the compressed
// or raw length plus Overhead (28). The header bytes [4, 40) are the
// associated data, and the CRC covers the ciphertext, so a frame is
// checked without the key and authenticated with it (see encrypt.go).
//
// The CRC covers everything after itself, so a wrong length or offset fails
// the check as surely as a flipped payload bit. It is masked as LevelDB and
// Pebble do so that a frame embedded in another frame's payload does not
// produce a checksum that is itself a valid checksum of its bytes.
//
// Decoding validates the header before it trusts any field: the kind must be
// known, unused flag bits and the reserved field must be zero, rawLen must not
// exceed MaxPayload, and len must be consistent with the codec. Nothing is
// allocated before those checks, and the decoder allocates nothing at all;
// callers pass the buffers.
//
// The package is pure: it has no state and no randomness (Encrypt takes
// its nonce from the caller), and all functions are safe for
// concurrent use.
//
// It imports nothing of bbengine's, like every codec package.
package frame
