package codex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"time"
)

// The envelope types.
const (
	TypeSessionMeta  = "session_meta"
	TypeTurnContext  = "turn_context"
	TypeResponseItem = "response_item"
	TypeEventMsg     = "event_msg"
	TypeCompacted    = "compacted"
	// TypeWorldState and TypeTokenUsageRecord are Codex 0.169's: the
	// state Codex injects as context (full or a patch of it), and one
	// model response's id and usage.
	TypeWorldState       = "world_state"
	TypeTokenUsageRecord = "token_usage_record"
	// TypeLegacyHeader and TypeLegacyState are the pre-envelope header
	// line and its {"record_type":"state"} markers.
	TypeLegacyHeader = "legacy_header"
	TypeLegacyState  = "legacy_state"
)

// ErrLine reports a line that is not a rollout record: not a JSON
// object, or a known payload whose fields have the wrong JSON types.
var ErrLine = errors.New("codex: not a rollout line")

// Line is one decoded rollout line. Exactly one of Meta, Turn, Item,
// Event, Compacted and Usage is set for a line of a known type, except
// the types kept only raw (world_state, legacy state markers); none for
// a type the package does not know (Type still names it; see
// KnownType).
type Line struct {
	// Timestamp is the envelope's timestamp as written; Time the same in
	// unix nanoseconds (0 when absent or not RFC 3339).
	Timestamp string
	Time      int64
	// Type is the envelope type (see the Type constants), or what the
	// line says it is when the package does not know it.
	Type string
	// Payload is the payload as written (for a legacy line: the whole
	// line). It aliases the input of ParseLine.
	Payload json.RawMessage
	// Legacy marks a pre-envelope line.
	Legacy bool

	Meta      *SessionMeta
	Turn      *TurnContext
	Item      *Item
	Event     *EventMsg
	Compacted *Compacted
	Usage     *UsageRecord
}

// KnownType reports whether the package knows an envelope type.
func KnownType(t string) bool {
	switch t {
	case TypeSessionMeta, TypeTurnContext, TypeResponseItem, TypeEventMsg, TypeCompacted,
		TypeWorldState, TypeTokenUsageRecord, TypeLegacyHeader, TypeLegacyState:
		return true
	}
	return false
}

// SessionMeta is the first line of a rollout.
type SessionMeta struct {
	ID         string `json:"id"`
	Timestamp  string `json:"timestamp"`
	CWD        string `json:"cwd"`
	Originator string `json:"originator"`
	CLIVersion string `json:"cli_version"`
	// Source is where the session runs: "cli", "vscode", "exec", "mcp",
	// or for an object source its key ("subagent").
	Source string `json:"-"`
	// SourceRaw is the source as written.
	SourceRaw     json.RawMessage `json:"source"`
	ModelProvider string          `json:"model_provider"`
	Git           *Git            `json:"git"`
	ForkedFromID  string          `json:"forked_from_id"`
	// Instructions is base_instructions.text (or the legacy header's
	// instructions).
	Instructions  string          `json:"-"`
	BaseRaw       json.RawMessage `json:"base_instructions"`
	DynamicTools  json.RawMessage `json:"dynamic_tools"`
	AgentNickname string          `json:"agent_nickname"`
	AgentRole     string          `json:"agent_role"`
}

// Parent returns the thread that spawned a subagent session
// (source.subagent.thread_spawn.parent_thread_id), or "".
func (m *SessionMeta) Parent() string {
	var s struct {
		Subagent struct {
			ThreadSpawn struct {
				Parent string `json:"parent_thread_id"`
			} `json:"thread_spawn"`
		} `json:"subagent"`
	}
	if len(m.SourceRaw) == 0 || m.SourceRaw[0] != '{' || json.Unmarshal(m.SourceRaw, &s) != nil {
		return ""
	}
	return s.Subagent.ThreadSpawn.Parent
}

// Git is the repository state at session start.
type Git struct {
	CommitHash    string `json:"commit_hash"`
	Branch        string `json:"branch"`
	RepositoryURL string `json:"repository_url"`
}

// TurnContext is written before each model request (0.104) or turn, and
// after a compaction.
type TurnContext struct {
	TurnID         string `json:"turn_id"`
	CWD            string `json:"cwd"`
	Model          string `json:"model"`
	Effort         string `json:"effort"`
	Summary        string `json:"summary"`
	ApprovalPolicy string `json:"approval_policy"`
	CurrentDate    string `json:"current_date"`
	Timezone       string `json:"timezone"`
}

// Item is a response item: a conversation item as the Responses API
// knows it.
type Item struct {
	Type string `json:"type"`
	ID   string `json:"id"`
	// Role and Content are a message's (user, developer, system,
	// assistant); Phase is "commentary" or "final_answer" on assistant
	// messages.
	Role    string `json:"role"`
	Content []Part `json:"content"`
	Phase   string `json:"phase"`
	// Summary, Reasoning (the item's content) and Encrypted are a
	// reasoning item's.
	Summary   []Part `json:"summary"`
	Reasoning []Part `json:"-"`
	Encrypted string `json:"encrypted_content"`
	// Name, Namespace, Arguments (a JSON text) and CallID are a
	// function_call's; Input (free text) a custom_tool_call's.
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Arguments string `json:"arguments"`
	CallID    string `json:"call_id"`
	Input     string `json:"input"`
	Status    string `json:"status"`
	// Output is a function_call_output's or custom_tool_call_output's.
	Output *Output `json:"-"`
	// Action is a local_shell_call's or web_search_call's action.
	Action json.RawMessage `json:"action"`
}

// Part is one part of a message, a reasoning summary or a tool output:
// input_text, output_text, input_image (ImageURL), summary_text,
// reasoning_text.
type Part struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	ImageURL string `json:"image_url,omitempty"`
}

// Output is a tool's output: a string, or a list of content parts (then
// Text joins their text with newlines).
type Output struct {
	Text    string
	Content []Part
	// Success is the legacy object form's success flag, when given.
	Success *bool
}

// IsOutput reports whether the item is model output: an assistant
// message, reasoning, or a call the model made.
func (it *Item) IsOutput() bool {
	switch it.Type {
	case "message":
		return it.Role == "assistant"
	case "reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call":
		return true
	}
	return false
}

// IsInput reports whether the item is input to the model: a user,
// developer or system message, or a tool output.
func (it *Item) IsInput() bool {
	switch it.Type {
	case "message":
		return it.Role != "assistant"
	case "function_call_output", "custom_tool_call_output", "local_shell_call_output", "tool_search_output":
		return true
	}
	return false
}

// IsCall reports a tool call whose CallID an output answers.
func (it *Item) IsCall() bool {
	switch it.Type {
	case "function_call", "custom_tool_call", "local_shell_call":
		return true
	}
	return false
}

// IsCallOutput reports a tool output item.
func (it *Item) IsCallOutput() bool {
	switch it.Type {
	case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
		return true
	}
	return false
}

// KnownItem reports whether the package knows an item type: the types
// above and the ones it keeps only raw.
func KnownItem(t string) bool {
	switch t {
	case "message", "reasoning", "function_call", "function_call_output",
		"custom_tool_call", "custom_tool_call_output", "local_shell_call", "local_shell_call_output",
		"web_search_call", "tool_search_call", "tool_search_output", "image_generation_call",
		"compaction", "compaction_summary", "ghost_snapshot", "other":
		return true
	}
	return false
}

// Text joins the text of parts with newlines.
func Text(parts []Part) string {
	var b []byte
	n := 0
	for _, p := range parts {
		if p.Text == "" {
			continue
		}
		if n > 0 {
			b = append(b, '\n')
		}
		b = append(b, p.Text...)
		n++
	}
	return string(b)
}

// EventMsg is an event the agent persisted (a subset of Codex's
// EventMsg; see codex-rs/rollout/src/policy.rs).
type EventMsg struct {
	Type string `json:"type"`
	// Message is a user_message's, agent_message's or error's text; Phase
	// an agent_message's.
	Message string `json:"message"`
	Phase   string `json:"phase"`
	// Images are a user_message's image URLs (data: URLs included).
	Images []string `json:"images"`
	// Text is an agent_reasoning's.
	Text string `json:"text"`
	// Info (nil when null) and RateLimits are a token_count's.
	Info       *TokenInfo      `json:"info"`
	RateLimits json.RawMessage `json:"rate_limits"`
	TurnID     string          `json:"turn_id"`
	// CallID links exec_command_end, patch_apply_end, web_search_end and
	// mcp_tool_call_end to their call.
	CallID string `json:"call_id"`
	// LastAgentMessage is a task_complete's; Reason a turn_aborted's.
	LastAgentMessage string `json:"last_agent_message"`
	Reason           string `json:"reason"`
	// Item is an item_completed's item (nil for other events).
	Item *TurnItem `json:"-"`
}

// TurnItem is the item of an item_completed event (Codex's TurnItem,
// codex-rs/protocol/src/items.rs). Codex 0.169 persists one for every
// item of a turn; earlier versions only for Plan and Sleep items. An
// item whose fields below have other JSON types keeps only Type and ID.
type TurnItem struct {
	// Type is UserMessage, AgentMessage, Reasoning, CommandExecution,
	// FileChange, McpToolCall, WebSearch, Plan, … ID is the item's id:
	// for a call, its call_id.
	Type string `json:"type"`
	ID   string `json:"id"`
	// Content is a UserMessage's input (text, image with ImageURL,
	// local_image, skill) or an AgentMessage's text (type Text); Phase an
	// AgentMessage's.
	Content []Part `json:"content"`
	Phase   string `json:"phase"`
	// SummaryText and RawContent are a Reasoning's.
	SummaryText []string `json:"summary_text"`
	RawContent  []string `json:"raw_content"`
}

// ItemType returns the type of an item_completed's item, or "".
func (ev *EventMsg) ItemType() string {
	if ev.Type != "item_completed" || ev.Item == nil {
		return ""
	}
	return ev.Item.Type
}

// EndCallID returns the call an event says the end of: an *_end
// event's call_id (EndEvent), or the id of an item_completed's item of
// a call (CommandExecution, FileChange, McpToolCall, …: every type but
// the messages, reasoning and plans, whose ids are no call_ids); else "".
func (ev *EventMsg) EndCallID() string {
	switch {
	case EndEvent(ev.Type):
		return ev.CallID
	case ev.Type == "item_completed" && ev.Item != nil:
		switch ev.Item.Type {
		case "UserMessage", "AgentMessage", "Reasoning", "Plan", "HookPrompt", "ContextCompaction":
			return ""
		}
		return ev.Item.ID
	}
	return ""
}

// UsageRecord is a token_usage_record (Codex 0.169): written after a
// model response's output items, it names the response (the Responses
// API id) and its usage; TurnUsage and ThreadUsage are the running
// totals of the turn and of the thread.
type UsageRecord struct {
	ResponseID  string     `json:"response_id"`
	ThreadID    string     `json:"thread_id"`
	TurnID      string     `json:"turn_id"`
	Usage       TokenUsage `json:"usage"`
	TurnUsage   TokenUsage `json:"turn_token_usage"`
	ThreadUsage TokenUsage `json:"thread_token_usage"`
}

// KnownEvent reports whether the package knows an event_msg type.
func KnownEvent(t string) bool {
	switch t {
	case "user_message", "agent_message", "agent_reasoning", "agent_reasoning_raw_content",
		"agent_reasoning_section_break", "token_count", "task_started", "task_complete",
		"turn_aborted", "context_compacted", "exec_command_end", "patch_apply_end",
		"web_search_end", "mcp_tool_call_end", "view_image_tool_call", "entered_review_mode",
		"exited_review_mode", "thread_rolled_back", "undo_completed", "item_completed",
		"collab_agent_spawn_end", "collab_waiting_end", "error", "stream_error", "warning",
		"plan_update", "turn_diff", "thread_settings_applied":
		return true
	}
	return false
}

// TokenInfo is a token_count's info.
type TokenInfo struct {
	Total         TokenUsage `json:"total_token_usage"`
	Last          TokenUsage `json:"last_token_usage"`
	ContextWindow int64      `json:"model_context_window"`
}

// TokenUsage is Codex's token usage, with OpenAI semantics: Cached is
// part of Input, Reasoning part of Output, Total = Input + Output.
type TokenUsage struct {
	Input     int64 `json:"input_tokens"`
	Cached    int64 `json:"cached_input_tokens"`
	Output    int64 `json:"output_tokens"`
	Reasoning int64 `json:"reasoning_output_tokens"`
	Total     int64 `json:"total_tokens"`
}

// Compacted is a compaction: the summary message and the history the
// conversation continues from (kept raw: it re-embeds earlier items,
// images included).
type Compacted struct {
	Message            string          `json:"message"`
	ReplacementHistory json.RawMessage `json:"replacement_history"`
}

type envelope struct {
	Timestamp  string          `json:"timestamp"`
	Type       string          `json:"type"`
	Payload    json.RawMessage `json:"payload"`
	RecordType string          `json:"record_type"`
	ID         string          `json:"id"`
}

// ParseLine decodes one rollout line (without its line ending). The
// Line's raw fields alias b. It fails (ErrLine) only on a line that is
// not a JSON object or whose known payload has fields of the wrong
// types; a payload of an unknown type is kept raw.
func ParseLine(b []byte) (Line, error) {
	var l Line
	b = bytes.TrimSpace(b)
	if len(b) == 0 || b[0] != '{' {
		return l, fmt.Errorf("%w: not a JSON object", ErrLine)
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return l, fmt.Errorf("%w: %v", ErrLine, err)
	}
	l.Timestamp = env.Timestamp
	l.Time = parseTime(env.Timestamp)
	if env.Payload == nil || bytes.Equal(env.Payload, []byte("null")) {
		return parseLegacy(l, b, &env)
	}
	l.Type, l.Payload = env.Type, env.Payload
	var err error
	switch env.Type {
	case TypeSessionMeta:
		l.Meta = new(SessionMeta)
		err = l.Meta.decode(env.Payload)
	case TypeTurnContext:
		l.Turn = new(TurnContext)
		err = json.Unmarshal(env.Payload, l.Turn)
	case TypeResponseItem:
		l.Item = new(Item)
		err = l.Item.decode(env.Payload)
	case TypeEventMsg:
		l.Event = new(EventMsg)
		err = l.Event.decode(env.Payload)
	case TypeCompacted:
		l.Compacted = new(Compacted)
		err = json.Unmarshal(env.Payload, l.Compacted)
	case TypeTokenUsageRecord:
		l.Usage = new(UsageRecord)
		err = json.Unmarshal(env.Payload, l.Usage)
	}
	if err != nil {
		return Line{}, fmt.Errorf("%w: %s payload: %v", ErrLine, env.Type, err)
	}
	return l, nil
}

// parseLegacy decodes a pre-envelope line: the header, a state marker,
// or a bare response item.
func parseLegacy(l Line, b []byte, env *envelope) (Line, error) {
	l.Legacy, l.Payload = true, b
	switch {
	case env.RecordType != "":
		l.Type = TypeLegacyState
		if env.RecordType != "state" {
			l.Type = "legacy_" + env.RecordType
		}
	case env.Type == "" && env.ID != "":
		var h struct {
			ID           string `json:"id"`
			Timestamp    string `json:"timestamp"`
			Instructions string `json:"instructions"`
			Git          *Git   `json:"git"`
		}
		if err := json.Unmarshal(b, &h); err != nil {
			return Line{}, fmt.Errorf("%w: legacy header: %v", ErrLine, err)
		}
		l.Type = TypeLegacyHeader
		l.Meta = &SessionMeta{ID: h.ID, Timestamp: h.Timestamp, Instructions: h.Instructions, Git: h.Git}
	case KnownItem(env.Type):
		l.Type = TypeResponseItem
		l.Item = new(Item)
		if err := l.Item.decode(b); err != nil {
			return Line{}, fmt.Errorf("%w: legacy %s item: %v", ErrLine, env.Type, err)
		}
	default:
		l.Type = env.Type
	}
	return l, nil
}

func parseTime(s string) int64 {
	if s == "" {
		return 0
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return t.UnixNano()
}

func (m *SessionMeta) decode(b []byte) error {
	if err := json.Unmarshal(b, m); err != nil {
		return err
	}
	switch {
	case len(m.SourceRaw) > 0 && m.SourceRaw[0] == '"':
		if err := json.Unmarshal(m.SourceRaw, &m.Source); err != nil {
			return err
		}
	case len(m.SourceRaw) > 0 && m.SourceRaw[0] == '{':
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(m.SourceRaw, &obj); err != nil {
			return err
		}
		// The smallest key, "" included: a map's order is random, so
		// an empty key must not read as "none yet".
		first := true
		for k := range obj {
			if first || k < m.Source {
				m.Source, first = k, false
			}
		}
	}
	switch {
	case len(m.BaseRaw) > 0 && m.BaseRaw[0] == '"':
		return json.Unmarshal(m.BaseRaw, &m.Instructions)
	case len(m.BaseRaw) > 0 && m.BaseRaw[0] == '{':
		var bi struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(m.BaseRaw, &bi); err != nil {
			return err
		}
		m.Instructions = bi.Text
	}
	return nil
}

// decode decodes an event; an item_completed's item too (other events'
// "item", such as a raw_response_item's, is not read).
func (ev *EventMsg) decode(b []byte) error {
	type plain EventMsg
	var p struct {
		plain
		Item json.RawMessage `json:"item"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*ev = EventMsg(p.plain)
	if ev.Type != "item_completed" || len(p.Item) == 0 || bytes.Equal(p.Item, []byte("null")) {
		return nil
	}
	ev.Item = new(TurnItem)
	if err := json.Unmarshal(p.Item, ev.Item); err != nil {
		// An item of a shape this package does not know keeps its type
		// and id: the event stays what its type says.
		var id struct {
			Type string `json:"type"`
			ID   string `json:"id"`
		}
		if err := json.Unmarshal(p.Item, &id); err != nil {
			return fmt.Errorf("item: %w", err)
		}
		*ev.Item = TurnItem{Type: id.Type, ID: id.ID}
	}
	return nil
}

func (it *Item) decode(b []byte) error {
	type plain Item
	// The outer fields shadow plain's: content is a list or a string,
	// input text or JSON, output a string, a list or an object.
	var p struct {
		plain
		Content json.RawMessage `json:"content"`
		Input   json.RawMessage `json:"input"`
		Output  json.RawMessage `json:"output"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*it = Item(p.plain)
	aux := &p
	var err error
	if it.Type == "reasoning" {
		it.Reasoning, err = parts(aux.Content)
	} else {
		it.Content, err = parts(aux.Content)
	}
	if err != nil {
		return fmt.Errorf("content: %w", err)
	}
	if len(aux.Input) > 0 {
		if aux.Input[0] == '"' {
			if err := json.Unmarshal(aux.Input, &it.Input); err != nil {
				return err
			}
		} else if !bytes.Equal(aux.Input, []byte("null")) {
			it.Input = string(aux.Input)
		}
	}
	if len(aux.Output) > 0 && !bytes.Equal(aux.Output, []byte("null")) {
		it.Output = new(Output)
		if err := it.Output.decode(aux.Output); err != nil {
			return fmt.Errorf("output: %w", err)
		}
	}
	return nil
}

// parts decodes a content list; null, a missing list, or a string (one
// text part) are accepted.
func parts(b json.RawMessage) ([]Part, error) {
	if len(b) == 0 || bytes.Equal(b, []byte("null")) {
		return nil, nil
	}
	if b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, err
		}
		return []Part{{Type: "text", Text: s}}, nil
	}
	var ps []Part
	err := json.Unmarshal(b, &ps)
	return ps, err
}

func (o *Output) decode(b []byte) error {
	switch b[0] {
	case '"':
		return json.Unmarshal(b, &o.Text)
	case '[':
		ps, err := parts(b)
		if err != nil {
			return err
		}
		o.Content, o.Text = ps, Text(ps)
		return nil
	case '{':
		var obj struct {
			Content json.RawMessage `json:"content"`
			Success *bool           `json:"success"`
		}
		if err := json.Unmarshal(b, &obj); err != nil {
			return err
		}
		o.Success = obj.Success
		if len(obj.Content) == 0 {
			return nil
		}
		return o.decode(obj.Content)
	}
	// Numbers and booleans: keep their text.
	o.Text = string(b)
	return nil
}

// AppendLine appends the encoding of l to dst (without a line ending):
// the envelope with l's timestamp, type and raw payload, or a legacy
// line's bytes as read. ParseLine of the result equals l.
func AppendLine(dst []byte, l *Line) []byte {
	if l.Legacy {
		return append(dst, l.Payload...)
	}
	dst = append(dst, `{"timestamp":`...)
	dst = appendString(dst, l.Timestamp)
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, l.Type)
	dst = append(dst, `,"payload":`...)
	dst = append(dst, l.Payload...)
	return append(dst, '}')
}

func appendString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s)
	return append(dst, b...)
}

// uuidTail matches the session id at the end of a rollout file name.
var uuidTail = regexp.MustCompile(`([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.jsonl(\.zst)?$`)

// SessionID returns a rollout's session id: the id of its session_meta
// (or legacy header) first line, else the uuid at the end of its file
// name (rollout-<time>-<uuid>.jsonl[.zst]), else "".
func SessionID(path string, first Line) string {
	if first.Meta != nil && first.Meta.ID != "" {
		return first.Meta.ID
	}
	if m := uuidTail.FindStringSubmatch(filepath.Base(path)); m != nil {
		return m[1]
	}
	return ""
}
