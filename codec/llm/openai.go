package llm

// This file holds what the OpenAI Chat Completions and Responses decoders
// share: tolerant string fields, content parts (both APIs' part types are
// decoded by one function, since their type names do not collide), data
// URLs, error objects, tool names and request parameters. Every
// package-level name here starts with oai so that it cannot collide with
// the other providers' decoders.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// oaiText is a string field that tolerates other JSON types: a string
// decodes as itself, anything else (null, a number, an object) as "".
// Providers that speak "OpenAI-compatible" disagree on the type of fields
// such as reasoning, and one odd field must not cost the whole chunk.
type oaiText string

// UnmarshalJSON implements json.Unmarshaler.
func (t *oaiText) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '"' {
		*t = ""
		return nil
	}
	s, err := oaiString(b)
	*t = oaiText(s)
	return err
}

// oaiString decodes a JSON string. Most strings of a stream (ids, short
// deltas) have no escapes and are valid UTF-8; they are copied as they
// are, which saves encoding/json a decoder per field.
func oaiString(b []byte) (string, error) {
	if n := len(b); n >= 2 && b[n-1] == '"' {
		in := b[1 : n-1]
		if bytes.IndexByte(in, '\\') < 0 && bytes.IndexByte(in, '"') < 0 && utf8.Valid(in) {
			return string(in), nil
		}
	}
	var s string
	err := json.Unmarshal(b, &s)
	return s, err
}

// oaiArgs is a tool call's arguments: normally a string holding JSON, but
// some servers send the JSON object itself, which is kept as its text.
// null decodes as "".
type oaiArgs string

// UnmarshalJSON implements json.Unmarshaler.
func (a *oaiArgs) UnmarshalJSON(b []byte) error {
	switch {
	case len(b) == 0 || string(b) == "null":
		*a = ""
	case b[0] == '"':
		s, err := oaiString(b)
		if err != nil {
			return err
		}
		*a = oaiArgs(s)
	default:
		*a = oaiArgs(b)
	}
	return nil
}

// oaiJSONError adds a byte offset to an error from decoding JSON that
// starts at offset base of the body, so that an error about a recorded
// body says where to look: for a syntax error the offset of the offending
// byte (the end of the input when it ended early), for a type error the
// offset encoding/json reports, which is just after the value or just
// after its opening bracket.
func oaiJSONError(err error, base int) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		// Offset counts the bytes read, the offending one included; at
		// the end of the input there is no offending byte.
		off := int(se.Offset)
		if !strings.HasPrefix(se.Error(), "unexpected end") {
			off = max(0, off-1)
		}
		return fmt.Errorf("invalid JSON at byte offset %d: %w", base+off, err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("unexpected JSON %s near byte offset %d: %w", te.Value, base+int(te.Offset), err)
	}
	return err
}

// oaiObjectStart returns the offset of the first byte of body that is not
// JSON whitespace, and whether that byte opens an object.
func oaiObjectStart(body []byte) (int, bool) {
	n := len(body) - len(bytes.TrimLeft(body, " \t\r\n"))
	return n, n < len(body) && body[n] == '{'
}

// oaiDecodeObject decodes a request body, which must be one JSON object,
// into v and into its top-level fields. Errors name the byte offset.
func oaiDecodeObject(body []byte, v any) (map[string]json.RawMessage, error) {
	if err := json.Unmarshal(body, v); err != nil {
		return nil, oaiJSONError(err, 0)
	}
	if off, ok := oaiObjectStart(body); !ok {
		return nil, fmt.Errorf("body is not a JSON object (byte offset %d)", off)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, oaiJSONError(err, 0)
	}
	return fields, nil
}

// oaiParams returns every top-level field not in skip as a Param, sorted
// by name, its value compacted. A null value is kept: a client that sends
// "temperature": null sent something.
func oaiParams(fields map[string]json.RawMessage, skip ...string) []Param {
	var ps []Param
	for name, v := range fields {
		if slices.Contains(skip, name) {
			continue
		}
		ps = append(ps, Param{Name: name, Value: compactJSON(v)})
	}
	slices.SortFunc(ps, func(a, b Param) int { return strings.Compare(a.Name, b.Name) })
	return ps
}

// oaiToolCall returns a tool call part whose arguments arrived as the
// text args: Input holds them compacted when they are one JSON value;
// otherwise Input is empty and Text holds them as sent.
func oaiToolCall(id, name, args string) Part {
	p := Part{Type: PartToolCall, ID: id, Name: name}
	if in := compactJSON([]byte(args)); in != nil {
		p.Input = in
	} else {
		p.Text = args
	}
	return p
}

// oaiAPIError decodes an error field: an object {message, type, code} (the
// code a string or a number), or a bare string. It returns nil for an
// absent or null field.
func oaiAPIError(raw json.RawMessage) *APIError {
	if isNull(raw) {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return &APIError{Message: s}
	}
	var e struct {
		Message oaiText         `json:"message"`
		Type    oaiText         `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return &APIError{Message: string(compactJSON(raw))}
	}
	return &APIError{Type: string(e.Type), Code: oaiCode(e.Code), Message: string(e.Message)}
}

// oaiCode returns an error code as text: a string as itself, a number as
// its digits, null as "".
func oaiCode(raw json.RawMessage) string {
	if isNull(raw) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(compactJSON(raw))
}

// oaiToolNames returns the names of the tools offered: a function or
// custom tool's name (Chat nests it under function or custom, Responses
// does not), an MCP tool's server label, and a built-in tool (web_search,
// local_shell, code_interpreter, …) by its type.
func oaiToolNames(tools []json.RawMessage) []string {
	var names []string
	for _, raw := range tools {
		var t struct {
			Type        oaiText `json:"type"`
			Name        oaiText `json:"name"`
			ServerLabel oaiText `json:"server_label"`
			Function    struct {
				Name oaiText `json:"name"`
			} `json:"function"`
			Custom struct {
				Name oaiText `json:"name"`
			} `json:"custom"`
		}
		if json.Unmarshal(raw, &t) != nil {
			continue
		}
		for _, n := range []oaiText{t.Function.Name, t.Custom.Name, t.Name, t.ServerLabel, t.Type} {
			if n != "" {
				names = append(names, string(n))
				break
			}
		}
	}
	return names
}

// oaiContentPart is one content part of either API. Chat uses text,
// image_url {url}, input_audio, file {file_data, file_id, filename} and
// refusal; Responses uses input_text, output_text, input_image
// (image_url as a string, or file_id), input_file, refusal and
// input_audio.
type oaiContentPart struct {
	Type       oaiText         `json:"type"`
	Text       oaiText         `json:"text"`
	Refusal    oaiText         `json:"refusal"`
	ImageURL   json.RawMessage `json:"image_url"`
	FileID     oaiText         `json:"file_id"`
	FileData   oaiText         `json:"file_data"`
	FileURL    oaiText         `json:"file_url"`
	Filename   oaiText         `json:"filename"`
	File       *oaiFile        `json:"file"`
	InputAudio *struct {
		Data   oaiText `json:"data"`
		Format oaiText `json:"format"`
	} `json:"input_audio"`
}

// oaiFile is a file content part's file: inline data, a stored file's
// id, and a name.
type oaiFile struct {
	FileData oaiText `json:"file_data"`
	FileID   oaiText `json:"file_id"`
	Filename oaiText `json:"filename"`
}

// oaiContent decodes message content: a string (one text part, none when
// empty), an array of content parts, or null (no parts). Anything else
// is kept as one PartOther.
func oaiContent(raw json.RawMessage) []Part {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || string(t) == "null" {
		return nil
	}
	switch t[0] {
	case '"':
		var s string
		if json.Unmarshal(t, &s) != nil || s == "" {
			return nil
		}
		return []Part{{Type: PartText, Text: s}}
	case '[':
		var items []json.RawMessage
		if json.Unmarshal(t, &items) != nil {
			break
		}
		parts := make([]Part, 0, len(items))
		for _, it := range items {
			if p, ok := oaiPart(it); ok {
				parts = append(parts, p)
			}
		}
		return parts
	}
	return []Part{{Type: PartOther, Raw: compactJSON(t)}}
}

// oaiPart decodes one content part; ok is false for an empty text part
// and a null.
func oaiPart(raw json.RawMessage) (Part, bool) {
	if isNull(raw) {
		return Part{}, false
	}
	other := Part{Type: PartOther, Raw: compactJSON(raw)}
	var c oaiContentPart
	if json.Unmarshal(raw, &c) != nil {
		return other, true
	}
	switch c.Type {
	case "text", "input_text", "output_text", "summary_text", "reasoning_text":
		return Part{Type: PartText, Text: string(c.Text)}, c.Text != ""
	case "refusal":
		return Part{Type: PartRefusal, Text: string(c.Refusal)}, true
	case "image_url", "input_image", "computer_screenshot":
		p := Part{Type: PartImage}
		var u string
		if json.Unmarshal(c.ImageURL, &u) != nil {
			var o struct {
				URL oaiText `json:"url"`
			}
			if json.Unmarshal(c.ImageURL, &o) == nil {
				u = string(o.URL)
			}
		}
		switch {
		case u != "":
			oaiSetURL(&p, u)
		case c.FileID != "":
			// A stored file has no URL or bytes to describe; the part
			// as sent is the only record of which file it was.
			p.Raw = other.Raw
		}
		return p, true
	case "file", "input_file":
		f := oaiFile{FileData: c.FileData, FileID: c.FileID, Filename: c.Filename}
		if c.File != nil {
			f = *c.File
		}
		p := Part{Type: PartDocument, Name: string(f.Filename)}
		switch {
		case f.FileData != "":
			data := string(f.FileData)
			if strings.HasPrefix(data, "data:") {
				oaiSetURL(&p, data)
			} else {
				p.Size, p.SHA256 = base64Digest(data)
			}
		case c.FileURL != "":
			p.URL = string(c.FileURL)
		case f.FileID != "":
			p.Raw = other.Raw
		}
		return p, true
	case "input_audio":
		// Audio keeps the shape of a PartOther but not the base64 data,
		// which the WAL holds; MediaType, Size and SHA256 describe it.
		p := Part{Type: PartOther, Raw: json.RawMessage(`{"type":"input_audio"}`)}
		if a := c.InputAudio; a != nil {
			if a.Format != "" {
				p.MediaType = "audio/" + string(a.Format)
			}
			p.Size, p.SHA256 = base64Digest(string(a.Data))
		}
		return p, true
	}
	return other, true
}

// oaiSetURL describes an image or document given by URL: a data: URL by
// its media type and the size and SHA-256 of its decoded bytes (which
// are not kept), any other URL as itself.
func oaiSetURL(p *Part, u string) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		p.URL = u
		return
	}
	meta, data, ok := strings.Cut(rest, ",")
	if !ok {
		// Not a data URL after all; keep it as sent.
		p.URL = u
		return
	}
	params := strings.Split(meta, ";")
	p.MediaType = params[0]
	if slices.Contains(params[1:], "base64") {
		p.Size, p.SHA256 = base64Digest(data)
		return
	}
	b := []byte(data)
	if s, err := url.PathUnescape(data); err == nil {
		b = []byte(s)
	}
	sum := sha256.Sum256(b)
	p.Size, p.SHA256 = int64(len(b)), hex.EncodeToString(sum[:])
}

// oaiTexts returns the text of the text parts of parts, joined by sep.
func oaiTexts(parts []Part, sep string) string {
	var ts []string
	for _, p := range parts {
		if p.Type == PartText {
			ts = append(ts, p.Text)
		}
	}
	return strings.Join(ts, sep)
}

// oaiToolResult returns a tool result part for id from output content:
// its text parts joined by newlines become Text, any other parts (images,
// files) Content.
func oaiToolResult(id string, content []Part) Part {
	p := Part{Type: PartToolResult, ID: id}
	var ts []string
	for _, c := range content {
		if c.Type == PartText {
			ts = append(ts, c.Text)
		} else {
			p.Content = append(p.Content, c)
		}
	}
	p.Text = strings.Join(ts, "\n")
	return p
}

// oaiStreamError is the error for an event stream of which no event could
// be read: the first event's error, or the absence of any event.
func oaiStreamError(events int, first error) error {
	if first != nil {
		return fmt.Errorf("no event could be decoded: %w", first)
	}
	return fmt.Errorf("no SSE data event found (%d events)", events)
}

// oaiEventError names the event number (counted from 1) and its byte
// offset in body, and where its data went wrong: as an offset in body
// when data is a slice of body (an event with one data line), else as an
// offset in the data.
func oaiEventError(n int, ev Event, body, data []byte, err error) error {
	if len(data) > 0 && ev.dataAt > 0 {
		off := ev.dataAt - 1 + cap(ev.Data) - cap(data)
		return fmt.Errorf("event %d at byte offset %d: %w", n, ev.Offset, oaiJSONError(err, off))
	}
	if len(data) > 0 && len(body) > 0 {
		if off := cap(body) - cap(data); off >= 0 && off+len(data) <= len(body) && &body[off] == &data[0] {
			return fmt.Errorf("event %d at byte offset %d: %w", n, ev.Offset, oaiJSONError(err, off))
		}
	}
	return fmt.Errorf("event %d at byte offset %d: in its data: %w", n, ev.Offset, oaiJSONError(err, 0))
}

// oaiLeadingSystem moves the texts of the system (and developer) messages
// that open msgs to system and returns the rest: those are the system
// prompt; later ones stay in the conversation.
func oaiLeadingSystem(system []string, msgs []Message) ([]string, []Message) {
	i := 0
	for ; i < len(msgs) && msgs[i].Role == "system"; i++ {
		if t := oaiTexts(msgs[i].Parts, "\n\n"); t != "" {
			system = append(system, t)
		}
	}
	return system, msgs[i:]
}
