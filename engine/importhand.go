package engine

import (
	"bytes"
	"encoding/json"
	"fmt"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/bbengine/bbengine/codec/llm"
	"github.com/bbengine/bbengine/codec/redact"
)

// An imported session's events go to the store and, in the same pass,
// to its memory derivation, which would otherwise read them back and
// decode them (a tenth of an import's CPU). The events handed over must
// be what that decoding gives, so that memory derived from them is the
// memory RebuildMemory derives from the store. encodeHanded makes them so:
//
//   - json.RawMessage fields decode as encoding/json wrote them: compact,
//     with <, >, &, U+2028 and U+2029 escaped. normalizeEvent rewrites
//     them that way before the event is encoded (which leaves the
//     encoding unchanged).
//   - An empty slice of an omitempty field decodes as nil, a nil
//     RawMessage of a field without omitempty as "null", and a field
//     that is not encoded as its zero value: normalizeEvent sets them so.
//   - A string with invalid UTF-8 is written with U+FFFD in its place,
//     and the redactor may change an event's encoding: such an event
//     (its encoding holds an escaped U+FFFD, or the redactor changed it)
//     is decoded from its stored bytes instead.
//
// TestHandEvents checks on the golden corpora that every event handed
// over equals the decoding of its stored bytes, and TestHandEventTypes
// that Event holds no type normalizeEvent does not know.

// maxHanded is how many bytes of encoded events a pass keeps decoded
// for memory derivation; the sessions beyond it read theirs back.
const maxHanded = 32 << 20

// normalizeEvent makes ev what decoding its JSON encoding gives, but for
// invalid UTF-8 (see encodeHanded).
func normalizeEvent(ev *Event) {
	ev.Extra = normalizeRaw(ev.Extra)
	if len(ev.Parts) == 0 {
		ev.Parts = nil
	}
	for i := range ev.Parts {
		normalizePart(&ev.Parts[i])
	}
	if ev.Tool != nil {
		ev.Tool.Args = normalizeRaw(ev.Tool.Args)
	}
	if ev.Call != nil {
		if len(ev.Call.Params) == 0 {
			ev.Call.Params = nil
		}
		for i := range ev.Call.Params {
			p := &ev.Call.Params[i]
			if p.Value == nil {
				p.Value = json.RawMessage("null")
			} else {
				p.Value = normalizeRaw(p.Value)
			}
		}
	}
	if ev.Record != nil {
		if ev.Record.Raw == nil {
			ev.Record.Raw = json.RawMessage("null")
		} else {
			ev.Record.Raw = normalizeRaw(ev.Record.Raw)
		}
	}
}

func normalizePart(p *llm.Part) {
	p.Input = normalizeRaw(p.Input)
	p.Raw = normalizeRaw(p.Raw)
	p.TrimSHA256 = "" // not encoded
	if len(p.Content) == 0 {
		p.Content = nil
	}
	for i := range p.Content {
		normalizePart(&p.Content[i])
	}
}

// normalizeRaw returns r as encoding/json writes a json.RawMessage:
// compact, with <, >, &, U+2028 and U+2029 escaped (nil when empty: the
// fields it is used for are omitempty). r itself is returned when it is
// so already, a copy otherwise. It assumes r is valid JSON: encoding an
// event with an invalid one fails.
func normalizeRaw(r json.RawMessage) json.RawMessage {
	if len(r) == 0 {
		return nil
	}
	if firstAbnormal(r) < 0 {
		return r
	}
	return appendNormal(make([]byte, 0, len(r)+16), r)
}

// firstAbnormal returns the index of the first byte of r that encoding/json
// would not copy as it is: whitespace outside a string, <, >, & or the
// start of U+2028 or U+2029; or -1.
func firstAbnormal(r []byte) int {
	in, esc := false, false
	for i, c := range r {
		switch {
		case c == '<' || c == '>' || c == '&':
			return i
		case c == 0xE2 && i+2 < len(r) && r[i+1] == 0x80 && r[i+2]&^1 == 0xA8:
			return i
		case esc:
			esc = false
		case in:
			switch c {
			case '\\':
				esc = true
			case '"':
				in = false
			}
		case c == '"':
			in = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			return i
		}
	}
	return -1
}

// appendNormal appends src, valid JSON, to dst as encoding/json's
// compaction of a Marshaler's output writes it.
func appendNormal(dst, src []byte) []byte {
	const hex = "0123456789abcdef"
	in, esc, start := false, false, 0
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '<' || c == '>' || c == '&':
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			start = i + 1
			continue
		case c == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8:
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[src[i+2]&0xF])
			i += 2
			start = i + 1
			continue
		case esc:
			esc = false
		case in:
			switch c {
			case '\\':
				esc = true
			case '"':
				in = false
			}
		case c == '"':
			in = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			dst = append(dst, src[start:i]...)
			start = i + 1
		}
	}
	return append(dst, src[start:]...)
}

// encodeHanded returns ev's stored form, its JSON encoding redacted, and
// makes *ev what decoding that gives.
func encodeHanded(ev *Event, red *redact.Redactor) ([]byte, error) {
	normalizeEvent(ev)
	enc, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("encode: %w", err)
	}
	stored := red.JSON(enc)
	// The redactor returns enc itself when it changed nothing; encoding/json
	// writes an escaped U+FFFD only for invalid UTF-8 (a valid U+FFFD is
	// written as it is).
	if len(stored) == len(enc) && &stored[0] == &enc[0] && !bytes.Contains(enc, []byte(`\ufffd`)) {
		return stored, nil
	}
	*ev = Event{}
	if err := jsonv1.Unmarshal(stored, ev); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return stored, nil
}
