package llm

// OpenAI Responses (POST /v1/responses).
//
// A request is {model, instructions, input, tools, previous_response_id,
// …}. input is a string (one user message) or a list of items, grouped
// into Messages thus:
//
//	message (role user|system|developer)       its own Message; leading
//	                                           system and developer items
//	                                           join Request.System after
//	                                           instructions
//	message (role assistant), reasoning,       one assistant Message while
//	function_call, custom_tool_call,           they follow one another
//	local_shell_call, shell_call,
//	computer_call, apply_patch_call,
//	web_search_call, compaction, other *_call
//	function_call_output and every other       one Role "tool" Message each
//	*_call_output
//	anything else                              its own Message, role from
//	                                           the item or "user", PartOther
//
// reasoning becomes a PartThinking whose Text is its summary texts joined
// by "\n\n" (or, without a summary, its reasoning_text content) and whose
// Data is encrypted_content. Client-run built-in tools (local_shell,
// shell, computer, apply_patch) are PartToolCall named after the tool,
// Input their action (apply_patch: operation); web_search_call is a
// PartServerToolCall. Every other top-level field but model, input,
// instructions, tools, previous_response_id, stream, stream_options,
// metadata and user is a Param.
//
// A streamed response is SSE; the event type is read from the JSON type
// field (the event: line, which some servers and test fixtures omit, is
// only a fallback). Items are keyed by output_index and built from
// output_item.added and the delta events; output_item.done replaces what
// the deltas built with the finished item. The terminal event
// (response.completed, response.incomplete or response.failed) carries
// the final response: its output, when not empty, is preferred to the
// streamed items; its status is the StopReason and its
// incomplete_details the StopDetails. The stream is Complete when a
// terminal event arrived. A data: [DONE] line, which Responses servers do
// not send but some recordings have, is ignored.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"strings"
)

// responsesRequest is the part of a request decoded into fields; the
// rest is read as params.
type responsesRequest struct {
	Model              oaiText           `json:"model"`
	Instructions       json.RawMessage   `json:"instructions"`
	Input              json.RawMessage   `json:"input"`
	Tools              []json.RawMessage `json:"tools"`
	Stream             bool              `json:"stream"`
	PreviousResponseID oaiText           `json:"previous_response_id"`
}

// responsesItem is an input or output item. Every field tolerates a
// wrong JSON type, so any object decodes.
type responsesItem struct {
	Type             oaiText         `json:"type"`
	ID               oaiText         `json:"id"`
	Role             oaiText         `json:"role"`
	Content          json.RawMessage `json:"content"`
	CallID           oaiText         `json:"call_id"`
	Name             oaiText         `json:"name"`
	Arguments        oaiArgs         `json:"arguments"`
	Input            oaiArgs         `json:"input"`
	Output           json.RawMessage `json:"output"`
	Summary          json.RawMessage `json:"summary"`
	EncryptedContent oaiText         `json:"encrypted_content"`
	Action           json.RawMessage `json:"action"`
	Operation        json.RawMessage `json:"operation"`
}

// callID returns the item's call_id, or its id for the items (a
// local_shell_call relayed through Chat) that have only that.
func (it *responsesItem) callID() string {
	if it.CallID != "" {
		return string(it.CallID)
	}
	return string(it.ID)
}

func decodeResponsesRequest(body []byte) (*Request, error) {
	var rr responsesRequest
	fields, err := oaiDecodeObject(body, &rr)
	if err != nil {
		return nil, err
	}
	r := &Request{
		Model:              string(rr.Model),
		Stream:             rr.Stream,
		PreviousResponseID: string(rr.PreviousResponseID),
		Tools:              oaiToolNames(rr.Tools),
		Params: oaiParams(fields, "model", "input", "instructions", "tools", "previous_response_id",
			"stream", "stream_options", "metadata", "user"),
	}
	var system []string
	for _, m := range responsesMessages(rr.Instructions) {
		if t := oaiTexts(m.Parts, "\n\n"); t != "" {
			system = append(system, t)
		}
	}
	system, r.Messages = oaiLeadingSystem(system, responsesMessages(rr.Input))
	r.System = strings.Join(system, "\n\n")
	return r, nil
}

// responsesMessages groups an input (a string, a list of items, or one
// item) into Messages; see the file comment. A string is one user
// message; null is none.
func responsesMessages(raw json.RawMessage) []Message {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return nil
	}
	var items []json.RawMessage
	switch t[0] {
	case '"':
		return []Message{{Role: "user", Parts: oaiContent(t)}}
	case '[':
		if json.Unmarshal(t, &items) != nil {
			items = []json.RawMessage{t}
		}
	default:
		items = []json.RawMessage{t}
	}
	var (
		msgs      []Message
		assistant = -1 // index in msgs of the open assistant message
	)
	for _, it := range items {
		if isNull(it) {
			continue
		}
		role, parts := responsesItemParts(it)
		if role == "assistant" {
			if assistant < 0 {
				assistant = len(msgs)
				msgs = append(msgs, Message{Role: "assistant"})
			}
			msgs[assistant].Parts = append(msgs[assistant].Parts, parts...)
			continue
		}
		assistant = -1
		msgs = append(msgs, Message{Role: role, Parts: parts})
	}
	return msgs
}

// responsesRole maps an item's role to a Message role.
func responsesRole(role oaiText) string {
	switch role {
	case "", "user":
		return "user"
	case "system", "developer":
		return "system"
	}
	return string(role)
}

// responsesClientCalls are the built-in tools the client runs, and the
// field of their call item that holds the input.
var responsesClientCalls = map[string]string{
	"local_shell_call": "action",
	"shell_call":       "action",
	"computer_call":    "action",
	"apply_patch_call": "operation",
}

// responsesItemParts returns the role an item speaks in ("assistant" for
// model output, "tool" for tool output) and its parts.
func responsesItemParts(raw json.RawMessage) (string, []Part) {
	var it responsesItem
	if err := json.Unmarshal(raw, &it); err != nil {
		return "user", []Part{{Type: PartOther, Raw: compactJSON(raw)}}
	}
	typ := string(it.Type)
	if typ == "" && it.Role != "" {
		typ = "message"
	}
	switch typ {
	case "message":
		return responsesRole(it.Role), oaiContent(it.Content)
	case "reasoning":
		return "assistant", []Part{responsesReasoning(&it, nil)}
	case "function_call":
		return "assistant", []Part{oaiToolCall(it.callID(), string(it.Name), string(it.Arguments))}
	case "custom_tool_call":
		return "assistant", []Part{{Type: PartToolCall, ID: it.callID(), Name: string(it.Name), Text: string(it.Input)}}
	case "web_search_call":
		return "assistant", []Part{{Type: PartServerToolCall, ID: string(it.ID), Name: "web_search", Input: compactJSON(it.Action)}}
	case "compaction", "compaction_summary":
		return "assistant", []Part{{Type: PartCompaction, Data: string(it.EncryptedContent)}}
	}
	if field, ok := responsesClientCalls[typ]; ok {
		in := it.Action
		if field == "operation" {
			in = it.Operation
		}
		return "assistant", []Part{{Type: PartToolCall, ID: it.callID(), Name: strings.TrimSuffix(typ, "_call"), Input: compactJSON(in)}}
	}
	other := []Part{{Type: PartOther, Raw: compactJSON(raw)}}
	switch {
	case strings.HasSuffix(typ, "_call_output"):
		return "tool", []Part{responsesOutput(&it)}
	case strings.HasSuffix(typ, "_call"), typ == "mcp_list_tools", typ == "mcp_approval_request":
		return "assistant", other
	}
	return responsesRole(it.Role), other
}

// responsesReasoning returns the thinking part of a reasoning item. When
// texts is not nil it holds the item's streamed text and replaces the
// item's summary and content.
func responsesReasoning(it *responsesItem, texts []string) Part {
	if texts == nil {
		texts = []string{oaiTexts(oaiContent(it.Summary), "\n\n")}
		if texts[0] == "" {
			texts[0] = oaiTexts(oaiContent(it.Content), "\n\n")
		}
	}
	return Part{Type: PartThinking, Text: strings.Join(texts, "\n\n"), Data: string(it.EncryptedContent)}
}

// responsesOutput returns the tool result of a *_call_output item. The
// output is a string, a list of content parts, a {content, success}
// object (what Codex sends for a failed call), or one content part.
func responsesOutput(it *responsesItem) Part {
	id := it.callID()
	out := bytes.TrimSpace(it.Output)
	if len(out) == 0 || out[0] != '{' {
		return oaiToolResult(id, oaiContent(out))
	}
	var legacy struct {
		Content *oaiText `json:"content"`
		Success *bool    `json:"success"`
	}
	if json.Unmarshal(out, &legacy) == nil && legacy.Content != nil {
		p := Part{Type: PartToolResult, ID: id, Text: string(*legacy.Content)}
		p.IsError = legacy.Success != nil && !*legacy.Success
		return p
	}
	c, _ := oaiPart(out)
	if c.Type == PartOther {
		return Part{Type: PartToolResult, ID: id, Text: string(c.Raw)}
	}
	return oaiToolResult(id, []Part{c})
}

func decodeResponsesResponse(body []byte) (*Response, error) {
	if IsJSON(body) {
		var o responsesObject
		if err := json.Unmarshal(body, &o); err != nil {
			return nil, oaiJSONError(err, 0)
		}
		r := &Response{Complete: true}
		o.apply(r)
		r.StopReason = string(o.Status)
		for _, it := range o.Output {
			_, parts := responsesItemParts(it)
			r.Parts = append(r.Parts, parts...)
		}
		return r, nil
	}
	return decodeResponsesStream(body)
}

// responsesObject is a Response object (a JSON body, or the response of a
// response.* event), or an error body.
type responsesObject struct {
	ID                oaiText           `json:"id"`
	Model             oaiText           `json:"model"`
	Status            oaiText           `json:"status"`
	Output            []json.RawMessage `json:"output"`
	Usage             *responsesUsage   `json:"usage"`
	IncompleteDetails json.RawMessage   `json:"incomplete_details"`
	Error             json.RawMessage   `json:"error"`
}

// responsesUsage is the usage of a Response object.
type responsesUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	OutputTokens       int64 `json:"output_tokens"`
	InputTokensDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
}

// apply copies what o says about the response as a whole into r: id,
// model, usage (input_tokens counts cached tokens, output_tokens
// reasoning tokens), error and incomplete_details.
func (o *responsesObject) apply(r *Response) {
	if o.ID != "" {
		r.ID = string(o.ID)
	}
	if o.Model != "" {
		r.Model = string(o.Model)
	}
	if u := o.Usage; u != nil {
		r.Usage = Usage{Input: u.InputTokens, Output: u.OutputTokens}
		if d := u.InputTokensDetails; d != nil {
			r.Usage.CacheRead = d.CachedTokens
		}
		if d := u.OutputTokensDetails; d != nil {
			r.Usage.Reasoning = d.ReasoningTokens
		}
	}
	if e := oaiAPIError(o.Error); e != nil {
		r.Error = e
	}
	if !isNull(o.IncompleteDetails) {
		r.StopDetails = compactJSON(o.IncompleteDetails)
	}
}

// responsesEvent is one streamed event; which fields it has depends on
// its type.
type responsesEvent struct {
	Type         oaiText          `json:"type"`
	OutputIndex  *int             `json:"output_index"`
	ContentIndex int              `json:"content_index"`
	SummaryIndex int              `json:"summary_index"`
	ItemID       oaiText          `json:"item_id"`
	Item         json.RawMessage  `json:"item"`
	Part         *responsesPart   `json:"part"`
	Delta        oaiText          `json:"delta"`
	Text         *oaiText         `json:"text"`
	Refusal      *oaiText         `json:"refusal"`
	Arguments    *oaiText         `json:"arguments"`
	Input        *oaiText         `json:"input"`
	Response     *responsesObject `json:"response"`
	Error        json.RawMessage  `json:"error"`
	Code         json.RawMessage  `json:"code"`
	Message      oaiText          `json:"message"`
}

// responsesPart is the part of a content_part or summary_part event.
type responsesPart struct {
	Type    oaiText `json:"type"`
	Text    oaiText `json:"text"`
	Refusal oaiText `json:"refusal"`
}

// responsesAcc accumulates one output item of a stream.
type responsesAcc struct {
	index   int
	item    responsesItem
	raw     json.RawMessage
	done    bool // output_item.done arrived: item and raw are final
	content []*responsesSub
	summary []*responsesSub
	args    responsesSub // function call arguments or custom tool input
}

// responsesSub accumulates one content part or summary part of an item.
type responsesSub struct {
	index int
	typ   string
	text  strings.Builder
	done  bool
}

// set replaces the accumulated text with the final text.
func (s *responsesSub) set(text string) {
	s.text.Reset()
	s.text.WriteString(text)
	s.done = true
}

// responsesSubAt returns the part with the index, adding it in order.
func responsesSubAt(list *[]*responsesSub, index int) *responsesSub {
	i, found := slices.BinarySearchFunc(*list, index, func(s *responsesSub, idx int) int { return cmp.Compare(s.index, idx) })
	if !found {
		*list = slices.Insert(*list, i, &responsesSub{index: index})
	}
	return (*list)[i]
}

// parts returns the item's parts. unfinished marks Partial what the
// stream did not finish.
func (a *responsesAcc) parts(unfinished bool) []Part {
	if a.done {
		_, parts := responsesItemParts(a.raw)
		return parts
	}
	it := &a.item
	switch it.Type {
	case "message":
		var parts []Part
		for _, s := range a.content {
			p := Part{Type: PartText, Text: s.text.String(), Partial: unfinished && !s.done}
			if s.typ == "refusal" {
				p.Type = PartRefusal
			}
			if p.Text != "" || p.Partial {
				parts = append(parts, p)
			}
		}
		return parts
	case "reasoning":
		subs := a.summary
		if len(subs) == 0 {
			subs = a.content
		}
		texts := []string{}
		for _, s := range subs {
			texts = append(texts, s.text.String())
		}
		p := responsesReasoning(it, texts)
		p.Partial = unfinished
		return []Part{p}
	case "function_call", "custom_tool_call":
		args := a.args.text.String()
		if it.Type == "function_call" && !(unfinished && !a.args.done) {
			return []Part{oaiToolCall(it.callID(), string(it.Name), args)}
		}
		return []Part{{Type: PartToolCall, ID: it.callID(), Name: string(it.Name), Text: args, Partial: unfinished && !a.args.done}}
	}
	_, parts := responsesItemParts(a.raw)
	if unfinished && len(parts) > 0 {
		parts[len(parts)-1].Partial = true
	}
	return parts
}

// responsesStream is the state of a stream being decoded.
type responsesStream struct {
	r        *Response
	items    []*responsesAcc // by output_index
	final    *responsesObject
	terminal string // the terminal event's type
	decoded  int
	firstErr error
	body     []byte // the whole body, when decoding one (for error offsets)
}

// acc returns the item an event is about: by output_index, else by
// item_id; nil when neither names one. add starts an item at the index.
func (s *responsesStream) acc(ev *responsesEvent, add bool) *responsesAcc {
	if ev.OutputIndex == nil {
		for _, a := range s.items {
			if ev.ItemID != "" && a.item.ID == ev.ItemID {
				return a
			}
		}
		return nil
	}
	idx := *ev.OutputIndex
	i, found := slices.BinarySearchFunc(s.items, idx, func(a *responsesAcc, idx int) int { return cmp.Compare(a.index, idx) })
	if found {
		return s.items[i]
	}
	if !add {
		return nil
	}
	a := &responsesAcc{index: idx}
	s.items = slices.Insert(s.items, i, a)
	return a
}

// setItem records an item snapshot from output_item.added or .done.
func (a *responsesAcc) setItem(raw json.RawMessage, done bool) {
	if a.done || isNull(raw) {
		return
	}
	var it responsesItem
	if json.Unmarshal(raw, &it) != nil {
		it = responsesItem{}
	}
	a.item, a.raw, a.done = it, raw, done
}

func (s *responsesStream) event(typ string, ev *responsesEvent) {
	if o := ev.Response; o != nil {
		o.apply(s.r)
	}
	switch typ {
	case "response.completed", "response.incomplete", "response.failed":
		s.terminal = typ
		s.final = ev.Response
		return
	case "error":
		if e := oaiAPIError(ev.Error); e != nil {
			s.r.Error = e
		} else {
			s.r.Error = &APIError{Code: oaiCode(ev.Code), Message: string(ev.Message)}
		}
		return
	case "response.output_item.added", "response.output_item.done":
		if a := s.acc(ev, true); a != nil {
			a.setItem(ev.Item, typ == "response.output_item.done")
		}
		return
	}
	a := s.acc(ev, false)
	if a == nil {
		return
	}
	switch typ {
	case "response.content_part.added", "response.content_part.done":
		c := responsesSubAt(&a.content, ev.ContentIndex)
		if p := ev.Part; p != nil {
			c.typ = string(p.Type)
			if typ == "response.content_part.done" {
				c.set(string(p.Text) + string(p.Refusal))
			}
		}
	case "response.output_text.delta", "response.refusal.delta", "response.reasoning_text.delta":
		c := responsesSubAt(&a.content, ev.ContentIndex)
		if c.typ == "" {
			c.typ = strings.TrimSuffix(strings.TrimPrefix(typ, "response."), ".delta")
		}
		c.text.WriteString(string(ev.Delta))
	case "response.output_text.done", "response.reasoning_text.done":
		if ev.Text != nil {
			responsesSubAt(&a.content, ev.ContentIndex).set(string(*ev.Text))
		}
	case "response.refusal.done":
		if ev.Refusal != nil {
			responsesSubAt(&a.content, ev.ContentIndex).set(string(*ev.Refusal))
		}
	case "response.reasoning_summary_part.added":
		responsesSubAt(&a.summary, ev.SummaryIndex)
	case "response.reasoning_summary_text.delta":
		responsesSubAt(&a.summary, ev.SummaryIndex).text.WriteString(string(ev.Delta))
	case "response.reasoning_summary_text.done":
		if ev.Text != nil {
			responsesSubAt(&a.summary, ev.SummaryIndex).set(string(*ev.Text))
		}
	case "response.reasoning_summary_part.done":
		if p := ev.Part; p != nil {
			responsesSubAt(&a.summary, ev.SummaryIndex).set(string(p.Text))
		}
	case "response.function_call_arguments.delta", "response.custom_tool_call_input.delta":
		a.args.text.WriteString(string(ev.Delta))
	case "response.function_call_arguments.done":
		if ev.Arguments != nil {
			a.args.set(string(*ev.Arguments))
		}
	case "response.custom_tool_call_input.done":
		if ev.Input != nil {
			a.args.set(string(*ev.Input))
		}
	}
}

func decodeResponsesStream(body []byte) (*Response, error) {
	s := newResponsesStream()
	s.body = body
	Events(body, func(ev Event) bool { s.take(ev); return true })
	return s.end(int64(len(body)))
}

func newResponsesStream() *responsesStream {
	return &responsesStream{r: &Response{Stream: true}}
}

// spills returns nothing: Responses texts are held whole.
func (s *responsesStream) spills() []*textBuf { return nil }

func (s *responsesStream) take(ev Event) {
	s.r.Events++
	data := bytes.TrimSpace(ev.Data)
	if string(data) == "[DONE]" {
		s.decoded++
		return
	}
	var e responsesEvent
	if err := json.Unmarshal(data, &e); err != nil {
		if s.firstErr == nil {
			s.firstErr = oaiEventError(s.r.Events, ev, s.body, data, err)
		}
		return
	}
	s.decoded++
	typ := string(e.Type)
	if typ == "" {
		typ = ev.Type
	}
	s.event(typ, &e)
}

func (s *responsesStream) end(int64) (*Response, error) {
	if s.decoded == 0 {
		return nil, oaiStreamError(s.r.Events, s.firstErr)
	}
	r := s.r
	r.Complete = s.terminal != ""
	if r.Complete {
		r.StopReason = strings.TrimPrefix(s.terminal, "response.")
	}
	if f := s.final; f != nil && f.Status != "" {
		r.StopReason = string(f.Status)
	}
	if f := s.final; f != nil && len(f.Output) > 0 {
		for _, it := range f.Output {
			_, parts := responsesItemParts(it)
			r.Parts = append(r.Parts, parts...)
		}
		return r, nil
	}
	for _, a := range s.items {
		r.Parts = append(r.Parts, a.parts(!r.Complete)...)
	}
	return r, nil
}
