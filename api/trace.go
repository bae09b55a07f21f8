package api

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"path/filepath"
	"strings"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/codec/httpbody"
	"github.com/bbengine/bbengine/codec/llm"
	"github.com/bbengine/bbengine/codec/redact"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/wal"
)

// TraceRequest asks for the trace of one exchange.
type TraceRequest struct {
	// Exchange is the exchange id (an event's provenance names it).
	Exchange uint64 `json:"exchange"`
	// Bodies keeps the raw request and response bodies in the Trace's
	// RequestBody and ResponseBody. Without it the response body is
	// decoded as its frames are read, never assembled (unless it is
	// compressed).
	Bodies bool `json:"bodies,omitempty"`
}

// ReadTrace traces an exchange: s finds its WAL offsets (when the engine
// indexed it), log holds its frames (read at those offsets, else found by
// scanning). The caller keeps log open while it uses the Trace's body
// methods.
func ReadTrace(s Service, log *wal.Log, req TraceRequest) (*Trace, error) {
	id := req.Exchange
	ex, err := s.Exchange(id)
	indexed := err == nil
	if err != nil && !errors.Is(err, engine.ErrNotFound) {
		return nil, err
	}
	if indexed && len(ex.Offsets) > 0 {
		if err := expired(log, id, ex.Offsets); err != nil {
			return nil, err
		}
	}
	t, err := readTrace(log, id, ex.Offsets, req.Bodies)
	if err != nil {
		return nil, err
	}
	if t.x == nil {
		return nil, fmt.Errorf("%w: exchange %d: no frames in the WAL (retention removed them, or the id is wrong)", engine.ErrNotFound, id)
	}
	t.offsets = ex.Offsets
	if indexed {
		t.Exchange = &ex
	}
	t.decode()
	t.redact()
	if req.Bodies {
		t.RequestBody, t.ResponseBody = string(t.reqBody), string(t.respBody)
	}
	return t, nil
}

// ID is the exchange's id.
func (t *Trace) ID() uint64 { return t.x.ID }

// Offsets are the WAL offsets of the exchange's frames when the engine
// indexed them, else nil.
func (t *Trace) Offsets() []uint64 { return t.offsets }

// RawRequest is the request body, decompressed. The Trace owns it.
func (t *Trace) RawRequest() []byte { return t.reqBody }

// RawResponse is the response body, decompressed, when it was gathered;
// ok is false when it was decoded as it streamed by and must be read
// from the WAL again (ExchangeFrames) to be shown.
func (t *Trace) RawResponse() (body []byte, ok bool) {
	return t.respBody, t.dec == nil || t.gather
}

// TraceFrame is one frame of a traced exchange.
type TraceFrame struct {
	Offset uint64 `json:"offset"`
	Time   string `json:"time"`
	Kind   string `json:"kind"`
	Bytes  int    `json:"bytes"`
	Last   bool   `json:"last,omitempty"`
}

// Trace is one exchange traced back to the raw evidence: its index entry,
// every frame of it in the WAL, the request and response decoded, and
// what went wrong decoding them. Secrets are redacted from what decoding
// made of the bodies.
type Trace struct {
	Exchange     *engine.Exchange        `json:"exchange,omitempty"`
	Frames       []TraceFrame            `json:"frames"`
	Start        *exchange.RequestStart  `json:"request_start,omitempty"`
	ResponseHead *exchange.ResponseStart `json:"response_start,omitempty"`
	End          *exchange.ResponseEnd   `json:"response_end,omitempty"`
	Errors       []exchange.Error        `json:"errors,omitempty"`
	Request      *llm.Request            `json:"request,omitempty"`
	Response     *llm.Response           `json:"response,omitempty"`
	RequestBody  string                  `json:"request_body,omitempty"`
	ResponseBody string                  `json:"response_body,omitempty"`
	Problems     []string                `json:"problems,omitempty"`

	x       *exchange.Exchange
	offsets []uint64
	// The response body: decoded as read by dec, gathered in raw when
	// gather is set; body once a frame of it was read. reqBody and
	// respBody are the bodies decompressed (respBody only when gathered).
	dec      *llm.Decoder
	gather   bool
	raw      []byte
	body     bool
	reqBody  []byte
	respBody []byte
}

// readTrace reads the frames of exchange id: at the indexed offsets when
// known, else by scanning the WAL. The response body is decoded as its
// frames are read, never assembled, unless keepBody is set (the JSON
// form prints it) or the body is compressed.
func readTrace(log *wal.Log, id uint64, offsets []uint64, keepBody bool) (*Trace, error) {
	t := &Trace{Frames: []TraceFrame{}}
	a := exchange.Assembler{SkipResponseBodies: true}
	err := ExchangeFrames(log, id, offsets, func(h frame.Header, p []byte) error {
		t.Frames = append(t.Frames, TraceFrame{Offset: h.Offset, Time: time.Unix(0, h.Time).UTC().Format(time.RFC3339Nano),
			Kind: h.Kind.String(), Bytes: len(p), Last: h.Flags&frame.FlagLast != 0})
		if err := a.Add(h, p); err != nil {
			return err
		}
		if h.Kind == frame.KindResponseBody && len(p) > 0 {
			t.responseBody(a.Get(id), p, keepBody)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if xs := a.Exchanges(); len(xs) > 0 {
		t.x = xs[0]
	}
	return t, nil
}

// ExchangeFrames calls fn with every frame of exchange id, read at
// offsets when known, else by scanning the WAL. The payload is valid only
// during the call.
func ExchangeFrames(log *wal.Log, id uint64, offsets []uint64, fn func(frame.Header, []byte) error) error {
	r := log.NewReader()
	defer r.Close()
	take := func() error {
		h := r.Header()
		if h.Exchange != id {
			return nil
		}
		p, err := r.Payload()
		if err != nil {
			return err
		}
		return fn(h, p)
	}
	if len(offsets) > 0 {
		for _, off := range offsets {
			if err := r.Seek(off); err != nil {
				return fmt.Errorf("exchange %d: frame at WAL offset %d: %w", id, off, err)
			}
			if !r.Next() {
				if err := r.Err(); err != nil {
					return err
				}
				return fmt.Errorf("exchange %d: no frame at WAL offset %d", id, off)
			}
			if err := take(); err != nil {
				return err
			}
		}
		return nil
	}
	for r.Next() {
		if err := take(); err != nil {
			return err
		}
	}
	return r.Err()
}

// traceTextLimit is how much of one decoded text trace holds and prints
// in a decoded part; the raw body still prints whole.
const traceTextLimit = 1 << 20

// responseBody takes one response body frame: into the streaming decoder
// when the body is sent as is, else gathered.
func (t *Trace) responseBody(x *exchange.Exchange, p []byte, keep bool) {
	if !t.body {
		t.body = true
		if x.Start != nil && x.Response != nil {
			t.dec = llm.DecoderFor(x.Start.Path, FirstHeader(x.Response.Headers, "Content-Encoding"),
				&llm.DecoderOptions{TextLimit: traceTextLimit, NewSpill: newHashSpill})
		}
		t.gather = t.dec == nil || keep
	}
	if t.dec != nil {
		t.dec.Write(p)
	}
	if t.gather {
		t.raw = append(t.raw, p...)
	}
}

// hashSpill is an llm.Spill that keeps nothing but the digest: trace
// shows the first bytes of a long text, its size and its SHA-256.
type hashSpill struct{ h hash.Hash }

func newHashSpill() (llm.Spill, error)           { return &hashSpill{h: sha256.New()}, nil }
func (s *hashSpill) Write(p []byte) (int, error) { return s.h.Write(p) }
func (s *hashSpill) Commit() (string, error)     { return hex.EncodeToString(s.h.Sum(nil)), nil }
func (s *hashSpill) Abort()                      {}

// decode fills in the decoded request and response.
func (t *Trace) decode() {
	x := t.x
	t.Start, t.ResponseHead, t.End, t.Errors = x.Start, x.Response, x.End, x.Errors
	if x.Start == nil {
		t.Problems = append(t.Problems, "no request start frame")
		if t.dec != nil {
			t.dec.Abort()
		}
		return
	}
	proto := llm.Detect(x.Start.Path)
	reqBody, err := x.RequestBody, error(nil)
	if !x.Start.Decoded {
		reqBody, err = httpbody.Decode(FirstHeader(x.Start.Headers, "Content-Encoding"), x.RequestBody)
	}
	if err != nil {
		t.Problems = append(t.Problems, "request body: "+err.Error())
		reqBody = x.RequestBody
	}
	t.reqBody = reqBody
	respBody := t.raw
	if t.dec == nil && x.Response != nil && (x.End == nil || !x.End.Decoded) {
		if b, err := httpbody.Decode(FirstHeader(x.Response.Headers, "Content-Encoding"), respBody); err != nil {
			t.Problems = append(t.Problems, "response body: "+err.Error())
		} else {
			respBody = b
		}
	}
	t.respBody = respBody
	if proto == "" {
		t.Problems = append(t.Problems, fmt.Sprintf("%s is not a model call this version decodes", x.Start.Path))
		return
	}
	if len(reqBody) > 0 {
		// Long texts are cut to traceTextLimit with their digest, as in
		// the response, so a huge prompt is held once (the body).
		opts := &llm.DecoderOptions{TextLimit: traceTextLimit, NewSpill: newHashSpill}
		if t.Request, err = llm.DecodeRequestWith(proto, reqBody, opts); err != nil {
			t.Problems = append(t.Problems, err.Error())
		}
	}
	switch {
	case t.dec != nil:
		if t.Response, err = t.dec.Close(); err != nil {
			t.Problems = append(t.Problems, err.Error())
		}
	case len(respBody) > 0:
		if t.Response, err = llm.DecodeResponse(proto, respBody); err != nil {
			t.Problems = append(t.Problems, err.Error())
		}
	}
}

// redact removes secrets from what decode made of the bodies: the
// decoded response joins text a stream split across events, so a key
// sent in two deltas is whole only here (the recorded bytes never hold
// it contiguously).
func (t *Trace) redact() {
	red, err := redact.New(nil)
	if err != nil {
		return
	}
	if t.Start != nil {
		// Records from before upstream URLs lost their userinfo.
		s := *t.Start
		s.Upstream = proxy.StripUserinfo(s.Upstream)
		t.Start = &s
	}
	t.RequestBody = red.String(t.RequestBody)
	t.ResponseBody = red.String(t.ResponseBody)
	redactValue(red, &t.Request)
	redactValue(red, &t.Response)
}

// redactValue redacts *v through its JSON form.
func redactValue[T any](red *redact.Redactor, v **T) {
	if *v == nil {
		return
	}
	b, err := json.Marshal(*v)
	if err != nil {
		return
	}
	out := red.JSON(b)
	if len(out) == len(b) && string(out) == string(b) {
		return
	}
	var n T
	if json.Unmarshal(out, &n) == nil {
		*v = &n
	}
}

// FirstHeader returns the first value of the header name, matched
// without regard to case, or "".
func FirstHeader(h exchange.Headers, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// expired returns an error saying when retention removed the frames of
// exchange id, when it did: its derived events stay.
func expired(log *wal.Log, id uint64, offsets []uint64) error {
	rs, err := engine.ExpiredIn(filepath.Dir(log.Dir()))
	if err != nil {
		return err
	}
	for _, r := range rs {
		if offsets[0] >= r.From && offsets[0] < r.To {
			return fmt.Errorf("exchange %d: its raw frames (WAL offsets %d-%d) expired on %s by retention; what was derived from them stays (bbengine show)",
				id, offsets[0], offsets[len(offsets)-1], r.At.Format(time.DateOnly))
		}
	}
	return nil
}
