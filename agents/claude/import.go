package claude

// The Claude Code importer (source "claude").
//
// Input: the files of one session: the main <sid>.jsonl, subagent files
// (<sid>/subagents/agent-<id>.jsonl, 2.0.x flat agent-<8hex>.jsonl files
// carrying the session's sessionId) as line records, subagent
// .meta.json files as meta records, and spilled tool outputs
// (<sid>/tool-results/<id>.txt) as spill records.
//
// Order: the files' lines are merged by timestamp; each file keeps its
// own order, a line without a timestamp stays after the line before it
// in its file, and a tie goes to the file that sorts first.
//
// Threads: thread 1 is the main conversation. A line with an agentId is
// in the thread of that subagent; a sidechain line without one (inline
// sidechains, CLI ≤ 1.0.x) is in the thread of its parent, and a user or
// assistant sidechain line whose parent is not an earlier line of its
// file starts a new one. Threads are numbered in order of first
// appearance; every thread but 1 is an engine.Session.Agents entry, whose Type
// and Description come from its .meta.json and whose Call is the Agent
// (Task) tool call that started it, from the meta's toolUseId or the
// toolUseResult.agentId of that call's result.
//
// Events, each with the line's uuid:
//
//	assistant lines      one model response per (thread, message.id,
//	                     requestId): model_call (at its first line; stop
//	                     reason, model and Prov.Last from its last), then
//	                     per block in line order: thinking (Signature;
//	                     redacted: Data), tool_call (tool_use;
//	                     server_tool_use is Server), message role assistant
//	                     (a text block; any other block is a message of
//	                     its own with the block as a part); then usage,
//	                     from the last line of the response that has one
//	                     (output_tokens grows over a response's lines)
//	<synthetic> lines    error (Stage "client"): the client wrote the
//	                     message itself (an API error), no model call
//	user lines           tool_result per tool_result block (Extra holds
//	                     {"toolUseResult": …} of the line; a spilled
//	                     output replaces the in-line placeholder), then
//	                     one message role user of the other blocks: Meta
//	                     "" for a prompt, "meta" for isMeta (and for text
//	                     beside tool results), "compact_summary" for
//	                     isCompactSummary. An interruption prompt
//	                     ("[Request interrupted by user…") is also an
//	                     interruption event. A user line without content
//	                     is a kept record.
//	compact_boundary     rewrite "compaction"; Extra holds the line's
//	                     compactMetadata and logicalParentUuid
//	any other line       record (Type "type/subtype", Raw the line):
//	                     Known for the types codec/claude knows, else
//	                     Unknown. summary lines also give engine.Session.Title
//	                     (the last one; a custom-title wins).
//	meta records         record "meta" (Known), before the agent's first
//	                     line; spill records no result named: record
//	                     "spill" (Raw: the text as a JSON string)
//
// Lines that are not JSON objects are counted in engine.Session.Import.Errors
// and skipped. So Census over the events equals codec/claude.Count over
// the lines, plus one kept record per meta file and unused spill.

import (
	"bytes"
	"encoding/json"
	"errors"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bbengine/bbengine/codec/claude"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/llm"
	"github.com/bbengine/bbengine/engine"
)

func init() { engine.RegisterImporter("claude", importClaude) }

// cline is one parsed line of a Claude Code log.
type cline struct {
	r    claude.Record
	src  *engine.ImportRecord
	file string
	t    int64 // the line's timestamp, or the one before it in its file
	own  int64 // the line's own timestamp (0: none)
	// shape marks a JSON object whose fields are not of the kinds Claude
	// Code writes: an unknown record.
	shape bool
	// thread is the line's thread (see plan).
	thread int
}

// claudeImport holds one session's import.
type claudeImport struct {
	s         engine.Session
	events    []engine.Event
	last      int64 // time of the previous event
	metas     map[string]*engine.ImportRecord
	calls     map[string]string // agentId → the tool call that started it
	names     map[string]string // tool call id → tool name
	spills    map[string]*engine.ImportRecord
	usedSpill map[*engine.ImportRecord]bool
	title     string
	custom    string
	unknown   int64
	// open holds the model responses being emitted: key → index of the
	// model_call event; lastLine the index of each response's last line.
	open     map[string]int
	lastLine map[string]int
	usage    map[string]*claude.Usage
}

func importClaude(session string, files []engine.ImportFile) (*engine.Imported, error) {
	im := &claudeImport{metas: map[string]*engine.ImportRecord{},
		calls: map[string]string{}, names: map[string]string{}, spills: map[string]*engine.ImportRecord{},
		usedSpill: map[*engine.ImportRecord]bool{}, open: map[string]int{}, lastLine: map[string]int{}, usage: map[string]*claude.Usage{}}
	s := &im.s
	s.Agent = "claude-code"
	s.Threads = 1
	info := &engine.ImportInfo{Source: "claude"}
	s.Import = info
	parsed := parseClaude(files)
	var perFile [][]cline
	for fi := range files {
		f := &files[fi]
		info.Files = append(info.Files, f.Path)
		var lines []cline
		var t int64
		for ri := range f.Records {
			rec := &f.Records[ri]
			info.Records++
			switch rec.Kind {
			case exchange.ImportMeta:
				if !json.Valid(rec.Data) {
					info.Errors++
					continue
				}
				id := strings.TrimSuffix(strings.TrimPrefix(path.Base(rec.File), "agent-"), ".meta.json")
				if id == "" || rec.File == "" {
					id = strings.TrimSuffix(strings.TrimPrefix(path.Base(f.Path), "agent-"), ".meta.json")
				}
				im.metas[id] = rec
				var m struct {
					ToolUseID string `json:"toolUseId"`
				}
				if json.Unmarshal(rec.Data, &m) == nil && m.ToolUseID != "" {
					im.calls[id] = m.ToolUseID
				}
				continue
			case exchange.ImportSpill:
				name := rec.File
				if name == "" {
					name = f.Path
				}
				im.spills[path.Base(name)] = rec
				continue
			case exchange.ImportLine:
			default:
				info.Errors++
				continue
			}
			p := &parsed[fi][ri]
			if p.err != nil && !errors.Is(p.err, claude.ErrShape) {
				info.Errors++
				continue
			}
			l := cline{r: p.r, src: rec, file: f.Path, own: p.t, shape: p.err != nil}
			if p.t != 0 {
				t = p.t
			}
			l.t = t
			lines = append(lines, l)
			im.linkAgent(&l.r)
		}
		perFile = append(perFile, lines)
	}
	merged := mergeLines(perFile)
	im.plan(merged)
	for i := range merged {
		im.line(merged, i)
	}
	// Meta files of agents that never appeared, and spills no result named.
	for _, id := range sortedKeys(im.metas) {
		im.addMeta(id, 1)
	}
	for _, name := range sortedKeys(im.spills) {
		rec := im.spills[name]
		if im.usedSpill[rec] {
			continue
		}
		raw, _ := json.Marshal(string(rec.Data))
		im.add(engine.Event{Kind: engine.KindRecord, Time: im.last, Thread: 1, Record: &engine.Record{Type: "spill", Known: true, Raw: raw},
			Prov: engine.Provenance{Side: "import", First: rec.WAL, Last: rec.WAL, File: rec.File, Line: rec.Line}})
	}
	switch {
	case im.custom != "":
		s.Title = im.custom
	default:
		s.Title = im.title
	}
	info.Unknown = im.unknown
	for i := range im.events {
		ev := &im.events[i]
		if ev.Time > 0 && (s.First == 0 || ev.Time < s.First) {
			s.First = ev.Time
		}
		s.Last = max(s.Last, ev.Time)
		if ev.Kind == engine.KindError {
			s.Errors++
		}
	}
	return &engine.Imported{Session: im.s, Events: im.events}, nil
}

// parsedLine is a line record parsed.
type parsedLine struct {
	r   claude.Record
	err error
	t   int64 // its timestamp (unix ns), 0 when it has none
}

// parseClaude parses the line records of files on every processor: the
// parser is most of an import's time. The result is indexed like files.
func parseClaude(files []engine.ImportFile) [][]parsedLine {
	out := make([][]parsedLine, len(files))
	type span struct{ f, from, to int }
	var spans []span
	const chunk = 64
	for fi := range files {
		out[fi] = make([]parsedLine, len(files[fi].Records))
		for from := 0; from < len(files[fi].Records); from += chunk {
			spans = append(spans, span{fi, from, min(from+chunk, len(files[fi].Records))})
		}
	}
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1)) - 1
			if i >= len(spans) {
				return
			}
			sp := spans[i]
			for ri := sp.from; ri < sp.to; ri++ {
				rec := &files[sp.f].Records[ri]
				if rec.Kind != exchange.ImportLine {
					continue
				}
				p := &out[sp.f][ri]
				p.r, p.err = claude.ParseLine(rec.Data)
				if ts, err := time.Parse(time.RFC3339Nano, p.r.Timestamp); err == nil {
					p.t = ts.UnixNano()
				}
			}
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(spans)) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	return out
}

// mergeLines merges the files' lines by time, keeping each file's order;
// a tie goes to the earlier file.
func mergeLines(files [][]cline) []cline {
	n := 0
	for _, f := range files {
		n += len(f)
	}
	out := make([]cline, 0, n)
	head := make([]int, len(files))
	for len(out) < n {
		best := -1
		for i, f := range files {
			if head[i] < len(f) && (best < 0 || f[head[i]].t < files[best][head[best]].t) {
				best = i
			}
		}
		out = append(out, files[best][head[best]])
		head[best]++
	}
	return out
}

// linkAgent notes the tool call that started a subagent, from the
// toolUseResult.agentId of its result.
func (im *claudeImport) linkAgent(r *claude.Record) {
	if r.Type != "user" || r.Message == nil || !bytes.Contains(r.ToolUseResult, []byte(`"agentId"`)) {
		return
	}
	var res struct {
		AgentID string `json:"agentId"`
	}
	if json.Unmarshal(r.ToolUseResult, &res) != nil || res.AgentID == "" {
		return
	}
	for _, b := range r.Message.Content.Blocks {
		if b.Type == "tool_result" {
			if _, ok := im.calls[res.AgentID]; !ok {
				im.calls[res.AgentID] = b.ToolUseID
			}
			return
		}
	}
}

// plan assigns threads (claude.Threads, as the census does) and finds
// each model response's last line.
func (im *claudeImport) plan(lines []cline) {
	var th claude.Threads
	for i := range lines {
		l := &lines[i]
		r := &l.r
		thread, started, agentID := th.Line(l.file, i, r)
		if started {
			im.startThread(thread, agentID)
		}
		l.thread = thread
		if r.Type == "assistant" && !r.Synthetic() {
			im.lastLine[claude.ThreadResponseKey(thread, r, i)] = i
		}
	}
}

// startThread adds the subagent whose thread is t (agentID "" for an
// inline one) to the session.
func (im *claudeImport) startThread(t int, agentID string) {
	im.s.Threads = t
	a := engine.Agent{Thread: t, ID: agentID, Call: im.calls[agentID]}
	if m := im.metas[agentID]; m != nil {
		var meta struct {
			AgentType   string `json:"agentType"`
			Description string `json:"description"`
		}
		json.Unmarshal(m.Data, &meta)
		a.Type, a.Description = meta.AgentType, meta.Description
	}
	im.s.Agents = append(im.s.Agents, a)
}

func (im *claudeImport) add(ev engine.Event) int {
	if ev.Time == 0 {
		ev.Time = im.last
	}
	im.last = ev.Time
	im.events = append(im.events, ev)
	return len(im.events) - 1
}

// addMeta adds the record of an agent's meta file, once.
func (im *claudeImport) addMeta(id string, thread int) {
	rec := im.metas[id]
	if rec == nil {
		return
	}
	delete(im.metas, id)
	im.add(engine.Event{Kind: engine.KindRecord, Time: im.last, Thread: thread, Record: &engine.Record{Type: "meta", Known: true, Raw: bytes.Clone(rec.Data)},
		Prov: engine.Provenance{Side: "import", First: rec.WAL, Last: rec.WAL, File: rec.File, Line: rec.Line}})
}

// line adds the events of line i.
func (im *claudeImport) line(lines []cline, i int) {
	l := &lines[i]
	r := &l.r
	thread, t := l.thread, l.own
	if r.AgentID != "" {
		im.addMeta(r.AgentID, thread)
	}
	s := &im.s
	if r.Version != "" && s.Version == "" {
		s.Version, s.Client = r.Version, "claude-cli/"+r.Version
	}
	if thread == 1 {
		if s.CWD == "" {
			s.CWD = r.CWD
		}
		if s.Branch == "" {
			s.Branch = r.GitBranch
		}
	}
	prov := engine.Provenance{Side: "import", First: l.src.WAL, Last: l.src.WAL, File: l.file, Line: l.src.Line, RequestID: r.RequestID}
	ev := func(k engine.Kind) engine.Event {
		return engine.Event{Kind: k, Time: t, Thread: thread, UUID: r.UUID, Prov: prov}
	}
	record := func(known bool) {
		e := ev(engine.KindRecord)
		typ := r.Kind()
		if typ == "" {
			typ = "unknown"
		}
		e.Record = &engine.Record{Type: typ, Known: known, Raw: bytes.Clone(l.src.Data)}
		if !known {
			im.unknown++
		}
		im.add(e)
	}
	switch {
	case l.shape || !claude.Types[r.Type]:
		record(false)
	case r.Type == "user":
		im.user(r, ev, record)
	case r.Type == "assistant" && r.Synthetic():
		e := ev(engine.KindError)
		msg := "synthetic assistant message"
		if r.Message != nil {
			if text, _ := joinText(r.Message.Content); text != "" {
				msg = text
			}
		}
		e.Error = &engine.Error{Stage: "client", Type: "synthetic", Message: msg}
		im.add(e)
	case r.Type == "assistant":
		im.assistant(lines, i, thread, ev)
	case r.Type == "system" && r.Subtype == "compact_boundary":
		e := ev(engine.KindRewrite)
		e.Rewrite = &engine.Rewrite{Kind: "compaction", From: thread}
		extra := struct {
			CompactMetadata   json.RawMessage `json:"compactMetadata,omitempty"`
			LogicalParentUUID string          `json:"logicalParentUuid,omitempty"`
		}{json.RawMessage(r.CompactMetadata), r.LogicalParentUUID}
		e.Extra, _ = json.Marshal(extra)
		im.add(e)
	default:
		switch r.Type {
		case "summary":
			im.title = r.Summary
		case "custom-title":
			im.custom = r.CustomTitle
		}
		record(true)
	}
}

// user adds the events of a user line.
func (im *claudeImport) user(r *claude.Record, ev func(engine.Kind) engine.Event, record func(bool)) {
	kind := r.UserKind()
	if kind == "" {
		record(true)
		return
	}
	m := r.Message
	for _, b := range m.Content.Blocks {
		if b.Type != "tool_result" {
			continue
		}
		e := ev(engine.KindToolResult)
		e.Role = "user"
		e.Tool = &engine.Tool{ID: b.ToolUseID, Name: im.names[b.ToolUseID], IsError: b.IsError}
		if b.Content != nil {
			e.Text, e.Parts = joinText(*b.Content)
		}
		if len(r.ToolUseResult) > 0 {
			e.Extra = append(append([]byte(`{"toolUseResult":`), r.ToolUseResult...), '}')
			im.spilled(r, &e)
		}
		im.add(e)
	}
	if kind == "results" {
		return
	}
	e := ev(engine.KindMessage)
	e.Role = "user"
	var c claude.Content
	if !m.Content.List {
		c = m.Content
	} else {
		c.List = true
		for _, b := range m.Content.Blocks {
			if b.Type != "tool_result" {
				c.Blocks = append(c.Blocks, b)
			}
		}
	}
	e.Text, e.Parts = joinText(c)
	switch {
	case kind == "prompt":
	case r.IsCompactSummary:
		e.Meta = "compact_summary"
	default:
		e.Meta = "meta"
	}
	im.add(e)
	if kind == "prompt" && r.Interrupted() {
		in := ev(engine.KindInterruption)
		in.Text = e.Text
		im.add(in)
	}
}

// spilled replaces a tool result's in-line placeholder with the output
// Claude Code spilled to tool-results/<id>.txt.
func (im *claudeImport) spilled(r *claude.Record, e *engine.Event) {
	if !bytes.Contains(r.ToolUseResult, []byte(`"persistedOutputPath"`)) {
		return
	}
	var res struct {
		Path string `json:"persistedOutputPath"`
	}
	if json.Unmarshal(r.ToolUseResult, &res) != nil || res.Path == "" {
		return
	}
	rec := im.spills[path.Base(strings.ReplaceAll(res.Path, `\`, "/"))]
	if rec == nil {
		return
	}
	im.usedSpill[rec] = true
	e.Text = string(rec.Data)
	e.Prov.Last = max(e.Prov.Last, rec.WAL)
}

// assistant adds the events of an assistant line: the model call at the
// first line of its response, the line's blocks, and the usage at its
// last.
func (im *claudeImport) assistant(lines []cline, i, thread int, ev func(engine.Kind) engine.Event) {
	r := &lines[i].r
	key := claude.ThreadResponseKey(thread, r, i)
	m := r.Message
	call, ok := im.open[key]
	if !ok {
		e := ev(engine.KindModelCall)
		e.Call = &engine.Call{API: llm.AnthropicMessages, Provider: "anthropic", Status: 200, Complete: true}
		call = im.add(e)
		im.open[key] = call
	}
	c := im.events[call].Call
	if m != nil {
		if m.ID != "" {
			c.ResponseID = m.ID
		}
		if m.Model != "" {
			c.Model = m.Model
		}
		if m.StopReason != "" {
			c.StopReason = m.StopReason
		}
		if m.Usage != nil {
			im.usage[key] = m.Usage
		}
		if !m.Content.List {
			e := ev(engine.KindMessage)
			e.Role = "assistant"
			e.Text = m.Content.Text
			im.add(e)
		}
		for _, b := range m.Content.Blocks {
			switch b.Type {
			case "thinking":
				e := ev(engine.KindThinking)
				e.Role, e.Text, e.Signature = "assistant", b.Thinking, b.Signature
				im.add(e)
			case "redacted_thinking":
				e := ev(engine.KindThinking)
				e.Role, e.Data = "assistant", b.Data
				im.add(e)
			case "tool_use", "server_tool_use":
				e := ev(engine.KindToolCall)
				e.Role = "assistant"
				e.Tool = &engine.Tool{ID: b.ID, Name: b.Name, Args: json.RawMessage(bytes.Clone(b.Input)), Server: b.Type == "server_tool_use"}
				im.names[b.ID] = b.Name
				im.add(e)
			default:
				e := ev(engine.KindMessage)
				e.Role = "assistant"
				e.Text, e.Parts = joinText(claude.Content{List: true, Blocks: []claude.Block{b}})
				im.add(e)
			}
		}
	}
	if im.lastLine[key] != i {
		return
	}
	im.events[call].Prov.Last = lines[i].src.WAL
	delete(im.open, key)
	var u engine.Usage
	if cu := im.usage[key]; cu != nil {
		u = engine.Usage{Input: cu.InputTokens + cu.CacheReadInputTokens + cu.CacheCreationInputTokens, Output: cu.OutputTokens,
			CacheRead: cu.CacheReadInputTokens, CacheCreation: cu.CacheCreationInputTokens}
		if cc := cu.CacheCreation; cc != nil {
			u.CacheCreation5m, u.CacheCreation1h = cc.Ephemeral5m, cc.Ephemeral1h
		}
		e := ev(engine.KindUsage)
		e.Usage = &u
		im.add(e)
		delete(im.usage, key)
	}
	s := &im.s
	s.Requests++
	s.Usage.Add(u)
	model := c.Model
	if model == "" {
		model = "unknown"
	}
	j := slices.IndexFunc(s.Models, func(m engine.ModelUsage) bool { return m.Model == model })
	if j < 0 {
		s.Models = append(s.Models, engine.ModelUsage{Model: model})
		j = len(s.Models) - 1
	}
	s.Models[j].Requests++
	s.Models[j].Usage.Add(u)
}

// joinText returns the text of content (its text blocks joined by
// newlines) and its other blocks as parts.
func joinText(c claude.Content) (string, []llm.Part) {
	if !c.List {
		return c.Text, nil
	}
	var texts []string
	var parts []llm.Part
	for _, b := range c.Blocks {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "image", "document":
			parts = append(parts, mediaPart(b))
		default:
			raw := b.Raw
			if len(raw) == 0 {
				raw, _ = json.Marshal(&b)
			}
			parts = append(parts, llm.Part{Type: llm.PartOther, Text: b.ToolName, Raw: json.RawMessage(bytes.Clone(raw))})
		}
	}
	return strings.Join(texts, "\n"), parts
}

// mediaPart describes an image or document block without its data, as
// codec/llm does for the wire.
func mediaPart(b claude.Block) llm.Part {
	if b.Type == "document" {
		return llm.AnthropicMedia(llm.PartDocument, json.RawMessage(b.Source))
	}
	return llm.AnthropicMedia(llm.PartImage, json.RawMessage(b.Source))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
