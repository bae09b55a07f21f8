package cli

import (
	"encoding/json"
	"errors"
	"fmt"
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
			t, err := readTrace(log, id, ex.Offsets)
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
				return writeJSON(c, t)
			}
			t.print(c.App.Writer, c.Bool("bodies"))
			return nil
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
}

// readTrace reads the frames of exchange id: at the indexed offsets when
// known, else by scanning the WAL.
func readTrace(log *wal.Log, id uint64, offsets []uint64) (*trace, error) {
	t := &trace{Frames: []traceFrame{}}
	var a exchange.Assembler
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
		t.Frames = append(t.Frames, traceFrame{Offset: h.Offset, Time: time.Unix(0, h.Time).UTC().Format(time.RFC3339Nano),
			Kind: h.Kind.String(), Bytes: len(p), Last: h.Flags&frame.FlagLast != 0})
		return a.Add(h, p)
	}
	if len(offsets) > 0 {
		for _, off := range offsets {
			if err := r.Seek(off); err != nil {
				return nil, fmt.Errorf("exchange %d: frame at WAL offset %d: %w", id, off, err)
			}
			if !r.Next() {
				if err := r.Err(); err != nil {
					return nil, err
				}
				return nil, fmt.Errorf("exchange %d: no frame at WAL offset %d", id, off)
			}
			if err := take(); err != nil {
				return nil, err
			}
		}
	} else {
		for r.Next() {
			if err := take(); err != nil {
				return nil, err
			}
		}
		if err := r.Err(); err != nil {
			return nil, err
		}
	}
	if xs := a.Exchanges(); len(xs) > 0 {
		t.x = xs[0]
	}
	return t, nil
}

// decode fills in the decoded request and response.
func (t *trace) decode() {
	x := t.x
	t.Start, t.ResponseHead, t.End, t.Errors = x.Start, x.Response, x.End, x.Errors
	if x.Start == nil {
		t.Problems = append(t.Problems, "no request start frame")
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
	t.RequestBody = string(reqBody)
	respBody := x.ResponseBody
	if x.Response != nil && (x.End == nil || !x.End.Decoded) {
		if b, err := httpbody.Decode(firstHeader(x.Response.Headers, "Content-Encoding"), respBody); err != nil {
			t.Problems = append(t.Problems, "response body: "+err.Error())
		} else {
			respBody = b
		}
	}
	t.ResponseBody = string(respBody)
	if api == "" {
		t.Problems = append(t.Problems, fmt.Sprintf("%s is not a model call this version decodes", x.Start.Path))
		return
	}
	if len(reqBody) > 0 {
		if t.Request, err = llm.DecodeRequest(api, reqBody); err != nil {
			t.Problems = append(t.Problems, err.Error())
		}
	}
	if len(respBody) > 0 {
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

func (t *trace) print(w io.Writer, bodies bool) {
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
	if bodies {
		fmt.Fprintf(w, "request body (%d bytes)\n%s\n", len(t.RequestBody), t.RequestBody)
		fmt.Fprintf(w, "response body (%d bytes)\n%s\n", len(t.ResponseBody), t.ResponseBody)
	}
}
