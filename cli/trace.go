package cli

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"strconv"
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
	ucli "github.com/urfave/cli/v2"
)

func traceCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "trace",
		Usage:     "show one exchange: its frames' WAL offsets, the request and the response, decoded",
		ArgsUsage: "EXCHANGE (the id in an event's provenance, a # metrics line's extra.exchange, or replay)",
		Description: "The path from a canonical event back to the raw evidence: the exchange's index\n" +
			"entry, every frame (offset, time, kind, bytes), the request and response bodies\n" +
			"decompressed, and what the provider decoder made of them.",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "json", Usage: "print as JSON"},
			&ucli.BoolFlag{Name: "bodies", Value: true, Usage: "print the raw bodies (text form)"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("trace: need exactly one EXCHANGE id")
			}
			id, err := strconv.ParseUint(c.Args().First(), 10, 64)
			if err != nil || id == 0 {
				return usagef("trace: %q is not an exchange id (a positive integer)", c.Args().First())
			}
			r, closeR, err := openReader(c)
			if err != nil {
				return err
			}
			ex, err := r.Exchange(id)
			closeR()
			indexed := err == nil
			if err != nil && !errors.Is(err, engine.ErrNotFound) {
				return err
			}
			log, err := openWALReadOnly(c)
			if err != nil {
				return err
			}
			defer log.Close()
			t, err := readTrace(log, id, ex.Offsets, c.Bool("json"))
			if err != nil {
				return err
			}
			if t.x == nil {
				return fmt.Errorf("exchange %d: no frames in the WAL (retention removed them, or the id is wrong)", id)
			}
			if indexed {
				t.Exchange = &ex
			}
			t.decode()
			t.redact()
			if c.Bool("json") {
				t.RequestBody, t.ResponseBody = string(t.reqBody), string(t.respBody)
				return writeJSON(c, t)
			}
			return t.print(c.App.Writer, c.Bool("bodies"), log, ex.Offsets)
		},
	}
}

// traceFrame is one frame of a traced exchange.
type traceFrame struct {
	Offset uint64 `json:"offset"`
	Time   string `json:"time"`
	Kind   string `json:"kind"`
	Bytes  int    `json:"bytes"`
	Last   bool   `json:"last,omitempty"`
}

type trace struct {
	Exchange     *engine.Exchange        `json:"exchange,omitempty"`
	Frames       []traceFrame            `json:"frames"`
	Start        *exchange.RequestStart  `json:"request_start,omitempty"`
	ResponseHead *exchange.ResponseStart `json:"response_start,omitempty"`
	End          *exchange.ResponseEnd   `json:"response_end,omitempty"`
	Errors       []exchange.Error        `json:"errors,omitempty"`
	Request      *llm.Request            `json:"request,omitempty"`
	Response     *llm.Response           `json:"response,omitempty"`
	RequestBody  string                  `json:"request_body,omitempty"`
	ResponseBody string                  `json:"response_body,omitempty"`
	Problems     []string                `json:"problems,omitempty"`

	x *exchange.Exchange
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
func readTrace(log *wal.Log, id uint64, offsets []uint64, keepBody bool) (*trace, error) {
	t := &trace{Frames: []traceFrame{}}
	a := exchange.Assembler{SkipResponseBodies: true}
	err := exchangeFrames(log, id, offsets, func(h frame.Header, p []byte) error {
		t.Frames = append(t.Frames, traceFrame{Offset: h.Offset, Time: time.Unix(0, h.Time).UTC().Format(time.RFC3339Nano),
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

// exchangeFrames calls fn with every frame of exchange id, read at
// offsets when known, else by scanning the WAL. The payload is valid only
// during the call.
func exchangeFrames(log *wal.Log, id uint64, offsets []uint64, fn func(frame.Header, []byte) error) error {
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
func (t *trace) responseBody(x *exchange.Exchange, p []byte, keep bool) {
	if !t.body {
		t.body = true
		if x.Start != nil && x.Response != nil {
			t.dec = llm.DecoderFor(x.Start.Path, firstHeader(x.Response.Headers, "Content-Encoding"),
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
func (t *trace) decode() {
	x := t.x
	t.Start, t.ResponseHead, t.End, t.Errors = x.Start, x.Response, x.End, x.Errors
	if x.Start == nil {
		t.Problems = append(t.Problems, "no request start frame")
		if t.dec != nil {
			t.dec.Abort()
		}
		return
	}
	api := llm.Detect(x.Start.Path)
	reqBody, err := x.RequestBody, error(nil)
	if !x.Start.Decoded {
		reqBody, err = httpbody.Decode(firstHeader(x.Start.Headers, "Content-Encoding"), x.RequestBody)
	}
	if err != nil {
		t.Problems = append(t.Problems, "request body: "+err.Error())
		reqBody = x.RequestBody
	}
	t.reqBody = reqBody
	respBody := t.raw
	if t.dec == nil && x.Response != nil && (x.End == nil || !x.End.Decoded) {
		if b, err := httpbody.Decode(firstHeader(x.Response.Headers, "Content-Encoding"), respBody); err != nil {
			t.Problems = append(t.Problems, "response body: "+err.Error())
		} else {
			respBody = b
		}
	}
	t.respBody = respBody
	if api == "" {
		t.Problems = append(t.Problems, fmt.Sprintf("%s is not a model call this version decodes", x.Start.Path))
		return
	}
	if len(reqBody) > 0 {
		// Long texts are cut to traceTextLimit with their digest, as in
		// the response, so a huge prompt is held once (the body).
		opts := &llm.DecoderOptions{TextLimit: traceTextLimit, NewSpill: newHashSpill}
		if t.Request, err = llm.DecodeRequestWith(api, reqBody, opts); err != nil {
			t.Problems = append(t.Problems, err.Error())
		}
	}
	switch {
	case t.dec != nil:
		if t.Response, err = t.dec.Close(); err != nil {
			t.Problems = append(t.Problems, err.Error())
		}
	case len(respBody) > 0:
		if t.Response, err = llm.DecodeResponse(api, respBody); err != nil {
			t.Problems = append(t.Problems, err.Error())
		}
	}
}

// redact removes secrets from what decode made of the bodies: the
// decoded response joins text a stream split across events, so a key
// sent in two deltas is whole only here (the recorded bytes never hold
// it contiguously).
func (t *trace) redact() {
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

func firstHeader(h exchange.Headers, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// print writes the text form. The response body, unless it was gathered
// to be decompressed, is read from the WAL again and written frame by
// frame.
func (t *trace) print(w io.Writer, bodies bool, log *wal.Log, offsets []uint64) error {
	x := t.x
	fmt.Fprintf(w, "exchange %d\n", x.ID)
	if s := t.Start; s != nil {
		fmt.Fprintf(w, "  request   %s %s  provider=%s model=%s stream=%v\n", s.Method, s.Path, s.Provider, orDash(s.Model), s.Stream)
		fmt.Fprintf(w, "  ids       request=%s session=%s (%s) task=%s run=%s\n", s.RequestID, s.SessionID, s.SessionSource, orDash(s.TaskID), orDash(s.RunID))
		fmt.Fprintf(w, "  upstream  %s  capture=%s redaction=%s\n", s.Upstream, s.Mode, s.Redaction)
	}
	if e := t.End; e != nil {
		fmt.Fprintf(w, "  response  status=%d complete=%v ttfb=%s duration=%s bytes=%d chunks=%d\n", e.Status, e.Complete,
			time.Duration(e.TTFB).Round(time.Microsecond), time.Duration(e.Duration).Round(time.Microsecond), e.ResponseBytes, e.Chunks)
	}
	for _, e := range t.Errors {
		fmt.Fprintf(w, "  error     stage=%s %s (received %d bytes)\n", e.Stage, e.Error, e.Received)
	}
	if ex := t.Exchange; ex != nil && ex.LastSeq > 0 {
		fmt.Fprintf(w, "  events    session %s seq %d..%d (thread %d)\n", ex.Session, ex.FirstSeq, ex.LastSeq, ex.Thread)
	}
	for _, p := range t.Problems {
		fmt.Fprintf(w, "  problem   %s\n", p)
	}
	fmt.Fprintln(w, "frames")
	for _, f := range t.Frames {
		last := ""
		if f.Last {
			last = " last"
		}
		fmt.Fprintf(w, "  %12d  %s  %-14s %7d B%s\n", f.Offset, f.Time, f.Kind, f.Bytes, last)
	}
	if q := t.Request; q != nil {
		fmt.Fprintf(w, "request (decoded)\n  api=%s model=%s messages=%d tools=%d system=%d chars\n", q.API, orDash(q.Model), len(q.Messages), len(q.Tools), len(q.System))
		for _, p := range q.Params {
			fmt.Fprintf(w, "  param %s=%s\n", p.Name, p.Value)
		}
	}
	if r := t.Response; r != nil {
		fmt.Fprintf(w, "response (decoded)\n  id=%s model=%s stop=%s complete=%v events=%d\n", orDash(r.ID), orDash(r.Model), orDash(r.StopReason), r.Complete, r.Events)
		u, _ := json.Marshal(r.Usage)
		fmt.Fprintf(w, "  usage %s\n", u)
		for _, p := range r.Parts {
			b, _ := json.Marshal(p)
			fmt.Fprintf(w, "  part %s\n", b)
		}
		if r.Error != nil {
			fmt.Fprintf(w, "  error %s: %s\n", r.Error.Type, r.Error.Message)
		}
	}
	if !bodies {
		return nil
	}
	fmt.Fprintf(w, "request body (%d bytes)\n%s\n", len(t.reqBody), t.reqBody)
	if t.dec == nil || t.gather {
		fmt.Fprintf(w, "response body (%d bytes)\n%s\n", len(t.respBody), t.respBody)
		return nil
	}
	var n int64
	for _, f := range t.Frames {
		if f.Kind == frame.KindResponseBody.String() {
			n += int64(f.Bytes)
		}
	}
	fmt.Fprintf(w, "response body (%d bytes)\n", n)
	bw := bufio.NewWriterSize(w, 64<<10)
	err := exchangeFrames(log, t.x.ID, offsets, func(h frame.Header, p []byte) error {
		if h.Kind != frame.KindResponseBody {
			return nil
		}
		_, err := bw.Write(p)
		return err
	})
	bw.WriteByte('\n')
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}
