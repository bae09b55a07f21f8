package frame

import (
	"errors"
	"fmt"
)

// Errors returned by the decoder. Malformed headers return an error that
// wraps ErrInvalid and names the field.
var (
	// ErrShort means the buffer ends before the frame does.
	ErrShort = errors.New("frame: short frame")
	// ErrChecksum means the frame's bytes do not match its CRC.
	ErrChecksum = errors.New("frame: checksum mismatch")
	// ErrInvalid means a header field is out of range.
	ErrInvalid = errors.New("frame: invalid header")
	// ErrAuth means an encrypted frame fails authentication: its
	// ciphertext or header was changed after it was written, or it was
	// encrypted under another key.
	ErrAuth = errors.New("frame: authentication failed")
	// ErrEncrypted means a frame's payload is encrypted and was asked for
	// without decrypting it.
	ErrEncrypted = errors.New("frame: payload is encrypted")
)

var (
	errZeroKind     = fmt.Errorf("%w: kind 0 (zeroed bytes)", ErrInvalid)
	errUnknownKind  = fmt.Errorf("%w: unknown kind", ErrInvalid)
	errFlags        = fmt.Errorf("%w: unknown flag bits", ErrInvalid)
	errReserved     = fmt.Errorf("%w: reserved field is not zero", ErrInvalid)
	errTooLarge     = fmt.Errorf("%w: uncompressed length exceeds MaxPayload", ErrInvalid)
	errLength       = fmt.Errorf("%w: stored and uncompressed lengths disagree", ErrInvalid)
	errDecompress   = fmt.Errorf("%w: snappy payload does not decode to the announced length", ErrInvalid)
	errNotEncrypted = fmt.Errorf("%w: Decrypt of a frame that is not encrypted", ErrInvalid)
)
