package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bbengine/bbengine/codec/bbox"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/llm"
	"github.com/bbengine/bbengine/engine"
)

func init() { engine.RegisterImporter("bbox", importBBox) }

// BBoxReadOptions configure ReadBBox.
type BBoxReadOptions struct {
	// Blobs resolves "@blob sha256=…" references. The default (nil)
	// leaves a reference as its text.
	Blobs *engine.Blobs
	// File names the document in the events' provenance.
	File string
	// WAL is the offset of the import frame that carried the document;
	// every event's Prov.First and Prov.Last.
	WAL uint64
}

// DecodeBBox parses a bbox/1 document, or its JSONL alternative when the
// first byte that is not white space is '{'. name labels errors.
func DecodeBBox(data []byte, name string) (*bbox.Document, error) {
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		return bbox.ReadJSONL(bytes.NewReader(data), name)
	}
	doc, err := bbox.ParseBytes(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return doc, nil
}

// importBBox is the "bbox" importer: one file with one ImportDoc record,
// a bbox/1 document or its JSONL form. Blob references stay as their
// text (the importer has no blob store).
func importBBox(session string, files []engine.ImportFile) (*engine.Imported, error) {
	var rec *engine.ImportRecord
	var path string
	for i := range files {
		for j := range files[i].Records {
			r := &files[i].Records[j]
			if r.Kind != exchange.ImportDoc {
				return nil, fmt.Errorf("engine: bbox import %s: record %d is a %q record, want one %q record", files[i].Path, j+1, r.Kind, exchange.ImportDoc)
			}
			if rec != nil {
				return nil, fmt.Errorf("engine: bbox import of session %s: more than one document (%s and %s)", session, path, files[i].Path)
			}
			rec, path = r, files[i].Path
		}
	}
	if rec == nil {
		return nil, fmt.Errorf("engine: bbox import of session %s: no document", session)
	}
	doc, err := DecodeBBox(rec.Data, path)
	if err != nil {
		return nil, fmt.Errorf("engine: bbox import: %w", err)
	}
	opts := &BBoxReadOptions{File: path, WAL: rec.WAL}
	// A document bbengine convert wrote keeps its large outputs in a
	// .bbox-blobs folder beside it.
	if dir := filepath.Join(filepath.Dir(path), ".bbox-blobs"); path != "" {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			opts.Blobs = engine.NewBlobsAt(dir)
		}
	}
	return ReadBBox(doc, opts), nil
}

// ReadBBox reads a bbox/1 document back into a session and its events.
//
// A document BBox wrote reads back as the session it describes: its
// Census equals the Census of the events BBox rendered, and BBox (with
// the same options) renders the events read back to the same bytes. Its
// Session.Import is the header's import.* (the agent log the session was
// imported from), nil for a proxied session; the events of a proxied
// session get back their exchange numbers (extra.exchange= of the metrics
// lines), so inline results and metrics lines fall where they were.
//
// Any other document (the spec's examples, another tool's output) reads
// as an import of source "bbox": u: a: th: are messages and thinking;
// t: t!: c: x: are tool calls (arguments from key=value fields,
// positional ones as "argv"; a line without id= gets a synthetic id), a
// result after the arrow or on an o: line is the call's result; "#
// metrics" lines are model calls; every other line (# comments, @
// lifecycle lines, s: p: m: r: q: td: t~:, o: without a result) is a
// kept record (Known; Raw is the line's JSONL form) and a line with no
// known prefix an unknown record. Fields the engine has no slot for are
// kept in the event's Extra under "bbox".
func ReadBBox(doc *bbox.Document, opts *BBoxReadOptions) *engine.Imported {
	r := &bboxReader{queued: map[int][]engine.Event{}, names: map[string]string{}}
	if opts != nil {
		r.o = *opts
	}
	h := doc.Header
	if h == nil {
		h = &bbox.Header{}
	}
	_, r.engine = h.Raw("started")
	r.s.ID = h.Get("id")
	r.s.Agent, r.s.Client = h.Get("agent"), h.Get("client_version")
	r.s.Title, r.s.CWD, r.s.Branch, r.s.Version = h.Get("title"), h.Get("cwd"), h.Get("branch"), h.Get("version")
	if _, ok := h.Raw("import.source"); ok {
		im := &engine.ImportInfo{Source: h.Get("import.source")}
		if raw, ok := h.Raw("import.files"); ok {
			json.Unmarshal([]byte(raw), &im.Files)
		}
		im.Records = headerInt(h, "import.records")
		im.Errors = headerInt(h, "import.errors")
		im.Unknown = headerInt(h, "import.unknown")
		r.s.Import = im
	}
	r.proxied = r.engine && r.s.Import == nil
	if t, ok := parseStamp(h.Get("started")); ok {
		r.s.First, r.time = t, t
	}
	for i := range doc.Lines {
		r.line(&doc.Lines[i])
	}
	r.finish(h)
	for i := range r.events {
		r.events[i].Seq = uint64(i + 1)
	}
	r.s.Events = uint64(len(r.events))
	return &engine.Imported{Session: r.s, Events: r.events}
}

type bboxReader struct {
	o BBoxReadOptions
	s engine.Session
	// engine is set for a document BBox wrote; proxied when it rendered a
	// proxied session.
	engine, proxied bool
	events          []engine.Event
	// group is where the events since the last metrics line start;
	// queued holds, per thread, inline results that belong to the next
	// model call of their thread, and pending those of the current group,
	// which wait for a model call after it.
	group int
	// threadGroup is, per thread, where the events after its last
	// metrics line start (imported sessions).
	threadGroup map[int]int
	queued      map[int][]engine.Event
	pending     []engine.Event
	// names maps a call id to its tool's name, for results on o: lines.
	names   map[string]string
	time    int64
	lines   int64
	unknown int64
	usage   engine.Usage
	models  []engine.ModelUsage
	end     bool
}

func headerInt(h *bbox.Header, key string) int64 {
	n, _ := strconv.ParseInt(h.Get(key), 10, 64)
	return n
}

func parseStamp(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, false
	}
	return t.UnixNano(), true
}

// field is one key=value token of a line, with a blob reference
// ("@blob sha256=… bytes=… mime=…", written unquoted) joined into one
// value.
type field struct {
	Key, Value string
	Quoted     bool
	Blob       string // the blob's hex digest when Value is a reference
	Start      int
}

func readFields(fs []bbox.Field) []field {
	var out []field
	for i := 0; i < len(fs); i++ {
		f := field{Key: fs[i].Key, Value: fs[i].Value, Quoted: fs[i].Quoted, Start: fs[i].Start}
		if f.Key != "" && f.Value == "@blob" && !f.Quoted && i+1 < len(fs) && fs[i+1].Key == "sha256" {
			ref := []string{"@blob"}
			for i+1 < len(fs) && !fs[i+1].Quoted && (fs[i+1].Key == "sha256" || fs[i+1].Key == "bytes" || fs[i+1].Key == "mime") {
				i++
				ref = append(ref, fs[i].Key+"="+fs[i].Value)
				if fs[i].Key == "sha256" {
					f.Blob = fs[i].Value
				}
			}
			f.Value = strings.Join(ref, " ")
		}
		out = append(out, f)
	}
	return out
}

// fieldMap is a line's fields by key (the first of each), with the
// positional ones and the keys in order.
type fieldMap struct {
	m          map[string]field
	keys       []string
	positional []field
	used       map[string]bool
}

func newFieldMap(fs []field) *fieldMap {
	fm := &fieldMap{m: map[string]field{}, used: map[string]bool{}}
	for _, f := range fs {
		if f.Key == "" {
			fm.positional = append(fm.positional, f)
			continue
		}
		if _, ok := fm.m[f.Key]; !ok {
			fm.m[f.Key] = f
			fm.keys = append(fm.keys, f.Key)
		}
	}
	return fm
}

func (fm *fieldMap) get(key string) (field, bool) {
	f, ok := fm.m[key]
	if ok {
		fm.used[key] = true
	}
	return f, ok
}

func (fm *fieldMap) str(key string) string {
	f, _ := fm.get(key)
	return f.Value
}

func (fm *fieldMap) int(key string) int64 {
	n, _ := strconv.ParseInt(fm.str(key), 10, 64)
	return n
}

// rest returns the fields no get asked for.
func (fm *fieldMap) rest() map[string]string {
	var out map[string]string
	for _, k := range fm.keys {
		if !fm.used[k] {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = fm.m[k].Value
		}
	}
	return out
}

// value returns a field's text, read from the blob store when it is a
// reference the store holds.
func (r *bboxReader) value(f field) string {
	if f.Blob != "" && r.o.Blobs != nil {
		if b, err := r.o.Blobs.Get(f.Blob); err == nil {
			return string(b)
		}
	}
	return f.Value
}

// blobText resolves a result that is a blob reference.
func (r *bboxReader) blobText(s string) string {
	if !strings.HasPrefix(s, "@blob ") || strings.Contains(s, "\n") || r.o.Blobs == nil {
		return s
	}
	fs, _ := bbox.Fields(s)
	for _, f := range fs {
		if f.Key == "sha256" {
			if b, err := r.o.Blobs.Get(f.Value); err == nil {
				return string(b)
			}
		}
	}
	return s
}

// base starts an event from the line's common fields: tid, ts, uuid,
// meta, extra.
func (r *bboxReader) base(l *bbox.Line, kind engine.Kind, fm *fieldMap) engine.Event {
	ev := engine.Event{Kind: kind, Thread: 1, Prov: engine.Provenance{Side: "import", First: r.o.WAL, Last: r.o.WAL, File: r.o.File, Line: int64(l.Pos.Line)}}
	if n, err := strconv.Atoi(fm.str("tid")); err == nil && n > 0 {
		ev.Thread = n
	}
	if t, ok := parseStamp(fm.str("ts")); ok {
		r.time = t
	}
	ev.Time = r.time
	ev.UUID = fm.str("uuid")
	ev.Meta = fm.str("meta")
	if f, ok := fm.get("extra"); ok {
		ev.Extra = jsonOrString(r.value(f))
	}
	if fm.str("partial") == "true" {
		ev.Partial = true
	}
	return ev
}

// jsonOrString returns s when it is JSON, else s as a JSON string.
func jsonOrString(s string) json.RawMessage {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// keepRest puts the fields the engine has no slot for into Extra, under
// "bbox", for a line another tool wrote.
func keepRest(ev *engine.Event, fm *fieldMap, more map[string]string) {
	rest := fm.rest()
	for k, v := range more {
		if rest == nil {
			rest = map[string]string{}
		}
		rest[k] = v
	}
	if len(rest) == 0 || len(ev.Extra) > 0 {
		return
	}
	b, _ := json.Marshal(map[string]any{"bbox": rest})
	ev.Extra = b
}

func (r *bboxReader) add(ev engine.Event) {
	if ev.Thread > r.s.Threads {
		r.s.Threads = ev.Thread
	}
	r.events = append(r.events, ev)
}

func (r *bboxReader) line(l *bbox.Line) {
	if l.Kind == bbox.KindBlank {
		return
	}
	r.lines++
	switch l.Kind {
	case bbox.KindUser, bbox.KindAgent, bbox.KindThinking:
		r.message(l)
	case bbox.KindTool, bbox.KindToolStart, bbox.KindMCP, bbox.KindSubagent:
		r.call(l)
	case bbox.KindObservation:
		r.observation(l)
	case bbox.KindComment:
		r.comment(l)
	case bbox.KindLifecycle:
		r.lifecycle(l)
	default:
		r.record(l)
	}
}

// text joins a message's first-line text and its continuation lines.
func bboxJoinText(first string, more []string) string {
	if len(more) == 0 {
		return first
	}
	if first == "" {
		return strings.Join(more, "\n")
	}
	return first + "\n" + strings.Join(more, "\n")
}

func (r *bboxReader) message(l *bbox.Line) {
	text, fs := splitMessage(l.Body)
	fm := newFieldMap(readFields(fs))
	var ev engine.Event
	switch l.Kind {
	case bbox.KindUser:
		ev = r.base(l, engine.KindMessage, fm)
		ev.Role = "user"
	case bbox.KindAgent:
		ev = r.base(l, engine.KindMessage, fm)
		ev.Role = "assistant"
	default:
		ev = r.base(l, engine.KindThinking, fm)
		if f, ok := fm.get("sig"); ok {
			ev.Signature = f.Value
		}
	}
	ev.Text = bboxJoinText(text, l.More)
	if !r.engine {
		keepRest(&ev, fm, nil)
	}
	r.add(ev)
}

// roles are the message roles BBox writes as "# role: text" comments.
var roles = map[string]bool{"system": true, "developer": true, "tool": true}

func (r *bboxReader) comment(l *bbox.Line) {
	word, rest, _ := strings.Cut(l.Body, " ")
	if role, _, ok := strings.Cut(l.Body, ": "); ok && roles[role] {
		text, fs := splitMessage(l.Body)
		fm := newFieldMap(readFields(fs))
		ev := r.base(l, engine.KindMessage, fm)
		ev.Role = role
		ev.Text = strings.TrimPrefix(bboxJoinText(text, l.More), role+": ")
		r.add(ev)
		return
	}
	all, _ := bbox.Fields(rest)
	fm := newFieldMap(readFields(all))
	switch {
	case word == "metrics" && len(l.More) == 0:
		r.metrics(l, fm)
		return
	case word == "system" && has(fm, "prompt") && len(l.More) == 0:
		ev := r.base(l, engine.KindSystem, fm)
		f, _ := fm.get("prompt")
		ev.Text = r.value(f)
		r.add(ev)
		return
	case word == "error" && has(fm, "stage") && len(l.More) == 0:
		ev := r.base(l, engine.KindError, fm)
		fm.get("level")
		ev.Error = &engine.Error{Stage: fm.str("stage"), Status: int(fm.int("status")), Type: fm.str("type"), Message: fm.str("message")}
		r.add(ev)
		return
	case word == "interrupted" && has(fm, "reason") && len(l.More) == 0:
		ev := r.base(l, engine.KindInterruption, fm)
		fm.get("level")
		ev.Text = fm.str("reason")
		r.add(ev)
		return
	case (word == "retry" || word == "drop" || word == "fork" || word == "rewrite") && has(fm, "from") && len(l.More) == 0:
		ev := r.base(l, engine.KindRewrite, fm)
		kind := word
		if word == "rewrite" {
			kind = fm.str("kind")
		}
		ev.Rewrite = &engine.Rewrite{Kind: kind, From: int(fm.int("from")), Kept: int(fm.int("kept")), Dropped: int(fm.int("dropped"))}
		r.add(ev)
		return
	case word == "record" && has(fm, "type") && has(fm, "raw") && len(l.More) == 0:
		ev := r.base(l, engine.KindRecord, fm)
		f, _ := fm.get("raw")
		ev.Record = &engine.Record{Type: fm.str("type"), Known: fm.str("known") == "true", Raw: jsonOrString(r.value(f))}
		if f.Value == "" && f.Quoted {
			ev.Record.Raw = nil
		}
		r.add(ev)
		return
	}
	r.record(l)
}

func has(fm *fieldMap, key string) bool { _, ok := fm.m[key]; return ok }

// record keeps a line with no event of its own as a KindRecord event.
func (r *bboxReader) record(l *bbox.Line) {
	typ := "bbox/" + l.Kind.String()
	if l.Kind == bbox.KindLifecycle && l.Name != "" {
		typ += l.Name
	}
	known := l.Kind != bbox.KindUnknown
	if !known {
		r.unknown++
	}
	ev := engine.Event{Kind: engine.KindRecord, Thread: 1, Time: r.time, Prov: engine.Provenance{Side: "import", First: r.o.WAL, Last: r.o.WAL, File: r.o.File, Line: int64(l.Pos.Line)},
		Record: &engine.Record{Type: typ, Known: known, Raw: bbox.AppendJSONLine(nil, l)}}
	if l.Kind.Event() || l.Kind == bbox.KindLifecycle {
		if n, err := strconv.Atoi(l.Meta().Tid); err == nil && n > 0 {
			ev.Thread = n
		}
	}
	r.add(ev)
}

func (r *bboxReader) lifecycle(l *bbox.Line) {
	fs, _ := bbox.Fields(l.Body)
	fm := newFieldMap(readFields(fs))
	switch {
	case l.Name == "start" && r.engine && !l.Arrow:
		if t, ok := parseStamp(fm.str("ts")); ok {
			r.s.First, r.time = t, t
		}
		return
	case l.Name == "end" && r.engine && !l.Arrow:
		if t, ok := parseStamp(fm.str("ts")); ok {
			r.s.Last = t
		}
		r.s.Requests = int(fm.int("requests"))
		r.s.Usage.Input, r.s.Usage.Output, r.s.Usage.CacheRead = fm.int("tokens_in"), fm.int("tokens_out"), fm.int("cached")
		r.end = true
		return
	case l.Name == "agent" && has(fm, "tid") && !l.Arrow:
		a := engine.Agent{Thread: int(fm.int("tid")), ID: fm.str("id"), Type: fm.str("type"), Call: fm.str("call"), Description: fm.str("description")}
		if a.Thread > r.s.Threads {
			r.s.Threads = a.Thread
		}
		r.s.Agents = append(r.s.Agents, a)
		return
	case l.Name == "compact" && has(fm, "from") && !l.Arrow && len(l.More) == 0:
		ev := r.base(l, engine.KindRewrite, fm)
		ev.Rewrite = &engine.Rewrite{Kind: "compaction", From: int(fm.int("from")), Dropped: int(fm.int("dropped"))}
		r.add(ev)
		return
	}
	r.record(l)
}

// call reads a t:, t!:, c: or x: line: a tool call, and its result when
// the line has one.
func (r *bboxReader) call(l *bbox.Line) {
	fs, _ := bbox.Fields(l.Body)
	fm := newFieldMap(readFields(fs))
	name := l.Name
	if l.Kind == bbox.KindMCP {
		if server, method, ok := strings.Cut(name, "."); ok {
			name = "mcp__" + server + "__" + method
		}
	}
	ev := r.base(l, engine.KindToolCall, fm)
	id, ok := fm.get("id")
	if !ok {
		id, ok = fm.get("extra.call_id")
	}
	if !ok {
		id, ok = fm.get("span")
	}
	tool := &engine.Tool{ID: id.Value, Name: name}
	if !ok {
		tool.ID, tool.SyntheticID = fmt.Sprintf("bbox-%d", l.Pos.Line), true
	}
	if fm.str("extra.server") == "true" {
		tool.Server = true
	}
	ev.Tool = tool
	if fm.str("extra.orphan") == "true" {
		// A result whose call was never seen.
		res := ev
		res.Kind = engine.KindToolResult
		if name == "result" {
			tool.Name = ""
		}
		r.result(&res, l)
		r.add(res)
		return
	}
	if l.Kind == bbox.KindSubagent && !r.engine {
		if n := int(fm.int("tid")); n > 1 && !slices.ContainsFunc(r.s.Agents, func(a engine.Agent) bool { return a.Thread == n }) {
			desc := ""
			if len(fm.positional) > 0 {
				desc = fm.positional[0].Value
			}
			r.s.Agents = append(r.s.Agents, engine.Agent{Thread: n, ID: id.Value, Type: l.Name, Description: desc})
		}
	}
	for _, k := range []string{"extra.result_uuid", "extra.result_extra"} {
		fm.get(k)
	}
	r.args(&ev, fm)
	var more map[string]string
	if l.Kind == bbox.KindToolStart && l.Arrow {
		// t!: results are a status ("[running]"), not the result.
		more = map[string]string{"status": l.FullResult()}
	}
	if !r.engine {
		keepRest(&ev, fm, more)
	}
	r.names[tool.ID] = tool.Name
	r.add(ev)
	if !l.Arrow || l.Kind == bbox.KindToolStart {
		return
	}
	res := engine.Event{Kind: engine.KindToolResult, Thread: ev.Thread, Time: ev.Time, Prov: ev.Prov, Tool: &engine.Tool{ID: tool.ID, Name: tool.Name, SyntheticID: tool.SyntheticID}}
	r.result(&res, l)
	res.UUID = fm.str("extra.result_uuid")
	if f, ok := fm.get("extra.result_extra"); ok {
		res.Extra = jsonOrString(r.value(f))
	}
	if r.proxied {
		// BBox put the result on its call's line because it came with
		// the thread's next model call.
		r.pending = append(r.pending, res)
		return
	}
	r.add(res)
}

// args reads a call's arguments: args= (the JSON as written, or text
// that is not JSON), else the key=value fields (arg.<name> for the names
// of metadata keys) and positional ones ("argv").
func (r *bboxReader) args(ev *engine.Event, fm *fieldMap) {
	if f, ok := fm.get("args"); ok {
		v := r.value(f)
		if json.Valid([]byte(v)) {
			ev.Tool.Args = json.RawMessage(v)
		} else {
			ev.Text = v
		}
		return
	}
	for _, k := range []string{"tid", "ts", "uuid", "meta", "extra", "partial", "extra.server", "span", "step", "attempt", "latency_ms", "level", "parent"} {
		fm.get(k)
	}
	members := map[string]json.RawMessage{}
	for _, k := range fm.keys {
		if fm.used[k] {
			continue
		}
		fm.used[k] = true
		name := strings.TrimPrefix(k, "arg.")
		members[name] = argValue(fm.m[k].Value)
	}
	if len(fm.positional) > 0 {
		var argv []string
		for _, p := range fm.positional {
			argv = append(argv, p.Value)
		}
		members["argv"] = marshalNoEscape(argv)
	}
	if len(members) == 0 {
		return
	}
	keys := make([]string, 0, len(members))
	for k := range members {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b := []byte{'{'}
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, marshalNoEscape(k)...)
		b = append(b, ':')
		b = append(b, members[k]...)
	}
	ev.Tool.Args = append(b, '}')
}

// argValue is a field value as a JSON argument: the value itself when it
// is JSON other than a string (BBox writes numbers, booleans and nested
// values as their JSON), else a string.
func argValue(v string) json.RawMessage {
	if v != "" && v[0] != '"' && json.Valid([]byte(v)) {
		return json.RawMessage(v)
	}
	return marshalNoEscape(v)
}

func marshalNoEscape(v any) json.RawMessage {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.Encode(v)
	return bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
}

// result fills a tool result from the text after a line's arrow: "[err]
// text" marks an error, "[ok]" alone an empty result.
func (r *bboxReader) result(ev *engine.Event, l *bbox.Line) {
	text := l.FullResult()
	switch {
	case text == "[ok]":
		text = ""
	case text == "[err]":
		text, ev.Tool.IsError = "", true
	case strings.HasPrefix(text, "[err] "):
		text, ev.Tool.IsError = text[len("[err] "):], true
	case strings.HasPrefix(text, "[err:"):
		ev.Tool.IsError = true
	}
	ev.Text = r.blobText(text)
}

// observation reads an o: line: the result of an earlier call, or, with
// no arrow, progress (a record).
func (r *bboxReader) observation(l *bbox.Line) {
	if !l.Arrow {
		r.record(l)
		return
	}
	fs, _ := bbox.Fields(l.Body)
	fm := newFieldMap(readFields(fs))
	ev := r.base(l, engine.KindToolResult, fm)
	id := fm.str("id")
	ev.Tool = &engine.Tool{ID: id, Name: r.names[id]}
	r.result(&ev, l)
	if !r.engine {
		keepRest(&ev, fm, nil)
	}
	r.add(ev)
}

// metrics reads a "# metrics" line: one model call and its usage. The
// call goes before the first output of the events since the previous
// metrics line, the usage last; for a proxied session those events get
// the line's exchange number, and the thread's queued inline results
// join them.
func (r *bboxReader) metrics(l *bbox.Line, fm *fieldMap) {
	call := r.base(l, engine.KindModelCall, fm)
	model := fm.str("model")
	call.Call = &engine.Call{
		Model:      model,
		Status:     int(fm.int("status")),
		Latency:    fm.int("latency_ms") * 1e6,
		TTFB:       fm.int("ttfb_ms") * 1e6,
		StopReason: fm.str("stop"),
		ResponseID: fm.str("extra.response_id"),
		API:        llm.API(fm.str("extra.api")),
		Provider:   fm.str("extra.provider"),
	}
	call.Call.Complete = call.Call.Status < 400
	call.Prov.RequestID = fm.str("extra.request_id")
	u := engine.Usage{
		Input:           fm.int("prompt_tokens"),
		Output:          fm.int("completion_tokens"),
		CacheRead:       fm.int("cached_tokens"),
		CacheCreation:   fm.int("extra.cache_creation_input_tokens"),
		CacheCreation5m: fm.int("extra.cache_creation_5m_tokens"),
		CacheCreation1h: fm.int("extra.cache_creation_1h_tokens"),
		Reasoning:       fm.int("extra.reasoning_tokens"),
	}
	usage := call
	usage.Kind, usage.Call, usage.Usage, usage.Extra, usage.Meta = engine.KindUsage, nil, &u, nil, ""
	if id := fm.str("extra.usage_uuid"); id != "" {
		usage.UUID = id
	}
	if n, err := strconv.ParseUint(fm.str("extra.exchange"), 10, 64); err == nil && r.proxied {
		call.Prov.Exchange, usage.Prov.Exchange = n, n
		group := append(r.queued[call.Thread], r.events[r.group:]...)
		delete(r.queued, call.Thread)
		for i := range group {
			group[i].Prov.Exchange = n
		}
		r.events = append(r.events[:r.group], group...)
	}
	for _, ev := range r.pending {
		r.queued[ev.Thread] = append(r.queued[ev.Thread], ev)
	}
	r.pending = nil
	at := len(r.events)
	from := r.group
	if !r.proxied {
		// Imported calls of threads side by side interleave: a call's
		// output starts after its thread's previous metrics line.
		from = r.threadGroup[call.Thread]
	}
	for i := from; i < len(r.events); i++ {
		ev := &r.events[i]
		if ev.Thread == call.Thread && (ev.Kind == engine.KindThinking || ev.Kind == engine.KindToolCall || ev.Kind == engine.KindInterruption || ev.Kind == engine.KindMessage && ev.Role == "assistant") {
			at = i
			break
		}
	}
	r.events = slices.Insert(r.events, at, call)
	for th, g := range r.threadGroup {
		if g > at {
			r.threadGroup[th] = g + 1
		}
	}
	r.add(usage)
	r.group = len(r.events)
	if r.threadGroup == nil {
		r.threadGroup = map[int]int{}
	}
	r.threadGroup[call.Thread] = len(r.events)
	r.usage.Add(u)
	if model == "" {
		model = "unknown"
	}
	i := slices.IndexFunc(r.models, func(m engine.ModelUsage) bool { return m.Model == model })
	if i < 0 {
		r.models = append(r.models, engine.ModelUsage{Model: model})
		i = len(r.models) - 1
	}
	r.models[i].Requests++
	r.models[i].Usage.Add(u)
}

func (r *bboxReader) finish(h *bbox.Header) {
	// Inline results whose thread had no later model call.
	threads := make([]int, 0, len(r.queued))
	for th := range r.queued {
		threads = append(threads, th)
	}
	slices.Sort(threads)
	for _, th := range threads {
		r.events = append(r.events, r.queued[th]...)
	}
	r.events = append(r.events, r.pending...)
	s := &r.s
	if !r.end {
		s.Usage = r.usage
		for _, m := range r.models {
			s.Requests += m.Requests
		}
		for _, ev := range r.events {
			if s.First == 0 || ev.Time != 0 && ev.Time < s.First {
				s.First = ev.Time
			}
			s.Last = max(s.Last, ev.Time)
		}
	} else {
		in, out, cached := s.Usage.Input, s.Usage.Output, s.Usage.CacheRead
		s.Usage = r.usage
		s.Usage.Input, s.Usage.Output, s.Usage.CacheRead = in, out, cached
	}
	s.Models = r.models
	// The header lists the models in the session's order and names the
	// one with the most requests.
	if raw, ok := h.Raw("models"); ok {
		var order []string
		for _, m := range strings.Split(strings.Trim(raw, "[]"), ",") {
			order = append(order, strings.TrimSpace(m))
		}
		slices.SortStableFunc(s.Models, func(a, b engine.ModelUsage) int {
			return indexOr(order, a.Model) - indexOr(order, b.Model)
		})
	}
	if top := h.Get("model"); top != "" && r.engine && topModel(*s) != top {
		i := slices.IndexFunc(s.Models, func(m engine.ModelUsage) bool { return m.Model == top })
		if i < 0 {
			s.Models = append(s.Models, engine.ModelUsage{Model: top})
			i = len(s.Models) - 1
		}
		for _, m := range s.Models {
			s.Models[i].Requests = max(s.Models[i].Requests, m.Requests+1)
		}
	}
	for _, ev := range r.events {
		if ev.Kind == engine.KindError {
			s.Errors++
		}
	}
	if s.Import == nil && !r.engine {
		s.Import = &engine.ImportInfo{Source: "bbox", Records: r.lines, Unknown: r.unknown}
		if r.o.File != "" {
			s.Import.Files = []string{r.o.File}
		}
	}
}

func indexOr(list []string, s string) int {
	if i := slices.Index(list, s); i >= 0 {
		return i
	}
	return len(list)
}
