package llm

// Anthropic Messages API (POST /v1/messages).
//
// Request: model, system, messages, tools and stream map to their Request
// fields; metadata is dropped; every other top-level key (max_tokens,
// temperature, thinking, tool_choice, stop_sequences, service_tier,
// context_management, mcp_servers, …) is a Param. A tool's name is its
// "name", or its "type" when it has none. The system prompt is a string or
// the texts of its text blocks joined by "\n\n".
//
// Content blocks, in requests and responses alike:
//
//	text                      PartText
//	thinking                  PartThinking: Text, Signature
//	redacted_thinking         PartRedactedThinking: Data
//	tool_use                  PartToolCall: ID, Name, Input (compact)
//	server_tool_use,          PartServerToolCall: ID, Name, Input
//	  mcp_tool_use
//	tool_result               PartToolResult: ID (tool_use_id), IsError, Text (its
//	                          text blocks joined by "\n"), Content (its other blocks)
//	*_tool_result             PartServerToolResult: ID (tool_use_id), Raw
//	image, document           PartImage, PartDocument: MediaType; base64 source:
//	                          Size and SHA256 of the decoded bytes; url source:
//	                          URL; text source: Text; content source: Text of its
//	                          text blocks; file source: ID (the file_id)
//	compaction                PartCompaction: Text (content), Data (encrypted_content)
//	anything else             PartOther: Raw
//
// Citations on text blocks are not kept (citations_delta events are
// skipped). A block's cache_control is a caching hint, not content: it
// never reaches a Part, not even a Raw one. Inline data that is not base64
// gives no Size or SHA256. A block that does not decode (a field of the
// wrong kind) is kept as PartOther.
//
// Response: an SSE stream or one JSON document (a message or an error
// body). In a stream, blocks are keyed by their index and appear in the
// order their content_block_start arrived. Tool input is assembled from
// its input_json_delta fragments and compacted; when it does not parse
// (the stream was cut inside it) Input stays empty, Text holds the text
// that arrived and the part is Partial. The input of content_block_start
// ({} in practice) counts only for a block that stopped without
// fragments. A block without content_block_stop is Partial. A delta for an
// index never started opens a block of the delta's kind; a delta that does
// not fit its block, and any event type not listed here, is kept as
// PartOther holding the event. message_delta usage is cumulative and
// overrides message_start usage field by field. Complete is set by
// message_stop; an error event sets Error and leaves Complete false.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bbengine/bbengine/codec/jsonscan"
)

// anthropicBlock is one content block as sent: in a request message, a
// tool result, a non-streaming response or a content_block_start event.
type anthropicBlock struct {
	Type             string           `json:"type"`
	Text             string           `json:"text"`
	Thinking         string           `json:"thinking"`
	Signature        string           `json:"signature"`
	Data             string           `json:"data"`
	ID               string           `json:"id"`
	Name             string           `json:"name"`
	Input            json.RawMessage  `json:"input"`
	ToolUseID        string           `json:"tool_use_id"`
	Content          json.RawMessage  `json:"content"`
	EncryptedContent *string          `json:"encrypted_content"`
	IsError          bool             `json:"is_error"`
	Source           *anthropicSource `json:"source"`
}

// scan decodes raw into b as json.Unmarshal does, scanning it once
// (json.Unmarshal validates it whole, then decodes it). It reports false
// when it cannot say the same: raw is not an object, a member's value
// is not of its field's kind, a name is not ASCII (encoding/json folds
// some other letters into ASCII ones), or a syntax error. b is then
// partly set, and the caller decodes with encoding/json.
func (b *anthropicBlock) scan(raw []byte) bool {
	ok := true
	err := jsonscan.Fields(raw, func(k, v []byte) bool {
		for _, c := range k {
			if c >= utf8.RuneSelf {
				ok = false
				return false
			}
		}
		var f *string
		switch {
		case bytes.EqualFold(k, []byte("type")):
			f = &b.Type
		case bytes.EqualFold(k, []byte("text")):
			f = &b.Text
		case bytes.EqualFold(k, []byte("thinking")):
			f = &b.Thinking
		case bytes.EqualFold(k, []byte("signature")):
			f = &b.Signature
		case bytes.EqualFold(k, []byte("data")):
			f = &b.Data
		case bytes.EqualFold(k, []byte("id")):
			f = &b.ID
		case bytes.EqualFold(k, []byte("name")):
			f = &b.Name
		case bytes.EqualFold(k, []byte("tool_use_id")):
			f = &b.ToolUseID
		case bytes.EqualFold(k, []byte("input")):
			b.Input = append(b.Input[:0:0], v...)
		case bytes.EqualFold(k, []byte("content")):
			b.Content = append(b.Content[:0:0], v...)
		case bytes.EqualFold(k, []byte("encrypted_content")):
			switch {
			case string(v) == "null":
				b.EncryptedContent = nil
			case v[0] == '"':
				s := new(string)
				if ok = scanString(v, s); ok {
					b.EncryptedContent = s
				}
			default:
				ok = false
			}
		case bytes.EqualFold(k, []byte("is_error")):
			switch string(v) {
			case "true":
				b.IsError = true
			case "false":
				b.IsError = false
			case "null":
			default:
				ok = false
			}
		case bytes.EqualFold(k, []byte("source")):
			switch {
			case string(v) == "null":
				b.Source = nil
			case v[0] == '{':
				if b.Source == nil {
					b.Source = new(anthropicSource)
				}
				ok = json.Unmarshal(v, b.Source) == nil
			default:
				ok = false
			}
		}
		if f != nil && string(v) != "null" {
			ok = v[0] == '"' && scanString(v, f)
		}
		return ok
	})
	return ok && err == nil
}

// errScan says a scan could not decide; the slow path decides.
var errScan = errors.New("llm: scan undecided")

// scanString sets *s to the JSON string v (quotes included) as
// json.Unmarshal would: at memory speed when it holds no escape and is
// valid UTF-8.
func scanString(v []byte, s *string) bool {
	if bytes.IndexByte(v, '\\') < 0 && utf8.Valid(v) {
		*s = string(v[1 : len(v)-1])
		return true
	}
	return json.Unmarshal(v, s) == nil
}

// anthropicSource is the source of an image or document block.
type anthropicSource struct {
	Type      string          `json:"type"`
	MediaType string          `json:"media_type"`
	Data      string          `json:"data"`
	URL       string          `json:"url"`
	FileID    string          `json:"file_id"`
	Content   json.RawMessage `json:"content"`
}

// anthropicPart decodes one content block.
func anthropicPart(raw []byte) Part {
	var b anthropicBlock
	if !b.scan(raw) {
		b = anthropicBlock{}
		if err := json.Unmarshal(raw, &b); err != nil {
			return Part{Type: PartOther, Raw: compactBlock(raw)}
		}
	}
	switch b.Type {
	case "text":
		return Part{Type: PartText, Text: b.Text}
	case "thinking":
		return Part{Type: PartThinking, Text: b.Thinking, Signature: b.Signature}
	case "redacted_thinking":
		return Part{Type: PartRedactedThinking, Data: b.Data}
	case "tool_use":
		return Part{Type: PartToolCall, ID: b.ID, Name: b.Name, Input: compactJSON(b.Input)}
	case "server_tool_use", "mcp_tool_use":
		return Part{Type: PartServerToolCall, ID: b.ID, Name: b.Name, Input: compactJSON(b.Input)}
	case "tool_result":
		return anthropicToolResult(&b)
	case "image":
		return anthropicMedia(PartImage, b.Source)
	case "document":
		return anthropicMedia(PartDocument, b.Source)
	case "compaction":
		p := Part{Type: PartCompaction}
		p.Text, _ = jsonString(b.Content)
		if b.EncryptedContent != nil {
			p.Data = *b.EncryptedContent
		}
		return p
	}
	if strings.HasSuffix(b.Type, "_tool_result") {
		return Part{Type: PartServerToolResult, ID: b.ToolUseID, Raw: compactBlock(raw)}
	}
	return Part{Type: PartOther, Raw: compactBlock(raw)}
}

// anthropicParts decodes a block list: a JSON array of blocks, or a
// string that stands for one text block. Null gives no parts; any other
// value is one block that does not decode.
func anthropicParts(raw []byte) []Part { return anthropicPartsWith(raw, nil) }

// anthropicPartsWith is anthropicParts that writes a text longer than
// cfg's limit (a string, or a text block's text) to a spill as it
// unquotes it (see spillString).
func anthropicPartsWith(raw []byte, cfg *textCfg) []Part {
	switch valueKind(raw) {
	case "null", "nothing":
		return nil
	case "string":
		if p, ok := spillString(raw, cfg); ok {
			return []Part{p}
		}
		s, _ := jsonString(raw)
		return []Part{{Type: PartText, Text: s}}
	case "array":
		blocks, err := elements(raw)
		if err != nil {
			return []Part{{Type: PartOther, Raw: compactJSON(raw)}}
		}
		parts := make([]Part, 0, len(blocks))
		for _, b := range blocks {
			if cfg != nil && len(b) > cfg.limit {
				var probe struct {
					Type string  `json:"type"`
					Text rawJSON `json:"text"`
				}
				if json.Unmarshal(b, &probe) == nil && probe.Type == "text" {
					if p, ok := spillString(probe.Text, cfg); ok {
						parts = append(parts, p)
						continue
					}
				}
			}
			parts = append(parts, anthropicPart(b))
		}
		return parts
	}
	return []Part{anthropicPart(raw)}
}

// anthropicToolResult decodes a tool_result block: its text blocks make
// Text, joined by "\n"; its other blocks go to Content.
func anthropicToolResult(b *anthropicBlock) Part {
	p := Part{Type: PartToolResult, ID: b.ToolUseID, IsError: b.IsError}
	var texts []string
	for _, c := range anthropicParts(b.Content) {
		if c.Type == PartText {
			texts = append(texts, c.Text)
			continue
		}
		p.Content = append(p.Content, c)
	}
	p.Text = strings.Join(texts, "\n")
	return p
}

// AnthropicMedia describes an Anthropic image or document block (t is
// PartImage or PartDocument) from its "source" object, without copying
// inline data: the same Part the decoders make, for other readers of
// Anthropic-shaped content (Claude Code's own log).
func AnthropicMedia(t PartType, source json.RawMessage) Part {
	var src anthropicSource
	if json.Unmarshal(source, &src) != nil {
		return Part{Type: t}
	}
	return anthropicMedia(t, &src)
}

// anthropicMedia describes an image or document block from its source,
// without copying inline data.
func anthropicMedia(t PartType, src *anthropicSource) Part {
	p := Part{Type: t}
	if src == nil {
		return p
	}
	p.MediaType = src.MediaType
	switch src.Type {
	case "base64":
		p.Size, p.SHA256 = base64Digest(src.Data)
	case "url":
		p.URL = src.URL
	case "text":
		p.Text = src.Data
	case "content":
		var texts []string
		for _, c := range anthropicParts(src.Content) {
			if c.Type == PartText {
				texts = append(texts, c.Text)
			}
		}
		p.Text = strings.Join(texts, "\n")
	case "file":
		p.ID = src.FileID
	}
	return p
}

func decodeAnthropicRequest(body []byte, cfg *textCfg) (*Request, error) {
	top, err := topObject(body)
	if err != nil {
		return nil, err
	}
	r := &Request{}
	// Fields go in name order, so that a body with two bad fields always
	// names the same one.
	for _, name := range slices.Sorted(maps.Keys(top)) {
		raw := top[name]
		var err error
		switch name {
		case "model":
			err = json.Unmarshal(raw, &r.Model)
		case "stream":
			err = json.Unmarshal(raw, &r.Stream)
		case "metadata":
		case "system":
			r.System, err = anthropicSystem(raw)
		case "messages":
			r.Messages, err = anthropicMessages(raw, cfg)
		case "tools":
			r.Tools, err = anthropicTools(raw)
		default:
			r.Params = append(r.Params, Param{Name: name, Value: compactJSON(raw)})
		}
		if err != nil {
			return nil, inField(name, err)
		}
	}
	sortParams(r.Params)
	return r, nil
}

// sortParams sorts params by name.
func sortParams(ps []Param) {
	slices.SortFunc(ps, func(a, b Param) int { return strings.Compare(a.Name, b.Name) })
}

// anthropicSystem decodes the system prompt: a string, or text blocks
// whose texts are joined by "\n\n".
func anthropicSystem(raw []byte) (string, error) {
	switch valueKind(raw) {
	case "null":
		return "", nil
	case "string":
		s, _ := jsonString(raw)
		return s, nil
	case "array":
		// Each block scanned once (anthropicBlock.scan); anything it
		// cannot decide goes through encoding/json, for its errors.
		var texts []string
		items, err := elements(raw)
		for _, item := range items {
			if err != nil {
				break
			}
			var b anthropicBlock
			if !b.scan(item) {
				err = errScan
			} else if b.Type == "text" {
				texts = append(texts, b.Text)
			}
		}
		if err == nil {
			return strings.Join(texts, "\n\n"), nil
		}
		var blocks []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if err := json.Unmarshal(raw, &blocks); err != nil {
			return "", err
		}
		texts = texts[:0]
		for _, b := range blocks {
			if b.Type == "text" {
				texts = append(texts, b.Text)
			}
		}
		return strings.Join(texts, "\n\n"), nil
	}
	return "", wrongKind("", "string or array", raw)
}

// anthropicMessages decodes the conversation.
func anthropicMessages(raw []byte, cfg *textCfg) ([]Message, error) {
	items, err := elements(raw)
	if err != nil {
		return nil, err
	}
	msgs := make([]Message, 0, len(items))
	for i, item := range items {
		var m struct {
			Role    string  `json:"role"`
			Content rawJSON `json:"content"`
		}
		var ok bool
		if m.Role, m.Content, ok = roleContent(item, "content"); !ok {
			if err := json.Unmarshal(item, &m); err != nil {
				return nil, inField(fmt.Sprintf("[%d]", i), err)
			}
		}
		switch valueKind(m.Content) {
		case "string", "array", "null", "nothing":
		default:
			return nil, wrongKind(fmt.Sprintf("[%d].content", i), "string or array", m.Content)
		}
		msgs = append(msgs, Message{Role: m.Role, Parts: anthropicPartsWith(m.Content, cfg)})
	}
	return msgs, nil
}

// anthropicTools returns the names of the tools offered.
func anthropicTools(raw []byte) ([]string, error) {
	items, err := elements(raw)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(items))
	for i, item := range items {
		var t struct {
			Name string `json:"name"`
			Type string `json:"type"`
		}
		// A tool's schema is most of its bytes: decode only its name
		// and type (matched as encoding/json matches field names), and
		// go through encoding/json for the error of anything odd.
		var bad error
		err := jsonscan.Fields(item, func(k, v []byte) bool {
			switch {
			case bytes.EqualFold(k, []byte("name")):
				bad = json.Unmarshal(v, &t.Name)
			case bytes.EqualFold(k, []byte("type")):
				bad = json.Unmarshal(v, &t.Type)
			}
			return bad == nil
		})
		if err != nil || bad != nil {
			t.Name, t.Type = "", ""
			if err := json.Unmarshal(item, &t); err != nil {
				return nil, inField(fmt.Sprintf("[%d]", i), err)
			}
		}
		names = append(names, first(t.Name, t.Type))
	}
	return names, nil
}

// anthropicMessage is a message object: a non-streaming response body
// (or an error body) and the message of a message_start event.
type anthropicMessage struct {
	Type        string            `json:"type"`
	ID          string            `json:"id"`
	Model       string            `json:"model"`
	Content     []json.RawMessage `json:"content"`
	StopReason  string            `json:"stop_reason"`
	StopDetails json.RawMessage   `json:"stop_details"`
	Usage       *anthropicUsage   `json:"usage"`
	Error       *anthropicError   `json:"error"`
}

// anthropicError is the error of an error body or event.
type anthropicError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// anthropicUsage is usage as Anthropic reports it; a nil field was not
// reported.
type anthropicUsage struct {
	InputTokens         *int64 `json:"input_tokens"`
	CacheCreationTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadTokens     *int64 `json:"cache_read_input_tokens"`
	OutputTokens        *int64 `json:"output_tokens"`
	CacheCreation       *struct {
		Ephemeral5m *int64 `json:"ephemeral_5m_input_tokens"`
		Ephemeral1h *int64 `json:"ephemeral_1h_input_tokens"`
	} `json:"cache_creation"`
	OutputTokensDetails *struct {
		ThinkingTokens *int64 `json:"thinking_tokens"`
	} `json:"output_tokens_details"`
}

// merge overrides u's fields with those v reports.
func (u *anthropicUsage) merge(v *anthropicUsage) {
	if v == nil {
		return
	}
	over := func(dst **int64, src *int64) {
		if src != nil {
			*dst = src
		}
	}
	over(&u.InputTokens, v.InputTokens)
	over(&u.CacheCreationTokens, v.CacheCreationTokens)
	over(&u.CacheReadTokens, v.CacheReadTokens)
	over(&u.OutputTokens, v.OutputTokens)
	if v.CacheCreation != nil {
		if u.CacheCreation == nil {
			u.CacheCreation = v.CacheCreation
		} else {
			over(&u.CacheCreation.Ephemeral5m, v.CacheCreation.Ephemeral5m)
			over(&u.CacheCreation.Ephemeral1h, v.CacheCreation.Ephemeral1h)
		}
	}
	if v.OutputTokensDetails != nil {
		if u.OutputTokensDetails == nil {
			u.OutputTokensDetails = v.OutputTokensDetails
		} else {
			over(&u.OutputTokensDetails.ThinkingTokens, v.OutputTokensDetails.ThinkingTokens)
		}
	}
}

// usage normalizes u (see the package comment): Input adds back the cache
// reads and writes that input_tokens leaves out.
func (u *anthropicUsage) usage() Usage {
	val := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	n := Usage{
		CacheRead:     val(u.CacheReadTokens),
		CacheCreation: val(u.CacheCreationTokens),
		Output:        val(u.OutputTokens),
	}
	if c := u.CacheCreation; c != nil {
		n.CacheCreation5m, n.CacheCreation1h = val(c.Ephemeral5m), val(c.Ephemeral1h)
		if u.CacheCreationTokens == nil {
			n.CacheCreation = n.CacheCreation5m + n.CacheCreation1h
		}
	}
	if d := u.OutputTokensDetails; d != nil {
		n.Reasoning = val(d.ThinkingTokens)
	}
	n.Input = val(u.InputTokens) + n.CacheRead + n.CacheCreation
	return n
}

func decodeAnthropicResponse(body []byte) (*Response, error) {
	if IsJSON(body) {
		return decodeAnthropicMessage(body)
	}
	return decodeAnthropicStream(body)
}

// decodeAnthropicMessage decodes a non-streaming body: a message or an
// error.
func decodeAnthropicMessage(body []byte) (*Response, error) {
	var m anthropicMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, jsonAt(err)
	}
	r := &Response{Complete: true}
	if m.Error != nil || m.Type == "error" {
		r.Error = &APIError{}
		if m.Error != nil {
			r.Error.Type, r.Error.Message = m.Error.Type, m.Error.Message
		}
		return r, nil
	}
	r.ID, r.Model, r.StopReason = m.ID, m.Model, m.StopReason
	if !isNull(m.StopDetails) {
		r.StopDetails = compactJSON(m.StopDetails)
	}
	for _, b := range m.Content {
		r.Parts = append(r.Parts, anthropicPart(b))
	}
	if m.Usage != nil {
		r.Usage = m.Usage.usage()
	}
	return r, nil
}

// anthropicEvent is the data of one stream event; which fields are set
// depends on its type. Index is -1 when the event has none; Delta is
// zero when absent.
type anthropicEvent struct {
	Type         string            `json:"type"`
	Message      *anthropicMessage `json:"message"`
	Index        int               `json:"index"`
	ContentBlock json.RawMessage   `json:"content_block"`
	Delta        anthropicDelta    `json:"delta"`
	Usage        *anthropicUsage   `json:"usage"`
	Error        *anthropicError   `json:"error"`
}

// anthropicDelta is the delta of a content_block_delta event (Type set)
// or of a message_delta event (stop fields set).
type anthropicDelta struct {
	Type             string          `json:"type"`
	Text             string          `json:"text"`
	Thinking         string          `json:"thinking"`
	Signature        string          `json:"signature"`
	PartialJSON      string          `json:"partial_json"`
	Content          json.RawMessage `json:"content"`
	EncryptedContent *string         `json:"encrypted_content"`
	StopReason       *string         `json:"stop_reason"`
	StopDetails      json.RawMessage `json:"stop_details"`
}

// anthropicBlockState is a block being streamed. Text, thinking and
// compaction text, signatures, encrypted content and tool input are
// gathered in buffers and land in part when the stream is done.
type anthropicBlockState struct {
	part    Part
	text    textBuf
	sig     []byte
	data    []byte
	input   textBuf
	stopped bool
}

// anthropicStream is the state of a stream being decoded.
type anthropicStream struct {
	r       *Response
	cfg     *textCfg
	dec     eventDecoder[anthropicEvent]
	blocks  []*anthropicBlockState // in arrival order
	byIndex map[int]*anthropicBlockState
	usage   anthropicUsage
}

func newAnthropicStream(cfg *textCfg) *anthropicStream {
	s := &anthropicStream{
		r:       &Response{Stream: true},
		cfg:     cfg,
		byIndex: make(map[int]*anthropicBlockState),
	}
	s.dec = eventDecoder[anthropicEvent]{
		mk: func() anthropicEvent { return anthropicEvent{Index: -1} },
		fn: func(ev Event, e *anthropicEvent) {
			if e.Type == "" {
				e.Type = ev.Type
			}
			s.event(e, ev.Data)
		},
		other: s.other,
	}
	return s
}

func (s *anthropicStream) take(ev Event) { s.dec.take(ev) }

func (s *anthropicStream) end(n int64) (*Response, error) {
	events, err := s.dec.result(n)
	s.r.Events = events
	if err != nil {
		return nil, err
	}
	return s.r, s.finish()
}

func (s *anthropicStream) spills() []*textBuf {
	var out []*textBuf
	for _, b := range s.blocks {
		out = append(out, &b.text, &b.input)
	}
	return out
}

// block returns a new block state of part.
func (s *anthropicStream) block(p Part) *anthropicBlockState {
	return &anthropicBlockState{part: p, text: textBuf{cfg: s.cfg}, input: textBuf{cfg: s.cfg}}
}

// decodeAnthropicStream decodes an SSE body. An event whose data is not
// JSON (the last one, when the stream was cut inside it) is skipped; the
// body is an error only when no event decodes.
func decodeAnthropicStream(body []byte) (*Response, error) {
	s := newAnthropicStream(nil)
	Events(body, func(ev Event) bool { s.take(ev); return true })
	return s.end(int64(len(body)))
}

// eventDecoder decodes the data of each SSE event into a fresh value from
// mk and passes it to fn. An event whose data is valid JSON of an
// unexpected shape is kept, not dropped: it goes to other. One whose data
// is not JSON (the last one, when the stream was cut inside it) is
// skipped.
type eventDecoder[T any] struct {
	mk       func() T
	fn       func(ev Event, v *T)
	other    func([]byte)
	n, good  int
	firstErr error
}

func (d *eventDecoder[T]) take(ev Event) {
	d.n++
	v := d.mk()
	err := json.Unmarshal(ev.Data, &v)
	if err != nil && !json.Valid(ev.Data) {
		if d.firstErr == nil {
			d.firstErr = eventError(d.n, ev, err)
		}
		return
	}
	d.good++
	if err != nil {
		d.other(ev.Data)
		return
	}
	d.fn(ev, &v)
}

// result returns the number of events, and an error naming the first bad
// event when none decoded (size is the body's length).
func (d *eventDecoder[T]) result(size int64) (int, error) {
	if d.good == 0 {
		if d.firstErr != nil {
			return d.n, d.firstErr
		}
		return d.n, fmt.Errorf("at byte 0: no events in %d bytes", size)
	}
	return d.n, nil
}

// decodeEvents decodes the events of body with an eventDecoder. It
// returns the number of events, and an error naming the first bad event
// when none decoded.
func decodeEvents[T any](body []byte, mk func() T, fn func(ev Event, v *T), other func([]byte)) (int, error) {
	d := eventDecoder[T]{mk: mk, fn: fn, other: other}
	Events(body, func(ev Event) bool { d.take(ev); return true })
	return d.result(int64(len(body)))
}

// eventError names the event (its number, from 1, its offset and its
// type) that err is about.
func eventError(n int, ev Event, err error) error {
	if ev.Type == "" {
		return fmt.Errorf("event %d at byte %d: %w", n, ev.Offset, err)
	}
	return fmt.Errorf("event %d at byte %d: %s: %w", n, ev.Offset, ev.Type, err)
}

// other keeps data, an event or a delta that has no place of its own, as a
// PartOther in arrival order.
func (s *anthropicStream) other(data []byte) {
	b := s.block(Part{Type: PartOther, Raw: compactJSON(data)})
	b.stopped = true
	s.blocks = append(s.blocks, b)
}

// event applies one decoded event; data is its JSON as sent.
func (s *anthropicStream) event(e *anthropicEvent, data []byte) {
	r := s.r
	index := e.Index
	switch e.Type {
	case "ping":
	case "message_start":
		m := e.Message
		if m == nil {
			return
		}
		r.ID, r.Model = m.ID, m.Model
		if m.StopReason != "" {
			r.StopReason = m.StopReason
		}
		s.usage.merge(m.Usage)
		for _, b := range m.Content {
			st := s.block(anthropicPart(b))
			st.stopped = true
			s.blocks = append(s.blocks, st)
		}
	case "content_block_start":
		if e.ContentBlock == nil {
			s.other(data)
			return
		}
		b := s.block(anthropicPart(e.ContentBlock))
		switch b.part.Type {
		case PartText, PartThinking, PartCompaction:
			b.text.WriteString(b.part.Text)
			b.sig = append(b.sig, b.part.Signature...)
			b.data = append(b.data, b.part.Data...)
		}
		s.blocks = append(s.blocks, b)
		s.byIndex[index] = b
	case "content_block_delta":
		s.delta(index, &e.Delta, data)
	case "content_block_stop":
		if b := s.byIndex[index]; b != nil {
			b.stopped = true
		}
	case "message_delta":
		if d := &e.Delta; d.StopReason != nil {
			r.StopReason = *d.StopReason
		}
		if d := &e.Delta; !isNull(d.StopDetails) {
			r.StopDetails = compactJSON(d.StopDetails)
		}
		s.usage.merge(e.Usage)
	case "message_stop":
		r.Complete = true
	case "error":
		r.Error = &APIError{}
		if e.Error != nil {
			r.Error.Type, r.Error.Message = e.Error.Type, e.Error.Message
		}
	default:
		s.other(data)
	}
}

// anthropicDeltaPart is the part type each delta type extends.
var anthropicDeltaPart = map[string]PartType{
	"text_delta":       PartText,
	"thinking_delta":   PartThinking,
	"signature_delta":  PartThinking,
	"input_json_delta": PartToolCall,
	"compaction_delta": PartCompaction,
}

// delta applies a content_block_delta to the block at index.
func (s *anthropicStream) delta(index int, d *anthropicDelta, data []byte) {
	if d.Type == "citations_delta" {
		return
	}
	want, known := anthropicDeltaPart[d.Type]
	if !known {
		s.other(data)
		return
	}
	b := s.byIndex[index]
	if b == nil {
		// A delta for a block never started opens one of its kind.
		b = s.block(Part{Type: want})
		s.blocks = append(s.blocks, b)
		s.byIndex[index] = b
	}
	got := b.part.Type
	if got == PartServerToolCall {
		got = PartToolCall
	}
	if got != want {
		s.other(data)
		return
	}
	switch d.Type {
	case "text_delta":
		b.text.WriteString(d.Text)
	case "thinking_delta":
		b.text.WriteString(d.Thinking)
	case "signature_delta":
		b.sig = append(b.sig, d.Signature...)
	case "input_json_delta":
		b.input.WriteString(d.PartialJSON)
	case "compaction_delta":
		if c, ok := jsonString(d.Content); ok {
			b.text.WriteString(c)
		}
		if d.EncryptedContent != nil {
			b.data = append(b.data, *d.EncryptedContent...)
		}
	}
}

// finish moves the gathered blocks and usage into the response. An error
// is a spilled text that could not be kept.
func (s *anthropicStream) finish() error {
	r := s.r
	r.Usage = s.usage.usage()
	if len(s.blocks) == 0 {
		return nil
	}
	var errs []error
	r.Parts = make([]Part, 0, len(s.blocks))
	for _, b := range s.blocks {
		p := b.part
		p.Partial = !b.stopped
		switch p.Type {
		case PartText:
			errs = append(errs, b.text.fill(&p))
		case PartThinking:
			errs = append(errs, b.text.fill(&p))
			p.Signature = string(b.sig)
		case PartCompaction:
			errs = append(errs, b.text.fill(&p))
			p.Data = string(b.data)
		case PartToolCall, PartServerToolCall:
			switch {
			case b.input.spilled():
				// Arguments too long to hold are kept as text, cut.
				p.Input = nil
				errs = append(errs, b.input.fill(&p))
			case len(bytes.TrimSpace(b.input.b)) > 0:
				p.Input = compactJSON(b.input.b)
				if p.Input == nil {
					p.Input, p.Text, p.Partial = nil, b.input.String(), true
				}
			case !b.stopped:
				// The input of content_block_start is a placeholder
				// until the fragments arrive; none did.
				p.Input = nil
			}
		}
		r.Parts = append(r.Parts, p)
	}
	return errors.Join(errs...)
}
