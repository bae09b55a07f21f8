package claude

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// ErrLine reports a line that is not a JSON object.
var ErrLine = errors.New("claude: line is not a JSON object")

// Record is one decoded line of a Claude Code log. Its JSON encoding
// (MarshalJSON) is the subset of the line it decoded, and parses back to
// an equal Record.
type Record struct {
	// Type is the line's discriminator: user, assistant, system, summary,
	// progress, attachment, file-history-snapshot, queue-operation,
	// permission-mode, last-prompt, custom-title, …; Subtype the system
	// line's subtype.
	Type    string `json:"type"`
	Subtype string `json:"subtype,omitzero"`
	// UUID is the line's id; ParentUUID its predecessor (empty for a
	// root); LogicalParentUUID the predecessor across a compaction.
	UUID              string `json:"uuid,omitzero"`
	ParentUUID        string `json:"parentUuid,omitzero"`
	LogicalParentUUID string `json:"logicalParentUuid,omitzero"`
	// IsSidechain marks a subagent's line.
	IsSidechain bool   `json:"isSidechain,omitzero"`
	SessionID   string `json:"sessionId,omitzero"`
	AgentID     string `json:"agentId,omitzero"`
	Version     string `json:"version,omitzero"`
	CWD         string `json:"cwd,omitzero"`
	GitBranch   string `json:"gitBranch,omitzero"`
	Slug        string `json:"slug,omitzero"`
	// Timestamp is as written (ISO 8601, UTC, milliseconds).
	Timestamp string `json:"timestamp,omitzero"`
	RequestID string `json:"requestId,omitzero"`
	// IsMeta marks injected context; IsCompactSummary the summary a
	// compaction continues from; IsAPIErrorMessage an assistant line the
	// client wrote for a failed API call.
	IsMeta            bool `json:"isMeta,omitzero"`
	IsCompactSummary  bool `json:"isCompactSummary,omitzero"`
	IsAPIErrorMessage bool `json:"isApiErrorMessage,omitzero"`
	// ToolUseResult is the structured result of a tool, on a user line
	// that carries a tool_result (an object, or a string for errors).
	ToolUseResult           jsontext.Value `json:"toolUseResult,omitzero"`
	SourceToolAssistantUUID string         `json:"sourceToolAssistantUUID,omitzero"`
	PromptID                string         `json:"promptId,omitzero"`
	// ToolUseID and ParentToolUseID are on progress and legacy hook
	// system lines.
	ToolUseID       string   `json:"toolUseID,omitzero"`
	ParentToolUseID string   `json:"parentToolUseID,omitzero"`
	Message         *Message `json:"message,omitzero"`
	// Summary and LeafUUID are a summary line's title and the leaf it
	// names.
	Summary         string         `json:"summary,omitzero"`
	LeafUUID        string         `json:"leafUuid,omitzero"`
	CompactMetadata jsontext.Value `json:"compactMetadata,omitzero"`
	// Attachment is an attachment line's attachment (its type only); Data
	// a progress line's data (its type and the subagent it reports).
	Attachment *Typed `json:"attachment,omitzero"`
	Data       *Typed `json:"data,omitzero"`
	// Operation is a queue-operation's operation; Content the content of
	// a queue-operation or a system line (a string or blocks).
	Operation   string         `json:"operation,omitzero"`
	Content     jsontext.Value `json:"content,omitzero"`
	Level       string         `json:"level,omitzero"`
	CustomTitle string         `json:"customTitle,omitzero"`
}

// Typed is a nested object of which only the type (and a subagent id) is
// decoded.
type Typed struct {
	Type    string `json:"type"`
	AgentID string `json:"agentId,omitzero"`
}

// Message is the message of a user or assistant line.
type Message struct {
	ID         string  `json:"id,omitzero"`
	Model      string  `json:"model,omitzero"`
	Role       string  `json:"role,omitzero"`
	Content    Content `json:"content,omitzero"`
	StopReason string  `json:"stop_reason,omitzero"`
	Usage      *Usage  `json:"usage,omitzero"`
}

// Usage is an assistant line's token usage, as the API reported it:
// InputTokens excludes cache reads and writes.
type Usage struct {
	InputTokens              int64          `json:"input_tokens,omitzero"`
	OutputTokens             int64          `json:"output_tokens,omitzero"`
	CacheCreationInputTokens int64          `json:"cache_creation_input_tokens,omitzero"`
	CacheReadInputTokens     int64          `json:"cache_read_input_tokens,omitzero"`
	CacheCreation            *CacheCreation `json:"cache_creation,omitzero"`
	ServiceTier              string         `json:"service_tier,omitzero"`
}

// CacheCreation splits cache writes by lifetime.
type CacheCreation struct {
	Ephemeral5m int64 `json:"ephemeral_5m_input_tokens,omitzero"`
	Ephemeral1h int64 `json:"ephemeral_1h_input_tokens,omitzero"`
}

// Content is a message's content: a string (Text), or a list of blocks
// (List set, Blocks).
type Content struct {
	Text   string
	List   bool
	Blocks []Block
}

// UnmarshalJSONFrom decodes a string or a block list; null is empty;
// any other value is one block of a list.
func (c *Content) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	*c = Content{}
	switch dec.PeekKind() {
	case '"':
		return json.UnmarshalDecode(dec, &c.Text)
	case '[':
		c.List = true
		return json.UnmarshalDecode(dec, &c.Blocks)
	case 'n':
		_, err := dec.ReadToken()
		return err
	}
	var blk Block
	if err := json.UnmarshalDecode(dec, &blk); err != nil {
		return err
	}
	c.List, c.Blocks = true, []Block{blk}
	return nil
}

// MarshalJSONTo encodes a string or a block list.
func (c *Content) MarshalJSONTo(enc *jsontext.Encoder) error {
	if !c.List {
		return enc.WriteToken(jsontext.String(c.Text))
	}
	if c.Blocks == nil {
		return enc.WriteValue(jsontext.Value("[]"))
	}
	return json.MarshalEncode(enc, c.Blocks)
}

// Block is one content block. Text is a text block's text; Thinking and
// Signature a thinking block's; Data a redacted_thinking block's; ID,
// Name, Input a tool_use (or server_tool_use) block's; ToolUseID,
// Content, IsError a tool_result's; Source an image's or document's;
// ToolName a tool_reference's. A block of a type not listed here keeps
// its JSON in Raw.
type Block struct {
	Type      string         `json:"type"`
	Text      string         `json:"text,omitzero"`
	Thinking  string         `json:"thinking,omitzero"`
	Signature string         `json:"signature,omitzero"`
	Data      string         `json:"data,omitzero"`
	ID        string         `json:"id,omitzero"`
	Name      string         `json:"name,omitzero"`
	Input     jsontext.Value `json:"input,omitzero"`
	ToolUseID string         `json:"tool_use_id,omitzero"`
	Content   *Content       `json:"content,omitzero"`
	IsError   bool           `json:"is_error,omitzero"`
	Source    jsontext.Value `json:"source,omitzero"`
	ToolName  string         `json:"tool_name,omitzero"`
	Raw       jsontext.Value `json:"-"`
}

// knownBlock reports whether Block decodes blocks of type t.
func knownBlock(t string) bool {
	switch t {
	case "text", "thinking", "redacted_thinking", "tool_use", "server_tool_use",
		"tool_result", "image", "document", "tool_reference":
		return true
	}
	return false
}

type block Block

// UnmarshalJSONFrom decodes a block; a block of an unknown type also
// keeps its JSON in Raw.
func (b *Block) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	v, err := dec.ReadValue()
	if err != nil {
		return err
	}
	*b = Block{}
	if err := json.Unmarshal(v, (*block)(b), options); err != nil {
		return err
	}
	if !knownBlock(b.Type) {
		b.Raw = bytes.Clone(v)
	}
	return nil
}

// MarshalJSONTo encodes a block: the raw JSON of an unknown type, the
// decoded fields otherwise.
func (b *Block) MarshalJSONTo(enc *jsontext.Encoder) error {
	if len(b.Raw) > 0 {
		return enc.WriteValue(b.Raw)
	}
	return json.MarshalEncode(enc, (*block)(b))
}

// options are the decoding options: Claude Code writes what JavaScript's
// JSON.stringify writes, which may hold lone surrogates.
var options = json.JoinOptions(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))

// ErrShape reports a line that is a JSON object but holds a field of
// another kind than Claude Code writes (a number where a string belongs).
// ParseLine then returns the Record's Type (and nothing else) with it.
var ErrShape = errors.New("claude: unexpected field kind")

// ParseLine decodes one line (without its line ending). A line that is
// not a JSON object is an error wrapping ErrLine, naming the byte offset
// of a syntax error; one whose fields do not have the kinds Claude Code
// writes an error wrapping ErrShape.
func ParseLine(b []byte) (Record, error) {
	var r Record
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 || b[0] != '{' {
		return r, ErrLine
	}
	err := json.Unmarshal(b, &r, options)
	if err == nil {
		return r, nil
	}
	var se *jsontext.SyntacticError
	if errors.As(err, &se) || !jsontext.Value(b).IsValid(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true)) {
		return Record{}, fmt.Errorf("%w: %v", ErrLine, err)
	}
	var t struct {
		Type string `json:"type"`
	}
	json.Unmarshal(b, &t, options) // a type that is not a string stays empty
	return Record{Type: t.Type}, fmt.Errorf("%w: %v", ErrShape, err)
}

// MarshalJSON encodes what the Record decoded.
func (r Record) MarshalJSON() ([]byte, error) {
	type plain Record
	return json.Marshal(plain(r), options)
}

// Kind is the record's type with its subtype: "system/compact_boundary",
// "progress/bash_progress", "attachment/hook_success", "user".
func (r *Record) Kind() string {
	switch {
	case r.Subtype != "":
		return r.Type + "/" + r.Subtype
	case r.Type == "progress" && r.Data != nil && r.Data.Type != "":
		return r.Type + "/" + r.Data.Type
	case r.Type == "attachment" && r.Attachment != nil && r.Attachment.Type != "":
		return r.Type + "/" + r.Attachment.Type
	}
	return r.Type
}

// SessionID names the session a file belongs to: the sessionId of its
// first record that has one (subagent files carry their parent's), else
// the file's stem (a file of summary lines only, an empty file).
func SessionID(path string, first Record) string {
	if first.SessionID != "" {
		return first.SessionID
	}
	base := filepath.Base(path)
	for _, ext := range []string{".zst", ".jsonl", ".json"} {
		base = strings.TrimSuffix(base, ext)
	}
	return base
}

// Types lists the line types this package knows; a line of any other
// type is an unknown record, kept verbatim.
var Types = map[string]bool{
	"user": true, "assistant": true, "system": true, "summary": true,
	"file-history-snapshot": true, "queue-operation": true, "progress": true,
	"attachment": true, "permission-mode": true, "last-prompt": true,
	"custom-title": true, "ai-title": true, "agent-name": true, "agent-setting": true,
	"mode": true, "pr-link": true, "bridge-session": true, "atis-latch": true,
	"frame-link": true, "tag": true,
}

// Synthetic reports an assistant line the client wrote itself rather than
// the API (model "<synthetic>": an API error, an aborted request): an
// error, not a model response.
func (r *Record) Synthetic() bool {
	return r.Type == "assistant" && (r.IsAPIErrorMessage || r.Message != nil && r.Message.Model == "<synthetic>")
}

// ResponseKey is the key of the model response an assistant line belongs
// to: message.id and requestId; "" when the line has no message id (it
// is a response of its own).
func (r *Record) ResponseKey() string {
	if r.Message == nil || r.Message.ID == "" {
		return ""
	}
	return r.Message.ID + "\x00" + r.RequestID
}

// UserKind says what a user line is: "prompt" (a message a person typed:
// not isMeta, not isCompactSummary, its content a string or with a block
// other than tool_result and no tool_result), "meta" (a message that is
// not a prompt: isMeta, isCompactSummary, or non-result blocks beside a
// tool_result), "results" (tool results only) or "" (no content: kept as
// a record).
func (r *Record) UserKind() string {
	m := r.Message
	if r.Type != "user" || m == nil {
		return ""
	}
	var results, other bool
	if !m.Content.List {
		other = true
	}
	for i := range m.Content.Blocks {
		if m.Content.Blocks[i].Type == "tool_result" {
			results = true
		} else {
			other = true
		}
	}
	switch {
	case !other && results:
		return "results"
	case !other:
		return ""
	case r.IsMeta || r.IsCompactSummary || results:
		return "meta"
	}
	return "prompt"
}

// Interrupted reports a user prompt that records an interruption
// ("[Request interrupted by user]", "… for tool use]").
func (r *Record) Interrupted() bool {
	m := r.Message
	if m == nil {
		return false
	}
	if !m.Content.List {
		return strings.HasPrefix(m.Content.Text, "[Request interrupted by user")
	}
	for i := range m.Content.Blocks {
		if b := &m.Content.Blocks[i]; b.Type == "text" && strings.HasPrefix(b.Text, "[Request interrupted by user") {
			return true
		}
	}
	return false
}
