package export

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bbengine/bbengine/codec/bbox"
	"github.com/bbengine/bbengine/codec/llm"
	"github.com/bbengine/bbengine/engine"
)

// BBoxOptions configure BBox.
type BBoxOptions struct {
	// BlobThreshold is the size in bytes above which a tool result, a
	// system prompt or a call's arguments go to Blobs and appear as
	// "@blob sha256=… bytes=…". The default is 1024; negative keeps
	// everything inline.
	BlobThreshold int
	// Blobs is where large outputs go. Nil keeps everything inline.
	Blobs *engine.Blobs
	// RepoSHA is the repository commit for the header; "unknown" when
	// empty (the header requires the key).
	RepoSHA string
	// Task, when set, names the task the events were selected for.
	Task string
	// Breakers are the session's circuit breaker records (Engine.Breakers),
	// shown where they happened: a trip as an "@escalate" line, a
	// half-open, close or reset as an "@notify" line; snapshots are not
	// shown. With Task set, only those within the task's events are.
	Breakers []engine.BreakerRecord
}

// reservedArg are the metadata keys of a bbox call line; a tool argument
// with one of these names is written as arg.<name>.
var reservedArg = map[string]bool{"id": true, "tid": true, "span": true, "parent": true,
	"step": true, "ts": true, "attempt": true, "latency_ms": true, "level": true,
	"uuid": true, "meta": true, "extra": true, "partial": true, "args": true}

// BBox renders a session's events as a bbox/1 document: a header, @start,
// u:/a:/th: messages, t: (or c: for MCP tools) calls with their results
// inline when they came in the next request of the thread and as o: lines
// when they came later, a "# metrics" line per model call, and @end.
// Events of threads other than 1 carry tid=. The document passes
// bbox.Validate without errors.
//
// An imported session (Session.Import set) is rendered so that ReadBBox
// gives back events with the same Census: the header carries title, cwd,
// branch, version and import.*; each subagent is an "@agent tid=N …"
// line after @start; every line carries ts= and, when the event has
// them, uuid=, meta= (a user message that is not a typed prompt) and
// extra= (Event.Extra, a blob when large); tool results are o: lines of
// their own; each kept record is a "# record type=… known=true raw=…"
// line with the record verbatim (a blob when large); and a metrics line
// follows each call's usage, with extra.response_id, extra.api,
// extra.provider and extra.request_id.
//
// The compact form is bbox.Write(w, doc, bbox.Compact).
func BBox(s engine.Session, events []engine.Event, opts *BBoxOptions) (*bbox.Document, error) {
	o := BBoxOptions{BlobThreshold: 1024}
	if opts != nil {
		o = *opts
		if o.BlobThreshold == 0 {
			o.BlobThreshold = 1024
		}
	}
	r := &renderer{o: o, imp: s.Import != nil, seen: map[string]bool{}, inline: map[string]*engine.Event{}, skip: map[*engine.Event]bool{}}
	if !r.imp {
		r.plan(events)
	}
	doc := &bbox.Document{Header: r.header(s, events)}
	r.doc = doc
	r.add(bbox.Line{Kind: bbox.KindLifecycle, Name: "start", Body: fmt.Sprintf("id=%s ts=%s", bbox.Quote(s.ID), stamp(s.First))})
	for _, a := range s.Agents {
		body := fmt.Sprintf("tid=%d", a.Thread)
		for _, kv := range [][2]string{{"id", a.ID}, {"type", a.Type}, {"call", a.Call}, {"description", a.Description}} {
			if kv[1] != "" {
				body += " " + kv[0] + "=" + bbox.Quote(kv[1])
			}
		}
		r.add(bbox.Line{Kind: bbox.KindLifecycle, Name: "agent", Body: body})
	}
	// Imported events have no exchange: a call's metrics line follows its
	// usage, and the calls of threads running side by side (parallel
	// subagents) interleave, so each thread has its own open call.
	open := map[int]*engine.Event{}
	brk := o.Breakers
	if o.Task != "" {
		brk = breakersWithin(brk, events)
	}
	for i := range events {
		ev := &events[i]
		if i == 0 || r.imp || ev.Prov.Exchange != events[i-1].Prov.Exchange {
			// Between exchanges: the breaker's changes up to this one.
			for len(brk) > 0 && brk[0].Time <= ev.Time {
				r.breaker(&brk[0])
				brk = brk[1:]
			}
		}
		if r.imp && ev.Kind == engine.KindModelCall {
			// A call without usage ends where its thread's next call begins.
			if c := open[ev.Thread]; c != nil {
				if err := r.metricsFor(c, nil); err != nil {
					return nil, err
				}
			}
			open[ev.Thread] = ev
		}
		if err := r.event(ev); err != nil {
			return nil, err
		}
		if r.imp {
			if c := open[ev.Thread]; ev.Kind == engine.KindUsage && c != nil {
				delete(open, ev.Thread)
				if err := r.metricsFor(c, ev); err != nil {
					return nil, err
				}
			}
			continue
		}
		if i+1 == len(events) || events[i+1].Prov.Exchange != ev.Prov.Exchange {
			if err := r.metrics(); err != nil {
				return nil, err
			}
		}
	}
	for _, th := range slices.Sorted(maps.Keys(open)) {
		if err := r.metricsFor(open[th], nil); err != nil {
			return nil, err
		}
	}
	for i := range brk {
		r.breaker(&brk[i])
	}
	end := fmt.Sprintf("ts=%s requests=%d tokens_in=%d tokens_out=%d cached=%d", stamp(s.Last), s.Requests, s.Usage.Input, s.Usage.Output, s.Usage.CacheRead)
	if o.Task != "" {
		end += " task=" + bbox.Quote(o.Task)
	}
	r.add(bbox.Line{Kind: bbox.KindLifecycle, Name: "end", Body: end})
	if err := doc.Check(); err != nil {
		return nil, fmt.Errorf("engine: render session %s: %w", s.ID, err)
	}
	return doc, nil
}

type renderer struct {
	o   BBoxOptions
	doc *bbox.Document
	// imp is set for an imported session: every line carries its time and
	// results are never inline.
	imp bool
	// seen holds the call ids already introduced; inline maps a call id to
	// the result written on its call line; skip holds those results.
	seen   map[string]bool
	inline map[string]*engine.Event
	skip   map[*engine.Event]bool
	step   int
	call   *engine.Event
	usage  *engine.Event
}

// plan decides which results go inline: those that arrive in the next
// model call of the call's thread.
func (r *renderer) plan(events []engine.Event) {
	next := map[uint64]uint64{} // exchange → next exchange of its thread
	last := map[int]uint64{}
	calls := map[string]*engine.Event{}
	for i := range events {
		ev := &events[i]
		if ev.Kind == engine.KindModelCall {
			if prev, ok := last[ev.Thread]; ok {
				next[prev] = ev.Prov.Exchange
			}
			last[ev.Thread] = ev.Prov.Exchange
		}
	}
	for i := range events {
		ev := &events[i]
		switch ev.Kind {
		case engine.KindToolCall:
			if ev.Tool != nil && calls[ev.Tool.ID] == nil {
				calls[ev.Tool.ID] = ev
			}
		case engine.KindToolResult:
			if ev.Tool == nil {
				continue
			}
			c := calls[ev.Tool.ID]
			if c == nil || r.inline[ev.Tool.ID] != nil {
				continue
			}
			if next[c.Prov.Exchange] == ev.Prov.Exchange && c.Thread == ev.Thread {
				r.inline[ev.Tool.ID] = ev
				r.skip[ev] = true
			}
		}
	}
}

func (r *renderer) header(s engine.Session, events []engine.Event) *bbox.Header {
	h := &bbox.Header{Closed: true}
	h.Set("format", "bbox/1")
	h.Set("id", yamlScalar(s.ID))
	sha := r.o.RepoSHA
	if sha == "" {
		sha = "unknown"
	}
	h.Set("repo_sha", yamlScalar(sha))
	if m := topModel(s); m != "" {
		h.Set("model", yamlScalar(m))
	}
	if s.Client != "" {
		h.Set("client_version", yamlScalar(s.Client))
	}
	if s.Agent != "" {
		h.Set("agent", yamlScalar(s.Agent))
	}
	h.Set("started", stamp(s.First))
	if r.o.Task != "" {
		h.Set("task", yamlScalar(r.o.Task))
	}
	if len(s.Models) > 1 {
		var names []string
		for _, m := range s.Models {
			names = append(names, m.Model)
		}
		h.Set("models", "["+strings.Join(names, ", ")+"]")
	}
	for _, kv := range [][2]string{{"title", s.Title}, {"cwd", s.CWD}, {"branch", s.Branch}, {"version", s.Version}} {
		if kv[1] != "" {
			h.Set(kv[0], yamlScalar(kv[1]))
		}
	}
	if im := s.Import; im != nil {
		h.Set("import.source", yamlScalar(im.Source))
		var files []string
		for _, f := range im.Files {
			files = append(files, jsonString(f))
		}
		h.Set("import.files", "["+strings.Join(files, ", ")+"]")
		h.Set("import.records", strconv.FormatInt(im.Records, 10))
		h.Set("import.errors", strconv.FormatInt(im.Errors, 10))
		h.Set("import.unknown", strconv.FormatInt(im.Unknown, 10))
	}
	return h
}

// topModel is the model with the most requests.
func topModel(s engine.Session) string {
	best := ""
	n := 0
	for _, m := range s.Models {
		if m.Requests > n {
			best, n = m.Model, m.Requests
		}
	}
	return best
}

// yamlScalar quotes a header value when YAML would read it as something
// other than the plain string.
func yamlScalar(s string) string {
	plain := s != "" && !strings.ContainsAny(s, ":#[]{},&*!|>'\"%@`") && strings.TrimSpace(s) == s
	if plain {
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			plain = false
		}
		switch strings.ToLower(s) {
		case "true", "false", "yes", "no", "null", "~", "on", "off":
			plain = false
		}
	}
	if plain {
		return s
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// jsonString is s as a JSON (and so YAML flow) string.
func jsonString(s string) string {
	var b strings.Builder
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func stamp(ns int64) string {
	return time.Unix(0, ns).UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

func (r *renderer) add(l bbox.Line) {
	one := bbox.Document{Lines: []bbox.Line{l}}
	if err := one.Check(); err != nil {
		// A body the text form cannot hold as it is: quote it.
		l.Body = bbox.Quote(l.Body)
		if l.Arrow {
			l.Result = bbox.Quote(l.Result)
		}
	}
	r.doc.Lines = append(r.doc.Lines, l)
}

// lines splits text into a first line and continuation lines, dropping
// leading blank lines and trailing whitespace.
func lines(text string) (string, []string) {
	text = strings.TrimLeft(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	text = strings.TrimRight(text, " \t\n")
	parts := strings.Split(text, "\n")
	for i := range parts {
		parts[i] = strings.TrimRight(parts[i], " \t\r")
	}
	first := strings.TrimLeft(parts[0], " \t")
	return first, parts[1:]
}

func tid(ev *engine.Event) string {
	if ev.Thread > 1 {
		return " tid=" + strconv.Itoa(ev.Thread)
	}
	return ""
}

// message writes a u:, a: or th: line with trailing fields. A first line
// that would not read back as the text before those fields (it ends in
// key=value tokens, "retry at step=5", or holds an inline comment, "#
// Plan", or an unclosed quote) moves to the continuation lines.
func (r *renderer) message(kind bbox.Kind, text string, fields string) {
	first, more := lines(text)
	fields = strings.TrimSpace(fields)
	if first != "" {
		body := first
		if fields != "" {
			body += " " + fields
		}
		want, _ := bbox.Fields(fields)
		if t, got := splitMessage(body); t != first || len(got) != len(want) {
			more = append([]string{first}, more...)
			first = ""
		}
	}
	body := first
	if fields != "" {
		if body != "" {
			body += " "
		}
		body += fields
	}
	r.add(bbox.Line{Kind: kind, Body: body, More: more})
}

// splitMessage splits a message body into its text and the trailing run
// of key=value fields. A body with an inline comment has no fields.
func splitMessage(body string) (string, []bbox.Field) {
	fs, comment := bbox.Fields(body)
	if comment < len(body) {
		return body, nil
	}
	i := len(fs)
	for i > 0 && fs[i-1].Key != "" {
		i--
	}
	if i == len(fs) {
		return body, nil
	}
	return strings.TrimRight(body[:fs[i].Start], " \t"), fs[i:]
}

// fields returns the fields an imported event's line carries besides its
// own: ts= (unless the line has it already), uuid=, meta= and extra=.
// They are empty for a proxied session's events, which have none of them.
func (r *renderer) fields(ev *engine.Event, ts bool) (string, error) {
	var b strings.Builder
	if r.imp && ts {
		b.WriteString(" ts=" + stamp(ev.Time))
	}
	if ev.Meta != "" {
		b.WriteString(" meta=" + bbox.Quote(ev.Meta))
	}
	if ev.UUID != "" {
		b.WriteString(" uuid=" + bbox.Quote(ev.UUID))
	}
	if len(ev.Extra) > 0 {
		v, err := r.value(string(ev.Extra), "application/json")
		if err != nil {
			return "", err
		}
		b.WriteString(" extra=" + v)
	}
	return b.String(), nil
}

func (r *renderer) event(ev *engine.Event) error {
	more, err := r.fields(ev, true)
	if err != nil {
		return err
	}
	switch ev.Kind {
	case engine.KindSystem:
		v, err := r.value(ev.Text, "text/plain")
		if err != nil {
			return err
		}
		if ev.TextBlob != "" {
			v = blobRef(ev, "text/plain")
		}
		r.add(bbox.Line{Kind: bbox.KindComment, Body: "system prompt=" + v + tid(ev) + more})
	case engine.KindMessage:
		text := ev.Text
		if ev.TextBlob != "" {
			text = blobRef(ev, "text/plain")
		}
		for _, p := range ev.Parts {
			text = strings.TrimSpace(text + "\n" + partNote(p))
		}
		fields := tid(ev)
		if ev.Partial {
			fields += " partial=true"
		}
		switch ev.Role {
		case "user":
			own, err := r.fields(ev, false)
			if err != nil {
				return err
			}
			r.message(bbox.KindUser, text, fmt.Sprintf("ts=%s%s%s", stamp(ev.Time), fields, own))
		case "assistant":
			r.message(bbox.KindAgent, text, fields+more)
		default:
			r.message(bbox.KindComment, ev.Role+": "+text, fields+more)
		}
	case engine.KindThinking:
		text := ev.Text
		if ev.TextBlob != "" {
			text = blobRef(ev, "text/plain")
		}
		fields := tid(ev)
		switch {
		case ev.Data != "" && text == "":
			text = fmt.Sprintf("[redacted thinking, %d bytes]", len(ev.Data))
		case text == "":
			text = "[signature only]"
		}
		if ev.Signature != "" {
			fields += " sig=" + bbox.Quote(ev.Signature)
		}
		if ev.Partial {
			fields += " partial=true"
		}
		r.message(bbox.KindThinking, text, fields+more)
	case engine.KindToolCall:
		return r.toolCall(ev, more)
	case engine.KindToolResult:
		if r.skip[ev] {
			return nil
		}
		res, lines, err := r.result(ev)
		if err != nil {
			return err
		}
		if ev.Tool != nil && r.seen[ev.Tool.ID] {
			r.add(bbox.Line{Kind: bbox.KindObservation, Body: "id=" + bbox.Quote(ev.Tool.ID) + tid(ev) + more, Arrow: true, Result: res, More: lines})
			return nil
		}
		// A result whose call the capture never saw: introduce its id here.
		name, id := "result", ""
		if ev.Tool != nil {
			if ev.Tool.Name != "" {
				name = ev.Tool.Name
			}
			id = ev.Tool.ID
		}
		body := "extra.orphan=true" + tid(ev) + more
		if id != "" {
			body = "id=" + bbox.Quote(id) + " " + body
			r.seen[id] = true
		}
		r.add(bbox.Line{Kind: bbox.KindTool, Name: toolName(name), Body: body, Arrow: true, Result: res, More: lines})
	case engine.KindModelCall:
		r.call, r.usage = ev, nil
	case engine.KindUsage:
		r.usage = ev
	case engine.KindError:
		e := ev.Error
		if e == nil {
			e = &engine.Error{}
		}
		body := fmt.Sprintf("error stage=%s", bbox.Quote(e.Stage))
		if e.Status != 0 {
			body += fmt.Sprintf(" status=%d", e.Status)
		}
		if e.Type != "" {
			body += " type=" + bbox.Quote(e.Type)
		}
		body += " message=" + bbox.Quote(e.Message) + " level=error" + tid(ev) + more
		r.add(bbox.Line{Kind: bbox.KindComment, Body: body})
	case engine.KindInterruption:
		r.add(bbox.Line{Kind: bbox.KindComment, Body: "interrupted reason=" + bbox.Quote(ev.Text) + " level=warn" + tid(ev) + more})
	case engine.KindRewrite:
		rw := ev.Rewrite
		if rw == nil {
			rw = &engine.Rewrite{}
		}
		if rw.Kind == "compaction" {
			r.add(bbox.Line{Kind: bbox.KindLifecycle, Name: "compact", Body: fmt.Sprintf("reason=summary from=%d dropped=%d%s%s", rw.From, rw.Dropped, tid(ev), more)})
		} else {
			r.add(bbox.Line{Kind: bbox.KindComment, Body: fmt.Sprintf("%s from=%d kept=%d dropped=%d%s%s", rewriteKind(rw.Kind), rw.From, rw.Kept, rw.Dropped, tid(ev), more)})
		}
	case engine.KindRecord:
		rec := ev.Record
		if rec == nil {
			rec = &engine.Record{}
		}
		body := "record type=" + bbox.Quote(rec.Type)
		if rec.Known {
			body += " known=true"
		}
		v, err := r.value(string(rec.Raw), "application/json")
		if err != nil {
			return err
		}
		r.add(bbox.Line{Kind: bbox.KindComment, Body: body + tid(ev) + more + " raw=" + v})
	}
	return nil
}

// rewriteKind is the word a rewrite comment starts with; the reader knows
// retry, drop and fork, so any other kind is written as "rewrite".
func rewriteKind(k string) string {
	switch k {
	case "retry", "drop", "fork":
		return k
	}
	return "rewrite kind=" + bbox.Quote(k)
}

// metrics writes the "# metrics" line of the model call just rendered.
func (r *renderer) metrics() error {
	err := r.metricsFor(r.call, r.usage)
	r.call, r.usage = nil, nil
	return err
}

// metricsFor writes the "# metrics" line of model call c with its usage
// event (nil when it has none).
func (r *renderer) metricsFor(c, usage *engine.Event) error {
	if c == nil {
		return nil
	}
	r.step++
	var u engine.Usage
	if usage != nil && usage.Usage != nil {
		u = *usage.Usage
	}
	var b strings.Builder
	fmt.Fprintf(&b, "metrics step=%d prompt_tokens=%d completion_tokens=%d cached_tokens=%d", r.step, u.Input, u.Output, u.CacheRead)
	call := c.Call
	model := call.Model
	if call.Served != "" {
		model = call.Served
	}
	if model != "" {
		b.WriteString(" model=" + bbox.Quote(model))
	}
	fmt.Fprintf(&b, " status=%d latency_ms=%d ttfb_ms=%d", call.Status, call.Latency/1e6, call.TTFB/1e6)
	if call.StopReason != "" {
		b.WriteString(" stop=" + bbox.Quote(call.StopReason))
	}
	if u.CacheCreation > 0 {
		fmt.Fprintf(&b, " extra.cache_creation_input_tokens=%d", u.CacheCreation)
	}
	if u.CacheCreation5m > 0 {
		fmt.Fprintf(&b, " extra.cache_creation_5m_tokens=%d", u.CacheCreation5m)
	}
	if u.CacheCreation1h > 0 {
		fmt.Fprintf(&b, " extra.cache_creation_1h_tokens=%d", u.CacheCreation1h)
	}
	if u.Reasoning > 0 {
		fmt.Fprintf(&b, " extra.reasoning_tokens=%d", u.Reasoning)
	}
	if !r.imp {
		fmt.Fprintf(&b, " extra.exchange=%d%s", c.Prov.Exchange, tid(c))
	} else {
		b.WriteString(tid(c))
		for _, kv := range [][2]string{{"response_id", call.ResponseID}, {"api", string(call.API)}, {"provider", call.Provider}, {"request_id", c.Prov.RequestID}} {
			if kv[1] != "" {
				b.WriteString(" extra." + kv[0] + "=" + bbox.Quote(kv[1]))
			}
		}
	}
	if usage != nil && usage.UUID != "" && usage.UUID != c.UUID {
		b.WriteString(" extra.usage_uuid=" + bbox.Quote(usage.UUID))
	}
	more, err := r.fields(c, true)
	if err != nil {
		return err
	}
	b.WriteString(more)
	r.add(bbox.Line{Kind: bbox.KindComment, Body: b.String()})
	return nil
}

// toolName maps an MCP tool name (mcp__server__method) to server.method
// and reports whether it is one.
func mcpName(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return name, false
	}
	server, method, ok := strings.Cut(rest, "__")
	if !ok || server == "" || method == "" {
		return name, false
	}
	return server + "." + method, true
}

// toolName makes a name that reads back as one word.
func toolName(name string) string {
	name = strings.Map(func(c rune) rune {
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' {
			return '_'
		}
		return c
	}, name)
	name = strings.ReplaceAll(name, "->", "-_")
	name = strings.ReplaceAll(name, "→", "_")
	if name == "" {
		return "tool"
	}
	return name
}

func (r *renderer) toolCall(ev *engine.Event, more string) error {
	t := ev.Tool
	if t == nil {
		t = &engine.Tool{}
	}
	kind := bbox.KindTool
	name, isMCP := mcpName(t.Name)
	if isMCP {
		kind = bbox.KindMCP
	}
	var body strings.Builder
	if r.seen[t.ID] {
		// The same id again (a fork re-sent it): keep it, but not as a
		// second introduction.
		body.WriteString("extra.call_id=" + bbox.Quote(t.ID))
	} else {
		body.WriteString("id=" + bbox.Quote(t.ID))
		r.seen[t.ID] = true
	}
	body.WriteString(tid(ev))
	args, err := r.args(t.Args, ev.Text)
	if err != nil {
		return err
	}
	if ev.TextBlob != "" && len(t.Args) == 0 {
		args = "args=" + blobRef(ev, "application/json")
	}
	if args != "" {
		body.WriteString(" " + args)
	}
	if t.Server {
		body.WriteString(" extra.server=true")
	}
	if ev.Partial {
		body.WriteString(" partial=true")
	}
	body.WriteString(more)
	l := bbox.Line{Kind: kind, Name: toolName(name), Body: body.String()}
	if res := r.inline[t.ID]; res != nil && !r.skipDone(res) {
		text, more, err := r.result(res)
		if err != nil {
			return err
		}
		l.Arrow, l.Result, l.More = true, text, more
		// The result's own uuid and extra, which a proxied session's
		// events do not have.
		if res.UUID != "" {
			l.Body += " extra.result_uuid=" + bbox.Quote(res.UUID)
		}
		if len(res.Extra) > 0 {
			v, err := r.value(string(res.Extra), "application/json")
			if err != nil {
				return err
			}
			l.Body += " extra.result_extra=" + v
		}
	}
	r.add(l)
	return nil
}

// skipDone reports whether an inline result was already written (a
// duplicate call id).
func (r *renderer) skipDone(res *engine.Event) bool {
	if r.inline[res.Tool.ID] == nil {
		return true
	}
	r.inline[res.Tool.ID] = nil
	return false
}

// args renders a call's arguments as key=value fields: a JSON object's
// scalar members one by one; anything larger than the threshold, not an
// object, or with keys a field cannot hold, as args=<JSON> (or a blob).
func (r *renderer) args(raw json.RawMessage, text string) (string, error) {
	if len(raw) == 0 {
		if text == "" {
			return "", nil
		}
		v, err := r.value(text, "application/json")
		return "args=" + v, err
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var obj map[string]any
	if err := d.Decode(&obj); err != nil || len(raw) > r.threshold() {
		v, err := r.value(string(raw), "application/json")
		return "args=" + v, err
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var fields []string
	for _, k := range keys {
		var v string
		switch x := obj[k].(type) {
		case string:
			v = bbox.Quote(x)
		default:
			b, _ := json.Marshal(x)
			v = bbox.Quote(string(b))
		}
		key := k
		if reservedArg[k] {
			key = "arg." + k
		}
		f := key + "=" + v
		got, _ := bbox.Fields(f)
		if len(got) != 1 || got[0].Key != key {
			return "args=" + bbox.Quote(string(raw)), nil
		}
		fields = append(fields, f)
	}
	return strings.Join(fields, " "), nil
}

// blobRef is the reference to an event's text that was longer than the
// engine's TextLimit, which the data directory's blob store holds whole
// (Event.TextBlob): such a text is always a blob in bbox/1, whatever the
// threshold.
func blobRef(ev *engine.Event, mime string) string {
	return fmt.Sprintf("@blob sha256=%s bytes=%d mime=%s", ev.TextBlob, ev.TextBytes, mime)
}

func (r *renderer) threshold() int {
	if r.o.BlobThreshold < 0 || r.o.Blobs == nil {
		return int(^uint(0) >> 1)
	}
	return r.o.BlobThreshold
}

// value renders text as a field value: quoted, or a blob reference when
// larger than the threshold.
func (r *renderer) value(text, mime string) (string, error) {
	if len(text) <= r.threshold() {
		return bbox.Quote(text), nil
	}
	sum, err := r.o.Blobs.Put([]byte(text))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("@blob sha256=%s bytes=%d mime=%s", sum, len(text), mime), nil
}

// result renders a tool result as the text after the arrow.
func (r *renderer) result(ev *engine.Event) (string, []string, error) {
	text := ev.Text
	for _, p := range ev.Parts {
		text = strings.TrimSpace(text + "\n" + partNote(p))
	}
	prefix := ""
	if ev.Tool != nil && ev.Tool.IsError {
		prefix = "[err] "
	}
	if ev.TextBlob != "" {
		return prefix + blobRef(ev, "text/plain"), nil, nil
	}
	if len(text) > r.threshold() {
		sum, err := r.o.Blobs.Put([]byte(text))
		if err != nil {
			return "", nil, err
		}
		return fmt.Sprintf("%s@blob sha256=%s bytes=%d mime=text/plain", prefix, sum, len(text)), nil, nil
	}
	first, more := lines(text)
	if first == "" && len(more) == 0 {
		first = "[ok]"
		if prefix != "" {
			first, prefix = "[err]", ""
		}
	}
	return prefix + first, more, nil
}

// partNote describes a non-text part in a line of text.
func partNote(p llm.Part) string {
	switch p.Type {
	case llm.PartImage, llm.PartDocument:
		if p.URL != "" {
			return fmt.Sprintf("[%s %s]", p.Type, p.URL)
		}
		return fmt.Sprintf("[%s %s %d bytes sha256=%s]", p.Type, p.MediaType, p.Size, p.SHA256)
	case llm.PartRefusal:
		return "[refusal] " + p.Text
	case llm.PartCompaction:
		return "[compaction] " + p.Text
	case llm.PartText:
		return p.Text
	}
	if p.Text != "" {
		return fmt.Sprintf("[%s] %s", p.Type, p.Text)
	}
	return fmt.Sprintf("[%s %d bytes]", p.Type, len(p.Raw))
}

// breakersWithin returns the records of recs from the first event's time
// to the last one's.
func breakersWithin(recs []engine.BreakerRecord, events []engine.Event) []engine.BreakerRecord {
	if len(events) == 0 {
		return nil
	}
	first, last := events[0].Time, events[len(events)-1].Time
	var out []engine.BreakerRecord
	for _, b := range recs {
		if b.Time >= first && b.Time <= last {
			out = append(out, b)
		}
	}
	return out
}

// breaker writes a circuit breaker change: "@escalate" for a trip (a
// person has to look: the agent's requests are refused), "@notify" for
// the rest. Snapshots only carry counters and are not shown.
func (r *renderer) breaker(b *engine.BreakerRecord) {
	name, text := "notify", ""
	switch b.Op {
	case "snapshot":
		return
	case "trip":
		name, text = "escalate", "circuit breaker opened ("+b.Reason+"): "+b.Detail
	case "half-open":
		text = "circuit breaker half-open: " + b.Detail
	case "close":
		text = "circuit breaker closed: " + b.Detail
	case "reset":
		text = "circuit breaker reset: " + b.Detail
	default:
		return
	}
	c := b.Counters
	body := fmt.Sprintf("%s state=%s from=%s reason=%s calls=%d since_progress=%d stagnant=%d source=%s",
		bbox.Quote(text), b.State, cmp.Or(b.From, "closed"), bbox.Quote(b.Reason), c.Calls, c.SinceProgress, c.Stagnant, b.Source)
	if b.Until > 0 {
		body += " until=" + stamp(b.Until)
	}
	body += fmt.Sprintf(" ts=%s extra.offset=%d", stamp(b.Time), b.Offset)
	r.add(bbox.Line{Kind: bbox.KindLifecycle, Name: name, Body: body})
}
