package codex

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	"github.com/bbengine/bbengine/codec/codex"
	"github.com/bbengine/bbengine/codec/llm"
	"github.com/bbengine/bbengine/engine"
)

// The Codex importer derives one session from one rollout file
// (rollout-<time>-<uuid>.jsonl or .jsonl.zst), by the census rules of
// codec/codex, so that Census over its events equals codex.Count over
// the file:
//
//   - A prompt event is a user prompt (Meta ""): a user_message, or in
//     Codex 0.169, which writes none, an item_completed of a UserMessage
//     item (Text its text parts joined; one beside a user_message is
//     that prompt again and stays a record). The user-role message item
//     just before it is the same prompt: the pair makes one event (Text
//     from the event, images from the item). Other user-, developer-
//     and system-role items are injected context: role user, Meta
//     "developer", Extra {"role": <role>} when not user.
//   - A model response (a run of output items, see codex.Census) starts
//     with a model_call (API openai-responses, Provider the session's
//     model_provider or "openai", Model the latest turn_context.model),
//     then its items: reasoning → thinking (summary text, encrypted
//     content in Data), assistant message → message (Extra {"phase"}),
//     calls → tool_call. The token_count that raises the cumulative
//     total ends it with a usage event (the delta; Extra the token_count
//     payload). A raise with no response waiting gets a model_call of
//     its own. A token_usage_record (0.169) gives the model_call its
//     Call.ResponseID, the id the proxied side of the call carries too:
//     the last model_call when it has none yet, else the one the next
//     raise mints. It adds no usage (the token_count has it) and mints
//     no call.
//   - agent_message and agent_reasoning events, and 0.169's
//     item_completed AgentMessage and Reasoning events, mirror the item
//     after them and fold into its event; web_search_end folds into the
//     web_search_call after it (the call's id, Extra); exec_command_end,
//     patch_apply_end, mcp_tool_call_end and 0.169's item_completed of a
//     call's item (CommandExecution, …: its id is the call_id) fold
//     into the tool_result of their call_id (Extra {"exec_command_end":
//     …} or {"item_completed": …}).
//   - Tool arguments are JSON-decoded into Tool.Args; a custom tool's
//     free-text input becomes {"input": "<text>"}; a function_call whose
//     arguments are not JSON keeps them in Text. web_search_call is a
//     server tool call; local_shell_call a call of "local_shell" with
//     its action as Args.
//   - compacted is a rewrite (compaction, Text the summary) and a record
//     keeping the line (replacement_history included) verbatim.
//   - Every other line is a record (Known unless its type is unknown):
//     session_meta, turn_context, world_state, token_usage_record,
//     repeated token_counts, task_started, thread_settings_applied, …
//     A subagent or forked rollout is a session of its own; its
//     session_meta record's Extra names the parent ({"parent":
//     "codex:<thread>", "forked_from": "codex:<id>"}) and Agents stays
//     empty (subagents are other files, other sessions).
//   - A line that does not parse is counted in Import.Errors and skipped.
//
// When a session's files include both rollout X.jsonl and X.jsonl.zst,
// only the plain one is read (Codex re-materialises a compressed
// rollout to append to it).
func init() { engine.RegisterImporter("codex", importCodex) }

func importCodex(session string, files []engine.ImportFile) (*engine.Imported, error) {
	im := &engine.Imported{}
	s := &im.Session
	s.Agent = "codex"
	s.Threads = 1
	s.Import = &engine.ImportInfo{Source: "codex"}
	plain := map[string]bool{}
	for _, f := range files {
		plain[f.Path] = true
	}
	for _, f := range files {
		if base, ok := strings.CutSuffix(f.Path, ".zst"); ok && plain[base] {
			continue
		}
		s.Import.Files = append(s.Import.Files, f.Path)
		ci := &codexImport{im: im, file: f.Path, provider: "openai", call: -1}
		ci.run(f.Records)
	}
	im.SpanEvents()
	return im, nil
}

// codexImport is the state of importing one rollout file.
type codexImport struct {
	im       *engine.Imported
	file     string
	recs     []engine.ImportRecord // the records that parsed, parallel to lines
	lines    []codex.Line
	time     int64 // of the last event
	model    string
	provider string
	tokens   codex.Tokens
	// open is set while a run of model output continues; waiting while
	// the last response has no usage yet (respModel its model).
	open, waiting bool
	respModel     string
	// call is the index in im.Events of the last model_call (-1 before
	// the first); respID a token_usage_record's response id that found
	// no model_call to name, for the one a token_count mints next.
	call   int
	respID string
	names  map[string]string // call id → tool name
}

func (ci *codexImport) run(records []engine.ImportRecord) {
	s := &ci.im.Session
	for _, r := range records {
		s.Import.Records++
		l, err := codex.ParseLine(r.Data)
		if err != nil {
			s.Import.Errors++
			continue
		}
		ci.recs = append(ci.recs, r)
		ci.lines = append(ci.lines, l)
	}
	folded := codex.FoldedEnds(ci.lines)
	ends := map[string][]int{} // call id → folded end events
	for i, ok := range folded {
		if ok {
			id := ci.lines[i].Event.EndCallID()
			ends[id] = append(ends[id], i)
		}
	}
	ci.names = map[string]string{}
	for i := range ci.lines {
		ci.line(i, folded, ends)
	}
}

// prov returns the provenance of an event made of records idx (indexes
// into ci.recs, any order).
func (ci *codexImport) prov(idx ...int) engine.Provenance {
	lo, hi := slices.Min(idx), slices.Max(idx)
	return engine.Provenance{Side: "import", First: ci.recs[lo].WAL, Last: ci.recs[hi].WAL, File: ci.file, Line: ci.recs[lo].Line}
}

func (ci *codexImport) add(ev engine.Event, i int) {
	if t := ci.lines[i].Time; t != 0 {
		ci.time = t
	}
	ev.Time = ci.time
	ev.Thread = 1
	ci.im.Events = append(ci.im.Events, ev)
}

func (ci *codexImport) record(i int, typ string, known bool, extra json.RawMessage) {
	if !known {
		ci.im.Session.Import.Unknown++
	}
	ci.add(engine.Event{Kind: engine.KindRecord, Record: &engine.Record{Type: typ, Known: known, Raw: ci.recs[i].Data}, Extra: extra, Prov: ci.prov(i)}, i)
}

// output notes model output at line i: it opens a response when none is
// open.
func (ci *codexImport) output(i int) {
	if ci.open {
		return
	}
	ci.respID = ""
	ci.modelCall(i)
	ci.open, ci.waiting = true, true
}

// responseID names a model call by the response id of the
// token_usage_record at line i, written after the response's output
// items and before or after its token_count: the last model_call when
// it has no id yet; else (a call with no recorded output) the one the
// next token_count mints. A record no call takes names none: the
// import never mints a call for it.
func (ci *codexImport) responseID(i int) {
	id := ci.lines[i].Usage.ResponseID
	if id == "" {
		return
	}
	if ci.call >= 0 {
		c := ci.im.Events[ci.call].Call
		if c.ResponseID == "" {
			c.ResponseID = id
			return
		}
		if c.ResponseID == id {
			return
		}
	}
	ci.respID = id
}

func (ci *codexImport) modelCall(i int) {
	s := &ci.im.Session
	ci.call = len(ci.im.Events)
	ci.add(engine.Event{Kind: engine.KindModelCall, Call: &engine.Call{API: llm.OpenAIResponses, Provider: ci.provider, Model: ci.model, Complete: true, Status: 200}, Prov: ci.prov(i)}, i)
	s.Requests++
	ci.respModel = ci.model
	k := slices.IndexFunc(s.Models, func(m engine.ModelUsage) bool { return m.Model == ci.model })
	if k < 0 {
		s.Models = append(s.Models, engine.ModelUsage{Model: ci.model})
		k = len(s.Models) - 1
	}
	s.Models[k].Requests++
}

func (ci *codexImport) line(i int, folded []bool, ends map[string][]int) {
	l := &ci.lines[i]
	s := &ci.im.Session
	switch {
	case l.Item != nil:
		ci.item(i, ends)
	case l.Event != nil:
		ci.event(i, folded)
	case l.Type == codex.TypeCompacted:
		ci.open = false
		ci.add(engine.Event{Kind: engine.KindRewrite, Text: l.Compacted.Message, Rewrite: &engine.Rewrite{Kind: "compaction", From: 1}, Prov: ci.prov(i)}, i)
		ci.record(i, l.Type, true, nil)
	case l.Meta != nil:
		m := l.Meta
		if s.Client == "" && (m.Originator != "" || m.CLIVersion != "") {
			s.Client = m.Originator + "/" + m.CLIVersion
			s.Version = m.CLIVersion
		}
		if s.CWD == "" {
			s.CWD = m.CWD
		}
		if s.Branch == "" && m.Git != nil {
			s.Branch = m.Git.Branch
		}
		if m.ModelProvider != "" {
			ci.provider = m.ModelProvider
		}
		if s.Source == "" {
			s.Source = "session_meta"
		}
		var extra json.RawMessage
		link := map[string]string{}
		if p := m.Parent(); p != "" {
			link["parent"] = "codex:" + p
		}
		if m.ForkedFromID != "" {
			link["forked_from"] = "codex:" + m.ForkedFromID
		}
		if len(link) > 0 {
			extra, _ = json.Marshal(link)
		}
		ci.record(i, l.Type, true, extra)
	case l.Turn != nil:
		if l.Turn.Model != "" {
			ci.model = l.Turn.Model
		}
		if s.CWD == "" {
			s.CWD = l.Turn.CWD
		}
		ci.record(i, l.Type, true, nil)
	case l.Usage != nil:
		ci.responseID(i)
		ci.record(i, l.Type, true, nil)
	case l.Type == codex.TypeLegacyState, l.Type == codex.TypeWorldState:
		ci.record(i, l.Type, true, nil)
	default:
		ci.record(i, l.Type, false, nil)
	}
}

func (ci *codexImport) item(i int, ends map[string][]int) {
	l := &ci.lines[i]
	it := l.Item
	switch {
	case it.IsOutput():
		ci.output(i)
	case it.IsInput():
		ci.open = false
	}
	// mirror returns the event_msg lines folded into item i.
	mirror := func() []int {
		idx := []int{i}
		for j := i - 1; j >= 0; j-- {
			if ci.lines[j].Event == nil || codex.Mirror(ci.lines, j) != i {
				break
			}
			idx = append(idx, j)
		}
		return idx
	}
	switch it.Type {
	case "message":
		if it.Role == "assistant" {
			ev := engine.Event{Kind: engine.KindMessage, Role: "assistant", Text: codex.Text(it.Content), Parts: codexParts(it.Content), Prov: ci.prov(mirror()...)}
			if it.Phase != "" {
				ev.Extra = jsonObject("phase", it.Phase)
			}
			ci.add(ev, i)
			return
		}
		if it.Role == "user" && codex.PromptOf(ci.lines, i) >= 0 {
			return // the prompt event after it makes the event
		}
		ev := engine.Event{Kind: engine.KindMessage, Role: "user", Meta: "developer", Text: codex.Text(it.Content), Parts: codexParts(it.Content), Prov: ci.prov(i)}
		if it.Role != "user" {
			ev.Extra = jsonObject("role", it.Role)
		}
		ci.add(ev, i)
	case "reasoning":
		text := codex.Text(it.Summary)
		if text == "" {
			text = codex.Text(it.Reasoning)
		}
		ci.add(engine.Event{Kind: engine.KindThinking, Role: "assistant", Text: text, Data: it.Encrypted, Prov: ci.prov(mirror()...)}, i)
	case "function_call", "custom_tool_call", "local_shell_call":
		tool := &engine.Tool{ID: it.CallID, Name: it.Name}
		ev := engine.Event{Kind: engine.KindToolCall, Role: "assistant", Tool: tool, Prov: ci.prov(i)}
		switch it.Type {
		case "function_call":
			if args, ok := compactJSON(it.Arguments); ok {
				tool.Args = args
			} else {
				ev.Text = it.Arguments
			}
			if it.Namespace != "" {
				ev.Extra = jsonObject("namespace", it.Namespace)
			}
		case "custom_tool_call":
			tool.Args = jsonObject("input", it.Input)
		case "local_shell_call":
			if tool.ID == "" {
				tool.ID = it.ID
			}
			tool.Name = "local_shell"
			tool.Args = it.Action
		}
		ci.names[tool.ID] = tool.Name
		ci.add(ev, i)
	case "web_search_call":
		id := codex.WebSearchID(ci.lines, i, ci.recs[i].Line)
		tool := &engine.Tool{ID: id, Name: "web_search", Args: it.Action, Server: true, SyntheticID: strings.HasPrefix(id, "web_search#")}
		idx := mirror()
		ev := engine.Event{Kind: engine.KindToolCall, Role: "assistant", Tool: tool, Prov: ci.prov(idx...)}
		if len(idx) > 1 {
			ev.Extra = rawObject(map[string]json.RawMessage{"web_search_end": ci.lines[idx[1]].Payload})
		}
		ci.add(ev, i)
	case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
		tool := &engine.Tool{ID: it.CallID, Name: ci.names[it.CallID]}
		ev := engine.Event{Kind: engine.KindToolResult, Role: "tool", Tool: tool}
		if o := it.Output; o != nil {
			ev.Text = o.Text
			ev.Parts = codexParts(o.Content)
			tool.IsError = o.Success != nil && !*o.Success
		}
		idx := []int{i}
		extra := map[string]json.RawMessage{}
		for _, j := range ends[it.CallID] {
			idx = append(idx, j)
			extra[ci.lines[j].Event.Type] = ci.lines[j].Payload
		}
		if len(extra) > 0 {
			ev.Extra = rawObject(extra)
		}
		ev.Prov = ci.prov(idx...)
		ci.add(ev, i)
	default:
		ci.record(i, "response_item/"+it.Type, codex.KnownItem(it.Type), nil)
	}
}

func (ci *codexImport) event(i int, folded []bool) {
	l := &ci.lines[i]
	ev := l.Event
	typ := "event_msg/" + ev.Type
	switch ev.Type {
	case "user_message":
		ci.prompt(i, ev.Message, ev.Images)
	case "item_completed":
		ci.completed(i, folded)
	case "agent_message":
		if codex.Mirror(ci.lines, i) >= 0 {
			return
		}
		ci.output(i)
		out := engine.Event{Kind: engine.KindMessage, Role: "assistant", Text: ev.Message, Prov: ci.prov(i)}
		if ev.Phase != "" {
			out.Extra = jsonObject("phase", ev.Phase)
		}
		ci.add(out, i)
	case "agent_reasoning":
		if codex.Mirror(ci.lines, i) >= 0 {
			return
		}
		ci.output(i)
		ci.add(engine.Event{Kind: engine.KindThinking, Role: "assistant", Text: ev.Text, Prov: ci.prov(i)}, i)
	case "web_search_end":
		if codex.Mirror(ci.lines, i) < 0 {
			ci.record(i, typ, true, nil)
		}
	case "token_count":
		if ev.Info == nil {
			ci.record(i, typ, true, nil)
			return
		}
		d, step := ci.tokens.Add(ev.Info)
		if step == codex.StepRepeat {
			ci.record(i, typ, true, nil)
			return
		}
		if !ci.waiting {
			ci.modelCall(i)
			if ci.respID != "" {
				ci.im.Events[ci.call].Call.ResponseID, ci.respID = ci.respID, ""
			}
		}
		ci.open, ci.waiting = false, false
		u := engine.Usage{Input: d.Input, Output: d.Output, CacheRead: d.Cached, Reasoning: d.Reasoning}
		ci.add(engine.Event{Kind: engine.KindUsage, Usage: &u, Extra: l.Payload, Prov: ci.prov(i)}, i)
		s := &ci.im.Session
		s.Usage.Add(u)
		k := slices.IndexFunc(s.Models, func(m engine.ModelUsage) bool { return m.Model == ci.respModel })
		s.Models[k].Usage.Add(u)
	case "error":
		ci.im.Session.Errors++
		ci.add(engine.Event{Kind: engine.KindError, Error: &engine.Error{Stage: "agent", Message: ev.Message}, Extra: l.Payload, Prov: ci.prov(i)}, i)
	default:
		if !folded[i] {
			ci.record(i, typ, codex.KnownEvent(ev.Type), nil)
		}
	}
}

// prompt adds the user prompt of the prompt event at line i (text and
// image URLs): with the user item it mirrors, images from the item.
func (ci *codexImport) prompt(i int, text string, images []string) {
	ci.open = false
	out := engine.Event{Kind: engine.KindMessage, Role: "user", Text: text, Prov: ci.prov(i)}
	if j := codex.MirrorsUser(ci.lines, i); j >= 0 {
		out.Prov = ci.prov(j, i)
		for _, p := range ci.lines[j].Item.Content {
			if p.Type == "input_image" {
				out.Parts = append(out.Parts, imagePart(p.ImageURL))
			}
		}
	} else {
		for _, u := range images {
			out.Parts = append(out.Parts, imagePart(u))
		}
	}
	ci.add(out, i)
}

// completed imports an item_completed event (Codex 0.169 writes one per
// item of a turn): a UserMessage is the user prompt (codex.Prompt), an
// AgentMessage or Reasoning mirrors the item after it as agent_message
// and agent_reasoning do, a call's item folds into the call's result;
// the rest are records.
func (ci *codexImport) completed(i int, folded []bool) {
	ev := ci.lines[i].Event
	it := ev.Item
	switch ev.ItemType() {
	case "UserMessage":
		if !codex.Prompt(ci.lines, i) {
			break
		}
		// Codex joins a UserMessage's text parts with nothing between
		// them into a user_message's text.
		var text strings.Builder
		var images []string
		for _, p := range it.Content {
			switch p.Type {
			case "text":
				text.WriteString(p.Text)
			case "image":
				images = append(images, p.ImageURL)
			}
		}
		ci.prompt(i, text.String(), images)
		return
	case "AgentMessage":
		if codex.Mirror(ci.lines, i) >= 0 {
			return
		}
		ci.output(i)
		out := engine.Event{Kind: engine.KindMessage, Role: "assistant", Text: codex.Text(it.Content), Prov: ci.prov(i)}
		if it.Phase != "" {
			out.Extra = jsonObject("phase", it.Phase)
		}
		ci.add(out, i)
		return
	case "Reasoning":
		if codex.Mirror(ci.lines, i) >= 0 {
			return
		}
		ci.output(i)
		text := strings.Join(it.SummaryText, "\n")
		if text == "" {
			text = strings.Join(it.RawContent, "\n")
		}
		ci.add(engine.Event{Kind: engine.KindThinking, Role: "assistant", Text: text, Prov: ci.prov(i)}, i)
		return
	}
	if !folded[i] {
		ci.record(i, "event_msg/"+ev.Type, true, nil)
	}
}

// codexParts returns the parts of content that are not text (images).
func codexParts(content []codex.Part) []llm.Part {
	var out []llm.Part
	for _, p := range content {
		switch p.Type {
		case "input_text", "output_text", "text", "summary_text", "reasoning_text":
		case "input_image":
			out = append(out, imagePart(p.ImageURL))
		default:
			raw, _ := json.Marshal(p)
			out = append(out, llm.Part{Type: llm.PartOther, Raw: raw})
		}
	}
	return out
}

// imagePart describes an image by URL: a data: URL by its media type and
// the size and SHA-256 of its bytes (the WAL keeps the bytes).
func imagePart(u string) llm.Part {
	p := llm.Part{Type: llm.PartImage}
	rest, ok := strings.CutPrefix(u, "data:")
	meta, data, ok2 := strings.Cut(rest, ",")
	if !ok || !ok2 || !strings.HasSuffix(meta, ";base64") {
		p.URL = u
		return p
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		p.URL = u
		return p
	}
	sum := sha256.Sum256(b)
	p.MediaType = strings.TrimSuffix(meta, ";base64")
	p.Size, p.SHA256 = int64(len(b)), hex.EncodeToString(sum[:])
	return p
}

// compactJSON returns s compacted when it is JSON.
func compactJSON(s string) (json.RawMessage, bool) {
	var buf bytes.Buffer
	if s == "" || json.Compact(&buf, []byte(s)) != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

func jsonObject(k, v string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{k: v})
	return b
}

func rawObject(m map[string]json.RawMessage) json.RawMessage {
	b, _ := json.Marshal(m)
	return b
}
