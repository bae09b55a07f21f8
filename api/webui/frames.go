package webui

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/frame"
)

// framePayloadMax is how much of one frame's payload the page shows;
// framesPayloadMax bounds all of them (`bbengine trace` prints the rest).
const (
	framePayloadMax  = 256 << 10
	framesPayloadMax = 8 << 20
)

// frameView is one WAL frame as the raw frames page shows it.
type frameView struct {
	Offset  uint64
	Time    string
	Kind    string
	Bytes   int
	Last    bool
	Payload string // the stored payload: text as it is, else a hex dump
	Hex     bool
	Cut     int  // bytes of the payload left out
	Mark    bool // one of the frames the linked event came from
}

// framesPage is the frames template's data.
type framesPage struct {
	Title    string
	Nav      string
	Live     bool
	Frag     string
	ID       uint64
	Back     string // the linked event in its timeline
	BackText string
	Lines    [][2]string // the summary, as bbengine trace prints it
	Frames   []frameView
	Problems []string
	Request  string // the decoded request, as JSON
	Response string // the decoded response, as JSON
	ReqBody  string
	RespBody string
}

// serveFrames answers the raw frames of one exchange. The query's s and
// e name the event it was reached from (the link back), first and last
// the WAL offsets of that event's frames (marked).
func (u *UI) serveFrames(w http.ResponseWriter, r *http.Request, rawID string) {
	id, err := strconv.ParseUint(rawID, 10, 64)
	if err != nil || id == 0 {
		u.refuse(w, http.StatusBadRequest, fmt.Sprintf("bbengine ui: %q is not an exchange id (a positive integer)", rawID))
		return
	}
	if u.log == nil {
		u.refuse(w, http.StatusServiceUnavailable, "bbengine ui: the WAL is not open here; run `bbengine trace "+rawID+"`")
		return
	}
	t, err := api.ReadTrace(u.svc, u.log, api.TraceRequest{Exchange: id, Bodies: true})
	if err != nil {
		u.refuse(w, statusOf(err), "bbengine ui: "+err.Error())
		return
	}
	q := r.URL.Query()
	first, _ := strconv.ParseUint(q.Get("first"), 10, 64)
	last, _ := strconv.ParseUint(q.Get("last"), 10, 64)
	p := &framesPage{Title: fmt.Sprintf("exchange %d", id), Nav: "frames", ID: id, Problems: t.Problems}
	if sid, seq := q.Get("s"), q.Get("e"); sid != "" && seq != "" {
		p.Back = Prefix + "s/" + url.PathEscape(sid) + "?at=" + url.QueryEscape(seq) + "#e" + url.QueryEscape(seq)
		p.BackText = fmt.Sprintf("event %s of session %s", seq, shortID(sid))
	} else if x := t.Exchange; x != nil && x.Session != "" && x.FirstSeq > 0 {
		p.Back = fmt.Sprintf("%ss/%s?at=%d#e%d", Prefix, url.PathEscape(x.Session), x.FirstSeq, x.FirstSeq)
		p.BackText = fmt.Sprintf("events %d–%d of session %s", x.FirstSeq, x.LastSeq, shortID(x.Session))
	}
	p.Lines = traceLines(t)
	total := 0
	err = api.ExchangeFrames(u.log, id, t.Offsets(), func(h frame.Header, pl []byte) error {
		f := frameView{Offset: h.Offset, Time: time.Unix(0, h.Time).UTC().Format(time.RFC3339Nano), Kind: h.Kind.String(),
			Bytes: len(pl), Last: h.Flags&frame.FlagLast != 0, Mark: first > 0 && h.Offset >= first && h.Offset <= last}
		show := min(len(pl), framePayloadMax, max(framesPayloadMax-total, 0))
		total += show
		f.Cut = len(pl) - show
		f.Payload, f.Hex = payloadText(pl[:show])
		p.Frames = append(p.Frames, f)
		return nil
	})
	if err != nil {
		p.Problems = append(p.Problems, "reading the frames again: "+err.Error())
	}
	p.Request = jsonText(t.Request)
	p.Response = jsonText(t.Response)
	p.ReqBody = clip(t.RequestBody, framePayloadMax)
	p.RespBody = clip(t.ResponseBody, framePayloadMax)
	u.render(w, http.StatusOK, "frames", p)
}

// payloadText returns a payload as text when it is UTF-8 with no control
// characters but tab, newline and carriage return, else as a hex dump.
func payloadText(p []byte) (string, bool) {
	if utf8.Valid(p) {
		ok := true
		for _, c := range p {
			if c < 0x20 && c != '\n' && c != '\r' && c != '\t' || c == 0x7f {
				ok = false
				break
			}
		}
		if ok {
			return string(p), false
		}
	}
	return hex.Dump(p), true
}

// jsonText returns v as indented JSON, or "" for nil.
func jsonText[T any](v *T) string {
	if v == nil {
		return ""
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err.Error()
	}
	return clip(string(b), framePayloadMax)
}

// traceLines is the head of `bbengine trace`: the request, ids,
// upstream, response and errors.
func traceLines(t *api.Trace) [][2]string {
	var out [][2]string
	add := func(k, format string, args ...any) { out = append(out, [2]string{k, fmt.Sprintf(format, args...)}) }
	if s := t.Start; s != nil {
		add("request", "%s %s  provider=%s model=%s stream=%v", s.Method, s.Path, s.Provider, dash(s.Model), s.Stream)
		add("ids", "request=%s session=%s (%s) task=%s run=%s", s.RequestID, s.SessionID, s.SessionSource, dash(s.TaskID), dash(s.RunID))
		add("upstream", "%s  capture=%s redaction=%s", s.Upstream, s.Mode, s.Redaction)
		for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
			for _, v := range s.Headers[k] {
				add("header", "%s: %s", k, v)
			}
		}
	}
	if h := t.ResponseHead; h != nil {
		b, _ := json.Marshal(h)
		add("response start", "%s", b)
	}
	if e := t.End; e != nil {
		add("response", "status=%d complete=%v ttfb=%s duration=%s bytes=%d chunks=%d", e.Status, e.Complete,
			time.Duration(e.TTFB).Round(time.Microsecond), time.Duration(e.Duration).Round(time.Microsecond), e.ResponseBytes, e.Chunks)
	}
	for _, e := range t.Errors {
		add("error", "stage=%s %s (received %d bytes)", e.Stage, e.Error, e.Received)
	}
	if ex := t.Exchange; ex != nil && ex.LastSeq > 0 {
		add("events", "session %s seq %d..%d (thread %d)", ex.Session, ex.FirstSeq, ex.LastSeq, ex.Thread)
	}
	return out
}
