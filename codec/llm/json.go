package llm

// JSON helpers shared by the decoders. They live in a
// file of their own so that the provider files read as mappings only.

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/bbengine/bbengine/codec/jsonscan"
)

// jsonAt rewrites an encoding/json error from decoding a whole body so
// that it names the byte offset: "at byte 17: invalid character …" for a
// syntax error, "at byte 3: want object, got array" for a value of the
// wrong kind. Other errors are returned as they are.
func jsonAt(err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("at byte %d: %w", se.Offset, err)
	case errors.As(err, &te):
		return fmt.Errorf("at byte %d: %w", te.Offset, inField(te.Field, &json.UnmarshalTypeError{Value: te.Value, Type: te.Type}))
	}
	return err
}

// shapeError is a value of the wrong kind inside a body whose syntax is
// sound. Its offset inside the nested value would mislead, so it names
// the JSON path instead: "messages[3].content: want string or array, got
// number".
type shapeError struct {
	path string
	msg  string
}

func (e *shapeError) Error() string {
	if e.path == "" {
		return e.msg
	}
	return e.path + ": " + e.msg
}

// inField returns err as a shapeError under path: the path of a nested
// shapeError, or the field of an encoding/json type error, is appended to
// it. Nested paths begin with "[" or ".".
func inField(path string, err error) error {
	var se *shapeError
	if errors.As(err, &se) {
		return &shapeError{path: path + se.path, msg: se.msg}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			path += "." + te.Field
		}
		return &shapeError{path: path, msg: fmt.Sprintf("want %s, got %s", jsonKind(te.Type), te.Value)}
	}
	return &shapeError{path: path, msg: err.Error()}
}

// wrongKind is the shapeError of a value at path whose kind is none of
// want.
func wrongKind(path, want string, raw []byte) error {
	return &shapeError{path: path, msg: fmt.Sprintf("want %s, got %s", want, valueKind(raw))}
}

// jsonKind names the JSON kind a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "value"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice, reflect.Array:
		return "array"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return t.String()
}

// valueKind names the kind of the JSON value raw starts with.
func valueKind(raw []byte) string {
	b := bytes.TrimLeft(raw, " \t\r\n")
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// isNull reports whether raw is absent or the JSON null.
func isNull(raw []byte) bool {
	b := bytes.TrimSpace(raw)
	return len(b) == 0 || string(b) == "null"
}

// compactJSON returns raw without insignificant whitespace, in a new slice
// the caller owns; nil when raw is absent. Invalid JSON comes back nil.
func compactJSON(raw []byte) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var b bytes.Buffer
	b.Grow(len(raw))
	if err := json.Compact(&b, raw); err != nil {
		return nil
	}
	return json.RawMessage(b.Bytes())
}

// compactBlock is compactJSON for a content block kept as Raw: a
// top-level "cache_control" key, a client's caching hint rather than
// content, is dropped (the remaining keys are then sorted by name).
func compactBlock(raw []byte) json.RawMessage {
	if !bytes.Contains(raw, []byte(`"cache_control"`)) {
		return compactJSON(raw)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return compactJSON(raw)
	}
	if _, ok := m["cache_control"]; !ok {
		return compactJSON(raw)
	}
	delete(m, "cache_control")
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return compactJSON(raw)
	}
	return json.RawMessage(bytes.TrimRight(b.Bytes(), "\n"))
}

// jsonString returns the string raw holds, and whether raw is a JSON
// string at all.
func jsonString(raw []byte) (string, bool) {
	if valueKind(raw) != "string" {
		return "", false
	}
	if t := bytes.TrimSpace(raw); len(t) > longString {
		// A long text (a prompt of megabytes) is unquoted into one
		// buffer that becomes the string, not copied twice as
		// encoding/json does. Input it finds invalid (bad UTF-8, a lone
		// surrogate) takes the encoding/json path, which decides as it
		// always has.
		if b, err := jsontext.AppendUnquote(make([]byte, 0, len(t)), t); err == nil {
			return unsafe.String(unsafe.SliceData(b), len(b)), true
		}
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

// longString is the length of a JSON string above which jsonString
// unquotes it itself.
const longString = 64 << 10

// base64Digest returns the length and the hex SHA-256 of the bytes the
// base64 text s decodes to, without holding them: the standard and the
// URL-safe alphabets are accepted, padded or not, with line breaks. Text
// that is empty or not base64 gives 0 and "".
func base64Digest(s string) (int64, string) {
	if s == "" {
		return 0, ""
	}
	enc := base64.StdEncoding
	if strings.ContainsAny(s, "-_") {
		enc = base64.URLEncoding
	}
	s = strings.TrimRight(s, "=\r\n")
	h := sha256.New()
	n, err := io.Copy(h, base64.NewDecoder(enc.WithPadding(base64.NoPadding), strings.NewReader(s)))
	if err != nil {
		return 0, ""
	}
	return n, hex.EncodeToString(h.Sum(nil))
}

// topObject decodes a request body, which must be one JSON object, into
// its top-level fields. Errors name the byte offset.
func topObject(body []byte) (map[string]rawJSON, error) {
	// jsonscan validates and splits at ten times encoding/json's speed
	// (a request resends the whole conversation); a document it refuses
	// goes through encoding/json for its usual error.
	top := make(map[string]rawJSON, 8)
	if jsonscan.Fields(body, func(k, v []byte) bool {
		top[string(k)] = v
		return true
	}) == nil {
		return top, nil
	}
	top = nil
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, jsonAt(err)
	}
	if top == nil {
		return nil, fmt.Errorf("at byte 0: want object, got null")
	}
	return top, nil
}

// rawJSON is a json.RawMessage that aliases the bytes it is decoded from
// instead of copying them: a request decoder holds the body once, not
// once per level of nesting. The body must not change while the values
// are in use (a decoded Request copies what it keeps).
type rawJSON []byte

// UnmarshalJSON keeps data itself: json.Unmarshal passes a slice of its
// input, which the caller owns.
func (r *rawJSON) UnmarshalJSON(data []byte) error {
	*r = data
	return nil
}

// elements splits a JSON array into its elements (aliasing raw), as
// json.Unmarshal into a []json.RawMessage does, with its errors.
func elements(raw []byte) ([]rawJSON, error) {
	var items []rawJSON
	if jsonscan.Elements(raw, func(_ int, v []byte) bool {
		items = append(items, v)
		return true
	}) == nil {
		return items, nil
	}
	items = nil
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, err
	}
	return items, nil
}

// roleContent reads the role and content members of a conversation
// element (content named by contentName) as json.Unmarshal into
// struct{Role string; Content rawJSON} reads them: names matched
// ignoring case, the last of a repeated name winning, a null role
// leaving the role as it was. It scans the element once, at jsonscan's
// speed, where json.Unmarshal validates it and then decodes it. ok is
// false when it cannot say the same (not an object, a role that is not
// a string or null, a syntax error): the caller then decodes with
// encoding/json, for its usual result and error.
func roleContent(item []byte, contentName string) (role string, content rawJSON, ok bool) {
	var roleRaw []byte
	other := false
	if jsonscan.Fields(item, func(k, v []byte) bool {
		switch {
		case bytes.EqualFold(k, []byte("role")):
			switch {
			case string(v) == "null":
				// json.Unmarshal leaves a string as it was.
			case v[0] != '"':
				// An error for json.Unmarshal, wherever it is.
				other = true
				return false
			default:
				roleRaw = v
			}
		case bytes.EqualFold(k, []byte(contentName)):
			content = v
		}
		return true
	}) != nil || other {
		return "", nil, false
	}
	switch {
	case roleRaw == nil:
	case bytes.IndexByte(roleRaw, '\\') < 0 && utf8.Valid(roleRaw):
		role = string(roleRaw[1 : len(roleRaw)-1])
	default:
		if json.Unmarshal(roleRaw, &role) != nil {
			return "", nil, false
		}
	}
	return role, content, true
}

// CanonicalJSON re-encodes a JSON value with sorted object keys, so that
// key order and white space do not change a hash or fingerprint of it;
// invalid JSON is returned as it is.
func CanonicalJSON(b json.RawMessage) []byte {
	if len(b) == 0 {
		return nil
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return b
	}
	out, err := json.Marshal(v)
	if err != nil {
		return b
	}
	return out
}
