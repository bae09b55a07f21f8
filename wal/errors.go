package wal

import (
	"errors"
	"fmt"

	"github.com/bbengine/bbengine/codec/frame"
)

// Sentinel errors. Errors that concern a place in the log wrap one of these
// and name the segment file and the offset.
var (
	// ErrCorruption means a segment holds bytes that are not a valid frame
	// where a frame must be. It is wrapped by *CorruptionError.
	ErrCorruption = errors.New("wal: corruption")
	// ErrClosed is returned by operations on a closed Log.
	ErrClosed = errors.New("wal: log closed")
	// ErrReadOnly is returned by Append and Sync on a log opened read-only.
	ErrReadOnly = errors.New("wal: log opened read-only")
	// ErrNotBoundary means an offset is not the start of a frame. It is
	// wrapped by *BoundaryError, which names the next boundary.
	ErrNotBoundary = errors.New("wal: offset is not a frame boundary")
	// ErrOutOfRange means an offset lies before the first retained frame or
	// after the end of the log.
	ErrOutOfRange = errors.New("wal: offset out of range")
	// ErrLocked means another process holds the log open for writing.
	ErrLocked = errors.New("wal: log is locked by another writer")
	// ErrTooLarge means a payload exceeds frame.MaxPayload.
	ErrTooLarge = errors.New("wal: payload too large")
	// ErrNoKey is returned by Append on a log whose active segment is
	// encrypted and by Reader.Payload for an encrypted frame, when the
	// log was opened without Options.Keys.
	ErrNoKey = errors.New("wal: the log is encrypted; unlock it with BBENGINE_PASSPHRASE, --age-identity or the OS keyring")
	// ErrAuth is the reason of a *CorruptionError for an encrypted frame
	// that fails authentication. It is frame.ErrAuth.
	ErrAuth = frame.ErrAuth
)

// Reasons a frame is rejected, wrapped in CorruptionError.Err.
var (
	errOffsetMismatch = errors.New("frame records a different offset (stale or misplaced bytes)")
	errNoHeader       = errors.New("segment does not start with a segment header frame")
	errOverlap        = errors.New("segment overlaps the next segment")
	errShrunk         = errors.New("segment shrank while it was being read")
	errClearSegment   = errors.New("encrypted frame in a segment without a data key (format version 1)")
	// errClearFrame is a frame in the clear read from a log opened with
	// keys: anyone can write one with a valid CRC, so it is not genuine
	// (it is ErrAuth).
	errClearFrame = fmt.Errorf("%w: a frame in the clear in an encrypted log", ErrAuth)
)

// CorruptionError reports a frame that is invalid where a valid frame must
// be: in a sealed segment, or in the last segment followed by a valid frame
// (so it is not a torn write). It unwraps to ErrCorruption and to Err.
type CorruptionError struct {
	Segment string // path of the segment file
	Offset  uint64 // logical offset of the first invalid byte
	Err     error  // why the frame is invalid
}

func (e *CorruptionError) Error() string {
	if errors.Is(e.Err, ErrAuth) {
		// The CRC is valid, so repair would find nothing to cut.
		return fmt.Sprintf("wal: frame at offset %d in segment %s fails authentication: it was changed after it was written, or it belongs to another data directory; `bbengine wal verify --decrypt` lists every such frame",
			e.Offset, e.Segment)
	}
	return fmt.Sprintf("wal: corrupt frame in segment %s at offset %d: %v; run `bbengine wal repair` to keep a copy of the segment and truncate it at that offset (frames after it are lost)",
		e.Segment, e.Offset, e.Err)
}

// Unwrap returns ErrCorruption and the reason.
func (e *CorruptionError) Unwrap() []error { return []error{ErrCorruption, e.Err} }

// BoundaryError reports an offset that is not the start of a frame.
type BoundaryError struct {
	Offset uint64 // the offset asked for
	Next   uint64 // the first frame boundary after Offset
}

func (e *BoundaryError) Error() string {
	return fmt.Sprintf("wal: offset %d is not a frame boundary; the next frame starts at %d", e.Offset, e.Next)
}

// Unwrap returns ErrNotBoundary.
func (e *BoundaryError) Unwrap() error { return ErrNotBoundary }

// ErrGap means a segment does not start where the previous one ends: a
// segment was deleted, renamed or not copied. It is wrapped by *GapError.
var ErrGap = errors.New("wal: gap between segments")

// GapError reports bytes missing between two segments: Prev ends at End
// but Next starts at Base. Gaps left by retention (which records what it
// removes) and gaps accepted by Repair are not reported.
type GapError struct {
	Prev string // path of the segment before the gap
	End  uint64 // logical offset where Prev ends
	Next string // path of the segment after the gap
	Base uint64 // logical offset where Next starts
}

func (e *GapError) Error() string {
	return fmt.Sprintf("wal: gap in the log: segment %s ends at offset %d but the next segment %s starts at offset %d (%d bytes missing: a segment was deleted, renamed or not copied); put the segment back, or run `bbengine wal repair` to accept the loss",
		e.Prev, e.End, e.Next, e.Base, e.Base-e.End)
}

// Unwrap returns ErrGap.
func (e *GapError) Unwrap() error { return ErrGap }

// KeyError reports a segment whose data key cannot be unwrapped: the key
// block of its header was changed, the segment belongs to another data
// directory, or the generation that wrapped its key is not held. It
// unwraps to Err (crypt.ErrAuth, crypt.ErrUnknownGeneration).
type KeyError struct {
	Segment string // path of the segment file
	Gen     uint32 // generation of the key that wrapped the data key
	Err     error
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("wal: cannot unwrap the data key of segment %s (key generation %d): %v; the segment's header was changed, it belongs to another data directory, or its key generation was retired before the segment was re-wrapped",
		e.Segment, e.Gen, e.Err)
}

// Unwrap returns the reason.
func (e *KeyError) Unwrap() error { return e.Err }
