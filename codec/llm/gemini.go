package llm

// Google Gemini API (…:generateContent, …:streamGenerateContent).
//
// Request: contents are the conversation, with role "model" read as
// "assistant" and a missing role or the old "function" role as "user" (a
// user turn of functionResponse parts stays a user turn of PartToolResult
// parts). systemInstruction gives System (its text parts joined by
// "\n\n", or a plain string). tools gives Tools: the names of its function
// declarations, and for any other tool (googleSearch, codeExecution,
// urlContext, …) the key naming it. Each field of generationConfig is a
// Param of its own named "generationConfig.<field>" (temperature,
// maxOutputTokens, thinkingConfig, …); every other top-level key
// (toolConfig, safetySettings, cachedContent, labels, …) is one Param.
// Keys are read in the camelCase of the JSON API and, for the fields above,
// also in the snake_case the API accepts (system_instruction,
// inline_data, …); Param names keep the spelling sent. The model is named
// by the URL path, not the body, so Request.Model is left empty.
//
// Parts:
//
//	text                      PartText (PartThinking when thought is true)
//	thoughtSignature          Signature of the part it arrives on
//	functionCall              PartToolCall: ID (when sent), Name, Input (args, compact)
//	functionResponse          PartToolResult: ID, Name, Text, IsError
//	inlineData                PartImage (image/*) or PartDocument: MediaType,
//	                          Size and SHA256 of the decoded bytes
//	fileData                  PartImage or PartDocument: MediaType, URL (fileUri)
//	executableCode            PartServerToolCall: Name "code_execution", Input
//	codeExecutionResult       PartServerToolResult: Name "code_execution", Raw
//	anything else             PartOther: Raw
//
// A tool result's Text is the string when its response is an object of a
// single string field named output, result, content or error, and the
// compact JSON of the response otherwise; IsError is set when the response
// has a non-null error field.
//
// A part with empty text that carries only a thoughtSignature (Gemini ends
// a turn with one) is not a part of its own: the signature goes to the
// part before it when that part has none, and otherwise becomes a
// PartThinking holding only the signature. Requests and responses follow
// this rule alike, so a model turn sent back in the next request decodes
// as the response did.
//
// Response: one JSON object (generateContent), a JSON array of chunks
// (streamGenerateContent) or an SSE stream of chunks (alt=sse), each chunk
// a GenerateContentResponse. Consecutive text parts of a candidate, and
// consecutive thought parts, are joined across chunks into one part until
// a part of another kind, or a signature, ends it; empty text parts add
// nothing. Candidate 0 gives Parts and further candidates Choices, in
// index order. finishReason gives StopReason (candidate 0's); a stream is
// Complete when every candidate has one, or when promptFeedback.blockReason
// reports the prompt blocked (then StopReason is that reason); the last
// part of an unfinished candidate is Partial. The last usageMetadata wins.
// A candidate's groundingMetadata (the last one sent) is kept as a final
// PartOther whose Raw is {"groundingMetadata":…}. The first responseId and
// modelVersion give ID and Model. An error body, or an error chunk in a
// stream or an array, gives Error.
//
// Usage: Input is promptTokenCount (which counts cached tokens) plus
// toolUsePromptTokenCount (the prompt tokens of tool results such as
// search, billed as input); CacheRead is cachedContentTokenCount; Output is
// candidatesTokenCount plus thoughtsTokenCount; Reasoning is
// thoughtsTokenCount.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// geminiPart is one part as sent. The fields ending in S take the
// snake_case spelling of the field before them.
type geminiPart struct {
	Text                 *string         `json:"text"`
	Thought              bool            `json:"thought"`
	ThoughtSignature     string          `json:"thoughtSignature"`
	ThoughtSignatureS    string          `json:"thought_signature"`
	FunctionCall         *geminiCall     `json:"functionCall"`
	FunctionCallS        *geminiCall     `json:"function_call"`
	FunctionResponse     *geminiResult   `json:"functionResponse"`
	FunctionResponseS    *geminiResult   `json:"function_response"`
	InlineData           *geminiBlob     `json:"inlineData"`
	InlineDataS          *geminiBlob     `json:"inline_data"`
	FileData             *geminiFile     `json:"fileData"`
	FileDataS            *geminiFile     `json:"file_data"`
	ExecutableCode       json.RawMessage `json:"executableCode"`
	ExecutableCodeS      json.RawMessage `json:"executable_code"`
	CodeExecutionResult  json.RawMessage `json:"codeExecutionResult"`
	CodeExecutionResultS json.RawMessage `json:"code_execution_result"`
}

// geminiCall is a functionCall.
type geminiCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// geminiResult is a functionResponse.
type geminiResult struct {
	ID       string          `json:"id"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

// geminiBlob is inlineData.
type geminiBlob struct {
	MimeType  string `json:"mimeType"`
	MimeTypeS string `json:"mime_type"`
	Data      string `json:"data"`
}

// geminiFile is fileData.
type geminiFile struct {
	MimeType  string `json:"mimeType"`
	MimeTypeS string `json:"mime_type"`
	FileURI   string `json:"fileUri"`
	FileURIS  string `json:"file_uri"`
}

// geminiPartKeys are the keys of a part that hold nothing when neither
// text nor a signature is set: a part of only these (null, empty) is no
// part.
var geminiPartKeys = map[string]bool{
	"thought": true, "text": true, "thoughtSignature": true, "thought_signature": true,
}

// part returns the Part gp stands for; raw is gp as sent. ok is false for
// a part that holds nothing at all ({} or only "thought"). A text or
// thought part with empty text is returned: the callers decide what it
// means.
func (gp *geminiPart) part(raw []byte) (p Part, ok bool) {
	sig := first(gp.ThoughtSignature, gp.ThoughtSignatureS)
	switch {
	case gp.FunctionCall != nil || gp.FunctionCallS != nil:
		c := gp.FunctionCall
		if c == nil {
			c = gp.FunctionCallS
		}
		return Part{Type: PartToolCall, ID: c.ID, Name: c.Name, Input: compactJSON(c.Args), Signature: sig}, true
	case gp.FunctionResponse != nil || gp.FunctionResponseS != nil:
		fr := gp.FunctionResponse
		if fr == nil {
			fr = gp.FunctionResponseS
		}
		p = geminiToolResult(fr)
		p.Signature = sig
		return p, true
	case gp.InlineData != nil || gp.InlineDataS != nil:
		b := gp.InlineData
		if b == nil {
			b = gp.InlineDataS
		}
		p = Part{MediaType: first(b.MimeType, b.MimeTypeS), Signature: sig}
		p.Type = geminiMediaType(p.MediaType)
		p.Size, p.SHA256 = base64Digest(b.Data)
		return p, true
	case gp.FileData != nil || gp.FileDataS != nil:
		f := gp.FileData
		if f == nil {
			f = gp.FileDataS
		}
		p = Part{MediaType: first(f.MimeType, f.MimeTypeS), URL: first(f.FileURI, f.FileURIS), Signature: sig}
		p.Type = geminiMediaType(p.MediaType)
		return p, true
	case !isNull(gp.ExecutableCode) || !isNull(gp.ExecutableCodeS):
		code := gp.ExecutableCode
		if isNull(code) {
			code = gp.ExecutableCodeS
		}
		return Part{Type: PartServerToolCall, Name: "code_execution", Input: compactJSON(code), Signature: sig}, true
	case !isNull(gp.CodeExecutionResult) || !isNull(gp.CodeExecutionResultS):
		return Part{Type: PartServerToolResult, Name: "code_execution", Raw: compactJSON(raw), Signature: sig}, true
	case gp.Text != nil || sig != "":
		p = Part{Type: PartText, Signature: sig}
		if gp.Thought {
			p.Type = PartThinking
		}
		if gp.Text != nil {
			p.Text = *gp.Text
		}
		return p, true
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil {
		known := true
		for k := range m {
			known = known && geminiPartKeys[k]
		}
		if known {
			return Part{}, false
		}
	}
	return Part{Type: PartOther, Raw: compactJSON(raw)}, true
}

// first returns a, or b when a is empty.
func first(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// geminiMediaType is the part type of inline or file data of a MIME type.
func geminiMediaType(mime string) PartType {
	if strings.HasPrefix(mime, "image/") {
		return PartImage
	}
	return PartDocument
}

// geminiResultKeys are the fields whose single string value stands for a
// whole function response.
var geminiResultKeys = map[string]bool{"output": true, "result": true, "content": true, "error": true}

// geminiToolResult decodes a functionResponse.
func geminiToolResult(fr *geminiResult) Part {
	p := Part{Type: PartToolResult, ID: fr.ID, Name: fr.Name}
	if valueKind(fr.Response) == "object" {
		var m map[string]json.RawMessage
		if json.Unmarshal(fr.Response, &m) == nil {
			p.IsError = !isNull(m["error"])
			if len(m) == 1 {
				for k, v := range m {
					if s, ok := jsonString(v); ok && geminiResultKeys[k] {
						p.Text = s
						return p
					}
				}
			}
		}
	}
	if !isNull(fr.Response) {
		p.Text = string(compactJSON(fr.Response))
	}
	return p
}

// geminiDecodePart decodes one part as sent; a part that does not decode
// (a field of the wrong kind) is a PartOther.
func geminiDecodePart(raw []byte) (Part, bool) {
	var gp geminiPart
	if err := json.Unmarshal(raw, &gp); err != nil {
		return Part{Type: PartOther, Raw: compactJSON(raw)}, true
	}
	return gp.part(raw)
}

// signatureOnly reports whether p is an empty text or thought part that
// carries only a signature.
func signatureOnly(p *Part) bool {
	return (p.Type == PartText || p.Type == PartThinking) && p.Text == "" && p.Signature != ""
}

// geminiParts decodes the parts of one request turn, one Part for each
// except signature-only parts (see the file comment).
func geminiParts(raws []json.RawMessage) []Part {
	parts := make([]Part, 0, len(raws))
	for _, raw := range raws {
		p, ok := geminiDecodePart(raw)
		if !ok {
			continue
		}
		if signatureOnly(&p) {
			if n := len(parts); n > 0 && parts[n-1].Signature == "" {
				parts[n-1].Signature = p.Signature
				continue
			}
			p.Type = PartThinking
		}
		parts = append(parts, p)
	}
	return parts
}

// geminiContent is a Content: a role and its parts.
type geminiContent struct {
	Role  string            `json:"role"`
	Parts []json.RawMessage `json:"parts"`
}

func decodeGeminiRequest(body []byte) (*Request, error) {
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
		case "contents":
			r.Messages, err = geminiContents(raw)
		case "systemInstruction", "system_instruction":
			r.System, err = geminiSystem(raw)
		case "tools":
			r.Tools, err = geminiTools(raw)
		case "generationConfig", "generation_config":
			err = geminiConfig(&r.Params, name, raw)
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

// geminiRoles maps Gemini roles to Message roles; others pass as they are.
var geminiRoles = map[string]string{"model": "assistant", "": "user", "function": "user"}

// geminiContents decodes the conversation.
func geminiContents(raw []byte) ([]Message, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, err
	}
	msgs := make([]Message, 0, len(items))
	for i, item := range items {
		var c geminiContent
		if err := json.Unmarshal(item, &c); err != nil {
			return nil, inField(fmt.Sprintf("[%d]", i), err)
		}
		role, ok := geminiRoles[c.Role]
		if !ok {
			role = c.Role
		}
		msgs = append(msgs, Message{Role: role, Parts: geminiParts(c.Parts)})
	}
	return msgs, nil
}

// geminiSystem decodes systemInstruction: a Content whose text parts are
// joined by "\n\n", or a plain string.
func geminiSystem(raw []byte) (string, error) {
	switch valueKind(raw) {
	case "null":
		return "", nil
	case "string":
		s, _ := jsonString(raw)
		return s, nil
	case "object":
		var c geminiContent
		if err := json.Unmarshal(raw, &c); err != nil {
			return "", err
		}
		var texts []string
		for _, p := range geminiParts(c.Parts) {
			if p.Type == PartText {
				texts = append(texts, p.Text)
			}
		}
		return strings.Join(texts, "\n\n"), nil
	default:
		return "", wrongKind("", "object or string", raw)
	}
}

// geminiTools returns the names of the tools offered: function
// declarations by name, other tools by the key that names them, in
// request order (a tool object's keys in name order).
func geminiTools(raw []byte) ([]string, error) {
	var tools []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &tools); err != nil {
		return nil, err
	}
	var names []string
	for i, t := range tools {
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if k != "functionDeclarations" && k != "function_declarations" {
				names = append(names, k)
				continue
			}
			var decls []struct {
				Name string `json:"name"`
			}
			if err := json.Unmarshal(t[k], &decls); err != nil {
				return nil, inField(fmt.Sprintf("[%d].%s", i, k), err)
			}
			for _, d := range decls {
				if d.Name != "" {
					names = append(names, d.Name)
				}
			}
		}
	}
	return names, nil
}

// geminiConfig adds each field of generationConfig as a Param named
// "<name>.<field>"; a value that is not an object is one Param.
func geminiConfig(params *[]Param, name string, raw []byte) error {
	switch valueKind(raw) {
	case "null":
		return nil
	case "object":
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
		for k, v := range m {
			*params = append(*params, Param{Name: name + "." + k, Value: compactJSON(v)})
		}
		return nil
	}
	*params = append(*params, Param{Name: name, Value: compactJSON(raw)})
	return nil
}

// geminiChunk is one GenerateContentResponse, or an error body.
type geminiChunk struct {
	Candidates     []geminiCandidateJSON `json:"candidates"`
	UsageMetadata  *geminiUsage          `json:"usageMetadata"`
	ModelVersion   string                `json:"modelVersion"`
	ResponseID     string                `json:"responseId"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	Error *struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
		Status  string          `json:"status"`
	} `json:"error"`
}

// geminiCandidateJSON is one candidate of a chunk.
type geminiCandidateJSON struct {
	Content           *geminiContent  `json:"content"`
	FinishReason      string          `json:"finishReason"`
	Index             int             `json:"index"`
	GroundingMetadata json.RawMessage `json:"groundingMetadata"`
}

// geminiUsage is usageMetadata.
type geminiUsage struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount"`
}

// usage normalizes u (see the file comment).
func (u *geminiUsage) usage() Usage {
	return Usage{
		Input:     u.PromptTokenCount + u.ToolUsePromptTokenCount,
		CacheRead: u.CachedContentTokenCount,
		Output:    u.CandidatesTokenCount + u.ThoughtsTokenCount,
		Reasoning: u.ThoughtsTokenCount,
	}
}

// geminiCandidate gathers the parts of one candidate across chunks. While
// open, the last part is an unsigned text or thought part whose text so
// far is in text, not yet in the part.
type geminiCandidate struct {
	index     int
	parts     []Part
	text      []byte
	open      bool
	finish    string
	grounding json.RawMessage
}

// add appends p, joining it to the open part when it continues it.
func (c *geminiCandidate) add(p Part) {
	if p.Type != PartText && p.Type != PartThinking {
		c.push(p)
		return
	}
	if p.Text == "" {
		if p.Signature == "" {
			return
		}
		if n := len(c.parts); n > 0 && c.parts[n-1].Signature == "" {
			c.close()
			c.parts[n-1].Signature = p.Signature
			return
		}
		p.Type = PartThinking
		c.push(p)
		return
	}
	if n := len(c.parts); c.open && c.parts[n-1].Type == p.Type {
		c.text = append(c.text, p.Text...)
		if p.Signature != "" {
			c.close()
			c.parts[n-1].Signature = p.Signature
		}
		return
	}
	c.push(p)
	if p.Signature == "" {
		c.open = true
		c.text = append(c.text[:0], p.Text...)
	}
}

// push appends p as a part of its own.
func (c *geminiCandidate) push(p Part) {
	c.close()
	c.parts = append(c.parts, p)
}

// close ends the open part, if any.
func (c *geminiCandidate) close() {
	if c.open {
		c.parts[len(c.parts)-1].Text = string(c.text)
		c.open = false
	}
}

// geminiStream is the state of a response being decoded.
type geminiStream struct {
	r       *Response
	cands   []*geminiCandidate
	usage   *geminiUsage
	blocked string
}

// candidate returns the candidate of the given index, adding it if new.
func (s *geminiStream) candidate(index int) *geminiCandidate {
	for _, c := range s.cands {
		if c.index == index {
			return c
		}
	}
	c := &geminiCandidate{index: index}
	s.cands = append(s.cands, c)
	return c
}

// chunk applies one chunk.
func (s *geminiStream) chunk(ch *geminiChunk) {
	r := s.r
	if e := ch.Error; e != nil {
		r.Error = &APIError{Type: e.Status, Message: e.Message}
		if code, ok := jsonString(e.Code); ok {
			r.Error.Code = code
		} else if !isNull(e.Code) {
			r.Error.Code = string(compactJSON(e.Code))
		}
	}
	if r.ID == "" {
		r.ID = ch.ResponseID
	}
	if r.Model == "" {
		r.Model = ch.ModelVersion
	}
	if ch.UsageMetadata != nil {
		s.usage = ch.UsageMetadata
	}
	if pf := ch.PromptFeedback; pf != nil && pf.BlockReason != "" {
		s.blocked = pf.BlockReason
	}
	for i := range ch.Candidates {
		cj := &ch.Candidates[i]
		c := s.candidate(cj.Index)
		if cj.Content != nil {
			for _, raw := range cj.Content.Parts {
				if p, ok := geminiDecodePart(raw); ok {
					c.add(p)
				}
			}
		}
		if cj.FinishReason != "" {
			c.finish = cj.FinishReason
		}
		if !isNull(cj.GroundingMetadata) {
			c.grounding = cj.GroundingMetadata
		}
	}
}

// other keeps data, a chunk of an unexpected shape, as a PartOther of
// candidate 0.
func (s *geminiStream) other(data []byte) {
	s.candidate(0).push(Part{Type: PartOther, Raw: compactJSON(data)})
}

// finish moves the candidates and usage into the response. whole is set
// for a body that was one JSON document.
func (s *geminiStream) finish(whole bool) {
	r := s.r
	if s.usage != nil {
		r.Usage = s.usage.usage()
	}
	slices.SortStableFunc(s.cands, func(a, b *geminiCandidate) int { return a.index - b.index })
	done := len(s.cands) > 0
	for _, c := range s.cands {
		done = done && c.finish != ""
	}
	r.Complete = whole || done || s.blocked != ""
	if len(s.cands) > 0 {
		r.StopReason = s.cands[0].finish
	}
	if r.StopReason == "" {
		r.StopReason = s.blocked
	}
	for i, c := range s.cands {
		c.close()
		if !whole && c.finish == "" && len(c.parts) > 0 {
			c.parts[len(c.parts)-1].Partial = true
		}
		if c.grounding != nil {
			raw := append([]byte(`{"groundingMetadata":`), compactJSON(c.grounding)...)
			c.parts = append(c.parts, Part{Type: PartOther, Raw: append(raw, '}')})
		}
		if i == 0 {
			r.Parts = c.parts
		} else {
			r.Choices = append(r.Choices, c.parts)
		}
	}
}

func decodeGeminiResponse(body []byte) (*Response, error) {
	b := bytes.TrimLeft(body, " \t\r\n")
	switch {
	case len(b) > 0 && b[0] == '{':
		return decodeGeminiObject(body)
	case len(b) > 0 && b[0] == '[':
		return decodeGeminiArray(body)
	}
	return decodeGeminiSSE(body)
}

// decodeGeminiObject decodes a generateContent body or an error body.
func decodeGeminiObject(body []byte) (*Response, error) {
	var ch geminiChunk
	if err := json.Unmarshal(body, &ch); err != nil {
		return nil, jsonAt(err)
	}
	s := &geminiStream{r: &Response{}}
	s.chunk(&ch)
	s.finish(true)
	return s.r, nil
}

// decodeGeminiArray decodes a streamGenerateContent body without alt=sse:
// a JSON array of chunks, read as far as it goes when cut short. A chunk
// of an unexpected shape is kept as a PartOther.
func decodeGeminiArray(body []byte) (*Response, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil {
		return nil, jsonAt(err)
	}
	s := &geminiStream{r: &Response{Stream: true}}
	n := 0
	for dec.More() {
		start := dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if n == 0 {
				if errors.Is(err, io.ErrUnexpectedEOF) {
					return nil, fmt.Errorf("chunk 1 at byte %d: %w", start, err)
				}
				return nil, fmt.Errorf("chunk 1: %w", jsonAt(err))
			}
			break
		}
		n++
		var ch geminiChunk
		if err := json.Unmarshal(raw, &ch); err != nil {
			s.other(raw)
			continue
		}
		s.chunk(&ch)
	}
	s.r.Events = n
	s.finish(false)
	return s.r, nil
}

// decodeGeminiSSE decodes an alt=sse stream, one chunk per event. An
// event whose data is not JSON (the last one, when the stream was cut
// inside it) is skipped; the body is an error only when no event decodes.
func decodeGeminiSSE(body []byte) (*Response, error) {
	s := newGeminiSSE()
	Events(body, func(ev Event) bool { s.take(ev); return true })
	return s.end(int64(len(body)))
}

// geminiSSE decodes an alt=sse stream event by event.
type geminiSSE struct {
	s   *geminiStream
	dec eventDecoder[geminiChunk]
}

func newGeminiSSE() *geminiSSE {
	s := &geminiStream{r: &Response{Stream: true}}
	return &geminiSSE{s: s, dec: eventDecoder[geminiChunk]{
		mk:    func() geminiChunk { return geminiChunk{} },
		fn:    func(_ Event, ch *geminiChunk) { s.chunk(ch) },
		other: s.other,
	}}
}

func (g *geminiSSE) take(ev Event) { g.dec.take(ev) }

// spills returns nothing: Gemini texts are held whole.
func (g *geminiSSE) spills() []*textBuf { return nil }

func (g *geminiSSE) end(size int64) (*Response, error) {
	n, err := g.dec.result(size)
	g.s.r.Events = n
	if err != nil {
		return nil, err
	}
	g.s.finish(false)
	return g.s.r, nil
}
