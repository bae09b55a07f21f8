package api

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/wal"
)

// ReplayRequest selects frames of the write-ahead log.
type ReplayRequest struct {
	// From is the first frame's offset, which must be a frame boundary;
	// nil starts at the first retained frame.
	From *uint64 `json:"from,omitempty"`
	// To stops before this offset; nil reads to the end.
	To *uint64 `json:"to,omitempty"`
	// Kind keeps only frames of this kind; 0 keeps every kind.
	Kind frame.Kind `json:"kind,omitempty"`
	// Exchange keeps only frames of this exchange; nil keeps all.
	Exchange *uint64 `json:"exchange,omitempty"`
	// Follow keeps waiting for new frames at the end until ctx is done.
	Follow bool `json:"follow,omitempty"`
	// Idle, when set, is called each time Follow waits at the end of the
	// log (a caller flushes its output there).
	Idle func() error `json:"-"`
}

// Replay calls fn with every frame of log that req selects, in order.
// The payload is valid only during the call. With req.Follow it returns
// nil once ctx is cancelled.
func Replay(ctx context.Context, log *wal.Log, req ReplayRequest, fn func(off uint64, h frame.Header, p []byte) error) error {
	r := log.NewReader()
	defer r.Close()
	if req.From != nil {
		if err := r.Seek(*req.From); err != nil {
			return fmt.Errorf("replay --from %d in %s: %w", *req.From, log.Dir(), err)
		}
	}
	for {
		for r.Next() {
			h := r.Header()
			if req.To != nil && r.Offset() >= *req.To {
				return nil
			}
			if req.Kind != 0 && h.Kind != req.Kind || req.Exchange != nil && h.Exchange != *req.Exchange {
				continue
			}
			p, err := r.Payload()
			if err != nil {
				return err
			}
			if err := fn(r.Offset(), h, p); err != nil {
				return err
			}
		}
		if err := r.Err(); err != nil {
			return err
		}
		if !req.Follow {
			return nil
		}
		if req.Idle != nil {
			if err := req.Idle(); err != nil {
				return err
			}
		}
		if err := r.Wait(ctx); err != nil {
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
	}
}

// Frame is a WAL frame as replay's JSON Lines form prints it: the
// payload as text when it is UTF-8, else in base64.
type Frame struct {
	Offset        uint64 `json:"offset"`
	Time          string `json:"time"`
	Kind          string `json:"kind"`
	Exchange      uint64 `json:"exchange,omitempty"`
	Last          bool   `json:"last,omitempty"`
	Compressed    bool   `json:"compressed,omitempty"`
	Len           uint32 `json:"len"`
	StoredLen     uint32 `json:"stored_len"`
	Payload       string `json:"payload,omitempty"`
	PayloadBase64 string `json:"payload_base64,omitempty"`
}

// NewFrame describes the frame at off with header h and payload p.
func NewFrame(off uint64, h frame.Header, p []byte) Frame {
	j := Frame{
		Offset: off, Time: time.Unix(0, h.Time).UTC().Format(time.RFC3339Nano), Kind: h.Kind.String(),
		Exchange: h.Exchange, Last: h.Flags&frame.FlagLast != 0, Compressed: h.Compressed(),
		Len: h.RawLen, StoredLen: h.Len,
	}
	if utf8.Valid(p) {
		j.Payload = string(p)
	} else {
		j.PayloadBase64 = base64.StdEncoding.EncodeToString(p)
	}
	return j
}
