package derive

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bbengine/bbengine/codec/jsonw"
	"github.com/bbengine/bbengine/codec/llm"
)

// eventEncoder writes an Event as encoding/json's Marshal does, byte for
// byte (TestEventEncoder compares them on the golden corpora and on
// events with every field set), without its reflection: encoding an
// import's events was a tenth of its CPU. It also makes the event what
// decoding its encoding gives (see encodeHanded), but for the
// json.RawMessage fields written otherwise than they are: fixes says
// where in b each was written.
type eventEncoder struct {
	b []byte
	// invalid is set when a string held invalid UTF-8, written as
	// U+FFFD: decoding gives the string with U+FFFD in its place.
	invalid bool
	fixes   []rawFix
	err     error
	// arena holds the stored forms encodeHanded keeps (keep).
	arena     []byte
	arenaSize int
}

// rawFix is a RawMessage field, and where in the encoding its value is.
type rawFix struct {
	p          *json.RawMessage
	start, end int
}

// reset makes e ready for the next event.
func (e *eventEncoder) reset() {
	e.b, e.invalid, e.err = e.b[:0], false, nil
	clear(e.fixes)
	e.fixes = e.fixes[:0]
}

// fix points each RawMessage field written otherwise than it was at its
// value in enc, the encoding (or a copy of it).
func (e *eventEncoder) fix(enc []byte) {
	for _, f := range e.fixes {
		*f.p = enc[f.start:f.end:f.end]
	}
}

var errRawInvalid = errors.New("json: error calling MarshalJSON for type json.RawMessage: invalid JSON")

// event appends ev.
func (e *eventEncoder) event(ev *Event) {
	e.b = append(e.b, `{"seq":`...)
	e.b = strconv.AppendUint(e.b, ev.Seq, 10)
	e.b = append(e.b, `,"kind":`...)
	e.str(string(ev.Kind))
	e.b = append(e.b, `,"time_ns":`...)
	e.b = strconv.AppendInt(e.b, ev.Time, 10)
	e.b = append(e.b, `,"thread":`...)
	e.b = strconv.AppendInt(e.b, int64(ev.Thread), 10)
	e.optStr(`,"task":`, ev.Task)
	e.optStr(`,"run":`, ev.Run)
	e.optStr(`,"role":`, ev.Role)
	e.optStr(`,"text":`, ev.Text)
	e.optInt(`,"text_bytes":`, ev.TextBytes)
	e.optStr(`,"text_blob":`, ev.TextBlob)
	e.optStr(`,"signature":`, ev.Signature)
	e.optStr(`,"data":`, ev.Data)
	if len(ev.Parts) > 0 {
		e.b = append(e.b, `,"parts":`...)
		e.parts(ev.Parts)
	} else {
		ev.Parts = nil
	}
	if t := ev.Tool; t != nil {
		e.b = append(e.b, `,"tool":{`...)
		n := len(e.b)
		e.optStr(`,"id":`, t.ID)
		e.optStr(`,"name":`, t.Name)
		e.optRaw(`,"args":`, &t.Args)
		e.optBool(`,"is_error":`, t.IsError)
		e.optBool(`,"server":`, t.Server)
		e.optBool(`,"synthetic_id":`, t.SyntheticID)
		e.close(n)
	}
	if u := ev.Usage; u != nil {
		e.b = append(e.b, `,"usage":{`...)
		n := len(e.b)
		e.optInt(`,"input":`, u.Input)
		e.optInt(`,"output":`, u.Output)
		e.optInt(`,"cache_read":`, u.CacheRead)
		e.optInt(`,"cache_creation":`, u.CacheCreation)
		e.optInt(`,"cache_creation_5m":`, u.CacheCreation5m)
		e.optInt(`,"cache_creation_1h":`, u.CacheCreation1h)
		e.optInt(`,"reasoning":`, u.Reasoning)
		e.close(n)
	}
	if c := ev.Call; c != nil {
		e.b = append(e.b, `,"call":{`...)
		n := len(e.b)
		e.optStr(`,"api":`, string(c.API))
		e.optStr(`,"provider":`, c.Provider)
		e.optStr(`,"model":`, c.Model)
		e.optStr(`,"served":`, c.Served)
		if len(c.Params) > 0 {
			e.b = append(e.b, `,"params":[`...)
			for i := range c.Params {
				p := &c.Params[i]
				if i > 0 {
					e.b = append(e.b, ',')
				}
				e.b = append(e.b, `{"name":`...)
				e.str(p.Name)
				e.b = append(e.b, `,"value":`...)
				e.raw(&p.Value)
				e.b = append(e.b, '}')
			}
			e.b = append(e.b, ']')
		} else {
			c.Params = nil
		}
		e.optBool(`,"stream":`, c.Stream)
		e.b = append(e.b, `,"status":`...)
		e.b = strconv.AppendInt(e.b, int64(c.Status), 10)
		e.b = append(e.b, `,"latency_ns":`...)
		e.b = strconv.AppendInt(e.b, c.Latency, 10)
		e.b = append(e.b, `,"ttfb_ns":`...)
		e.b = strconv.AppendInt(e.b, c.TTFB, 10)
		e.optStr(`,"stop_reason":`, c.StopReason)
		e.optStr(`,"response_id":`, c.ResponseID)
		e.optStr(`,"upstream_id":`, c.UpstreamID)
		e.b = append(e.b, `,"complete":`...)
		e.b = strconv.AppendBool(e.b, c.Complete)
		e.b = append(e.b, `,"messages":`...)
		e.b = strconv.AppendInt(e.b, int64(c.Messages), 10)
		e.close(n)
	}
	if x := ev.Error; x != nil {
		e.b = append(e.b, `,"error":{"stage":`...)
		e.str(x.Stage)
		if x.Status != 0 {
			e.b = append(e.b, `,"status":`...)
			e.b = strconv.AppendInt(e.b, int64(x.Status), 10)
		}
		e.optStr(`,"type":`, x.Type)
		e.b = append(e.b, `,"message":`...)
		e.str(x.Message)
		e.b = append(e.b, '}')
	}
	if r := ev.Rewrite; r != nil {
		e.b = append(e.b, `,"rewrite":{"kind":`...)
		e.str(r.Kind)
		e.b = append(e.b, `,"from":`...)
		e.b = strconv.AppendInt(e.b, int64(r.From), 10)
		e.b = append(e.b, `,"kept":`...)
		e.b = strconv.AppendInt(e.b, int64(r.Kept), 10)
		e.b = append(e.b, `,"dropped":`...)
		e.b = strconv.AppendInt(e.b, int64(r.Dropped), 10)
		e.b = append(e.b, '}')
	}
	e.optBool(`,"partial":`, ev.Partial)
	e.optStr(`,"uuid":`, ev.UUID)
	e.optStr(`,"meta":`, ev.Meta)
	if r := ev.Record; r != nil {
		e.b = append(e.b, `,"record":{"type":`...)
		e.str(r.Type)
		e.optBool(`,"known":`, r.Known)
		e.b = append(e.b, `,"raw":`...)
		e.raw(&r.Raw)
		e.b = append(e.b, '}')
	}
	e.optRaw(`,"extra":`, &ev.Extra)
	e.b = append(e.b, `,"prov":`...)
	e.prov(&ev.Prov)
	if len(ev.Also) > 0 {
		// Set in merged views only, never on a stored event.
		e.b = append(e.b, `,"also":[`...)
		for i := range ev.Also {
			c := &ev.Also[i]
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.b = append(e.b, `{"session":`...)
			e.str(c.Session)
			e.b = append(e.b, `,"seq":`...)
			e.b = strconv.AppendUint(e.b, c.Seq, 10)
			e.b = append(e.b, `,"time_ns":`...)
			e.b = strconv.AppendInt(e.b, c.Time, 10)
			e.optStr(`,"uuid":`, c.UUID)
			e.b = append(e.b, `,"prov":`...)
			e.prov(&c.Prov)
			e.b = append(e.b, '}')
		}
		e.b = append(e.b, ']')
	} else {
		ev.Also = nil
	}
	e.b = append(e.b, '}')
}

// prov appends a provenance.
func (e *eventEncoder) prov(p *Provenance) {
	e.b = append(e.b, `{"exchange":`...)
	e.b = strconv.AppendUint(e.b, p.Exchange, 10)
	e.optStr(`,"request_id":`, p.RequestID)
	e.b = append(e.b, `,"side":`...)
	e.str(p.Side)
	e.b = append(e.b, `,"first":`...)
	e.b = strconv.AppendUint(e.b, p.First, 10)
	e.b = append(e.b, `,"last":`...)
	e.b = strconv.AppendUint(e.b, p.Last, 10)
	e.optStr(`,"file":`, p.File)
	e.optInt(`,"line":`, p.Line)
	e.b = append(e.b, '}')
}

// parts appends a non-empty list of parts.
func (e *eventEncoder) parts(ps []llm.Part) {
	e.b = append(e.b, '[')
	for i := range ps {
		p := &ps[i]
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.b = append(e.b, `{"type":`...)
		e.str(string(p.Type))
		e.optStr(`,"text":`, p.Text)
		e.optStr(`,"signature":`, p.Signature)
		e.optStr(`,"data":`, p.Data)
		e.optStr(`,"id":`, p.ID)
		e.optStr(`,"name":`, p.Name)
		e.optRaw(`,"input":`, &p.Input)
		e.optBool(`,"is_error":`, p.IsError)
		if len(p.Content) > 0 {
			e.b = append(e.b, `,"content":`...)
			e.parts(p.Content)
		} else {
			p.Content = nil
		}
		e.optStr(`,"media_type":`, p.MediaType)
		e.optInt(`,"size":`, p.Size)
		e.optStr(`,"sha256":`, p.SHA256)
		e.optStr(`,"url":`, p.URL)
		e.optInt(`,"text_bytes":`, p.TextBytes)
		e.optStr(`,"text_sha256":`, p.TextSHA256)
		p.TrimSHA256 = "" // not encoded
		e.optBool(`,"partial":`, p.Partial)
		e.optRaw(`,"raw":`, &p.Raw)
		e.b = append(e.b, '}')
	}
	e.b = append(e.b, ']')
}

// close ends an object whose fields are all omitempty, started at n:
// its first field's comma goes, and what was written after it moves
// back a byte.
func (e *eventEncoder) close(n int) {
	if len(e.b) > n {
		copy(e.b[n:], e.b[n+1:])
		e.b = e.b[:len(e.b)-1]
		for i := range e.fixes {
			if f := &e.fixes[i]; f.start > n {
				f.start--
				f.end--
			}
		}
	}
	e.b = append(e.b, '}')
}

func (e *eventEncoder) optStr(key, s string) {
	if s != "" {
		e.b = append(e.b, key...)
		e.str(s)
	}
}

func (e *eventEncoder) optInt(key string, n int64) {
	if n != 0 {
		e.b = append(e.b, key...)
		e.b = strconv.AppendInt(e.b, n, 10)
	}
}

func (e *eventEncoder) optBool(key string, v bool) {
	if v {
		e.b = append(e.b, key...)
		e.b = append(e.b, "true"...)
	}
}

// optRaw appends an omitempty RawMessage field.
func (e *eventEncoder) optRaw(key string, r *json.RawMessage) {
	if len(*r) == 0 {
		*r = nil
		return
	}
	e.b = append(e.b, key...)
	e.raw(r)
}

// raw appends *r as encoding/json writes a RawMessage (nil as null),
// and notes r in fixes when that differs from *r.
func (e *eventEncoder) raw(r *json.RawMessage) {
	if *r == nil {
		e.b = append(e.b, "null"...)
		*r = json.RawMessage("null")
		return
	}
	if !validRaw(*r) {
		if e.err == nil {
			e.err = errRawInvalid
		}
		return
	}
	n := len(e.b)
	e.b = appendNormal(e.b, *r)
	if w := e.b[n:]; !bytes.Equal(w, *r) {
		e.fixes = append(e.fixes, rawFix{r, n, len(e.b)})
	}
}

// rawValid are the options under which jsontext validates JSON as
// encoding/json does (FuzzValidRaw): invalid UTF-8 in strings and
// duplicate names pass.
var rawValid = []jsontext.Options{jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true)}

// validRaw is json.Valid, four times as fast.
func validRaw(r []byte) bool { return jsontext.Value(r).IsValid(rawValid...) }

// str appends s as encoding/json does, escaping HTML.
func (e *eventEncoder) str(s string) {
	var bad bool
	e.b, bad = jsonw.String(e.b, s)
	e.invalid = e.invalid || bad
}
