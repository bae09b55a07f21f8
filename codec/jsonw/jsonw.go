// Package jsonw appends JSON values as encoding/json's Marshal writes
// them, byte for byte, without its reflection: for hand-written encoders
// of hot record types (the proxy's exchange frames, the engine's events),
// which fuzz themselves against encoding/json.
//
// It imports nothing of bbengine's.
package jsonw

import (
	"strconv"
	"unicode/utf8"
)

// String appends s as a JSON string as encoding/json does: HTML
// characters, U+2028 and U+2029 escaped, invalid UTF-8 written as
// U+FFFD. invalid reports whether s held invalid UTF-8.
func String(b []byte, s string) (out []byte, invalid bool) {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			invalid = true
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"'), invalid
}

// Str appends s as String does, for callers that do not need to know
// whether it held invalid UTF-8.
func Str(b []byte, s string) []byte {
	b, _ = String(b, s)
	return b
}

// Field appends `,"key":` (or `"key":` right after a '{'): key must need
// no escaping.
func Field(b []byte, key string) []byte {
	if len(b) > 0 && b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, key...)
	return append(b, '"', ':')
}

// Int appends a field with an integer value.
func Int(b []byte, key string, n int64) []byte {
	return strconv.AppendInt(Field(b, key), n, 10)
}

// Bool appends a field with a boolean value.
func Bool(b []byte, key string, v bool) []byte {
	return strconv.AppendBool(Field(b, key), v)
}

// Text appends a field with a string value.
func Text(b []byte, key, s string) []byte {
	return Str(Field(b, key), s)
}

// OptText appends a string field unless s is empty (omitempty).
func OptText(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return Text(b, key, s)
}

// OptInt appends an integer field unless n is 0 (omitempty).
func OptInt(b []byte, key string, n int64) []byte {
	if n == 0 {
		return b
	}
	return Int(b, key, n)
}

// OptBool appends a boolean field unless v is false (omitempty).
func OptBool(b []byte, key string, v bool) []byte {
	if !v {
		return b
	}
	return Bool(b, key, v)
}
