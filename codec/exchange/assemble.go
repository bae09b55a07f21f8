package exchange

import (
	"fmt"

	"github.com/bbengine/bbengine/codec/frame"
)

// Exchange is one exchange put back together from its frames.
type Exchange struct {
	ID          uint64
	Start       *RequestStart
	RequestBody []byte
	RequestLast bool // a request body frame carried the last-chunk flag
	// RequestDeferred is set when the request body was too large to
	// gather (Assembler.DeferRequestBodies): RequestBody is empty and
	// the body is in the frames of kind KindRequestBody at Offsets.
	RequestDeferred bool
	Response        *ResponseStart
	ResponseBody    []byte
	ResponseLast    bool
	End             *ResponseEnd
	Errors          []Error
	Kinds           []frame.Kind // every frame's kind, in log order
	Offsets         []uint64     // every frame's offset, in log order
	Times           []int64      // every frame's time (unix ns), in log order
}

// Bounds returns the offsets of the first and last frames of one side of
// the exchange: the request side (its start and body frames) or the
// response side (everything else); ok is false when that side has none.
func (x *Exchange) Bounds(request bool) (first, last uint64, ok bool) {
	for i, k := range x.Kinds {
		if (k == frame.KindRequestStart || k == frame.KindRequestBody) != request {
			continue
		}
		if !ok {
			first, ok = x.Offsets[i], true
		}
		last = x.Offsets[i]
	}
	return first, last, ok
}

// maxPrealloc bounds the request body buffer an Assembler allocates ahead
// from a request start's body_bytes.
const maxPrealloc = 64 << 20

// Assembler groups the frames of a log into exchanges. Frames of one
// exchange must be added in log order; exchanges may interleave. It is
// not safe for concurrent use.
type Assembler struct {
	// SkipBodies leaves RequestBody and ResponseBody empty (the flags and
	// kinds are still kept), for readers that need only metadata.
	SkipBodies bool
	// SkipResponseBodies leaves ResponseBody empty (ResponseLast is still
	// kept), for readers that take the response body frames as they come
	// (the canonicalizer decodes them as a stream).
	SkipResponseBodies bool
	// DeferRequestBodies, when positive, bounds the request body bytes
	// gathered for one exchange: a body that would grow past it is let
	// go and the exchange marked RequestDeferred, for readers that can
	// read the body frames again when the exchange ends (the
	// canonicalizer), so that a large request is not held in memory
	// all the while its response streams, next to the proxy's copy.
	DeferRequestBodies int64
	// NewRequestBody, when set, makes the buffer a request body of n
	// bytes is gathered in (length 0, capacity at least n): a reader
	// that is done with a body once it decoded it lends them from a
	// pool.
	NewRequestBody func(n int) []byte
	byID           map[uint64]*Exchange
	order          []*Exchange
}

// Add takes one frame: its header and its uncompressed payload, which is
// copied. Frames without an exchange id (segment headers, imports) are
// ignored. A metadata payload that does not decode is an error naming
// the frame's offset; the frame is still counted in the exchange's Kinds,
// Offsets and Times, so a reader may note the error and go on.
func (a *Assembler) Add(h frame.Header, payload []byte) error {
	if h.Exchange == 0 {
		return nil
	}
	switch h.Kind {
	case frame.KindRequestStart, frame.KindRequestBody, frame.KindResponseStart,
		frame.KindResponseBody, frame.KindResponseEnd, frame.KindError:
	default:
		return nil
	}
	if a.byID == nil {
		a.byID = map[uint64]*Exchange{}
	}
	x := a.byID[h.Exchange]
	if x == nil {
		x = &Exchange{ID: h.Exchange}
		a.byID[h.Exchange] = x
		a.order = append(a.order, x)
	}
	x.Kinds = append(x.Kinds, h.Kind)
	x.Offsets = append(x.Offsets, h.Offset)
	x.Times = append(x.Times, h.Time)
	last := h.Flags&frame.FlagLast != 0
	var err error
	switch h.Kind {
	case frame.KindRequestStart:
		var s RequestStart
		s, err = DecodeRequestStart(payload)
		x.Start = &s
		if !a.SkipBodies && x.RequestBody == nil && s.BodyBytes > 0 && !a.defers(s.BodyBytes) {
			// The body's size is known: grow it once. A request is
			// bounded by the proxy's --max-request-bytes; a bad size
			// claims no more than maxPrealloc.
			if n := int(min(s.BodyBytes, maxPrealloc)); a.NewRequestBody != nil {
				x.RequestBody = a.NewRequestBody(n)[:0]
			} else {
				x.RequestBody = make([]byte, 0, n)
			}
		}
	case frame.KindRequestBody:
		switch {
		case a.SkipBodies || x.RequestDeferred:
		case a.defers(int64(len(x.RequestBody) + len(payload))):
			x.RequestBody, x.RequestDeferred = nil, true
		default:
			x.RequestBody = append(x.RequestBody, payload...)
		}
		x.RequestLast = x.RequestLast || last
	case frame.KindResponseStart:
		var s ResponseStart
		s, err = DecodeResponseStart(payload)
		x.Response = &s
	case frame.KindResponseBody:
		if !a.SkipBodies && !a.SkipResponseBodies {
			x.ResponseBody = append(x.ResponseBody, payload...)
		}
		x.ResponseLast = x.ResponseLast || last
	case frame.KindResponseEnd:
		var e ResponseEnd
		e, err = DecodeResponseEnd(payload)
		x.End = &e
	case frame.KindError:
		var e Error
		e, err = DecodeError(payload)
		x.Errors = append(x.Errors, e)
	}
	if err != nil {
		return fmt.Errorf("frame at offset %d (exchange %d): %w", h.Offset, h.Exchange, err)
	}
	return nil
}

func (a *Assembler) defers(n int64) bool {
	return a.DeferRequestBodies > 0 && n > a.DeferRequestBodies
}

// Exchanges returns the exchanges in the order of their first frames.
func (a *Assembler) Exchanges() []*Exchange { return a.order }

// Get returns the exchange with id, or nil.
func (a *Assembler) Get(id uint64) *Exchange { return a.byID[id] }

// Remove forgets exchange id, for readers that take each exchange as it
// ends and would otherwise keep every exchange of a long log.
func (a *Assembler) Remove(id uint64) {
	if a.byID[id] == nil {
		return
	}
	delete(a.byID, id)
	for i, x := range a.order {
		if x.ID == id {
			a.order = append(a.order[:i], a.order[i+1:]...)
			break
		}
	}
}
