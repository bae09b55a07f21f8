package gemini

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/llm"
	"github.com/bbengine/bbengine/engine"
)

// The Gemini CLI importer derives one session from one session log, by
// the census rules of logformat.go, so that engine.Census over its
// events equals countFiles over the file. The lines are applied as the
// CLI's own reader applies them (see log.go), and every message that
// entered the conversation becomes events at the line that brought it
// in, in its last version (the last line of its id), whether it still
// stands or a $rewindTo or a checkpoint dropped it later: it happened,
// and a dropped response was billed. For each:
//
//   - A user message is a user prompt, or injected context (Meta
//     "context") when it is the <session_context> the CLI puts first,
//     or a summary (Meta "summary") when a checkpoint brought it in (a
//     compression rewrites the history so).
//     Its functionResponse parts are tool results, unless the call's
//     own entry already carried the result: then the line only widens
//     that result's provenance (the CLI writes each result twice).
//   - A gemini message is one model response: a model_call (API gemini,
//     Provider google, Model the message's model), a thinking event per
//     thought (Text the description, Extra {"subject"}; else per thought
//     part of its content), a message with its text, a tool_call per
//     toolCalls entry (ID the call's id on the wire: the CLI's id less
//     its "<tool name>__" prefix, Extra {"cli_id"} the CLI's; Args its
//     args), a usage event from its tokens (Input input+tool: the
//     prompt, cached tokens included, and the tool-use prompt;
//     CacheRead cached; Output output+thoughts; Reasoning thoughts),
//     then the tool_result of each entry that has one, at the entry's
//     time (IsError when its status is error or cancelled; Extra its
//     status and resultDisplay). One a checkpoint brought in has the
//     same events but no model_call: it is history the CLI rewrote.
//   - An error message is an error event (Stage agent); info and
//     warning messages are records kept verbatim.
//
// Every line that is no message (the metadata, $set, $rewindTo) is a
// record kept verbatim, in file order. A $rewindTo that drops messages
// is followed by a rewrite event (Kind drop), a checkpoint that drops
// some by one of Kind compaction (Kept and Dropped count the messages).
// Earlier versions of a message are in its events' provenance (First
// the line that first wrote it, Last the one that stands). A subagent's
// log (chats/<parent id>/<id>.jsonl) is a session of its own whose
// metadata record's Extra names the parent ({"parent": "gemini:<parent
// id>"}). A line that is no JSON object is counted in Import.Errors and
// skipped, and so is a document that does not decode. A line with a
// member of another type than this version reads is kept without that
// member (see parseLine) and counted in Import.Errors too; the first
// event of its message has Extra {"unread": [the members' paths]}.
//
// A session document of an older version (session-*.json) is read as
// the lines it stands for (see expand), each with the document's
// provenance, unless the session's X.jsonl is there too (it holds the
// same messages again). logs.json is a session of its own,
// "gemini:logs-<project>", whose events are the prompts typed in the
// project, each a user message.
func init() { engine.RegisterImporter(Source, importGemini) }

// Source is the import source of Gemini CLI's logs.
const Source = "gemini"

func importGemini(session string, files []engine.ImportFile) (*engine.Imported, error) {
	im := &engine.Imported{}
	s := &im.Session
	s.Agent = Family
	s.Client = "gemini-cli"
	s.Threads = 1
	s.Import = &engine.ImportInfo{Source: Source}
	for _, f := range sessionFiles(files) {
		s.Import.Files = append(s.Import.Files, f.Path)
		gi := &geminiImport{im: im, file: f.Path}
		gi.run(f.Records)
	}
	im.SpanEvents()
	return im, nil
}

// sessionFiles returns files less each session-X.json whose
// session-X.jsonl is there too: resuming an old session, the CLI wrote
// its messages again into X.jsonl and appends there.
func sessionFiles(files []engine.ImportFile) []engine.ImportFile {
	has := map[string]bool{}
	for _, f := range files {
		has[f.Path] = true
	}
	var out []engine.ImportFile
	for _, f := range files {
		if strings.HasSuffix(f.Path, ".json") && has[f.Path+"l"] {
			continue
		}
		out = append(out, f)
	}
	return out
}

// geminiImport is the state of importing one log file.
type geminiImport struct {
	im    *engine.Imported
	file  string
	recs  []engine.ImportRecord // the records that parsed, parallel to lines
	lines []line
	time  int64 // of the last event
	// results maps a call id to the index in im.Events of its result.
	results map[string]int
}

func (gi *geminiImport) run(records []engine.ImportRecord) {
	s := &gi.im.Session
	for _, r := range records {
		s.Import.Records++
		datas := [][]byte{r.Data}
		if r.Kind == exchange.ImportDoc {
			var err error
			if datas, err = expand(r.Data); err != nil {
				s.Import.Errors++
				continue
			}
		}
		for _, d := range datas {
			l, err := parseLine(d)
			if err != nil {
				s.Import.Errors++
				continue
			}
			if len(l.bad) > 0 {
				// Read but for the members named in bad: kept, and
				// counted, as the source census counts it.
				s.Import.Errors++
			}
			rr := r
			rr.Data = d
			gi.recs = append(gi.recs, rr)
			gi.lines = append(gi.lines, l)
		}
	}
	c := resolve(gi.lines)
	if c.meta.SessionID != "" && s.ID == "" {
		s.ID = c.meta.SessionID
	}
	if c.meta.Summary != "" {
		s.Title = c.meta.Summary
	}
	if s.CWD == "" {
		s.CWD = projectDir(c.meta.ProjectHash, candidates(c))
	}
	gi.results = map[string]int{}
	// Every line that is no message is a record, in file order; after
	// it, the rewrite it made, then the messages it brought in (a
	// message, or a checkpoint's), in order.
	brought := map[int][]*entry{}
	for _, e := range c.entries {
		brought[e.pos] = append(brought[e.pos], e)
	}
	for i, l := range gi.lines {
		if l.kind != lineMessage {
			gi.record(i, l, c)
		}
		if rw, ok := c.rewrites[i]; ok {
			kind := "drop"
			if l.kind == lineSet {
				kind = "compaction"
			}
			gi.add(engine.Event{Kind: engine.KindRewrite, Rewrite: &engine.Rewrite{Kind: kind, From: 1, Kept: rw.kept, Dropped: rw.dropped}, Prov: gi.prov(i)}, 0)
		}
		for _, e := range brought[i] {
			gi.message(e)
		}
	}
}

// candidates returns the directories the log names: the metadata's
// (a subagent's), then the workspace directories of its session
// contexts (dropped ones too).
func candidates(c *conversation) []string {
	out := slices.Clone(c.meta.Directories)
	for _, e := range c.entries {
		if e.msg.Type == "user" {
			if t := text(parts(e.msg.Content)); sessionContext(t) {
				out = append(out, workspaceDirs(t)...)
			}
		}
	}
	return out
}

// prov returns the provenance of an event made of records idx (indexes
// into gi.recs, any order).
func (gi *geminiImport) prov(idx ...int) engine.Provenance {
	lo, hi := slices.Min(idx), slices.Max(idx)
	return engine.Provenance{Side: "import", First: gi.recs[lo].WAL, Last: gi.recs[hi].WAL, File: gi.file, Line: gi.recs[lo].Line}
}

// add appends ev at time t (the time of the event before when 0).
func (gi *geminiImport) add(ev engine.Event, t int64) int {
	if t != 0 {
		gi.time = t
	}
	ev.Time = gi.time
	ev.Thread = 1
	gi.im.Events = append(gi.im.Events, ev)
	return len(gi.im.Events) - 1
}

// stamp parses a timestamp of the log, 0 when there is none.
func stamp(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return t.UnixNano()
}

// record keeps line i, no message, verbatim.
func (gi *geminiImport) record(i int, l line, c *conversation) {
	known := l.kind != lineUnknown
	if !known {
		gi.im.Session.Import.Unknown++
	}
	var extra json.RawMessage
	t := stamp(l.meta.LastUpdated)
	if l.kind == lineMeta {
		t = stamp(l.meta.StartTime)
		if l.meta.Kind == "subagent" {
			if parent := filepath.Base(filepath.Dir(gi.file)); parent != "chats" {
				extra, _ = json.Marshal(map[string]string{"parent": Source + ":" + parent})
			}
		}
	}
	gi.add(engine.Event{Kind: engine.KindRecord, Record: &engine.Record{Type: l.kind, Known: known, Raw: gi.recs[i].Data}, Extra: extra, Prov: gi.prov(i)}, t)
}

// message emits the events of a message that stands.
func (gi *geminiImport) message(e *entry) {
	if l := gi.lines[e.at]; l.kind == lineMessage && len(l.bad) > 0 {
		// The first event says which members of the standing line
		// were not read; its provenance names the file and line.
		n := len(gi.im.Events)
		defer func() {
			if n < len(gi.im.Events) {
				ev := &gi.im.Events[n]
				x := map[string]any{}
				json.Unmarshal(ev.Extra, &x)
				x["unread"] = l.bad
				ev.Extra, _ = json.Marshal(x)
			}
		}()
	}
	m := e.msg
	prov := gi.prov(e.all...)
	t := stamp(m.Timestamp)
	ps := parts(m.Content)
	switch m.Type {
	case "user":
		var responses []part
		for _, p := range ps {
			if p.FunctionResponse != nil {
				responses = append(responses, p)
			}
		}
		if len(responses) == 0 || text(ps) != "" {
			ev := engine.Event{Kind: engine.KindMessage, Role: "user", Text: text(ps), Parts: otherParts(ps), Prov: prov}
			switch {
			case sessionContext(ev.Text):
				ev.Meta = "context"
			case e.checkpointed:
				ev.Meta = "summary"
			}
			gi.add(ev, t)
		}
		for _, p := range responses {
			fr := p.FunctionResponse
			id := wireID(fr.Name, fr.ID)
			if k, ok := gi.results[id]; ok {
				// The call's entry carried this result already.
				ev := &gi.im.Events[k]
				ev.Prov.First, ev.Prov.Last = min(ev.Prov.First, prov.First), max(ev.Prov.Last, prov.Last)
				continue
			}
			out, isErr := responseText(fr.Response)
			gi.results[id] = gi.add(engine.Event{Kind: engine.KindToolResult, Role: "tool", Text: out,
				Tool: &engine.Tool{ID: id, Name: fr.Name, IsError: isErr}, Prov: prov}, t)
		}
	case "gemini":
		gi.response(e, ps, prov, t)
	case "error":
		gi.im.Session.Errors++
		gi.add(engine.Event{Kind: engine.KindError, Error: &engine.Error{Stage: "agent", Message: text(ps)}, Prov: prov}, t)
	case "info", "warning":
		gi.add(engine.Event{Kind: engine.KindRecord, Record: &engine.Record{Type: "message/" + m.Type, Known: true, Raw: gi.recs[e.at].Data}, Prov: prov}, t)
	default:
		gi.im.Session.Import.Unknown++
		gi.add(engine.Event{Kind: engine.KindRecord, Record: &engine.Record{Type: "message/" + m.Type, Raw: gi.recs[e.at].Data}, Prov: prov}, t)
	}
}

// response emits the events of a gemini message. One a checkpoint
// brought in is history the CLI rewrote, no model call of its own.
func (gi *geminiImport) response(e *entry, ps []part, prov engine.Provenance, t int64) {
	m := e.msg
	s := &gi.im.Session
	k := slices.IndexFunc(s.Models, func(u engine.ModelUsage) bool { return u.Model == m.Model })
	if !e.checkpointed {
		gi.add(engine.Event{Kind: engine.KindModelCall, Call: &engine.Call{API: llm.Gemini, Provider: "google", Model: m.Model, Complete: true, Status: 200}, Prov: prov}, t)
		s.Requests++
		if k < 0 {
			s.Models = append(s.Models, engine.ModelUsage{Model: m.Model})
			k = len(s.Models) - 1
		}
		s.Models[k].Requests++
	}
	for _, th := range m.Thoughts {
		ev := engine.Event{Kind: engine.KindThinking, Role: "assistant", Text: th.Description, Prov: prov}
		if th.Subject != "" {
			ev.Extra, _ = json.Marshal(map[string]string{"subject": th.Subject})
		}
		gi.add(ev, stamp(th.Timestamp))
	}
	for _, p := range ps {
		if len(m.Thoughts) == 0 && p.Thought && p.Text != nil {
			gi.add(engine.Event{Kind: engine.KindThinking, Role: "assistant", Text: *p.Text, Prov: prov}, t)
		}
	}
	if txt := text(ps); txt != "" {
		gi.add(engine.Event{Kind: engine.KindMessage, Role: "assistant", Text: txt, Parts: otherParts(ps), Prov: prov}, t)
	}
	// The calls came with the response, and its usage; their results
	// later, when the CLI had run them (at the entry's timestamp).
	ids := make([]string, len(m.ToolCalls))
	for j, tc := range m.ToolCalls {
		tool := &engine.Tool{ID: wireID(tc.Name, tc.ID), Name: tc.Name, Args: tc.Args}
		ev := engine.Event{Kind: engine.KindToolCall, Role: "assistant", Tool: tool, Prov: prov}
		switch {
		case tc.ID == "":
			tool.ID, tool.SyntheticID = syntheticID(m.ID, j), true
		case tool.ID != tc.ID:
			ev.Extra, _ = json.Marshal(map[string]string{"cli_id": tc.ID})
		}
		ids[j] = tool.ID
		gi.add(ev, t)
	}
	if tk := m.Tokens; tk != nil {
		u := usage(tk)
		gi.add(engine.Event{Kind: engine.KindUsage, Usage: &u, Prov: prov}, t)
		s.Usage.Add(u)
		if k < 0 {
			s.Models = append(s.Models, engine.ModelUsage{Model: m.Model})
			k = len(s.Models) - 1
		}
		s.Models[k].Usage.Add(u)
	}
	for j, tc := range m.ToolCalls {
		if !hasResult(tc.Result) {
			continue
		}
		res := &engine.Tool{ID: ids[j], Name: tc.Name, SyntheticID: tc.ID == "", IsError: tc.Status == "error" || tc.Status == "cancelled"}
		extra := map[string]json.RawMessage{}
		if tc.Status != "" {
			extra["status"], _ = json.Marshal(tc.Status)
		}
		if hasResult(tc.ResultDisplay) {
			extra["resultDisplay"] = tc.ResultDisplay
		}
		ev := engine.Event{Kind: engine.KindToolResult, Role: "tool", Text: resultText(tc.Result), Tool: res, Prov: prov}
		if len(extra) > 0 {
			ev.Extra, _ = json.Marshal(extra)
		}
		gi.results[res.ID] = gi.add(ev, stamp(tc.Timestamp))
	}
}

// usage converts a message's tokens to the engine's usage (Input with
// the cached tokens in it, as CacheRead says).
func usage(tk *tokens) engine.Usage {
	return engine.Usage{Input: tk.Input + tk.Tool, Output: tk.Output + tk.Thoughts, CacheRead: tk.Cached, Reasoning: tk.Thoughts}
}

// wireID returns the id of a call as the model gave it and the requests
// carry it: the CLI writes "<tool name>__<id>" in its log (and its own
// "synth_…" id when the model gave none) and strips the prefix before it
// sends the history (stripToolCallIdPrefixes).
func wireID(name, id string) string {
	name = strings.TrimSpace(name)
	if name == "" {
		name = "generic_tool"
	}
	if rest, ok := strings.CutPrefix(id, name+"__"); ok && rest != "" {
		return rest
	}
	return id
}

// syntheticID names the j-th call of message id when the log gives it
// no id.
func syntheticID(id string, j int) string { return fmt.Sprintf("gemini#%s#%d", id, j) }

// hasResult reports whether raw holds a value.
func hasResult(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s != "null" && s != `""` && s != "[]"
}

// resultText returns the text of a tool call's result: a string, or the
// responses of its functionResponse parts.
func resultText(raw json.RawMessage) string {
	ps := parts(raw)
	var out []string
	for _, p := range ps {
		switch {
		case p.FunctionResponse != nil:
			t, _ := responseText(p.FunctionResponse.Response)
			out = append(out, t)
		case p.Text != nil:
			out = append(out, *p.Text)
		}
	}
	return strings.Join(out, "\n")
}

// responseText returns a functionResponse's text: its "output", else its
// "error" (isErr), else the response as JSON.
func responseText(raw json.RawMessage) (text string, isErr bool) {
	var v struct {
		Output *string `json:"output"`
		Error  *string `json:"error"`
	}
	if json.Unmarshal(raw, &v) == nil {
		switch {
		case v.Output != nil:
			return *v.Output, false
		case v.Error != nil:
			return *v.Error, true
		}
	}
	return string(raw), false
}

// otherParts returns the parts that are neither text nor function calls
// or responses (images, files), described by llm.Part: inline data by
// its media type and the size and SHA-256 of its bytes (the WAL keeps
// the bytes).
func otherParts(ps []part) []llm.Part {
	var out []llm.Part
	for _, p := range ps {
		switch {
		case p.Text != nil, p.FunctionCall != nil, p.FunctionResponse != nil:
		case p.InlineData != nil:
			var d struct {
				MimeType string `json:"mimeType"`
				Data     string `json:"data"`
			}
			json.Unmarshal(p.InlineData, &d)
			lp := llm.Part{Type: llm.PartOther, MediaType: d.MimeType}
			if strings.HasPrefix(d.MimeType, "image/") {
				lp.Type = llm.PartImage
			}
			if b, err := base64.StdEncoding.DecodeString(d.Data); err == nil {
				sum := sha256.Sum256(b)
				lp.Size, lp.SHA256 = int64(len(b)), hex.EncodeToString(sum[:])
			}
			out = append(out, lp)
		default:
			raw, _ := json.Marshal(p)
			out = append(out, llm.Part{Type: llm.PartOther, Raw: raw})
		}
	}
	return out
}
