package opencode

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"

	"github.com/bbengine/bbengine/codec/llm"
	"github.com/bbengine/bbengine/engine"
)

// The opencode importer derives one session from its rows (a database's
// unit, see store.go) or its files (the JSON tree of 1.1 and earlier,
// tree.go), by the census rules of logformat.go, so that engine.Census over
// its events equals the source census. The last version of each row wins
// (a row is imported again whenever opencode rewrote it). The messages
// are taken in (time_created, id) order and each message's parts in id
// order (design section 4.2):
//
//   - A user message is a user prompt (its text parts neither synthetic
//     nor ignored, joined), then a user message Meta "meta" with its
//     synthetic or ignored text, if any. Its file parts are Parts of the
//     first of those; with neither, each file part is a record. A
//     compaction part makes a rewrite (Kind compaction) and the message a
//     Meta "meta" one. Its agent and subtask parts are records, kept.
//   - An assistant message is a model_call (Provider providerID, Model
//     modelID, StopReason finish, Complete when it has a completion
//     time), then its parts: text gives an assistant message (Meta
//     "compact_summary" in a summary), reasoning a thinking event, a tool
//     part a tool_call (ID callID, Name tool, Args state.input; Partial
//     while pending or running) and, once completed or failed, its
//     tool_result (Extra title, metadata and time), step-finish a usage
//     event (Input counts the cache, Output the reasoning; cost in
//     Extra), retry an error and a record; step-start, patch and
//     snapshot are records, kept, and a part of another type a record,
//     unknown. An assistant message with no step-finish but tokens gives
//     a usage event of its own. Its error is an error event (Stage
//     upstream), or an interruption for MessageAbortedError.
//
// A session_message row (the newer store, design section 4.2 "v2 rows")
// is, for type user, a user prompt (its files and agents attachments in
// Extra); for system and synthetic, a user message Meta "meta" (context
// opencode put in); for shell, a tool_call "shell" (ID its callID, Args
// its command) and, once completed, its output as the tool_result; for
// compaction, a rewrite (Kind compaction) and the summary as a user
// message Meta "compact_summary"; for type assistant, one model call:
// a model_call, then per content block a message (text), a thinking
// event (reasoning) or a tool_call with, once completed or failed, its
// tool_result (the text of its content; Extra outputPaths, structured
// and provider), then a usage event from its tokens; for another type a
// record, unknown. Its events' UUID is the row's id.
//
// Every event's UUID is its part's id (its message's for a message's own
// events), its provenance the record of the row's newest version.
// Messages the newest session row no longer lists (opencode deleted them
// after a revert) are left out with their parts, and a rewrite event
// (Kind drop, Dropped their number) ends the timeline; their records
// stay in the WAL. The
// session row gives Title, CWD, Version and Agents (its subagents'
// sessions, each with the call of the task tool part that started it).
func init() { engine.RegisterImporter(Source, importOpencode) }

// Source is the import source of opencode's storage.
const Source = "opencode"

func importOpencode(session string, files []engine.ImportFile) (*engine.Imported, error) {
	im := &engine.Imported{}
	s := &im.Session
	s.Agent, s.Client, s.Threads = Family, "opencode", 1
	s.Import = &engine.ImportInfo{Source: Source}
	for _, f := range files {
		s.Import.Files = append(s.Import.Files, f.Path)
	}
	recs, datas, decode := sessionRecords(files)
	st := resolve(datas, decode)
	s.Import.Records, s.Import.Errors = st.ids, st.bad
	oi := &ocImport{im: im, recs: recs}
	oi.run(st)
	if st.dropped > 0 {
		// Messages opencode deleted since they were imported: their
		// records stay in the WAL; the timeline says they were dropped.
		kept := len(st.messages) + len(st.v2)
		oi.add(engine.Event{Kind: engine.KindRewrite, Rewrite: &engine.Rewrite{Kind: "drop", From: 1, Kept: kept, Dropped: int(st.dropped)},
			Prov: oi.prov(st.session)}, st.session.TimeUpdated)
	}
	im.SpanEvents()
	return im, nil
}

// ocImport is the state of deriving one session.
type ocImport struct {
	im   *engine.Imported
	recs []engine.ImportRecord
	time int64
	// calls maps a child session's id to the call of the task tool part
	// that started it.
	calls map[string]string
}

func (oi *ocImport) prov(r *row) engine.Provenance {
	rec := &oi.recs[r.rec]
	first := oi.recs[r.first].WAL
	return engine.Provenance{Side: "import", First: first, Last: rec.WAL, File: fileOf(rec), Line: rec.Line}
}

// fileOf returns the file a record came from: a database (less the
// session its unit names) or a file of the JSON tree.
func fileOf(rec *engine.ImportRecord) string {
	db, _ := splitUnit(rec.File)
	return db
}

// add appends ev at t, in Unix ms (the time of the event before when 0).
func (oi *ocImport) add(ev engine.Event, ms int64) int {
	if ms != 0 {
		oi.time = ms * 1e6
	}
	ev.Time, ev.Thread = oi.time, 1
	oi.im.Events = append(oi.im.Events, ev)
	return len(oi.im.Events) - 1
}

func (oi *ocImport) record(p *row, typ string, known bool, ms int64) {
	if !known {
		oi.im.Session.Import.Unknown++
	}
	oi.add(engine.Event{Kind: engine.KindRecord, UUID: p.ID, Record: &engine.Record{Type: typ, Known: known, Raw: p.Data}, Prov: oi.prov(p)}, ms)
}

func (oi *ocImport) run(st *sessionState) {
	s := &oi.im.Session
	msgs, parts := st.ordered()
	oi.calls = map[string]string{}
	for _, ps := range parts {
		for _, p := range ps {
			var d part
			if json.Unmarshal(p.Data, &d) != nil || d.Type != "tool" || d.Tool != "task" || d.State == nil {
				continue
			}
			var meta struct {
				SessionID string `json:"sessionId"`
			}
			json.Unmarshal(d.State.Metadata, &meta)
			if meta.SessionID != "" {
				oi.calls[meta.SessionID] = d.CallID
			}
		}
	}
	if r := st.session; r != nil {
		s.Title, s.CWD, s.Version = r.Title, r.Directory, r.Version
		if r.Version != "" {
			s.Client = "opencode/" + r.Version
		}
		for _, c := range r.Children {
			s.Agents = append(s.Agents, engine.Agent{Thread: 1, ID: Source + ":" + c.ID, Type: c.Agent, Description: c.Title, Call: oi.calls[c.ID]})
		}
		oi.time = r.TimeCreated * 1e6
	}
	for _, m := range msgs {
		if m.Table == "session_message" {
			oi.v2(m)
			continue
		}
		// A member of the wrong type is counted, and the rest of the
		// message (and its parts) kept.
		var d message
		if ok, odd := decodeLenient(m.Data, &d); !ok || odd {
			s.Import.Errors++
			if !ok {
				continue
			}
		}
		var ps []part
		var prow []*row
		for _, p := range parts[m.ID] {
			var pd part
			if ok, odd := decodeLenient(p.Data, &pd); !ok || odd {
				s.Import.Errors++
				if !ok {
					continue
				}
			}
			ps = append(ps, pd)
			prow = append(prow, p)
		}
		if s.CWD == "" && d.Path != nil {
			s.CWD = d.Path.Cwd
		}
		switch d.Role {
		case "user":
			oi.user(m, &d, ps, prow)
		case "assistant":
			oi.assistant(m, &d, ps, prow)
		default:
			s.Import.Unknown++
			oi.add(engine.Event{Kind: engine.KindRecord, UUID: m.ID, Record: &engine.Record{Type: "message/" + d.Role, Raw: m.Data}, Prov: oi.prov(m)}, d.Time.Created)
		}
	}
}

// filePart describes a file part: its media type, name and URL, or for
// a data: URL the size and SHA-256 of its bytes (the WAL keeps them, as
// llm.Part says of inline data).
func filePart(p *part) llm.Part {
	lp := llm.Part{Type: llm.PartDocument, MediaType: p.Mime, Name: p.Filename}
	if strings.HasPrefix(p.Mime, "image/") {
		lp.Type = llm.PartImage
	}
	rest, ok := strings.CutPrefix(p.URL, "data:")
	if !ok {
		lp.URL = p.URL
		return lp
	}
	meta, data, _ := strings.Cut(rest, ",")
	var b []byte
	if strings.HasSuffix(meta, ";base64") {
		b, _ = base64.StdEncoding.DecodeString(data)
	} else if u, err := url.PathUnescape(data); err == nil {
		b = []byte(u)
	}
	sum := sha256.Sum256(b)
	lp.Size, lp.SHA256 = int64(len(b)), hex.EncodeToString(sum[:])
	return lp
}

func (oi *ocImport) user(m *row, d *message, ps []part, prow []*row) {
	prompt, meta, compaction := userText(ps)
	var files []llm.Part
	for i := range ps {
		if ps[i].Type == "file" {
			files = append(files, filePart(&ps[i]))
		}
	}
	for i := range ps {
		if ps[i].Type == "compaction" {
			oi.add(engine.Event{Kind: engine.KindRewrite, UUID: prow[i].ID, Rewrite: &engine.Rewrite{Kind: "compaction", From: 1}, Prov: oi.prov(prow[i])}, d.Time.Created)
		}
	}
	if len(prompt) > 0 && !compaction {
		oi.add(engine.Event{Kind: engine.KindMessage, Role: "user", Text: strings.Join(prompt, "\n"), Parts: files, UUID: m.ID, Prov: oi.prov(m)}, d.Time.Created)
		files = nil
	}
	if compaction {
		meta = append(prompt, meta...)
	}
	if len(meta) > 0 || compaction {
		oi.add(engine.Event{Kind: engine.KindMessage, Role: "user", Meta: "meta", Text: strings.Join(meta, "\n"), Parts: files, UUID: m.ID, Prov: oi.prov(m)}, d.Time.Created)
		files = nil
	}
	for i := range ps {
		p := &ps[i]
		switch {
		case p.Type == "text", p.Type == "compaction":
		case p.Type == "file":
			if files != nil {
				oi.record(prow[i], "file", true, d.Time.Created)
			}
		case keptParts[p.Type]:
			oi.record(prow[i], p.Type, true, d.Time.Created)
		default:
			oi.record(prow[i], p.Type, false, d.Time.Created)
		}
	}
}

func (oi *ocImport) assistant(m *row, d *message, ps []part, prow []*row) {
	s := &oi.im.Session
	call := &engine.Call{Provider: d.ProviderID, Model: d.ModelID, StopReason: d.Finish, Complete: d.Time.Completed != nil, Status: 200}
	if d.Error != nil && d.Error.Data.StatusCode != 0 {
		call.Status = d.Error.Data.StatusCode
	}
	oi.add(engine.Event{Kind: engine.KindModelCall, Call: call, UUID: m.ID, Prov: oi.prov(m)}, d.Time.Created)
	s.Requests++
	model := d.ModelID
	k := -1
	for i := range s.Models {
		if s.Models[i].Model == model {
			k = i
		}
	}
	if k < 0 {
		s.Models = append(s.Models, engine.ModelUsage{Model: model})
		k = len(s.Models) - 1
	}
	s.Models[k].Requests++
	addUsage := func(t *tokens, uuid string, prov engine.Provenance, extra json.RawMessage, ms int64) {
		u := t.usage()
		s.Usage.Add(u)
		s.Models[k].Usage.Add(u)
		oi.add(engine.Event{Kind: engine.KindUsage, Usage: &u, UUID: uuid, Extra: extra, Prov: prov}, ms)
	}
	finished := false
	for i := range ps {
		p, r := &ps[i], prow[i]
		start := d.Time.Created
		if p.Time != nil && p.Time.Start != 0 {
			start = p.Time.Start
		}
		switch p.Type {
		case "text":
			if p.Text == "" {
				continue
			}
			ev := engine.Event{Kind: engine.KindMessage, Role: "assistant", Text: p.Text, UUID: r.ID, Prov: oi.prov(r)}
			if d.isSummary() {
				ev.Meta = "compact_summary"
			}
			oi.add(ev, start)
		case "reasoning":
			if p.Text == "" {
				continue
			}
			ev := engine.Event{Kind: engine.KindThinking, Text: p.Text, UUID: r.ID, Prov: oi.prov(r)}
			if len(p.Metadata) > 0 {
				ev.Extra, _ = json.Marshal(map[string]json.RawMessage{"metadata": p.Metadata})
			}
			oi.add(ev, start)
		case "tool":
			oi.tool(r, p, start)
		case "step-finish":
			if p.Tokens == nil {
				p.Tokens = &tokens{}
			}
			extra, _ := json.Marshal(map[string]any{"cost": p.Cost, "reason": p.Reason})
			addUsage(p.Tokens, r.ID, oi.prov(r), extra, 0)
			finished = true
		case "retry":
			oi.record(r, p.Type, true, start)
			e := &engine.Error{Stage: "upstream"}
			if p.Error != nil {
				e.Type, e.Message, e.Status = p.Error.Name, p.Error.Data.Message, p.Error.Data.StatusCode
			}
			oi.add(engine.Event{Kind: engine.KindError, Error: e, UUID: r.ID, Prov: oi.prov(r)}, 0)
			s.Errors++
		default:
			oi.record(r, p.Type, keptParts[p.Type], start)
		}
	}
	end := d.Time.Created
	if d.Time.Completed != nil {
		end = *d.Time.Completed
	}
	if !finished && d.Tokens != nil && !d.Tokens.zero() {
		addUsage(d.Tokens, m.ID, oi.prov(m), nil, end)
	}
	if e := d.Error; e != nil {
		if e.Name == "MessageAbortedError" {
			oi.add(engine.Event{Kind: engine.KindInterruption, Text: e.Data.Message, UUID: m.ID, Prov: oi.prov(m)}, end)
		} else {
			oi.add(engine.Event{Kind: engine.KindError, Error: &engine.Error{Stage: "upstream", Type: e.Name, Message: e.Data.Message, Status: e.Data.StatusCode},
				UUID: m.ID, Prov: oi.prov(m)}, end)
			s.Errors++
		}
	}
}

// tool emits a tool part's call and, once it ended, its result.
func (oi *ocImport) tool(r *row, p *part, start int64) {
	st := p.State
	if st == nil {
		st = &toolState{Status: "pending"}
	}
	args := st.Input
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	done := st.Status == "completed" || st.Status == "error"
	oi.add(engine.Event{Kind: engine.KindToolCall, Tool: &engine.Tool{ID: p.CallID, Name: p.Tool, Args: args}, Partial: !done, UUID: r.ID, Prov: oi.prov(r)}, start)
	if !done {
		return
	}
	end := int64(0)
	if st.Time != nil {
		end = st.Time.End
	}
	x := map[string]any{"status": st.Status}
	if st.Title != "" {
		x["title"] = st.Title
	}
	if len(st.Metadata) > 0 {
		x["metadata"] = st.Metadata
	}
	if st.Time != nil {
		x["time"] = st.Time
	}
	extra, _ := json.Marshal(x)
	ev := engine.Event{Kind: engine.KindToolResult, Role: "tool", Tool: &engine.Tool{ID: p.CallID, Name: p.Tool}, Text: st.Output, Extra: extra, UUID: r.ID, Prov: oi.prov(r)}
	if st.Status == "error" {
		ev.Text, ev.Tool.IsError = st.Error, true
	}
	oi.add(ev, end)
}

// v2 emits the events of a session_message row.
func (oi *ocImport) v2(m *row) {
	s := &oi.im.Session
	var d v2Data
	if ok, odd := decodeLenient(m.Data, &d); !ok || odd {
		s.Import.Errors++
		if !ok {
			return
		}
	}
	prov := oi.prov(m)
	at := d.Time.Created
	switch m.Type {
	case "user":
		if d.Text != "" {
			ev := engine.Event{Kind: engine.KindMessage, Role: "user", Text: d.Text, UUID: m.ID, Prov: prov}
			if attached(d.Files) || attached(d.Agents) {
				x := map[string]json.RawMessage{}
				if attached(d.Files) {
					x["files"] = d.Files
				}
				if attached(d.Agents) {
					x["agents"] = d.Agents
				}
				ev.Extra, _ = json.Marshal(x)
			}
			oi.add(ev, at)
		}
	case "system", "synthetic":
		// Context opencode put into the conversation.
		if d.Text != "" {
			oi.add(engine.Event{Kind: engine.KindMessage, Role: "user", Meta: "meta", Text: d.Text, UUID: m.ID, Prov: prov}, at)
		}
	case "shell":
		// A command the user ran: a call and, once it ended, its
		// output.
		args, _ := json.Marshal(map[string]string{"command": d.Command})
		done := d.Time.Completed != nil
		oi.add(engine.Event{Kind: engine.KindToolCall, Tool: &engine.Tool{ID: d.CallID, Name: "shell", Args: args}, Partial: !done, UUID: m.ID, Prov: prov}, at)
		if done {
			oi.add(engine.Event{Kind: engine.KindToolResult, Role: "tool", Tool: &engine.Tool{ID: d.CallID, Name: "shell"}, Text: d.Output, UUID: m.ID, Prov: prov}, *d.Time.Completed)
		}
	case "compaction":
		oi.add(engine.Event{Kind: engine.KindRewrite, Rewrite: &engine.Rewrite{Kind: "compaction", From: 1}, UUID: m.ID, Prov: prov}, at)
		extra, _ := json.Marshal(map[string]string{"reason": d.Reason})
		oi.add(engine.Event{Kind: engine.KindMessage, Role: "user", Meta: "compact_summary", Text: d.Summary, Extra: extra, UUID: m.ID, Prov: prov}, at)
	case "assistant":
		call := &engine.Call{StopReason: d.Finish, Complete: d.Time.Completed != nil, Status: 200}
		if d.Model != nil {
			call.Provider, call.Model = d.Model.ProviderID, d.Model.ID
		}
		oi.add(engine.Event{Kind: engine.KindModelCall, Call: call, UUID: m.ID, Prov: prov}, at)
		s.Requests++
		k := -1
		for i := range s.Models {
			if s.Models[i].Model == call.Model {
				k = i
			}
		}
		if k < 0 {
			s.Models = append(s.Models, engine.ModelUsage{Model: call.Model})
			k = len(s.Models) - 1
		}
		s.Models[k].Requests++
		for _, b := range d.Content {
			t := int64(0)
			if b.Time != nil {
				t = b.Time.Created
			}
			switch b.Type {
			case "text":
				if b.Text != "" {
					oi.add(engine.Event{Kind: engine.KindMessage, Role: "assistant", Text: b.Text, UUID: m.ID, Prov: prov}, t)
				}
			case "reasoning":
				if b.Text != "" {
					oi.add(engine.Event{Kind: engine.KindThinking, Text: b.Text, UUID: m.ID, Prov: prov}, t)
				}
			case "tool":
				args := json.RawMessage("{}")
				status := "pending"
				if b.State != nil {
					status = b.State.Status
					if len(b.State.Input) > 0 {
						args = b.State.Input
					}
				}
				done := status == "completed" || status == "error"
				oi.add(engine.Event{Kind: engine.KindToolCall, Tool: &engine.Tool{ID: b.ID, Name: b.Name, Args: args}, Partial: !done, UUID: m.ID, Prov: prov}, t)
				if !done {
					continue
				}
				x := map[string]any{"status": status}
				if len(b.State.OutputPaths) > 0 {
					x["outputPaths"] = b.State.OutputPaths
				}
				if len(b.State.Structured) > 0 {
					x["structured"] = b.State.Structured
				}
				if len(b.Provider) > 0 {
					x["provider"] = b.Provider
				}
				extra, _ := json.Marshal(x)
				ev := engine.Event{Kind: engine.KindToolResult, Role: "tool", Tool: &engine.Tool{ID: b.ID, Name: b.Name, IsError: status == "error"},
					Text: blockText(b.State.Content), Extra: extra, UUID: m.ID, Prov: prov}
				if status == "error" && ev.Text == "" {
					ev.Text = b.State.Error
				}
				end := int64(0)
				if b.Time != nil {
					end = b.Time.Completed
				}
				oi.add(ev, end)
			default:
				raw, _ := json.Marshal(b)
				s.Import.Unknown++
				oi.add(engine.Event{Kind: engine.KindRecord, Record: &engine.Record{Type: "content/" + b.Type, Raw: raw}, UUID: m.ID, Prov: prov}, t)
			}
		}
		if d.Tokens != nil {
			u := d.Tokens.usage()
			s.Usage.Add(u)
			s.Models[k].Usage.Add(u)
			extra, _ := json.Marshal(map[string]any{"cost": d.Cost})
			end := at
			if d.Time.Completed != nil {
				end = *d.Time.Completed
			}
			oi.add(engine.Event{Kind: engine.KindUsage, Usage: &u, UUID: m.ID, Extra: extra, Prov: prov}, end)
		}
	default:
		s.Import.Unknown++
		oi.add(engine.Event{Kind: engine.KindRecord, Record: &engine.Record{Type: "session_message/" + m.Type, Raw: m.Data}, UUID: m.ID, Prov: prov}, at)
	}
}
