package jsonedit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

// Object is a JSON object that keeps its keys in order.
type Object struct {
	keys []string
	vals map[string]any
}

// NewObject returns an object with the key/value pairs kv, in order.
func NewObject(kv ...any) *Object {
	o := &Object{vals: map[string]any{}}
	for i := 0; i+1 < len(kv); i += 2 {
		o.Set(kv[i].(string), kv[i+1])
	}
	return o
}

// Len is the number of keys.
func (o *Object) Len() int { return len(o.keys) }

// Keys returns the keys in order; the caller may keep the slice.
func (o *Object) Keys() []string { return slices.Clone(o.keys) }

// Get returns the value of key.
func (o *Object) Get(key string) (any, bool) {
	v, ok := o.vals[key]
	return v, ok
}

// Set gives key the value v: in its place when it exists, else last.
func (o *Object) Set(key string, v any) {
	if o.vals == nil {
		o.vals = map[string]any{}
	}
	if _, ok := o.vals[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.vals[key] = v
}

// Delete removes key and reports whether it was there.
func (o *Object) Delete(key string) bool {
	if _, ok := o.vals[key]; !ok {
		return false
	}
	delete(o.vals, key)
	o.keys = slices.DeleteFunc(o.keys, func(k string) bool { return k == key })
	return true
}

// SyntaxError is a document that is not JSON, with the line and column
// (both from 1, the column in bytes) where reading stopped.
type SyntaxError struct {
	Line, Col int
	Offset    int64
	Msg       string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Col, e.Msg)
}

// Parse reads one JSON value that fills b (surrounding white space
// aside). An object's duplicate key keeps its first place and its last
// value, as JavaScript's JSON.parse does.
func Parse(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	v, err := parseValue(dec)
	if err != nil {
		// The decoder's token offsets are approximate; Unmarshal's
		// error says exactly how far the text is JSON.
		var whole any
		if uerr := json.Unmarshal(b, &whole); uerr != nil {
			err = uerr
		}
		var se *json.SyntaxError
		if errors.As(err, &se) && se.Offset > 0 && se.Offset <= int64(len(b)) && se.Error() != "unexpected end of JSON input" {
			return nil, syntaxError(b, se.Offset-1, se.Error()) // the bad byte is the last one read
		}
		if errors.As(err, &se) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, syntaxError(b, int64(len(b)), "unexpected end of the file")
		}
		return nil, syntaxError(b, dec.InputOffset(), err.Error())
	}
	end := dec.InputOffset()
	if _, err := dec.Token(); err != io.EOF {
		for end < int64(len(b)) && strings.IndexByte(" \t\r\n", b[end]) >= 0 {
			end++
		}
		return nil, syntaxError(b, end, "text after the end of the JSON value")
	}
	return v, nil
}

// syntaxError is a *SyntaxError at byte off of b.
func syntaxError(b []byte, off int64, msg string) error {
	off = min(max(off, 0), int64(len(b)))
	line, col := 1, 1
	for _, c := range b[:off] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &SyntaxError{Line: line, Col: col, Offset: off, Msg: msg}
}

func parseValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &Object{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, &json.SyntaxError{Offset: dec.InputOffset()}
				}
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				o.Set(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return o, nil
		case '[':
			a := []any{}
			for dec.More() {
				v, err := parseValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return a, nil
		}
		return nil, &json.SyntaxError{Offset: dec.InputOffset()}
	default:
		return t, nil
	}
}

// FromGo converts a value built of Go maps and slices (what
// encoding/json marshals) into a document; map keys come in sorted
// order.
func FromGo(v any) any {
	switch t := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		o := &Object{vals: map[string]any{}}
		for _, k := range keys {
			o.Set(k, FromGo(t[k]))
		}
		return o
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = FromGo(e)
		}
		return out
	case []string:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = e
		}
		return out
	case int:
		return json.Number(fmt.Sprint(t))
	default:
		return v
	}
}

// ToGo converts a document into Go maps and slices, for
// encoding/json; numbers stay json.Number.
func ToGo(v any) any {
	switch t := v.(type) {
	case *Object:
		m := make(map[string]any, len(t.keys))
		for _, k := range t.keys {
			m[k] = ToGo(t.vals[k])
		}
		return m
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = ToGo(e)
		}
		return out
	}
	return v
}

// Equal reports whether two documents are the same value, key order
// aside.
func Equal(a, b any) bool {
	return bytes.Equal(canonical(a), canonical(b))
}

func canonical(v any) []byte {
	var sortKeys func(v any) any
	sortKeys = func(v any) any {
		switch t := v.(type) {
		case *Object:
			o := &Object{vals: map[string]any{}}
			keys := t.Keys()
			sort.Strings(keys)
			for _, k := range keys {
				o.Set(k, sortKeys(t.vals[k]))
			}
			return o
		case []any:
			out := make([]any, len(t))
			for i, e := range t {
				out[i] = sortKeys(e)
			}
			return out
		}
		return v
	}
	return Format(sortKeys(v))
}

// Format writes v with a two-space indent and a final newline.
func Format(v any) []byte {
	var b bytes.Buffer
	write(&b, v, "")
	b.WriteByte('\n')
	return b.Bytes()
}

func write(b *bytes.Buffer, v any, indent string) {
	switch t := v.(type) {
	case *Object:
		if t == nil || len(t.keys) == 0 {
			b.WriteString("{}")
			return
		}
		b.WriteString("{\n")
		for i, k := range t.keys {
			b.WriteString(indent + "  ")
			writeString(b, k)
			b.WriteString(": ")
			write(b, t.vals[k], indent+"  ")
			if i < len(t.keys)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "}")
	case []any:
		if len(t) == 0 {
			b.WriteString("[]")
			return
		}
		b.WriteString("[\n")
		for i, e := range t {
			b.WriteString(indent + "  ")
			write(b, e, indent+"  ")
			if i < len(t)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "]")
	case string:
		writeString(b, t)
	case json.Number:
		b.WriteString(string(t))
	case nil:
		b.WriteString("null")
	default:
		j, err := json.Marshal(t)
		if err != nil {
			panic(fmt.Sprintf("jsonedit: a %T in a document: %v", v, err))
		}
		b.Write(j)
	}
}

// writeString quotes s as JSON.stringify does: only quotes, backslashes
// and control characters are escaped.
func writeString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\b':
			b.WriteString(`\b`)
		case r == '\f':
			b.WriteString(`\f`)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// Line returns line n (from 1) of b without its surrounding white
// space, for an error message to quote.
func Line(b []byte, n int) string {
	ls := strings.Split(string(b), "\n")
	if n < 1 || n > len(ls) {
		return ""
	}
	return strings.TrimSpace(ls[n-1])
}
