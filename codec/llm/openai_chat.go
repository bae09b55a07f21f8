package llm

// OpenAI Chat Completions (POST /v1/chat/completions), and the many
// "OpenAI-compatible" servers that speak it.
//
// A request is {model, messages, tools, stream, …}. Leading system and
// developer messages become Request.System (their texts joined by
// "\n\n"); later ones stay in the conversation as Role "system". A tool
// message becomes Role "tool" with one PartToolResult; the legacy
// function role is read the same way. Every other top-level field but
// model, messages, tools, functions, stream, stream_options, metadata and
// user is a Param.
//
// A streamed response is SSE with data lines only, ended by data: [DONE]:
//
//	data: {"id":…,"model":…,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}
//	data: {"id":…,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_…","function":{"name":"f","arguments":""}}]}}]}
//	data: {"id":…,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}}]}}]}
//	data: {"id":…,"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}
//	data: {"id":…,"choices":[],"usage":{"prompt_tokens":…,"completion_tokens":…}}
//	data: [DONE]
//
// Each choice collects at most one thinking part (reasoning_content, or
// reasoning, an extension of OpenAI-compatible servers), one text part,
// one refusal part and one part per tool call, in the order each first
// appeared, as the non-streamed message has one field of each. Tool calls
// are assembled by their index; a delta without an index continues the
// call with the same id, or the last call when it has no id either.
// Logprobs are not kept.
//
// The stream is Complete when data: [DONE] arrived, or, for servers that
// do not send it, when every choice has a finish reason and a usage chunk
// arrived. Without stream_options.include_usage such a server's stream
// cannot be told from one cut after the last finish reason, and decodes
// as incomplete. In a stream that is not complete, the last part of each
// choice without a finish reason is Partial; an earlier tool call is not,
// since a call ends when the next one begins.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
)

// chatRequest is the part of a request decoded into fields; the rest is
// read as params.
type chatRequest struct {
	Model     oaiText           `json:"model"`
	Messages  []rawJSON         `json:"messages"`
	Tools     []json.RawMessage `json:"tools"`
	Functions []json.RawMessage `json:"functions"`
	Stream    bool              `json:"stream"`
}

// chatMessage is a message of a request, or the message of a
// non-streamed response's choice.
type chatMessage struct {
	Role             oaiText         `json:"role"`
	Name             oaiText         `json:"name"`
	Content          json.RawMessage `json:"content"`
	Refusal          oaiText         `json:"refusal"`
	ReasoningContent oaiText         `json:"reasoning_content"`
	Reasoning        oaiText         `json:"reasoning"`
	ToolCalls        []chatToolCall  `json:"tool_calls"`
	ToolCallID       oaiText         `json:"tool_call_id"`
	FunctionCall     *chatFunction   `json:"function_call"`
	Audio            *chatAudio      `json:"audio"`
}

// chatToolCall is a tool call of a message or a delta. In a delta, Index
// says which call the fragment belongs to.
type chatToolCall struct {
	Index    *int         `json:"index"`
	ID       oaiText      `json:"id"`
	Type     oaiText      `json:"type"`
	Function chatFunction `json:"function"`
	Custom   *struct {
		Name  oaiText `json:"name"`
		Input oaiText `json:"input"`
	} `json:"custom"`
}

// chatFunction is a function call: the function of a tool call, or a
// legacy function_call.
type chatFunction struct {
	Name      oaiText `json:"name"`
	Arguments oaiArgs `json:"arguments"`
}

// chatAudio is the audio of an assistant message; its base64 data is
// neither decoded nor kept.
type chatAudio struct {
	ID         oaiText `json:"id"`
	Transcript oaiText `json:"transcript"`
}

// chatUsage is the usage of a response or of a stream's usage chunk.
type chatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// usage normalizes: prompt_tokens already counts cached tokens and
// completion_tokens reasoning tokens.
func (u *chatUsage) usage() Usage {
	v := Usage{Input: u.PromptTokens, Output: u.CompletionTokens}
	if d := u.PromptTokensDetails; d != nil {
		v.CacheRead = d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		v.Reasoning = d.ReasoningTokens
	}
	return v
}

func decodeChatRequest(body []byte) (*Request, error) {
	var cr chatRequest
	fields, err := oaiDecodeObject(body, &cr)
	if err != nil {
		return nil, err
	}
	r := &Request{
		Model:  string(cr.Model),
		Stream: cr.Stream,
		Tools:  oaiToolNames(append(slices.Clip(cr.Tools), cr.Functions...)),
		Params: oaiParams(fields, "model", "messages", "tools", "functions", "stream", "stream_options", "metadata", "user"),
	}
	var msgs []Message
	for _, raw := range cr.Messages {
		if !isNull(raw) {
			msgs = append(msgs, chatRequestMessage(raw))
		}
	}
	var system []string
	system, r.Messages = oaiLeadingSystem(nil, msgs)
	r.System = strings.Join(system, "\n\n")
	return r, nil
}

// chatRequestMessage decodes one message of a request. A message that is
// not of the expected shape is kept whole as a PartOther.
func chatRequestMessage(raw []byte) Message {
	var m chatMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		var probe struct {
			Role oaiText `json:"role"`
		}
		_ = json.Unmarshal(raw, &probe) // The role is a best effort.
		return Message{Role: chatRole(string(probe.Role)), Parts: []Part{{Type: PartOther, Raw: compactJSON(raw)}}}
	}
	switch role := chatRole(string(m.Role)); role {
	case "assistant":
		return Message{Role: role, Parts: chatAssistantParts(&m)}
	case "tool":
		id := string(m.ToolCallID)
		res := oaiToolResult(id, oaiContent(m.Content))
		if m.Role == "function" {
			res.Name = string(m.Name)
		}
		return Message{Role: role, Parts: []Part{res}}
	default:
		return Message{Role: role, Parts: oaiContent(m.Content)}
	}
}

// chatRole maps a Chat role to a Message role: developer is a system
// message, the legacy function role a tool message, and a missing role a
// user message.
func chatRole(role string) string {
	switch role {
	case "system", "developer":
		return "system"
	case "tool", "function":
		return "tool"
	case "":
		return "user"
	}
	return role
}

// chatAssistantParts returns the parts of an assistant message in the
// order a stream delivers them: reasoning, content, refusal, tool calls.
func chatAssistantParts(m *chatMessage) []Part {
	var parts []Part
	if t := chatReasoning(m.ReasoningContent, m.Reasoning); t != "" {
		parts = append(parts, Part{Type: PartThinking, Text: t})
	}
	parts = append(parts, oaiContent(m.Content)...)
	if m.Refusal != "" {
		parts = append(parts, Part{Type: PartRefusal, Text: string(m.Refusal)})
	}
	if a := m.Audio; a != nil {
		parts = append(parts, chatAudioPart(string(a.ID), string(a.Transcript)))
	}
	for _, tc := range m.ToolCalls {
		if tc.Custom != nil {
			parts = append(parts, Part{Type: PartToolCall, ID: string(tc.ID), Name: string(tc.Custom.Name), Text: string(tc.Custom.Input)})
			continue
		}
		parts = append(parts, oaiToolCall(string(tc.ID), string(tc.Function.Name), string(tc.Function.Arguments)))
	}
	if f := m.FunctionCall; f != nil {
		parts = append(parts, oaiToolCall("", string(f.Name), string(f.Arguments)))
	}
	return parts
}

// chatReasoning returns reasoning_content, or else reasoning: servers
// that send both send the same text twice.
func chatReasoning(content, reasoning oaiText) string {
	if content != "" {
		return string(content)
	}
	return string(reasoning)
}

// chatAudioPart keeps an audio reply as a PartOther holding its id and
// transcript; the audio bytes stay in the WAL.
func chatAudioPart(id, transcript string) Part {
	raw, _ := json.Marshal(struct {
		Type       string `json:"type"`
		ID         string `json:"id,omitempty"`
		Transcript string `json:"transcript,omitempty"`
	}{"audio", id, transcript})
	return Part{Type: PartOther, Raw: raw}
}

func decodeChatResponse(body []byte) (*Response, error) {
	if IsJSON(body) {
		return decodeChatJSON(body)
	}
	return decodeChatStream(body)
}

// chatCompletion is a non-streamed response, or an error body.
type chatCompletion struct {
	ID      oaiText             `json:"id"`
	Model   oaiText             `json:"model"`
	Choices []chatChoiceMessage `json:"choices"`
	Usage   *chatUsage          `json:"usage"`
	Error   json.RawMessage     `json:"error"`
}

// chatChoiceMessage is one choice of a non-streamed response.
type chatChoiceMessage struct {
	Index        int         `json:"index"`
	Message      chatMessage `json:"message"`
	FinishReason oaiText     `json:"finish_reason"`
}

func decodeChatJSON(body []byte) (*Response, error) {
	var c chatCompletion
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, oaiJSONError(err, 0)
	}
	r := &Response{ID: string(c.ID), Model: string(c.Model), Error: oaiAPIError(c.Error), Complete: true}
	if c.Usage != nil {
		r.Usage = c.Usage.usage()
	}
	slices.SortStableFunc(c.Choices, func(a, b chatChoiceMessage) int { return cmp.Compare(a.Index, b.Index) })
	for i := range c.Choices {
		ch := &c.Choices[i]
		switch parts := chatAssistantParts(&ch.Message); {
		case ch.Index == 0 && r.Parts == nil:
			r.Parts, r.StopReason = parts, string(ch.FinishReason)
		case ch.Index > 0:
			r.Choices = append(r.Choices, parts)
		}
	}
	return r, nil
}

// chatChunk is one streamed chunk, or an in-stream error.
type chatChunk struct {
	ID      oaiText `json:"id"`
	Model   oaiText `json:"model"`
	Choices []struct {
		Index        int       `json:"index"`
		Delta        chatDelta `json:"delta"`
		FinishReason oaiText   `json:"finish_reason"`
	} `json:"choices"`
	Usage *chatUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// chatDelta is what one chunk adds to one choice.
type chatDelta struct {
	Content          oaiText        `json:"content"`
	Refusal          oaiText        `json:"refusal"`
	ReasoningContent oaiText        `json:"reasoning_content"`
	Reasoning        oaiText        `json:"reasoning"`
	ToolCalls        []chatToolCall `json:"tool_calls"`
	FunctionCall     *chatFunction  `json:"function_call"`
	Audio            *chatAudio     `json:"audio"`
}

// chatChoice accumulates one choice of a stream.
type chatChoice struct {
	index    int
	cfg      *textCfg
	slots    []chatSlot // parts in order of first appearance
	started  map[PartType]bool
	text     textBuf
	thinking textBuf
	refusal  strings.Builder
	audioID  string
	audio    strings.Builder // transcript
	calls    []*chatCall
	byKey    map[int]*chatCall
	byID     map[string]*chatCall
	nextKey  int // one more than the largest call key
	finish   string
}

// chatSlot is one part of a choice: a kind, and for a tool call its
// position in calls.
type chatSlot struct {
	kind PartType
	call int
}

// chatCall accumulates one streamed tool call.
type chatCall struct {
	key    int // the delta index, or one given to a call without
	id     string
	name   string
	custom bool
	args   textBuf
}

// start adds a slot for a part of the kind unless it has one.
func (c *chatChoice) start(kind PartType) {
	if c.started[kind] {
		return
	}
	if c.started == nil {
		c.started = map[PartType]bool{}
	}
	c.started[kind] = true
	c.slots = append(c.slots, chatSlot{kind: kind})
}

// add appends s to the part of the kind, starting that part if s is the
// first non-empty text of its kind.
func (c *chatChoice) add(kind PartType, b io.StringWriter, s string) {
	if s == "" {
		return
	}
	c.start(kind)
	b.WriteString(s)
}

func (c *chatChoice) apply(d *chatDelta) {
	c.add(PartThinking, &c.thinking, chatReasoning(d.ReasoningContent, d.Reasoning))
	c.add(PartText, &c.text, string(d.Content))
	c.add(PartRefusal, &c.refusal, string(d.Refusal))
	if a := d.Audio; a != nil {
		c.start(PartOther)
		if c.audioID == "" {
			c.audioID = string(a.ID)
		}
		c.audio.WriteString(string(a.Transcript))
	}
	for i := range d.ToolCalls {
		tc := &d.ToolCalls[i]
		call := c.call(tc.Index, string(tc.ID))
		if call.id == "" && tc.ID != "" {
			call.id = string(tc.ID)
			c.byID[call.id] = call
		}
		if tc.Custom != nil {
			call.custom = true
			if call.name == "" {
				call.name = string(tc.Custom.Name)
			}
			call.args.WriteString(string(tc.Custom.Input))
			continue
		}
		if call.name == "" {
			call.name = string(tc.Function.Name)
		}
		call.args.WriteString(string(tc.Function.Arguments))
	}
	if f := d.FunctionCall; f != nil {
		call := c.call(nil, "")
		if call.name == "" {
			call.name = string(f.Name)
		}
		call.args.WriteString(string(f.Arguments))
	}
}

// call returns the tool call a delta fragment belongs to, starting a new
// one when needed: by index when the fragment has one (unless it names
// another id than that call's: some servers give every call index 0),
// else by id, else the last call.
func (c *chatChoice) call(index *int, id string) *chatCall {
	var key int
	switch {
	case index != nil:
		key = *index
		if k := c.byKey[key]; k != nil && (id == "" || k.id == "" || k.id == id) {
			return k
		}
	case id != "":
		if k := c.byID[id]; k != nil {
			return k
		}
		key = c.nextKey
	case len(c.calls) > 0:
		return c.calls[len(c.calls)-1]
	default:
		key = c.nextKey
	}
	k := &chatCall{key: key, args: textBuf{cfg: c.cfg}}
	if c.byKey == nil {
		c.byKey, c.byID = map[int]*chatCall{}, map[string]*chatCall{}
	}
	c.byKey[key] = k
	c.nextKey = max(c.nextKey, key+1)
	if id != "" {
		c.byID[id] = k
	}
	c.slots = append(c.slots, chatSlot{kind: PartToolCall, call: len(c.calls)})
	c.calls = append(c.calls, k)
	return k
}

// parts returns the choice's parts; unfinished marks the last one
// Partial. An error is a spilled text that could not be kept.
func (c *chatChoice) parts(unfinished bool) ([]Part, error) {
	parts := make([]Part, 0, len(c.slots))
	var errs []error
	for i, s := range c.slots {
		partial := unfinished && i == len(c.slots)-1
		var p Part
		switch s.kind {
		case PartThinking:
			p = Part{Type: PartThinking}
			errs = append(errs, c.thinking.fill(&p))
		case PartText:
			p = Part{Type: PartText}
			errs = append(errs, c.text.fill(&p))
		case PartRefusal:
			p = Part{Type: PartRefusal, Text: c.refusal.String()}
		case PartOther:
			p = chatAudioPart(c.audioID, c.audio.String())
		case PartToolCall:
			k := c.calls[s.call]
			switch {
			case k.custom || partial || k.args.spilled():
				p = Part{Type: PartToolCall, ID: k.id, Name: k.name}
				errs = append(errs, k.args.fill(&p))
			default:
				p = oaiToolCall(k.id, k.name, k.args.String())
			}
		}
		p.Partial = partial
		parts = append(parts, p)
	}
	return parts, errors.Join(errs...)
}

// chatStream is the state of a chat completions stream being decoded.
type chatStream struct {
	r         *Response
	cfg       *textCfg
	choices   []*chatChoice
	done      bool
	usageSeen bool
	decoded   int
	firstErr  error
	body      []byte // the whole body, when decoding one (for error offsets)
}

func newChatStream(cfg *textCfg) *chatStream {
	return &chatStream{r: &Response{Stream: true}, cfg: cfg}
}

func (s *chatStream) spills() []*textBuf {
	var out []*textBuf
	for _, c := range s.choices {
		out = append(out, &c.text, &c.thinking)
		for _, k := range c.calls {
			out = append(out, &k.args)
		}
	}
	return out
}

func (s *chatStream) take(ev Event) {
	r := s.r
	r.Events++
	data := bytes.TrimSpace(ev.Data)
	if string(data) == "[DONE]" {
		s.done = true
		s.decoded++
		return
	}
	var c chatChunk
	if err := json.Unmarshal(data, &c); err != nil {
		if s.firstErr == nil {
			s.firstErr = oaiEventError(r.Events, ev, s.body, data, err)
		}
		return
	}
	s.decoded++
	if r.ID == "" {
		r.ID = string(c.ID)
	}
	if r.Model == "" {
		r.Model = string(c.Model)
	}
	if e := oaiAPIError(c.Error); e != nil {
		r.Error = e
	}
	if c.Usage != nil {
		s.usageSeen = true
		r.Usage = c.Usage.usage()
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index < 0 {
			continue
		}
		j, found := slices.BinarySearchFunc(s.choices, ch.Index, func(c *chatChoice, idx int) int { return cmp.Compare(c.index, idx) })
		if !found {
			s.choices = slices.Insert(s.choices, j, &chatChoice{index: ch.Index, cfg: s.cfg, text: textBuf{cfg: s.cfg}, thinking: textBuf{cfg: s.cfg}})
		}
		st := s.choices[j]
		st.apply(&ch.Delta)
		if ch.FinishReason != "" {
			st.finish = string(ch.FinishReason)
		}
	}
}

func (s *chatStream) end(int64) (*Response, error) {
	r := s.r
	if s.decoded == 0 {
		return nil, oaiStreamError(r.Events, s.firstErr)
	}
	finished := len(s.choices) > 0 && !slices.ContainsFunc(s.choices, func(c *chatChoice) bool { return c.finish == "" })
	r.Complete = s.done || (finished && s.usageSeen)
	var errs []error
	for _, c := range s.choices {
		parts, err := c.parts(!r.Complete && c.finish == "")
		errs = append(errs, err)
		if c.index == 0 {
			r.Parts, r.StopReason = parts, c.finish
		} else {
			r.Choices = append(r.Choices, parts)
		}
	}
	return r, errors.Join(errs...)
}

func decodeChatStream(body []byte) (*Response, error) {
	s := newChatStream(nil)
	s.body = body
	Events(body, func(ev Event) bool { s.take(ev); return true })
	return s.end(int64(len(body)))
}
