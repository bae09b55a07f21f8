package derive

import (
	"fmt"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/bbengine/bbengine/codec/redact"
)

// An imported session's events go to the store and, in the same pass,
// to its memory derivation, which would otherwise read them back and
// decode them (a tenth of an import's CPU). The events handed over must
// be what that decoding gives, so that memory derived from them is the
// memory RebuildMemory derives from the store. encodeHanded makes them so:
//
//   - json.RawMessage fields decode as encoding/json wrote them: compact,
//     with <, >, &, U+2028 and U+2029 escaped. Each one the eventEncoder
//     wrote otherwise than it was is pointed at its value in the stored
//     bytes.
//   - An empty slice of an omitempty field decodes as nil, a nil
//     RawMessage of a field without omitempty as "null", and a field
//     that is not encoded as its zero value: the eventEncoder sets them so.
//   - A string with invalid UTF-8 is written with U+FFFD in its place,
//     and the redactor may change an event's encoding: such an event is
//     decoded from its stored bytes instead.
//
// TestHandEvents checks on the golden corpora that every event handed
// over equals the decoding of its stored bytes, and TestHandEventTypes
// that Event holds no type the eventEncoder does not know.

// handedArena is the largest arena an eventEncoder copies stored forms
// into (one larger than it has one of its own size).
const handedArena = 1 << 20

// keep returns a copy of b in e's arena, which grows from 64 KiB to
// handedArena bytes: one allocation per arena, not per event.
func (e *eventEncoder) keep(b []byte) []byte {
	if cap(e.arena)-len(e.arena) < len(b) {
		e.arenaSize = min(max(2*e.arenaSize, 64<<10), handedArena)
		e.arena = make([]byte, 0, max(e.arenaSize, len(b)))
	}
	start := len(e.arena)
	e.arena = append(e.arena, b...)
	return e.arena[start:len(e.arena):len(e.arena)]
}

// resetArena makes e copy into new arenas, from 64 KiB: what keep
// returned before stays valid, owned by the caller.
func (e *eventEncoder) resetArena() { e.arena, e.arenaSize = nil, 0 }

// maxHanded is how many bytes of encoded events a pass keeps decoded
// for memory derivation; the sessions beyond it read theirs back. A pass
// of an import derives what about pipeDerive (16 MiB) of records
// brought (at 20 copies of the golden corpus at most 20 MB of events),
// so nearly every session is handed over, and the memory this holds
// stays bounded whatever the sessions' sizes.
const maxHanded = 24 << 20

// normalIn and normalOut mark the bytes appendNormal stops at inside a
// string and outside one: the quote, the backslash, the bytes encoding/json
// escapes (<, >, & and the first byte of U+2028 and U+2029) and, outside
// a string, whitespace.
var normalIn, normalOut = func() (in, out [256]bool) {
	for _, c := range []byte("\"\\<>&\xe2") {
		in[c], out[c] = true, true
	}
	for _, c := range []byte(" \t\n\r") {
		out[c] = true
	}
	return in, out
}()

// appendNormal appends src, valid JSON, to dst as encoding/json's
// compaction of a Marshaler's output writes it.
func appendNormal(dst, src []byte) []byte {
	const hex = "0123456789abcdef"
	in, start := false, 0
	for i := 0; i < len(src); i++ {
		tab := &normalOut
		if in {
			tab = &normalIn
		}
		for i < len(src) && !tab[src[i]] {
			i++
		}
		if i == len(src) {
			break
		}
		switch c := src[i]; {
		case c == '<' || c == '>' || c == '&':
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			start = i + 1
		case c == 0xE2:
			if i+2 < len(src) && src[i+1] == 0x80 && src[i+2]&^1 == 0xA8 {
				dst = append(dst, src[start:i]...)
				dst = append(dst, '\\', 'u', '2', '0', '2', hex[src[i+2]&0xF])
				i += 2
				start = i + 1
			}
		case c == '\\':
			i++ // the escaped byte: one of "\/bfnrtu, in a string
		case c == '"':
			in = !in
		default: // whitespace outside a string
			dst = append(dst, src[start:i]...)
			start = i + 1
		}
	}
	return append(dst, src[start:]...)
}

// encodeHanded returns ev's stored form, its JSON encoding redacted, and
// makes *ev what decoding that gives. enc is a scratch encoder, its
// buffer reused. The stored form is copied into enc's arena: it stays
// valid until the next resetArena.
func encodeHanded(enc *eventEncoder, ev *Event, red *redact.Redactor) ([]byte, error) {
	enc.reset()
	enc.event(ev)
	if enc.err != nil {
		return nil, fmt.Errorf("encode: %w", enc.err)
	}
	b := enc.b
	stored := red.JSON(b)
	// The redactor returns b itself when it changed nothing.
	if len(stored) == len(b) && &stored[0] == &b[0] {
		stored = enc.keep(b)
		if !enc.invalid {
			enc.fix(stored)
			return stored, nil
		}
	}
	*ev = Event{}
	if err := jsonv1.Unmarshal(stored, ev); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	return stored, nil
}
