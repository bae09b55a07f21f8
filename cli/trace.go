package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/frame"
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
			log, err := openWALReadOnly(c)
			if err != nil {
				closeR()
				return err
			}
			defer log.Close()
			t, err := api.ReadTrace(r, log, api.TraceRequest{Exchange: id, Bodies: c.Bool("json")})
			closeR()
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return writeJSON(c, t)
			}
			return printTrace(c.App.Writer, t, c.Bool("bodies"), log)
		},
	}
}

// printTrace writes the text form of t. The response body, unless it was
// gathered to be decompressed, is read from the WAL again and written
// frame by frame.
func printTrace(w io.Writer, t *api.Trace, bodies bool, log *wal.Log) error {
	fmt.Fprintf(w, "exchange %d\n", t.ID())
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
	fmt.Fprintf(w, "request body (%d bytes)\n%s\n", len(t.RawRequest()), t.RawRequest())
	if body, ok := t.RawResponse(); ok {
		fmt.Fprintf(w, "response body (%d bytes)\n%s\n", len(body), body)
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
	err := api.ExchangeFrames(log, t.ID(), t.Offsets(), func(h frame.Header, p []byte) error {
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
