package schema

import (
	"encoding/json"

	"github.com/bbengine/bbengine/codec/llm"
)

// BuilderVersion names the canonicalizer's rules. Open rebuilds the
// derived state when the stored version differs, so a change to what the
// canonicalizer emits must change it.
const BuilderVersion = "canon/10"

// SchemaVersion is the version of the Pebble key layout. Version 2
// keeps a conversation's known item keys in chunks of their own
// (ConvoKnownKey); a store of version 1, which holds them inline, is
// read as it is and marked 2 when opened, while a build that knows only
// version 1 rebuilds a store of version 2 rather than misread it.
const SchemaVersion = 2

// ReadsSchema reports whether this build reads a store whose key layout
// is version v.
func ReadsSchema(v uint32) bool { return v == 1 || v == SchemaVersion }

// Usage is the normalized token usage of a model call (see codec/llm).
type Usage = llm.Usage

// Kind is what a canonical event is.
type Kind string

// The kinds of canonical event.
const (
	// KindSystem carries the system prompt of a thread, the first time
	// and whenever it changes (Text).
	KindSystem Kind = "system"
	// KindMessage is a user or assistant message: Role, Text (its text
	// parts joined by newlines) and Parts (its other parts: images,
	// documents, refusals, provider-specific blocks).
	KindMessage Kind = "message"
	// KindThinking is model thinking: Text, Signature; Data holds
	// redacted or encrypted thinking.
	KindThinking Kind = "thinking"
	// KindToolCall is a tool call: Tool (ID, Name, Args as JSON); Server
	// marks a tool the provider ran itself (web search).
	KindToolCall Kind = "tool_call"
	// KindToolResult is a tool's result, linked to its call by Tool.ID:
	// Text (its text), Parts (other content), Tool.IsError.
	KindToolResult Kind = "tool_result"
	// KindUsage is the token usage of one model call.
	KindUsage Kind = "usage"
	// KindModelCall describes one model call: Call.
	KindModelCall Kind = "model_call"
	// KindError is a failure: an HTTP error status, an error event in a
	// stream, or the proxy's record of a failed exchange (Error).
	KindError Kind = "error"
	// KindInterruption is a model call whose response stopped before its
	// end (the client went away, the upstream reset): Text says why; the
	// partial output precedes it, marked Partial.
	KindInterruption Kind = "interruption"
	// KindRewrite records a history rewrite (Rewrite): the request did
	// not extend the conversation the engine knew.
	KindRewrite Kind = "rewrite"
	// KindRecord is a record of an imported log with no timeline meaning
	// of its own (a file-history snapshot, hook progress, a title, a
	// record type the importer does not know), kept verbatim: Record.
	KindRecord Kind = "record"
)

// Event is one entry of a session's canonical timeline.
type Event struct {
	Seq  uint64 `json:"seq"`
	Kind Kind   `json:"kind"`
	// Time is the WAL time (unix ns) of the request start for what the
	// request brought, and of the response end for the model's output.
	Time int64 `json:"time_ns"`
	// Thread is the conversation thread within the session; 1 is the
	// first (see the package comment).
	Thread int    `json:"thread"`
	Task   string `json:"task,omitempty"`
	Run    string `json:"run,omitempty"`
	// Role is user, assistant, system or tool for messages.
	Role string `json:"role,omitempty"`
	Text string `json:"text,omitempty"`
	// TextBytes and TextBlob are set when the text was longer than
	// Options.TextLimit: Text then holds only its first TextLimit bytes
	// (cut at a character boundary), and the whole text, TextBytes long,
	// is the blob TextBlob (hex SHA-256) in the data directory's blob
	// store (see Blobs).
	TextBytes int64      `json:"text_bytes,omitempty"`
	TextBlob  string     `json:"text_blob,omitempty"`
	Signature string     `json:"signature,omitempty"`
	Data      string     `json:"data,omitempty"`
	Parts     []llm.Part `json:"parts,omitempty"`
	Tool      *Tool      `json:"tool,omitempty"`
	Usage     *Usage     `json:"usage,omitempty"`
	Call      *Call      `json:"call,omitempty"`
	Error     *Error     `json:"error,omitempty"`
	Rewrite   *Rewrite   `json:"rewrite,omitempty"`
	// Partial marks output a stream did not finish.
	Partial bool `json:"partial,omitempty"`
	// UUID is the id the source gave the record the event came from
	// (Claude Code's uuid), for imported events.
	UUID string `json:"uuid,omitempty"`
	// Meta marks a user message that is not a prompt a person typed:
	// "meta" (context the agent injected: CLAUDE.md, hook output, skill
	// bodies), "compact_summary" (the summary a compaction starts from),
	// "developer" (Codex developer and environment context).
	Meta string `json:"meta,omitempty"`
	// Record is the kept record of a KindRecord event.
	Record *Record `json:"record,omitempty"`
	// Extra is source data with no field of its own, kept as the source
	// wrote it: Claude Code's toolUseResult on a tool result, Codex's
	// exec_command_end on a tool result, ATIF step fields an ATIF export
	// needs to reproduce the document. A JSON object.
	Extra json.RawMessage `json:"extra,omitempty"`
	// Prov says where the event came from.
	Prov Provenance `json:"prov"`
	// Also is the same fact as the other side of a merged session
	// recorded it (a proxied and an imported session of one agent
	// session, see Merged). It is set only in the merged view a reader
	// composes, never stored with a side's events.
	Also []Counterpart `json:"also,omitempty"`
}

// Counterpart is an event of one side of a merged session that the
// merged view shows as part of another event.
type Counterpart struct {
	// Session is the side's own session id, Seq the event's seq there
	// (show --raw reads it).
	Session string     `json:"session"`
	Seq     uint64     `json:"seq"`
	Time    int64      `json:"time_ns"`
	UUID    string     `json:"uuid,omitempty"`
	Prov    Provenance `json:"prov"`
}

// Tool identifies a tool call or result.
type Tool struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name,omitempty"`
	Args json.RawMessage `json:"args,omitempty"`
	// IsError marks a result the tool reported as an error.
	IsError bool `json:"is_error,omitempty"`
	// Server marks a tool the provider ran (web search, code execution).
	Server bool `json:"server,omitempty"`
	// SyntheticID is set when the provider sent no id and the engine
	// made one ("<name>#<exchange>.<n>") to link a Gemini call and result.
	SyntheticID bool `json:"synthetic_id,omitempty"`
}

// Call describes one model call.
type Call struct {
	API      llm.API     `json:"api,omitempty"`
	Provider string      `json:"provider,omitempty"`
	Model    string      `json:"model,omitempty"`  // as requested
	Served   string      `json:"served,omitempty"` // as the response named it, when different
	Params   []llm.Param `json:"params,omitempty"`
	Stream   bool        `json:"stream,omitempty"`
	Status   int         `json:"status"`
	// Latency is request arrival to the last response byte; TTFB to the
	// response headers (nanoseconds).
	Latency    int64  `json:"latency_ns"`
	TTFB       int64  `json:"ttfb_ns"`
	StopReason string `json:"stop_reason,omitempty"`
	ResponseID string `json:"response_id,omitempty"`
	// UpstreamID is the provider's own id of the request, from the
	// response's Request-Id (Anthropic) or X-Request-Id (OpenAI)
	// header: what Claude Code logs as requestId. Recorded calls only.
	UpstreamID string `json:"upstream_id,omitempty"`
	Complete   bool   `json:"complete"`
	// Messages is the number of messages the request carried.
	Messages int `json:"messages"`
}

// Error is a failure recorded in an error event.
type Error struct {
	// Stage is "upstream" (an HTTP error status or an error event from
	// the provider) or the proxy's stage of a failed exchange (request,
	// response, client, record).
	Stage   string `json:"stage"`
	Status  int    `json:"status,omitempty"`
	Type    string `json:"type,omitempty"`
	Message string `json:"message"`
}

// Rewrite describes a request that did not extend the known conversation.
type Rewrite struct {
	// Kind is "retry" (the history re-sent without its last output),
	// "drop" (the history without its last output, and new messages
	// after it: the output was interrupted or failed), "fork" (the history diverges inside: an edit, a branch; the new
	// branch is Event.Thread) or "compaction" (the conversation starts
	// over with a summary of its earlier output).
	Kind string `json:"kind"`
	// From is the thread rewritten; Kept is how many of its messages the
	// request kept, Dropped how many it left out.
	From    int `json:"from"`
	Kept    int `json:"kept"`
	Dropped int `json:"dropped"`
}

// Provenance points from an event back to the WAL.
type Provenance struct {
	Exchange  uint64 `json:"exchange"`
	RequestID string `json:"request_id,omitempty"`
	// Side is "request" or "response": which frames of the exchange the
	// event came from; or "import" for an event derived from import
	// frames. First and Last are the WAL offsets of the first and last
	// of those frames.
	Side  string `json:"side"`
	First uint64 `json:"first"`
	Last  uint64 `json:"last"`
	// File and Line locate the first source record of an imported event
	// in the agent's own log.
	File string `json:"file,omitempty"`
	Line int64  `json:"line,omitempty"`
}

// Record is an imported record kept verbatim.
type Record struct {
	// Type is the record's type, with its subtype when it has one
	// ("system/turn_duration", "progress/bash_progress",
	// "attachment/hook_success").
	Type string `json:"type"`
	// Known is set when the importer knows the type.
	Known bool `json:"known,omitempty"`
	// Raw is the record as the source wrote it.
	Raw json.RawMessage `json:"raw"`
}

// Agent is a subagent of a session: a thread of its own.
type Agent struct {
	Thread int    `json:"thread"`
	ID     string `json:"id,omitempty"`
	Type   string `json:"type,omitempty"`
	// Description is what the agent was asked to do; Call the id of the
	// tool call that started it, when known.
	Description string `json:"description,omitempty"`
	Call        string `json:"call,omitempty"`
}

// ImportInfo describes an imported session's sources.
type ImportInfo struct {
	// Source is the importer (claude, codex, atif).
	Source string `json:"source"`
	// Files are the source files, Records the records read from them,
	// Errors the records that did not parse (skipped), Unknown the
	// records of a type the importer does not know (kept).
	Files   []string `json:"files"`
	Records int64    `json:"records"`
	Errors  int64    `json:"errors"`
	Unknown int64    `json:"unknown"`
}

// Session is the summary of one session.
type Session struct {
	ID      string `json:"id"`
	Ordinal uint64 `json:"ordinal"`
	// Agent is the client family (claude-code, codex, gemini-cli, …)
	// and Client its first User-Agent product ("claude-cli/2.1.330").
	Agent  string `json:"agent,omitempty"`
	Client string `json:"client,omitempty"`
	// Source says where the session id came from (see
	// codec/exchange.RequestStart.SessionSource).
	Source   string `json:"source,omitempty"`
	First    int64  `json:"first_ns"`
	Last     int64  `json:"last_ns"`
	Requests int    `json:"requests"`
	Errors   int    `json:"errors"`
	// Events is the number of canonical events; their seqs are 1..Events.
	Events  uint64       `json:"events"`
	Threads int          `json:"threads"`
	Usage   Usage        `json:"usage"`
	Models  []ModelUsage `json:"models,omitempty"`
	Tasks   []Task       `json:"tasks,omitempty"`
	Runs    []string     `json:"runs,omitempty"`
	// Title, CWD, Branch and Version (the agent's version) are what an
	// imported log says about the session.
	Title   string `json:"title,omitempty"`
	CWD     string `json:"cwd,omitempty"`
	Branch  string `json:"branch,omitempty"`
	Version string `json:"version,omitempty"`
	// Agents are the session's subagents.
	Agents []Agent `json:"agents,omitempty"`
	// Import is set on a session derived from an agent's own log.
	Import *ImportInfo `json:"import,omitempty"`
	// Merged is set on the summary of a merged session: a proxied
	// session and the imported log of the same agent session, read as
	// one timeline.
	Merged *Merged `json:"merged,omitempty"`
}

// Merged describes a merged session: its members and how their events
// paired.
type Merged struct {
	// Members are every id of the group, the canonical (live) one first,
	// then the imported one.
	Members []string `json:"members"`
	// Paired counts pairs of events (one fact both sides recorded),
	// LiveOnly live events without a partner, LogOnly imported events
	// without one (records included), Unpaired events of paired model
	// calls left without a partner, Ambiguous keys that named two
	// imported calls and were ignored.
	Paired    int64 `json:"paired"`
	LiveOnly  int64 `json:"live_only"`
	LogOnly   int64 `json:"log_only"`
	Unpaired  int64 `json:"unpaired"`
	Ambiguous int64 `json:"ambiguous"`
}

// ModelUsage is one model's share of a session.
type ModelUsage struct {
	Model    string `json:"model"`
	Requests int    `json:"requests"`
	Usage    Usage  `json:"usage"`
}

// Task is one task of a session.
type Task struct {
	ID       string `json:"id"`
	Requests int    `json:"requests"`
	First    int64  `json:"first_ns"`
	Last     int64  `json:"last_ns"`
	FirstSeq uint64 `json:"first_seq"`
	LastSeq  uint64 `json:"last_seq"`
}

// Exchange is the index entry of one recorded exchange.
type Exchange struct {
	ID        uint64  `json:"id"`
	RequestID string  `json:"request_id,omitempty"`
	Session   string  `json:"session,omitempty"`
	Task      string  `json:"task,omitempty"`
	Run       string  `json:"run,omitempty"`
	Provider  string  `json:"provider,omitempty"`
	API       llm.API `json:"api,omitempty"`
	Method    string  `json:"method,omitempty"`
	Path      string  `json:"path,omitempty"`
	Model     string  `json:"model,omitempty"`
	Status    int     `json:"status"`
	Complete  bool    `json:"complete"`
	Time      int64   `json:"time_ns"`
	TTFB      int64   `json:"ttfb_ns"`
	Duration  int64   `json:"duration_ns"`
	Usage     Usage   `json:"usage"`
	Thread    int     `json:"thread,omitempty"`
	FirstSeq  uint64  `json:"first_seq,omitempty"`
	LastSeq   uint64  `json:"last_seq,omitempty"`
	// Offsets are the WAL offsets of every frame of the exchange, in log
	// order.
	Offsets []uint64 `json:"offsets"`
	// Note says why the exchange produced no events or fewer than it
	// might: "not a model call", a decode error, "abandoned" (no end frame
	// within the staleness window of WAL time).
	Note string `json:"note,omitempty"`
}
