package derive

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bbengine/bbengine/engine/schema"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/codec/httpbody"
	"github.com/bbengine/bbengine/codec/llm"
	"github.com/bbengine/bbengine/internal/bodybuf"
)

// derive turns one ended exchange into its index entry, its canonical
// events and its session's totals, all added to the batch. It returns
// the number of events.
func (c *canonicalizer) derive(x *pending, note string) (int, error) {
	ex := Exchange{ID: x.ID, Offsets: x.Offsets, Time: x.startTime(), Note: note}
	s := x.Start
	if s != nil {
		ex.RequestID, ex.Session, ex.Task, ex.Run = s.RequestID, s.SessionID, s.TaskID, s.RunID
		ex.Provider, ex.Method, ex.Model = s.Provider, s.Method, s.Model
		ex.Path = s.Path
		if s.Query != "" {
			ex.Path += "?" + s.Query
		}
	}
	if x.Response != nil {
		ex.Status, ex.TTFB = x.Response.Status, x.Response.TTFB
	}
	if e := x.End; e != nil {
		if ex.Status == 0 {
			ex.Status = e.Status
		}
		ex.TTFB, ex.Duration, ex.Complete = e.TTFB, e.Duration, e.Complete
		if ex.Session == "" {
			ex.Session = e.SessionID
		}
		if ex.Model == "" {
			ex.Model = e.Model
		}
		if e.Usage != nil {
			ex.Usage = Usage{Input: e.Usage.InputTokens, Output: e.Usage.OutputTokens,
				CacheRead: e.Usage.CacheReadTokens, CacheCreation: e.Usage.CacheCreationTokens}
		}
	}
	var api llm.API
	if s != nil {
		api = llm.Detect(s.Path)
		ex.API = api
		if api == llm.Gemini && ex.Model == "" {
			ex.Model = geminiModel(s.Path)
		}
	}
	switch {
	case s == nil && ex.Note == "":
		ex.Note = "no request start frame (passthrough capture, or retention removed it)"
	case s != nil && api == "" && ex.Note == "":
		ex.Note = "not a model call"
	}
	if s != nil && s.Goal != "" && ex.Session != "" {
		if err := c.headerGoal(ex.Session, s.Goal, x.Offsets[slices.Index(x.Kinds, frame.KindRequestStart)]); err != nil {
			return 0, err
		}
	}
	if s == nil || api == "" || ex.Session == "" {
		return 0, c.setJSON(schema.ExchangeKey(nil, x.ID), &ex)
	}
	st, err := c.session(ex.Session)
	if err != nil {
		return 0, err
	}
	d := deriver{c: c, x: x, ex: &ex, st: st, api: api}
	n, err := d.run()
	if err != nil {
		return 0, err
	}
	return n, c.setJSON(schema.ExchangeKey(nil, x.ID), &ex)
}

// deriver holds one exchange's derivation.
type deriver struct {
	c      *canonicalizer
	x      *pending
	ex     *Exchange
	st     *sessState
	api    llm.API
	thread *thread
	events []Event
	// nCall numbers the calls without ids of this exchange (both sides),
	// for their synthetic ids.
	nCall int
	// err is a long text that could not be stored in the blob store.
	err error
}

func (d *deriver) reqProv() Provenance {
	first, last, _ := d.x.Bounds(true)
	return Provenance{Exchange: d.x.ID, RequestID: d.ex.RequestID, Side: "request", First: first, Last: last}
}

func (d *deriver) respProv() Provenance {
	first, last, ok := d.x.Bounds(false)
	if !ok {
		_, last, _ = d.x.Bounds(true)
		first = last
	}
	return Provenance{Exchange: d.x.ID, RequestID: d.ex.RequestID, Side: "response", First: first, Last: last}
}

func (d *deriver) endTime() int64 {
	return d.x.endTime()
}

func (d *deriver) add(ev Event) {
	ev.Thread = d.thread.ID
	ev.Task, ev.Run = d.ex.Task, d.ex.Run
	if len(ev.Text) > d.c.e.opts.TextLimit && ev.TextBlob == "" {
		// A long text the request brought (the response's were
		// spilled as they streamed) goes to the blob store too.
		sum, err := d.c.e.store.Blobs.PutString(ev.Text)
		if err != nil {
			d.err = errors.Join(d.err, err)
		} else {
			ev.TextBytes, ev.TextBlob = int64(len(ev.Text)), sum
			ev.Text = cutText(ev.Text, d.c.e.opts.TextLimit)
		}
	}
	d.events = append(d.events, ev)
}

// spilled sets ev's text from a part whose text went to the blob store
// while its response streamed.
func spilled(ev *Event, p *llm.Part) {
	ev.Text, ev.TextBytes, ev.TextBlob = p.Text, p.TextBytes, p.TextSHA256
}

// cutText returns the first n bytes of s, less an incomplete character.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for k := 0; k < utf8.UTFMax && len(s) > 0; k++ {
		if r, size := utf8.DecodeLastRuneInString(s); r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

func (d *deriver) run() (int, error) {
	x, ex, st := d.x, d.ex, d.st
	s := x.Start
	cv := &st.convo

	// The request: what it adds to the conversation.
	var (
		req    *llm.Request
		rq     *request
		reqErr error
	)
	body, err := x.RequestBody, error(nil)
	if x.RequestDeferred {
		body, err = d.c.requestBody(x.Exchange)
	}
	switch {
	case err != nil:
		reqErr = fmt.Errorf("request body: %w", err)
	case len(body) == 0:
		reqErr = fmt.Errorf("no request body recorded (capture mode %s)", orDash(s.Mode))
	default:
		if !s.Decoded {
			body, err = httpbody.Decode(header(s.Headers, "Content-Encoding"), body)
		}
		if err != nil {
			reqErr = fmt.Errorf("request body: %w", err)
			break
		}
		rq, reqErr = d.decodeRequest(body)
		if rq != nil {
			req = rq.req
		}
		// The request holds what it keeps (strings and offsets, never a
		// part of the body): the buffer goes back before the events are
		// built.
		bodybuf.Put(x.RequestBody)
		x.RequestBody, body = nil, nil
	}
	var m match
	if req != nil {
		m = cv.place(rq.items, rq.keys, rq.at, req.PreviousResponseID != "", hashText(req.System))
		if m.from < rq.base {
			// place1 starts a request past its last resent key, and
			// decodeRequest cuts only after a keyed item.
			return 0, fmt.Errorf("engine: exchange %d: internal error: new items at %d, before the decoded part at %d", x.ID, m.from, rq.base)
		}
		rq.remember(st, m.thread.ID)
		d.thread = m.thread
		if req.System != "" && !cv.seenSystem(hashText(req.System)) {
			d.add(Event{Kind: KindSystem, Time: x.startTime(), Role: "system", Text: req.System, Prov: d.reqProv()})
		}
		if m.rewrite != nil {
			d.add(Event{Kind: KindRewrite, Time: x.startTime(), Rewrite: m.rewrite, Prov: d.reqProv()})
		}
		d.emitItems(rq.items[m.from-rq.base:], x.startTime(), d.reqProv(), false)
		if req.Model != "" {
			ex.Model = req.Model
		}
	} else {
		cv.Tick++
		if len(cv.Threads) == 0 {
			d.thread = cv.newThread(nil)
		} else {
			d.thread = cv.recentThread()
		}
		if ex.Note == "" {
			ex.Note = reqErr.Error()
		}
	}
	ex.Thread = d.thread.ID

	// The response.
	var (
		resp    *llm.Response
		respErr error
	)
	switch {
	case x.dec != nil:
		resp, respErr = x.dec.Close()
		x.dec = nil
	case x.body:
		body := x.raw
		if x.End == nil || !x.End.Decoded {
			var hdr exchange.Headers
			if x.Response != nil {
				hdr = x.Response.Headers
			}
			body, respErr = httpbody.Decode(header(hdr, "Content-Encoding"), body)
		}
		x.raw = nil
		if respErr == nil {
			resp, respErr = llm.DecodeResponse(d.api, body)
		}
	}
	if respErr != nil && ex.Note == "" {
		ex.Note = "response body: " + respErr.Error()
	}
	call := &Call{API: d.api, Provider: s.Provider, Model: ex.Model, Status: ex.Status, Latency: ex.Duration, TTFB: ex.TTFB, Stream: s.Stream}
	if req != nil {
		call.Params, call.Stream, call.Messages = req.Params, req.Stream || s.Stream, rq.msgs
	}
	if reqErr != nil {
		d.add(Event{Kind: KindError, Time: x.startTime(), Error: &Error{Stage: "decode", Message: reqErr.Error()}, Prov: d.reqProv()})
	}
	var out []item
	if resp != nil {
		call.StopReason, call.ResponseID, call.Complete = resp.StopReason, resp.ID, resp.Complete
		if x.Response != nil {
			// The provider's own id of the request, which an agent's log
			// may keep (Claude Code's requestId): a key to merge by.
			call.UpstreamID = cmp.Or(header(x.Response.Headers, "Request-Id"), header(x.Response.Headers, "X-Request-Id"))
		}
		if resp.Model != "" && resp.Model != ex.Model {
			call.Served = resp.Model
		}
		if !resp.Usage.IsZero() {
			ex.Usage = resp.Usage
		}
		out = appendItems(nil, "assistant", resp.Parts)
		for i := range out {
			out[i].key = itemKey(&out[i])
		}
	}
	if x.End != nil && !x.End.Complete {
		call.Complete = false
	}
	d.add(Event{Kind: KindModelCall, Time: x.startTime(), Call: call, Prov: d.respProv()})
	d.emitItems(out, d.endTime(), d.respProv(), true)
	if req != nil {
		cv.settle(d.thread, out)
	}
	if !ex.Usage.IsZero() {
		u := ex.Usage
		d.add(Event{Kind: KindUsage, Time: d.endTime(), Usage: &u, Prov: d.respProv()})
	}
	d.errors(resp, respErr)

	if d.err != nil {
		return 0, fmt.Errorf("engine: exchange %d: %w", x.ID, d.err)
	}

	// Sequence numbers and totals.
	for i := range d.events {
		st.s.Events++
		d.events[i].Seq = st.s.Events
		if err := d.c.setJSON(schema.EventKey(d.c.keyBuf[:0], st.s.Ordinal, d.events[i].Seq), &d.events[i]); err != nil {
			return 0, err
		}
	}
	if len(d.events) > 0 {
		ex.FirstSeq, ex.LastSeq = d.events[0].Seq, d.events[len(d.events)-1].Seq
	}
	d.account(call)
	if err := d.join(); err != nil {
		return 0, fmt.Errorf("engine: exchange %d: %w", x.ID, err)
	}
	return len(d.events), nil
}

// join writes the join keys of the agent session ids the exchange
// carries (merge.go), once per live session and id, and marks the
// groups they name to be merged again at the end of the pass.
func (d *deriver) join() error {
	f := familyNamed(d.st.s.Agent)
	s := d.x.Start
	if f != nil && f.JoinByContent && len(f.Sources) > 0 {
		return d.joinContent()
	}
	if f == nil || !f.JoinByID || len(f.Sources) == 0 || s == nil {
		return nil
	}
	var ids []string
	for _, h := range f.SessionHeaders {
		if v := strings.TrimSpace(header(s.Headers, h)); v != "" && !slices.Contains(ids, v) {
			ids = append(ids, v)
		}
	}
	if src := s.SessionSource; (src == "body" || slices.ContainsFunc(f.SessionHeaders, func(h string) bool { return strings.EqualFold(h, src) })) &&
		!slices.Contains(ids, d.ex.Session) {
		ids = append(ids, d.ex.Session)
	}
	for _, id := range ids {
		for _, src := range f.Sources {
			imp := src + ":" + id
			if imp == d.st.s.ID || !exchange.ValidID(id) {
				// An id the proxy would not take as a session's
				// (over MaxNoteID bytes, control characters) names
				// no log; one holding a NUL would also read, in the
				// join keys, as another id's key.
				continue
			}
			if d.st.joined == nil {
				d.st.joined = map[string]bool{}
			}
			if !d.st.joined[imp] {
				d.st.joined[imp] = true
				d.c.batch.Set(schema.JoinKey(imp, d.st.s.Ordinal), nil, nil)
				d.c.batch.Set(schema.JoinLiveKey(d.st.s.Ordinal, imp), nil, nil)
			}
			// Most proxied sessions have no imported log: their
			// group has nothing to derive, and the import, when it
			// comes, marks it itself (importcanon.go).
			if v, err := d.c.e.getMeta(schema.SessionKey(nil, imp)); err != nil || v != nil {
				d.c.markMergePending(imp)
			}
		}
	}
	return nil
}

// errors adds the error and interruption events of the exchange.
func (d *deriver) errors(resp *llm.Response, respErr error) {
	x, ex := d.x, d.ex
	t := d.endTime()
	upstream := false
	if resp != nil && resp.Error != nil {
		d.add(Event{Kind: KindError, Time: t, Error: &Error{Stage: "upstream", Status: ex.Status, Type: resp.Error.Type, Message: resp.Error.Message}, Prov: d.respProv()})
		upstream = true
	}
	// A status the proxy answered itself (a refusal by the circuit
	// breaker, a body too large) is explained by its own error frame.
	own := slices.ContainsFunc(x.Errors, func(e exchange.Error) bool {
		return e.Status == ex.Status && (e.Stage == "breaker" || e.Stage == "request")
	})
	if ex.Status >= 400 && !upstream && !own {
		msg := fmt.Sprintf("HTTP %d", ex.Status)
		if respErr != nil {
			msg += " (" + respErr.Error() + ")"
		}
		d.add(Event{Kind: KindError, Time: t, Error: &Error{Stage: "upstream", Status: ex.Status, Message: msg}, Prov: d.respProv()})
	}
	// A client that hangs up once the stream's final event came (Codex
	// closes its connection on response.completed, at times before the
	// upstream's end of stream reaches the proxy) interrupted nothing:
	// the reply is whole. The WAL keeps the client's error.
	hungUp := resp != nil && resp.Stream && resp.Complete && ex.Status < 400 && !upstream &&
		x.End != nil && x.End.Error == "client disconnected"
	var why []string
	for _, e := range x.Errors {
		if e.Stage == "client" {
			if !hungUp {
				why = append(why, "the client went away: "+e.Error)
			}
			continue
		}
		d.add(Event{Kind: KindError, Time: t, Error: &Error{Stage: e.Stage, Status: e.Status, Message: e.Error}, Prov: d.respProv()})
	}
	switch {
	case x.End == nil:
		why = append(why, d.ex.Note)
	case !x.End.Complete && ex.Status < 400 && len(why) == 0 && !hungUp:
		msg := x.End.Error
		if msg == "" {
			msg = "the response did not complete"
		}
		why = append(why, msg)
	case x.End.Complete && resp != nil && resp.Stream && !resp.Complete && ex.Status < 400 && !upstream:
		why = append(why, "the stream ended without its final event")
	}
	if len(why) > 0 {
		d.add(Event{Kind: KindInterruption, Time: t, Text: strings.Join(why, "; "), Prov: d.respProv()})
	}
}

// emitItems adds the events of new conversation items: consecutive text
// and content parts of one role make one message; thinking, tool calls and
// tool results are events of their own.
func (d *deriver) emitItems(items []item, t int64, prov Provenance, output bool) {
	var msg *Event
	flush := func() {
		if msg != nil {
			d.add(*msg)
			msg = nil
		}
	}
	for i := range items {
		it := &items[i]
		p := it.part
		switch p.Type {
		case llm.PartThinking, llm.PartRedactedThinking:
			flush()
			ev := Event{Kind: KindThinking, Time: t, Role: it.role, Text: p.Text, Signature: p.Signature, Data: p.Data, Partial: p.Partial, Prov: prov}
			spilled(&ev, &p)
			d.add(ev)
		case llm.PartToolCall, llm.PartServerToolCall:
			flush()
			tool := &Tool{ID: p.ID, Name: p.Name, Args: p.Input, Server: p.Type == llm.PartServerToolCall}
			if tool.ID == "" {
				d.nCall++
				tool.ID = fmt.Sprintf("%s#%d.%d", p.Name, d.x.ID, d.nCall)
				tool.SyntheticID = true
			}
			ev := Event{Kind: KindToolCall, Time: t, Role: it.role, Tool: tool, Partial: p.Partial, Prov: prov}
			if len(p.Input) == 0 && p.Text != "" {
				ev.Text = p.Text // arguments that are not JSON (cut short)
				spilled(&ev, &p)
			}
			d.thread.call(tool.ID, tool.Name, tool.SyntheticID)
			d.add(ev)
		case llm.PartToolResult, llm.PartServerToolResult:
			flush()
			id, name, _ := d.thread.result(p.ID, p.Name)
			tool := &Tool{ID: id, Name: name, IsError: p.IsError, Server: p.Type == llm.PartServerToolResult, SyntheticID: id != "" && id != p.ID}
			ev := Event{Kind: KindToolResult, Time: t, Role: it.role, Tool: tool, Text: p.Text, Parts: p.Content, Prov: prov}
			if p.ID != "" && id != p.ID {
				// Paired with a call whose id was made up: keep the id
				// the client answered under (Gemini CLI's own).
				ev.Extra, _ = json.Marshal(map[string]string{"client_id": p.ID})
			}
			if p.Type == llm.PartServerToolResult && len(p.Raw) > 0 && p.Text == "" {
				ev.Parts = []llm.Part{{Type: llm.PartOther, Raw: p.Raw}}
			}
			d.add(ev)
		default:
			if msg != nil && (msg.Role != it.role || msg.TextBlob != "" || p.TextSHA256 != "") {
				// A text spilled to a blob is a message of its own.
				flush()
			}
			if msg == nil {
				msg = &Event{Kind: KindMessage, Time: t, Role: it.role, Prov: prov}
			}
			if p.Type == llm.PartText {
				if msg.Text != "" {
					msg.Text += "\n"
				}
				msg.Text += p.Text
				if p.TextSHA256 != "" {
					spilled(msg, &p)
				}
				if p.Signature != "" {
					msg.Signature = p.Signature
				}
				msg.Partial = msg.Partial || p.Partial
			} else {
				msg.Parts = append(msg.Parts, p)
			}
		}
	}
	flush()
}

// account adds the exchange to its session's totals.
func (d *deriver) account(call *Call) {
	s, x, ex := &d.st.s, d.x, d.ex
	d.st.dirty = true
	if s.First == 0 || x.startTime() < s.First {
		s.First = x.startTime()
	}
	if t := d.endTime(); t > s.Last {
		s.Last = t
	}
	if s.Agent == "" && x.Start != nil {
		s.Agent, s.Client = agentOf(header(x.Start.Headers, "User-Agent"), header(x.Start.Headers, "Originator"))
		s.Source = x.Start.SessionSource
	}
	s.Requests++
	for _, ev := range d.events {
		if ev.Kind == KindError {
			s.Errors++
			break
		}
	}
	s.Threads = d.st.convo.Next
	s.Usage.Add(ex.Usage)
	model := ex.Model
	if call.Served != "" {
		model = call.Served
	}
	if model == "" {
		model = "unknown"
	}
	i := slices.IndexFunc(s.Models, func(m ModelUsage) bool { return m.Model == model })
	if i < 0 {
		s.Models = append(s.Models, ModelUsage{Model: model})
		i = len(s.Models) - 1
	}
	s.Models[i].Requests++
	s.Models[i].Usage.Add(ex.Usage)
	if ex.Task != "" {
		j := slices.IndexFunc(s.Tasks, func(t Task) bool { return t.ID == ex.Task })
		if j < 0 {
			s.Tasks = append(s.Tasks, Task{ID: ex.Task, First: x.startTime(), FirstSeq: ex.FirstSeq})
			j = len(s.Tasks) - 1
		}
		t := &s.Tasks[j]
		t.Requests++
		t.Last = max(t.Last, d.endTime())
		if ex.LastSeq > 0 {
			if t.FirstSeq == 0 {
				t.FirstSeq = ex.FirstSeq
			}
			t.LastSeq = ex.LastSeq
		}
	}
	if ex.Run != "" && !slices.Contains(s.Runs, ex.Run) {
		s.Runs = append(s.Runs, ex.Run)
	}
}

// header returns the first value of a recorded header (names are
// canonical in the record).
func header(h exchange.Headers, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	for k, v := range h {
		if strings.EqualFold(k, name) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// geminiModel returns the model named in a Gemini path
// (/v1beta/models/gemini-2.5-pro:streamGenerateContent).
func geminiModel(path string) string {
	if p, err := url.PathUnescape(path); err == nil {
		path = p
	}
	i := strings.Index(path, "/models/")
	if i < 0 {
		return ""
	}
	m := path[i+len("/models/"):]
	if j := strings.IndexByte(m, ':'); j >= 0 {
		m = m[:j]
	}
	return m
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
