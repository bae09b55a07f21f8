package webui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/internal/bytesize"
)

// eventsPerPage is how many events one window of a timeline shows.
const eventsPerPage = 250

// Folding: a text longer than foldBytes or foldLines is shown folded,
// its first line as the summary; a text longer than showBytes is cut
// (the raw frames hold it whole).
const (
	foldBytes = 2000
	foldLines = 24
	showBytes = 256 << 10
)

// eventView is one event as the timeline shows it.
type eventView struct {
	Seq      uint64
	Kind     string
	Class    string // the CSS class of its kind and role
	Label    string // what it is: "user", "assistant", "tool_call Bash", …
	Time     string
	TimeFull string
	Thread   int
	Text     string // shown as preformatted text, escaped
	Fold     bool   // Text is shown inside a <details>
	Open     bool   // the <details> starts open
	Summary  string // the <details> summary
	Cut      int64  // bytes of Text left out (the whole is in the blob store and the frames)
	Whole    string // the page of the whole text, when Cut and it is the event's text
	// HTML is a message's text rendered as Markdown and sanitised
	// (markdown); Text is then shown folded, as written. markdown says
	// the event is a message to render so.
	HTML     template.HTML
	markdown bool
	Meta     []string
	Parts    []string // other parts, as JSON
	Frames   string   // the raw frames page of its exchange, or ""
	Partial  bool
	IsError  bool
}

// timelinePage is the timeline template's data.
type timelinePage struct {
	Title   string
	Nav     string
	Live    bool
	Frag    string
	S       sessionRow
	Models  []string
	Events  []eventView
	Total   int
	First   uint64
	Last    uint64
	Page    int
	Pages   int
	Prev    string
	Next    string
	PageRef []pageRef

	// Memory, ProjectMemory and Pack link the session's memory, its
	// project's and its pack preview.
	Memory, ProjectMemory, Pack string
}

// pageRef links one window of the timeline.
type pageRef struct {
	N    int
	URL  string
	This bool
}

// serveTimeline answers one session's timeline: a window of its events,
// chosen by ?page= (1-based) or ?at=<seq> (the window holding it).
func (u *UI) serveTimeline(w http.ResponseWriter, r *http.Request, id string) {
	// r.URL.Path is decoded already: an id may hold '%'.
	if id == "" {
		u.refuse(w, http.StatusBadRequest, "bbengine ui: no session id in "+r.URL.Path)
		return
	}
	q := r.URL.Query()
	page, _ := strconv.Atoi(q.Get("page"))
	at, _ := strconv.ParseUint(q.Get("at"), 10, 64)
	p, err := u.timeline(id, page, at)
	if err != nil {
		u.refuse(w, statusOf(err), "bbengine ui: session "+id+": "+err.Error())
		return
	}
	u.render(w, http.StatusOK, "timeline", p)
}

// timeline builds the window of session id: page (1-based; 0 is the
// first) or, when at is set, the window holding the event of seq at.
func (u *UI) timeline(id string, page int, at uint64) (*timelinePage, error) {
	s, err := u.svc.Session(id)
	if err != nil {
		return nil, err
	}
	evs, err := u.svc.Events(s.ID, engine.EventFilter{})
	if err != nil {
		return nil, err
	}
	p := &timelinePage{Title: "session " + shortID(s.ID), Nav: "timeline", S: rowOf(&s), Total: len(evs)}
	p.Memory, p.Pack = memoryURL(s.ID, ""), Prefix+"pack?"+url.Values{"session": {s.ID}}.Encode()
	if d := engine.ProjectOf(&s); d != "" {
		p.ProjectMemory = memoryURL("", d)
	}
	for _, m := range s.Models {
		p.Models = append(p.Models, fmt.Sprintf("%s ×%d", m.Model, m.Requests))
	}
	p.Pages = max(1, (len(evs)+eventsPerPage-1)/eventsPerPage)
	if at > 0 {
		for i := range evs {
			if evs[i].Seq == at {
				page = i/eventsPerPage + 1
				break
			}
		}
	}
	p.Page = min(max(page, 1), p.Pages)
	lo := (p.Page - 1) * eventsPerPage
	hi := min(lo+eventsPerPage, len(evs))
	base := Prefix + "s/" + url.PathEscape(s.ID)
	link := func(n int) string {
		if n == 1 {
			return base
		}
		return base + "?page=" + strconv.Itoa(n)
	}
	if p.Page > 1 {
		p.Prev = link(p.Page - 1)
	}
	if p.Page < p.Pages {
		p.Next = link(p.Page + 1)
	}
	if p.Pages > 1 {
		for n := 1; n <= p.Pages; n++ {
			p.PageRef = append(p.PageRef, pageRef{N: n, URL: link(n), This: n == p.Page})
		}
	}
	p.Events = make([]eventView, 0, hi-lo)
	budget := pageMarkdown
	for i := lo; i < hi; i++ {
		v := viewOf(s.ID, &evs[i])
		if v.markdown && len(v.Text) <= budget {
			// The page renders at most pageMarkdown bytes of messages
			// as Markdown: a window of long messages stays quick.
			budget -= len(v.Text)
			v.HTML, _ = markdown(v.Text)
		}
		p.Events = append(p.Events, v)
	}
	if hi > lo {
		p.First, p.Last = evs[lo].Seq, evs[hi-1].Seq
	}
	return p, nil
}

// viewOf renders one event.
func viewOf(session string, e *engine.Event) eventView {
	t := time.Unix(0, e.Time)
	v := eventView{Seq: e.Seq, Kind: string(e.Kind), Class: "k-" + string(e.Kind), Label: string(e.Kind),
		Time: t.Format("15:04:05.000"), TimeFull: t.Format(time.RFC3339Nano), Thread: e.Thread, Partial: e.Partial}
	v.Frames = framesURL(session, e.Seq, e.Prov)
	if e.Prov.File != "" {
		v.Meta = append(v.Meta, fmt.Sprintf("from %s:%d", e.Prov.File, e.Prov.Line))
	}
	if e.Task != "" {
		v.Meta = append(v.Meta, "task "+e.Task)
	}
	text := e.Text
	switch e.Kind {
	case engine.KindMessage:
		v.Label = e.Role
		v.Class += " r-" + e.Role
		if e.Meta != "" {
			v.Label += " (" + e.Meta + ")"
			v.Class += " meta"
		}
	case engine.KindSystem:
		v.Label = "system prompt"
		v.Fold = true
	case engine.KindThinking:
		v.Fold = true
		if text == "" && e.Data != "" {
			text = fmt.Sprintf("(redacted or encrypted thinking, %d bytes)", len(e.Data))
		}
	case engine.KindToolCall:
		if e.Tool != nil {
			v.Label = "tool call " + e.Tool.Name
			if e.Tool.Server {
				v.Label += " (provider)"
			}
			v.Meta = append(v.Meta, "id "+e.Tool.ID)
			text = indentJSON(e.Tool.Args)
		}
	case engine.KindToolResult:
		v.Label = "tool result"
		if e.Tool != nil {
			v.Meta = append(v.Meta, "id "+e.Tool.ID)
			if e.Tool.IsError {
				v.Label += " (error)"
				v.IsError = true
			}
		}
	case engine.KindUsage:
		if us := e.Usage; us != nil {
			v.Label = "usage"
			text = fmt.Sprintf("input %d  output %d  cache read %d  cache write %d  reasoning %d",
				us.Input, us.Output, us.CacheRead, us.CacheCreation, us.Reasoning)
		}
	case engine.KindModelCall:
		if c := e.Call; c != nil {
			v.Label = "model call " + c.Model
			if c.Served != "" && c.Served != c.Model {
				v.Label += " → " + c.Served
			}
			text = fmt.Sprintf("%s %s  status %d  ttfb %s  latency %s  stop %s  stream %v  messages %d  complete %v",
				c.Provider, c.API, c.Status, time.Duration(c.TTFB).Round(time.Millisecond), time.Duration(c.Latency).Round(time.Millisecond),
				dash(c.StopReason), c.Stream, c.Messages, c.Complete)
			v.IsError = c.Status >= 400
		}
	case engine.KindError:
		v.IsError = true
		if er := e.Error; er != nil {
			v.Label = "error (" + er.Stage + ")"
			text = strings.TrimSpace(fmt.Sprintf("%s %s %s", statusText(er.Status), er.Type, er.Message))
		}
	case engine.KindInterruption:
		v.IsError = true
	case engine.KindRewrite:
		if rw := e.Rewrite; rw != nil {
			v.Label = "rewrite: " + rw.Kind
			text = fmt.Sprintf("thread %d → %d: kept %d messages, dropped %d", rw.From, e.Thread, rw.Kept, rw.Dropped)
		}
	case engine.KindRecord:
		if rec := e.Record; rec != nil {
			v.Label = "record " + rec.Type
			text = indentJSON(rec.Raw)
			v.Fold = true
		}
	}
	for _, pt := range e.Parts {
		b, _ := json.Marshal(pt)
		v.Parts = append(v.Parts, clip(string(b), foldBytes))
	}
	if len(e.Also) > 0 {
		v.Meta = append(v.Meta, fmt.Sprintf("also in %s #%d", shortID(e.Also[0].Session), e.Also[0].Seq))
	}
	if e.TextBytes > int64(len(e.Text)) {
		v.Cut = e.TextBytes - int64(len(e.Text))
	}
	if len(text) > showBytes {
		v.Cut += int64(len(text) - showBytes)
		text = clip(text, showBytes)
	}
	if v.Cut > 0 && (e.TextBlob != "" || len(e.Text) > showBytes) && strings.HasPrefix(e.Text, text) {
		v.Whole = textURL(session, e.Seq)
	}
	v.Text = text
	// The timeline renders it (within its page's budget).
	v.markdown = e.Kind == engine.KindMessage && e.Meta == "" && (e.Role == "user" || e.Role == "assistant") && v.Cut == 0
	lines := strings.Count(text, "\n") + 1
	if !v.Fold && (len(text) > foldBytes || lines > foldLines) && e.Kind != engine.KindMessage {
		v.Fold = true
	}
	if v.Fold {
		first, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
		v.Summary = fmt.Sprintf("%s … (%d lines, %s)", clip(first, 120), lines, bytesize.Format(int64(len(text))))
	}
	return v
}

// framesURL is the raw frames page of the exchange the event seq of
// session came from, marking its frames and linking back to it; "" for
// an imported event, which has no exchange.
func framesURL(session string, seq uint64, p engine.Provenance) string {
	if p.Exchange == 0 || p.Side == "import" {
		return ""
	}
	q := url.Values{"s": {session}, "e": {strconv.FormatUint(seq, 10)},
		"first": {strconv.FormatUint(p.First, 10)}, "last": {strconv.FormatUint(p.Last, 10)}}
	return fmt.Sprintf("%sx/%d?%s#o%d", Prefix, p.Exchange, q.Encode(), p.First)
}

// indentJSON returns raw JSON indented, or as it is when it is not JSON.
func indentJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

// clip cuts s to at most n bytes at a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func statusText(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// textURL is the page of the whole text of the event seq of session.
func textURL(session string, seq uint64) string {
	return Prefix + "text?" + url.Values{"s": {session}, "e": {strconv.FormatUint(seq, 10)}}.Encode()
}

// serveText answers the whole text of one event (?s=<session>&e=<seq>)
// as plain text: the blob the engine keeps of a text longer than it
// stores in the event (Service.Blob), else the event's text, which the
// timeline cuts at showBytes. A text that is not UTF-8 is a download.
func (u *UI) serveText(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	session := q.Get("s")
	seq, err := strconv.ParseUint(q.Get("e"), 10, 64)
	if session == "" || err != nil || seq == 0 {
		u.refuse(w, http.StatusBadRequest, "bbengine ui: the whole text of an event is text?s=<session>&e=<event number>")
		return
	}
	evs, err := u.svc.Events(session, engine.EventFilter{After: seq - 1})
	if err != nil {
		u.refuse(w, statusOf(err), "bbengine ui: session "+session+": "+err.Error())
		return
	}
	i := slices.IndexFunc(evs, func(e engine.Event) bool { return e.Seq == seq })
	if i < 0 {
		u.refuse(w, http.StatusNotFound, fmt.Sprintf("bbengine ui: session %s has no event %d", session, seq))
		return
	}
	text := []byte(evs[i].Text)
	if sum := evs[i].TextBlob; sum != "" {
		if text, err = u.svc.Blob(sum); err != nil {
			u.refuse(w, statusOf(err), fmt.Sprintf("bbengine ui: the text of event %d of %s: %v", seq, session, err))
			return
		}
	}
	h := w.Header()
	if utf8.Valid(text) {
		h.Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", fmt.Sprintf("attachment; filename=\"event-%d.bin\"", seq))
	}
	h.Set("Content-Length", strconv.Itoa(len(text)))
	w.Write(text)
}
