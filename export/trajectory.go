package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/bbengine/bbengine/engine"
)

// The Autopilot trajectory JSON (shared/spec/trajectory-format.md):
//
//	{"session_id", "prompt", "model", "cwd", "repo_sha", "branch"?,
//	 "started_at", "ended_at"?, "steps": [step…], "result"?, "usage"}
//	step: {"step_id" (1…), "timestamp", "type", <the type's fields>,
//	       "tokens_in"?, "tokens_out"?, "tokens_cached"?}
//
// Events map to steps one to one, except model calls and usage: a
// system_init step (the session's model) opens the list; user and
// assistant messages are user and assistant steps; thinking is a
// thinking step; tool calls and results are tool_call and tool_result
// steps (success = not Tool.IsError); a model call's usage goes on the
// first step of its output as tokens_in (input without cache reads and
// writes, the Anthropic sense the spec's usage has), tokens_out and
// tokens_cached (cache reads), with the call itself under "call"; a call
// with no output step gets a system_status step "model call" of its
// own. Everything else is a system_status step whose status says what
// it is: "system prompt", "<role> message", "error: …", "interrupted:
// …", "rewrite <kind>", "record <type>".
//
// What the spec has no slot for is kept as extra keys on the step, which
// the spec's reader (serde, without deny_unknown_fields) ignores: thread,
// uuid, meta (a user message that is not a typed prompt), partial, data
// (redacted thinking), server, call, usage (the call's full usage),
// usage_uuid, error, rewrite, record, parts, extra (Event.Extra), and
// text for system_status steps. The top level adds "session" (agent,
// client, title, version, threads, agents, import). So a trajectory
// reads back (ReadTrajectory) into events with the same Census.

type trajectoryDoc struct {
	SessionID string            `json:"session_id"`
	Prompt    string            `json:"prompt"`
	Model     string            `json:"model"`
	CWD       string            `json:"cwd"`
	RepoSHA   string            `json:"repo_sha"`
	Branch    string            `json:"branch,omitempty"`
	StartedAt string            `json:"started_at"`
	EndedAt   string            `json:"ended_at,omitempty"`
	Steps     []trajectoryStep  `json:"steps"`
	Result    *trajectoryResult `json:"result,omitempty"`
	Usage     trajectoryUsage   `json:"usage"`
	Session   trajectorySession `json:"session"`
}

type trajectoryStep struct {
	StepID    int    `json:"step_id"`
	Timestamp string `json:"timestamp"`
	Type      string `json:"type"`
	// user, assistant, thinking
	Content   *string `json:"content,omitempty"`
	Signature string  `json:"signature,omitempty"`
	// tool_call, tool_result
	Tool    *string         `json:"tool,omitempty"`
	ToolID  *string         `json:"tool_id,omitempty"`
	Input   json.RawMessage `json:"input,omitempty"`
	Success *bool           `json:"success,omitempty"`
	Output  *string         `json:"output,omitempty"`
	// system_init, system_status
	Model  *string `json:"model,omitempty"`
	Status *string `json:"status,omitempty"`

	TokensIn     *int64 `json:"tokens_in,omitempty"`
	TokensOut    *int64 `json:"tokens_out,omitempty"`
	TokensCached *int64 `json:"tokens_cached,omitempty"`

	// Extra keys (see above).
	Thread    int               `json:"thread,omitempty"`
	UUID      string            `json:"uuid,omitempty"`
	Meta      string            `json:"meta,omitempty"`
	Partial   bool              `json:"partial,omitempty"`
	Data      string            `json:"data,omitempty"`
	Server    bool              `json:"server,omitempty"`
	Text      *string           `json:"text,omitempty"`
	Call      *engine.Call      `json:"call,omitempty"`
	CallUUID  string            `json:"call_uuid,omitempty"`
	FullUsage *engine.Usage     `json:"usage,omitempty"`
	UsageUUID string            `json:"usage_uuid,omitempty"`
	Error     *engine.Error     `json:"error,omitempty"`
	Rewrite   *engine.Rewrite   `json:"rewrite,omitempty"`
	Record    *trajectoryRecord `json:"record,omitempty"`
	Parts     json.RawMessage   `json:"parts,omitempty"`
	Role      string            `json:"role,omitempty"`
	Extra     json.RawMessage   `json:"extra,omitempty"`
}

// trajectoryRecord is a kept record with its raw JSON as a string, so the
// indented document does not re-indent it: it stays verbatim.
type trajectoryRecord struct {
	Type  string `json:"type"`
	Known bool   `json:"known,omitempty"`
	Raw   string `json:"raw"`
}

type trajectoryResult struct {
	Success         bool     `json:"success"`
	DurationMS      int64    `json:"duration_ms"`
	NumTurns        int      `json:"num_turns"`
	ResultText      string   `json:"result_text,omitempty"`
	Errors          []string `json:"errors,omitempty"`
	IssuesCompleted int      `json:"issues_completed"`
}

type trajectoryUsage struct {
	InputTokens         int64   `json:"input_tokens"`
	OutputTokens        int64   `json:"output_tokens"`
	CacheReadTokens     int64   `json:"cache_read_tokens"`
	CacheCreationTokens int64   `json:"cache_creation_tokens"`
	CostUSD             float64 `json:"cost_usd"`
}

type trajectorySession struct {
	Agent   string             `json:"agent,omitempty"`
	Client  string             `json:"client,omitempty"`
	Title   string             `json:"title,omitempty"`
	Version string             `json:"version,omitempty"`
	Threads int                `json:"threads,omitempty"`
	Agents  []engine.Agent     `json:"agents,omitempty"`
	Import  *engine.ImportInfo `json:"import,omitempty"`
}

// rfc3339 is a timestamp as the trajectory writes it (UTC, milliseconds).
func rfc3339(ns int64) string { return stamp(ns) }

// Trajectory writes a session's events as an Autopilot trajectory JSON
// document (indented, ending in a newline). repo_sha is "" (the engine
// does not know the commit) and cost_usd 0 (it does not price calls).
func Trajectory(s *engine.Session, events []engine.Event) ([]byte, error) {
	doc := trajectoryDoc{
		SessionID: s.ID, Model: topModel(*s), CWD: s.CWD, Branch: s.Branch,
		StartedAt: rfc3339(s.First), Steps: []trajectoryStep{},
		Session: trajectorySession{Agent: s.Agent, Client: s.Client, Title: s.Title, Version: s.Version, Threads: s.Threads, Agents: s.Agents, Import: s.Import},
	}
	if s.Last != 0 {
		doc.EndedAt = rfc3339(s.Last)
	}
	model := doc.Model
	doc.Steps = append(doc.Steps, trajectoryStep{Type: "system_init", Timestamp: rfc3339(s.First), Model: &model})
	var (
		call       *engine.Event
		callStep   = -1 // the step that carries the current call
		result     trajectoryResult
		lastText   string
		havePrompt bool
	)
	str := func(v string) *string { return &v }
	add := func(st trajectoryStep, ev *engine.Event) int {
		st.Timestamp = rfc3339(ev.Time)
		if ev.Thread > 1 {
			st.Thread = ev.Thread
		}
		st.UUID, st.Meta, st.Partial, st.Extra = ev.UUID, ev.Meta, ev.Partial, ev.Extra
		if len(ev.Parts) > 0 {
			b, err := json.Marshal(ev.Parts)
			if err == nil {
				st.Parts = b
			}
		}
		doc.Steps = append(doc.Steps, st)
		i := len(doc.Steps) - 1
		if call != nil && callStep < 0 && ev.Kind != engine.KindUsage {
			callStep = i
			doc.Steps[i].Call = call.Call
			if call.UUID != ev.UUID {
				doc.Steps[i].CallUUID = call.UUID
			}
		}
		return i
	}
	for i := range events {
		ev := &events[i]
		switch ev.Kind {
		case engine.KindSystem:
			add(trajectoryStep{Type: "system_status", Status: str("system prompt"), Text: str(ev.Text)}, ev)
		case engine.KindMessage:
			switch ev.Role {
			case "user":
				add(trajectoryStep{Type: "user", Content: str(ev.Text)}, ev)
				if ev.Meta == "" && !havePrompt {
					doc.Prompt, havePrompt = ev.Text, true
				}
			case "assistant":
				add(trajectoryStep{Type: "assistant", Content: str(ev.Text)}, ev)
				if ev.Thread <= 1 {
					lastText = ev.Text
				}
			default:
				add(trajectoryStep{Type: "system_status", Status: str(ev.Role + " message"), Role: ev.Role, Text: str(ev.Text)}, ev)
			}
		case engine.KindThinking:
			add(trajectoryStep{Type: "thinking", Content: str(ev.Text), Signature: ev.Signature, Data: ev.Data}, ev)
		case engine.KindToolCall:
			t := ev.Tool
			if t == nil {
				t = &engine.Tool{}
			}
			input := t.Args
			if len(input) == 0 || !json.Valid(input) {
				input = json.RawMessage("{}")
			}
			st := trajectoryStep{Type: "tool_call", Tool: str(t.Name), ToolID: str(t.ID), Input: input, Server: t.Server}
			if len(t.Args) > 0 && !json.Valid(t.Args) || len(t.Args) == 0 && ev.Text != "" {
				st.Text = str(string(t.Args) + ev.Text)
			}
			add(st, ev)
		case engine.KindToolResult:
			t := ev.Tool
			if t == nil {
				t = &engine.Tool{}
			}
			ok := !t.IsError
			st := trajectoryStep{Type: "tool_result", ToolID: str(t.ID), Success: &ok, Output: str(ev.Text)}
			if t.Name != "" {
				st.Tool = str(t.Name)
			}
			add(st, ev)
		case engine.KindModelCall:
			call, callStep = ev, -1
			result.NumTurns++
		case engine.KindUsage:
			u := ev.Usage
			if u == nil {
				u = &engine.Usage{}
			}
			if call == nil || callStep < 0 {
				// A call with no output step (or usage with no call).
				c := call
				call = nil
				st := trajectoryStep{Type: "system_status", Status: str("model call")}
				if c != nil {
					st.Call = c.Call
					i := add(st, c)
					doc.Steps[i].Timestamp = rfc3339(ev.Time)
					callStep = i
				} else {
					callStep = add(st, ev)
				}
			}
			st := &doc.Steps[callStep]
			in, out, cached := u.Input-u.CacheRead-u.CacheCreation, u.Output, u.CacheRead
			st.TokensIn, st.TokensOut, st.TokensCached = &in, &out, &cached
			st.FullUsage = u
			if ev.UUID != "" && ev.UUID != st.UUID {
				st.UsageUUID = ev.UUID
			}
			doc.Usage.InputTokens += in
			doc.Usage.OutputTokens += out
			doc.Usage.CacheReadTokens += u.CacheRead
			doc.Usage.CacheCreationTokens += u.CacheCreation
			call, callStep = nil, -1
		case engine.KindError:
			e := ev.Error
			if e == nil {
				e = &engine.Error{}
			}
			add(trajectoryStep{Type: "system_status", Status: str("error: " + e.Message), Error: e}, ev)
			result.Errors = append(result.Errors, e.Message)
		case engine.KindInterruption:
			add(trajectoryStep{Type: "system_status", Status: str("interrupted: " + ev.Text), Text: str(ev.Text)}, ev)
		case engine.KindRewrite:
			rw := ev.Rewrite
			if rw == nil {
				rw = &engine.Rewrite{}
			}
			add(trajectoryStep{Type: "system_status", Status: str("rewrite " + rw.Kind), Rewrite: rw}, ev)
		case engine.KindRecord:
			rec := ev.Record
			if rec == nil {
				rec = &engine.Record{}
			}
			add(trajectoryStep{Type: "system_status", Status: str("record " + rec.Type), Record: &trajectoryRecord{Type: rec.Type, Known: rec.Known, Raw: string(rec.Raw)}}, ev)
		default:
			add(trajectoryStep{Type: "system_status", Status: str(string(ev.Kind))}, ev)
		}
	}
	if call != nil && callStep < 0 {
		// A last call with neither output nor usage.
		doc.Steps = append(doc.Steps, trajectoryStep{Type: "system_status", Status: &[]string{"model call"}[0], Timestamp: rfc3339(call.Time), Call: call.Call, UUID: call.UUID})
	}
	for i := range doc.Steps {
		doc.Steps[i].StepID = i + 1
	}
	result.Success = len(result.Errors) == 0
	result.ResultText = lastText
	if s.Last > s.First {
		// From the millisecond timestamps the document shows.
		result.DurationMS = s.Last/1e6 - s.First/1e6
	}
	doc.Result = &result
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("engine: trajectory of session %s: %w", s.ID, err)
	}
	return b.Bytes(), nil
}

// RLog writes a session's events as rlog/1, the text form the spec
// (shared/spec/trajectory-format.md, "rlog Format") describes: a header
// between --- lines, ">>> [id8] date", one step per paragraph with the
// markers u: a: t: (thinking) tc: (tool call) tr: (tool result) si:
// (system init) ss: (system status), "<<< [id8] date" and a "===
// Summary ===" block. The steps are the trajectory's (see Trajectory);
// a step's further lines are indented by two spaces.
//
// The original recorder (OpenAgentsInc/openagents crates/autopilot
// rlog.rs) wrote other markers (th: t!: o: @init "# status:" @start @end,
// see shared/notes/formats.md §2.3); we follow the spec document.
func RLog(s *engine.Session, events []engine.Event) ([]byte, error) {
	js, err := Trajectory(s, events)
	if err != nil {
		return nil, err
	}
	var doc trajectoryDoc
	if err := json.Unmarshal(js, &doc); err != nil {
		return nil, fmt.Errorf("engine: rlog of session %s: %w", s.ID, err)
	}
	var b strings.Builder
	b.WriteString("---\nformat: rlog/1\n")
	kv := func(k, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s: %s\n", k, yamlScalar(v))
		}
	}
	kv("id", s.ID)
	fmt.Fprintf(&b, "repo_sha: %s\n", yamlScalar(orUnknown(doc.RepoSHA)))
	kv("branch", s.Branch)
	kv("model", doc.Model)
	kv("cwd", s.CWD)
	agent := s.Agent
	if agent == "" {
		agent = "bbengine"
	}
	kv("agent", agent)
	kv("version", s.Version)
	fmt.Fprintf(&b, "tokens_total_in: %d\ntokens_total_out: %d\ntokens_cached: %d\n", doc.Usage.InputTokens, doc.Usage.OutputTokens, doc.Usage.CacheReadTokens)
	if doc.Usage.CacheCreationTokens > 0 {
		fmt.Fprintf(&b, "tokens_cache_create: %d\n", doc.Usage.CacheCreationTokens)
	}
	b.WriteString("---\n\n")
	id8 := shortID(s.ID)
	fmt.Fprintf(&b, ">>> [%s] %s\n", id8, rlogDate(s.First))
	for i := range doc.Steps {
		st := &doc.Steps[i]
		b.WriteString("\n")
		marker, text := rlogStep(st)
		if st.Thread > 1 {
			text += fmt.Sprintf(" tid=%d", st.Thread)
		}
		if st.TokensIn != nil {
			text += fmt.Sprintf(" tokens_in=%d tokens_out=%d", *st.TokensIn, *st.TokensOut)
			if *st.TokensCached > 0 {
				text += fmt.Sprintf(" tokens_cached=%d", *st.TokensCached)
			}
		}
		first, more := lines(text)
		if first == "" && len(more) > 0 {
			first, more = more[0], more[1:]
		}
		b.WriteString(marker + ":")
		if first != "" {
			b.WriteString(" " + first)
		}
		b.WriteString("\n")
		for _, m := range more {
			b.WriteString("  " + m + "\n")
		}
	}
	fmt.Fprintf(&b, "\n<<< [%s] %s\n\n=== Summary ===\n", id8, rlogDate(s.Last))
	r := doc.Result
	status := "SUCCESS"
	if !r.Success {
		status = "FAILED"
	}
	d := time.Duration(r.DurationMS) * time.Millisecond
	fmt.Fprintf(&b, "Status: %s\nDuration: %dm %ds\nTurns: %d\nCost: $%.3f\nInput tokens: %d\nOutput tokens: %d\nCached tokens: %d\nIssues completed: %d\n",
		status, int64(d/time.Minute), int64(d%time.Minute/time.Second), r.NumTurns, doc.Usage.CostUSD,
		doc.Usage.InputTokens, doc.Usage.OutputTokens, doc.Usage.CacheReadTokens, r.IssuesCompleted)
	return []byte(b.String()), nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// shortID is the first eight characters of a session id without its
// source prefix ("claude:abc123de…" → "abc123de").
func shortID(id string) string {
	if _, rest, ok := strings.Cut(id, ":"); ok && rest != "" {
		id = rest
	}
	if len(id) > 8 {
		id = id[:8]
	}
	return id
}

func rlogDate(ns int64) string {
	return time.Unix(0, ns).UTC().Format("2006-01-02 15:04:05 UTC")
}

// rlogStep returns a step's marker and text.
func rlogStep(st *trajectoryStep) (string, string) {
	deref := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	switch st.Type {
	case "user":
		return "u", deref(st.Content)
	case "assistant":
		return "a", deref(st.Content)
	case "thinking":
		return "t", deref(st.Content)
	case "tool_call":
		return "tc", deref(st.Tool) + " " + rlogArgs(st.Input)
	case "tool_result":
		tag := "[SUCCESS]"
		if st.Success != nil && !*st.Success {
			tag = "[ERROR]"
		}
		return "tr", tag + " " + deref(st.Output)
	case "system_init":
		return "si", "model=" + deref(st.Model)
	}
	status := deref(st.Status)
	if st.Text != nil && *st.Text != "" && !strings.HasSuffix(status, *st.Text) {
		status += "\n" + *st.Text
	}
	return "ss", status
}

// rlogArgs renders a tool input as key=value pairs in key order, values
// that are not strings as JSON.
func rlogArgs(input json.RawMessage) string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(input, &obj) != nil {
		return string(input)
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		var s string
		if json.Unmarshal(obj[k], &s) != nil {
			s = string(obj[k])
		}
		if strings.ContainsAny(s, " \t\n\"") {
			s = jsonString(s)
		}
		parts = append(parts, k+"="+s)
	}
	return strings.Join(parts, " ")
}

func init() { engine.RegisterImporter("trajectory", importTrajectory) }

// importTrajectory is the "trajectory" importer: one file with one
// ImportDoc record, a trajectory JSON document.
func importTrajectory(session string, files []engine.ImportFile) (*engine.Imported, error) {
	var rec *engine.ImportRecord
	var path string
	for i := range files {
		for j := range files[i].Records {
			if rec != nil || files[i].Records[j].Kind != "doc" {
				return nil, fmt.Errorf("engine: trajectory import of session %s: want one doc record, %s has another", session, files[i].Path)
			}
			rec, path = &files[i].Records[j], files[i].Path
		}
	}
	if rec == nil {
		return nil, fmt.Errorf("engine: trajectory import of session %s: no document", session)
	}
	im, err := ReadTrajectory(rec.Data, path)
	if err != nil {
		return nil, err
	}
	for i := range im.Events {
		im.Events[i].Prov.First, im.Events[i].Prov.Last = rec.WAL, rec.WAL
	}
	return im, nil
}

// ReadTrajectory reads a trajectory JSON document back into a session and
// its events: the inverse of Trajectory, so that a document Trajectory
// wrote gives events with the same Census. A step's "call" is a model
// call before the step, its tokens (or "usage") a usage event after the
// call's last output; system_init steps give the session's model and no
// event; a system_status step with none of the extra keys Trajectory
// writes is kept as a record ("trajectory/system_status"). A document
// without the "session" key (another writer's) is an import of source
// "trajectory" with one record per step. file names the document in
// errors and provenance.
func ReadTrajectory(data []byte, file string) (*engine.Imported, error) {
	var doc trajectoryDoc
	var probe struct {
		Session json.RawMessage `json:"session"`
		Steps   []json.RawMessage
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, fmt.Errorf("engine: trajectory %s: %w", file, err)
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("engine: trajectory %s: %w", file, err)
	}
	s := engine.Session{
		ID: doc.SessionID, CWD: doc.CWD, Branch: doc.Branch,
		Agent: doc.Session.Agent, Client: doc.Session.Client, Title: doc.Session.Title, Version: doc.Session.Version,
		Threads: doc.Session.Threads, Agents: doc.Session.Agents, Import: doc.Session.Import,
	}
	s.First, _ = parseStamp(doc.StartedAt)
	s.Last, _ = parseStamp(doc.EndedAt)
	if probe.Session == nil {
		s.Import = &engine.ImportInfo{Source: "trajectory", Records: int64(len(doc.Steps))}
		if file != "" {
			s.Import.Files = []string{file}
		}
	}
	var (
		evs     []engine.Event
		pending *engine.Event // the usage of the current call
	)
	flush := func() {
		if pending != nil {
			evs = append(evs, *pending)
			pending = nil
		}
	}
	models := map[string]int{}
	for i := range doc.Steps {
		st := &doc.Steps[i]
		at, _ := parseStamp(st.Timestamp)
		base := engine.Event{Time: at, Thread: max(st.Thread, 1), UUID: st.UUID, Meta: st.Meta, Partial: st.Partial, Extra: st.Extra,
			Prov: engine.Provenance{Side: "import", File: file, Line: int64(st.StepID)}}
		if len(st.Parts) > 0 {
			json.Unmarshal(st.Parts, &base.Parts)
		}
		str := func(p *string) string {
			if p == nil {
				return ""
			}
			return *p
		}
		if st.Call != nil || st.Type == "user" || st.Type == "tool_result" {
			flush()
		}
		if st.Call != nil {
			c := base
			c.Kind, c.Call, c.Meta, c.Extra, c.Parts, c.Partial = engine.KindModelCall, st.Call, "", nil, nil, false
			if st.CallUUID != "" {
				c.UUID = st.CallUUID
			}
			evs = append(evs, c)
			m := st.Call.Model
			if st.Call.Served != "" {
				m = st.Call.Served
			}
			models[m]++
		}
		if st.FullUsage != nil || st.TokensIn != nil {
			u := engine.Usage{}
			if st.FullUsage != nil {
				u = *st.FullUsage
			} else {
				u.Input = *st.TokensIn
				if st.TokensCached != nil {
					u.CacheRead = *st.TokensCached
					u.Input += u.CacheRead
				}
				if st.TokensOut != nil {
					u.Output = *st.TokensOut
				}
			}
			ev := base
			ev.Kind, ev.Usage, ev.Meta, ev.Extra, ev.Parts, ev.Partial = engine.KindUsage, &u, "", nil, nil, false
			if st.UsageUUID != "" {
				ev.UUID = st.UsageUUID
			}
			flush()
			pending = &ev
			s.Usage.Add(u)
		}
		ev := base
		switch st.Type {
		case "system_init":
			continue
		case "user", "assistant":
			ev.Kind, ev.Role, ev.Text = engine.KindMessage, st.Type, str(st.Content)
		case "thinking":
			ev.Kind, ev.Text, ev.Signature, ev.Data = engine.KindThinking, str(st.Content), st.Signature, st.Data
		case "tool_call":
			ev.Kind = engine.KindToolCall
			ev.Tool = &engine.Tool{ID: str(st.ToolID), Name: str(st.Tool), Args: st.Input, Server: st.Server}
			if st.Text != nil {
				ev.Tool.Args, ev.Text = nil, *st.Text
			}
		case "tool_result":
			ev.Kind = engine.KindToolResult
			ev.Tool = &engine.Tool{ID: str(st.ToolID), Name: str(st.Tool), IsError: st.Success != nil && !*st.Success}
			ev.Text = str(st.Output)
		default:
			status := str(st.Status)
			switch {
			case st.Error != nil:
				ev.Kind, ev.Error = engine.KindError, st.Error
			case st.Rewrite != nil:
				ev.Kind, ev.Rewrite = engine.KindRewrite, st.Rewrite
			case st.Record != nil:
				ev.Kind, ev.Record = engine.KindRecord, &engine.Record{Type: st.Record.Type, Known: st.Record.Known}
				if st.Record.Raw != "" {
					ev.Record.Raw = json.RawMessage(st.Record.Raw)
				}
			case st.Role != "":
				ev.Kind, ev.Role, ev.Text = engine.KindMessage, st.Role, str(st.Text)
			case status == "system prompt" && st.Text != nil:
				ev.Kind, ev.Text = engine.KindSystem, *st.Text
			case strings.HasPrefix(status, "interrupted: ") && st.Text != nil:
				ev.Kind, ev.Text = engine.KindInterruption, *st.Text
			case status == "model call":
				continue
			default:
				raw, _ := json.Marshal(st)
				if i < len(probe.Steps) {
					raw = probe.Steps[i]
				}
				ev.Kind, ev.Record = engine.KindRecord, &engine.Record{Type: "trajectory/" + st.Type, Known: true, Raw: raw}
			}
		}
		evs = append(evs, ev)
	}
	flush()
	for _, ev := range evs {
		if ev.Kind == engine.KindError {
			s.Errors++
		}
		if ev.Kind == engine.KindModelCall {
			s.Requests++
		}
		s.Threads = max(s.Threads, ev.Thread)
	}
	// Models in order of first call.
	seen := map[string]bool{}
	for _, ev := range evs {
		if ev.Kind != engine.KindModelCall {
			continue
		}
		m := ev.Call.Model
		if ev.Call.Served != "" {
			m = ev.Call.Served
		}
		if !seen[m] {
			seen[m] = true
			s.Models = append(s.Models, engine.ModelUsage{Model: m, Requests: models[m]})
		}
	}
	for i := range evs {
		evs[i].Seq = uint64(i + 1)
	}
	s.Events = uint64(len(evs))
	return &engine.Imported{Session: s, Events: evs}, nil
}
