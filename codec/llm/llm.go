package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// API names a provider wire protocol.
type API string

// The protocols this package decodes.
const (
	AnthropicMessages API = "anthropic-messages"
	OpenAIChat        API = "openai-chat"
	OpenAIResponses   API = "openai-responses"
	Gemini            API = "gemini"
)

// Detect returns the protocol of a request from its URL path, or "" when
// the path is not a model call this package decodes (for example
// /v1/messages/count_tokens or /v1/models).
func Detect(path string) API {
	if i := strings.IndexAny(path, "?#"); i >= 0 {
		path = path[:i]
	}
	path = strings.TrimRight(path, "/")
	switch {
	case strings.HasSuffix(path, "/messages") || path == "messages":
		return AnthropicMessages
	case strings.HasSuffix(path, "/chat/completions"):
		return OpenAIChat
	case strings.HasSuffix(path, "/responses"):
		return OpenAIResponses
	case strings.HasSuffix(path, ":generateContent"), strings.HasSuffix(path, ":streamGenerateContent"):
		return Gemini
	}
	return ""
}

// PartType is what one part of a message is.
type PartType string

// The part types.
const (
	PartText             PartType = "text"
	PartThinking         PartType = "thinking"          // Text, Signature
	PartRedactedThinking PartType = "redacted_thinking" // Data (opaque)
	PartToolCall         PartType = "tool_call"         // ID, Name, Input
	PartToolResult       PartType = "tool_result"       // ID (of the call), Name (Gemini), Text/Content, IsError
	PartServerToolCall   PartType = "server_tool_call"  // a tool the provider runs (web search): ID, Name, Input
	PartServerToolResult PartType = "server_tool_result"
	PartImage            PartType = "image"    // MediaType, Size, SHA256 or URL
	PartDocument         PartType = "document" // MediaType, Size, SHA256 or URL, Text for plain text sources
	PartRefusal          PartType = "refusal"  // Text
	PartCompaction       PartType = "compaction"
	PartOther            PartType = "other" // Raw holds the block as sent
)

// Part is one piece of a message.
type Part struct {
	Type PartType `json:"type"`
	// Text is the text of a text, thinking, refusal or compaction part, or
	// the text of a tool result (its text content joined by newlines).
	Text string `json:"text,omitempty"`
	// Signature is the provider's signature of a thinking part (Anthropic
	// signature, Gemini thoughtSignature; a Gemini signature on a text or
	// call part is kept on that part).
	Signature string `json:"signature,omitempty"`
	// Data is opaque provider data: redacted thinking, encrypted
	// reasoning or compaction content.
	Data string `json:"data,omitempty"`
	// ID is a tool call's id, or for a tool result the id of the call it
	// answers. Gemini calls may have none.
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	// Input is a tool call's arguments as compact JSON. When a stream was
	// cut inside the arguments, Input is empty, Partial is set and Text
	// holds the JSON text that arrived.
	Input   json.RawMessage `json:"input,omitempty"`
	IsError bool            `json:"is_error,omitempty"`
	// Content holds a tool result's parts when it has more than text
	// (images, documents); Text still holds its text.
	Content []Part `json:"content,omitempty"`
	// MediaType, Size (decoded bytes), SHA256 (hex, of the decoded bytes)
	// and URL describe an image or document; inline base64 data is not
	// copied (the WAL keeps it).
	MediaType string `json:"media_type,omitempty"`
	Size      int64  `json:"size,omitempty"`
	SHA256    string `json:"sha256,omitempty"`
	URL       string `json:"url,omitempty"`
	// TextBytes and TextSHA256 describe the whole text of a part whose
	// text was longer than a Decoder's TextLimit: Text then holds only
	// its first bytes, and the whole went to the Decoder's Spill, which
	// named it by TextSHA256 (hex). TrimSHA256 is TrimKey of the whole
	// text. All three are empty for a text held whole.
	TextBytes  int64  `json:"text_bytes,omitempty"`
	TextSHA256 string `json:"text_sha256,omitempty"`
	TrimSHA256 string `json:"-"`
	// Partial marks a part a stream did not finish (no stop event).
	Partial bool `json:"partial,omitempty"`
	// Raw is the block as sent, for PartOther and server tool results.
	Raw json.RawMessage `json:"raw,omitempty"`
}

// Message is one turn of the conversation.
type Message struct {
	// Role is "user", "assistant", "system" (a system or developer
	// message inside the conversation) or "tool" (OpenAI tool messages and
	// Responses function_call_output items).
	Role  string `json:"role"`
	Parts []Part `json:"parts"`
}

// Param is one request parameter, its value as compact JSON.
type Param struct {
	Name  string          `json:"name"`
	Value json.RawMessage `json:"value"`
}

// Request is a decoded model call request.
type Request struct {
	API   API    `json:"api"`
	Model string `json:"model,omitempty"`
	// System is the system prompt: Anthropic system (string or the text
	// of its blocks joined by "\n\n"), OpenAI leading system and developer
	// messages, Responses instructions, Gemini systemInstruction.
	System   string    `json:"system,omitempty"`
	Messages []Message `json:"messages"`
	// Tools are the names of the tools offered, in request order.
	Tools []string `json:"tools,omitempty"`
	// Params are the sampling and control parameters (max_tokens,
	// temperature, top_p, top_k, stop, thinking, reasoning, tool_choice,
	// service_tier, n, generationConfig fields, …), sorted by name; the
	// conversation, system prompt, tools, model, stream and metadata are
	// not params.
	Params []Param `json:"params,omitempty"`
	Stream bool    `json:"stream,omitempty"`
	// PreviousResponseID is set when a Responses request continues a
	// stored response: Messages then hold only the new input.
	PreviousResponseID string `json:"previous_response_id,omitempty"`
}

// Usage is the token usage of one model call, normalized (see the package
// comment). CacheCreation is the sum of its 5 minute and 1 hour parts
// when the provider reports them apart.
type Usage struct {
	Input           int64 `json:"input,omitempty"`
	Output          int64 `json:"output,omitempty"`
	CacheRead       int64 `json:"cache_read,omitempty"`
	CacheCreation   int64 `json:"cache_creation,omitempty"`
	CacheCreation5m int64 `json:"cache_creation_5m,omitempty"`
	CacheCreation1h int64 `json:"cache_creation_1h,omitempty"`
	Reasoning       int64 `json:"reasoning,omitempty"`
}

// IsZero reports whether no usage was reported.
func (u Usage) IsZero() bool { return u == Usage{} }

// Add adds v to u field by field.
func (u *Usage) Add(v Usage) {
	u.Input += v.Input
	u.Output += v.Output
	u.CacheRead += v.CacheRead
	u.CacheCreation += v.CacheCreation
	u.CacheCreation5m += v.CacheCreation5m
	u.CacheCreation1h += v.CacheCreation1h
	u.Reasoning += v.Reasoning
}

// APIError is an error the provider reported, in a JSON error body or an
// in-stream error event.
type APIError struct {
	Type    string `json:"type,omitempty"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message"`
}

// Response is a decoded model call response.
type Response struct {
	API   API    `json:"api"`
	ID    string `json:"id,omitempty"`
	Model string `json:"model,omitempty"`
	// Parts is the assistant output of the first choice or candidate, in
	// order.
	Parts []Part `json:"parts,omitempty"`
	// Choices holds the parts of further choices (OpenAI n>1, Gemini
	// candidateCount>1); Choices[0] is the second choice.
	Choices [][]Part `json:"choices,omitempty"`
	// StopReason is the provider's own stop or finish reason of the first
	// choice (end_turn, tool_use, max_tokens, refusal, stop, length,
	// tool_calls, completed, incomplete, STOP, …). StopDetails is the
	// provider's detail object, if any, as compact JSON.
	StopReason  string          `json:"stop_reason,omitempty"`
	StopDetails json.RawMessage `json:"stop_details,omitempty"`
	Usage       Usage           `json:"usage"`
	Error       *APIError       `json:"error,omitempty"`
	// Complete reports that the terminal event arrived (message_stop,
	// data: [DONE] or a chunk with a finish reason and usage,
	// response.completed/incomplete/failed, a Gemini finishReason) or that
	// the body was one whole JSON document.
	Complete bool `json:"complete"`
	// Stream reports an event stream (SSE or a Gemini JSON array), not
	// one JSON document; Events counts its events or chunks.
	Stream bool `json:"stream,omitempty"`
	Events int  `json:"events,omitempty"`
}

// ErrUnknownAPI reports an API value this package does not decode.
var ErrUnknownAPI = errors.New("llm: unknown API")

// DecodeRequest decodes a request body (JSON) of the given protocol. An
// error names what is wrong and, for JSON syntax errors, the byte offset.
func DecodeRequest(api API, body []byte) (*Request, error) {
	var (
		r   *Request
		err error
	)
	switch api {
	case AnthropicMessages:
		r, err = decodeAnthropicRequest(body, nil)
	case OpenAIChat:
		r, err = decodeChatRequest(body)
	case OpenAIResponses:
		r, err = decodeResponsesRequest(body)
	case Gemini:
		r, err = decodeGeminiRequest(body)
	default:
		return nil, fmt.Errorf("%w %q", ErrUnknownAPI, api)
	}
	if err != nil {
		return nil, fmt.Errorf("%s request: %w", api, err)
	}
	r.API = api
	return r, nil
}

// DecodeRequestWith is DecodeRequest bounded by opts: in an Anthropic
// Messages request, a message text (a string content or a text block)
// longer than opts.TextLimit is written to a Spill as it is unquoted and
// its Part keeps the first TextLimit bytes, as a Decoder does for a
// response. Other protocols decode as DecodeRequest does.
func DecodeRequestWith(api API, body []byte, opts *DecoderOptions) (*Request, error) {
	if api != AnthropicMessages || opts == nil || opts.TextLimit <= 0 || opts.NewSpill == nil {
		return DecodeRequest(api, body)
	}
	r, err := decodeAnthropicRequest(body, &textCfg{limit: opts.TextLimit, newSpill: opts.NewSpill})
	if err != nil {
		return nil, fmt.Errorf("%s request: %w", api, err)
	}
	r.API = api
	return r, nil
}

// DecodeResponse decodes a response body of the given protocol, whatever
// its status: an SSE stream, a JSON document (a success or an error
// body), or for Gemini a JSON array of chunks. A stream cut short decodes
// as far as it goes. An error is returned only when nothing in the body
// can be read as the protocol's format; it names the byte offset or the
// event number.
func DecodeResponse(api API, body []byte) (*Response, error) {
	var (
		r   *Response
		err error
	)
	switch api {
	case AnthropicMessages:
		r, err = decodeAnthropicResponse(body)
	case OpenAIChat:
		r, err = decodeChatResponse(body)
	case OpenAIResponses:
		r, err = decodeResponsesResponse(body)
	case Gemini:
		r, err = decodeGeminiResponse(body)
	default:
		return nil, fmt.Errorf("%w %q", ErrUnknownAPI, api)
	}
	if err != nil {
		return nil, fmt.Errorf("%s response: %w", api, err)
	}
	r.API = api
	return r, nil
}

// IsJSON reports whether body, after leading whitespace, starts a JSON
// object or array (rather than an event stream).
func IsJSON(body []byte) bool {
	b := bytes.TrimLeft(body, " \t\r\n")
	return len(b) > 0 && (b[0] == '{' || b[0] == '[')
}

// ConversationField returns the top-level member of a request body of
// api that holds the conversation as a JSON array (Anthropic messages,
// OpenAI Chat messages, Responses input, Gemini contents), or "".
func ConversationField(api API) string {
	switch api {
	case AnthropicMessages, OpenAIChat:
		return "messages"
	case OpenAIResponses:
		return "input"
	case Gemini:
		return "contents"
	}
	return ""
}

// ElementParts decodes one element of an OpenAI Chat request's messages
// or a Responses request's input array on its own: the role and parts it
// adds to the conversation, as DecodeRequest reads them in place (before
// a Responses request's consecutive assistant items are grouped into one
// message, and before leading system messages become the system prompt).
// skip reports a null element, which adds nothing. ok is false for other
// protocols, whose elements are one Message each.
func ElementParts(api API, raw []byte) (role string, parts []Part, skip, ok bool) {
	switch api {
	case OpenAIChat:
		if isNull(raw) {
			return "", nil, true, true
		}
		m := chatRequestMessage(raw)
		return m.Role, m.Parts, false, true
	case OpenAIResponses:
		if isNull(raw) {
			return "", nil, true, true
		}
		role, parts := responsesItemParts(raw)
		return role, parts, false, true
	}
	return "", nil, false, false
}
