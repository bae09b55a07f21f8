// Package jsonscan finds the members of a JSON object and the elements of
// a JSON array without decoding them: it validates the bytes it passes
// over as encoding/json does and hands back each value as a slice of the
// input, at a speed close to a memory scan.
//
// It is the first step of reading large, mostly repeated documents such
// as the request bodies of a coding agent's session (the whole
// conversation is resent on every turn): a caller finds the few members
// it needs, or hashes the elements of a long array to skip those it has
// already seen, and decodes only the rest with encoding/json.
//
// A document is accepted exactly when encoding/json.Valid accepts it
// (FuzzValid checks this): the same grammar, the same nesting limit, and
// invalid UTF-8 inside strings allowed.
package jsonscan

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// SyntaxError is a JSON syntax error at a byte offset of the input.
type SyntaxError struct {
	Offset int64 // byte offset of the error
	msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.msg)
}

func errAt(off int, msg string) error { return &SyntaxError{Offset: int64(off), msg: msg} }

// Valid reports whether b is one valid JSON value (with white space
// around it).
func Valid(b []byte) bool {
	i := skipSpace(b, 0)
	j, err := skipValue(b, i)
	return err == nil && skipSpace(b, j) == len(b)
}

// Skip returns the offset just past the JSON value that starts at b[i]
// (after white space), having validated it.
func Skip(b []byte, i int) (int, error) {
	return skipValue(b, skipSpace(b, i))
}

// Fields calls fn with the key and the raw value of each member of the
// JSON object b, in order, until fn returns false. The key is unquoted
// (a slice of b unless it holds escapes; fn must not keep it);
// the value is a slice of b without surrounding white space. Everything
// up to where fn stopped (the whole of b when it did not) is validated;
// an error names the byte offset of the first syntax error.
func Fields(b []byte, fn func(key, value []byte) bool) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return errAt(i, "not an object")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return end(b, i+1)
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return errAt(i, "want a string key")
		}
		kEnd, esc, err := skipString(b, i)
		if err != nil {
			return err
		}
		key := b[i+1 : kEnd-1]
		if esc || !utf8.Valid(key) {
			// Rare keys: decode them as encoding/json does (escapes,
			// invalid UTF-8 as U+FFFD).
			var k string
			if err := json.Unmarshal(b[i:kEnd], &k); err != nil {
				return errAt(i, err.Error())
			}
			key = []byte(k)
		}
		i = skipSpace(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return errAt(i, "want ':' after an object key")
		}
		i = skipSpace(b, i+1)
		vEnd, err := skipValue(b, i)
		if err != nil {
			return err
		}
		if !fn(key, b[i:vEnd]) {
			return nil
		}
		i = skipSpace(b, vEnd)
		if i >= len(b) {
			return errAt(i, "unexpected end of object")
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return end(b, i+1)
		default:
			return errAt(i, "want ',' or '}' in an object")
		}
	}
}

// Elements calls fn with the index and the raw value of each element of
// the JSON array b, in order, until fn returns false; validation and
// errors are as for Fields.
func Elements(b []byte, fn func(i int, value []byte) bool) error {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return errAt(i, "not an array")
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return end(b, i+1)
	}
	for n := 0; ; n++ {
		vEnd, err := skipValue(b, i)
		if err != nil {
			return err
		}
		if !fn(n, b[i:vEnd]) {
			return nil
		}
		i = skipSpace(b, vEnd)
		if i >= len(b) {
			return errAt(i, "unexpected end of array")
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return end(b, i+1)
		default:
			return errAt(i, "want ',' or ']' in an array")
		}
	}
}

// end checks that only white space follows offset i.
func end(b []byte, i int) error {
	if j := skipSpace(b, i); j < len(b) {
		return errAt(j, "data after the value")
	}
	return nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// plain marks the bytes a string holds as they are: not '"', '\\' or a
// control character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const (
	lo8 = 0x0101010101010101
	hi8 = 0x8080808080808080
)

// skipString returns the offset past the string that starts at b[i]
// (a '"') and whether it holds escapes.
func skipString(b []byte, i int) (int, bool, error) {
	esc := false
	i++
	for {
		// Eight bytes at a time while none is '"', '\\' or below 0x20
		// (a word test that may stop early, never late), then byte by byte.
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			q, bs := w^(0x22*lo8), w^(0x5c*lo8)
			if ((w-0x20*lo8)&^w|(q-lo8)&^q|(bs-lo8)&^bs)&hi8 != 0 {
				break
			}
			i += 8
		}
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			return i, esc, errAt(i, "unexpected end of string")
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return i + 1, esc, errAt(i+1, "unexpected end of string")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for k := 2; k < 6; k++ {
					if i+k >= len(b) {
						return i + k, esc, errAt(i+k, "unexpected end of string")
					}
					if !isHex(b[i+k]) {
						return i + k, esc, errAt(i+k, "invalid \\u escape")
					}
				}
				i += 6
			default:
				return i + 1, esc, errAt(i+1, "invalid escape")
			}
		default:
			return i, esc, errAt(i, "control character in a string")
		}
	}
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// skipNumber returns the offset past the number that starts at b[i].
func skipNumber(b []byte, i int) (int, error) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return i, errAt(i, "invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return i, errAt(i, "invalid number")
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return i, errAt(i, "invalid number")
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i, nil
}

func skipLiteral(b []byte, i int, lit string) (int, error) {
	for k := 0; k < len(lit); k++ {
		if i+k >= len(b) || b[i+k] != lit[k] {
			return i + k, errAt(i+k, "invalid literal")
		}
	}
	return i + len(lit), nil
}

// skipValue returns the offset past the value that starts at b[i] (no
// white space before it), validating it. Arrays and objects are walked
// with an explicit stack of their kinds, so depth costs no recursion.
func skipValue(b []byte, i int) (int, error) {
	var stack []byte // '{' or '[' per open container
	var small [32]byte
	stack = small[:0]
	for {
		// A value at b[i].
		if i >= len(b) {
			return i, errAt(i, "unexpected end of input")
		}
		var err error
		switch c := b[i]; {
		case c == '"':
			i, _, err = skipString(b, i)
		case c == '-' || isDigit(c):
			i, err = skipNumber(b, i)
		case c == 't':
			i, err = skipLiteral(b, i, "true")
		case c == 'f':
			i, err = skipLiteral(b, i, "false")
		case c == 'n':
			i, err = skipLiteral(b, i, "null")
		case c == '{' || c == '[':
			if len(stack) >= maxDepth {
				return i, errAt(i, "exceeded max depth")
			}
			stack = append(stack, c)
			i = skipSpace(b, i+1)
			if i < len(b) && b[i] == c+2 { // '}' or ']'
				stack = stack[:len(stack)-1]
				i++
				break
			}
			if c == '{' {
				if i, err = skipKey(b, i); err != nil {
					return i, err
				}
			}
			continue
		default:
			return i, errAt(i, "invalid character")
		}
		if err != nil {
			return i, err
		}
		// After a value: close containers or go on to the next value.
		for {
			if len(stack) == 0 {
				return i, nil
			}
			top := stack[len(stack)-1]
			i = skipSpace(b, i)
			if i >= len(b) {
				return i, errAt(i, "unexpected end of input")
			}
			if b[i] == top+2 {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			if b[i] != ',' {
				return i, errAt(i, "want ',' or a closing bracket")
			}
			i = skipSpace(b, i+1)
			if top == '{' {
				if i, err = skipKey(b, i); err != nil {
					return i, err
				}
			}
			break
		}
	}
}

// skipKey passes an object key and its colon, returning the offset of
// the member's value.
func skipKey(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return i, errAt(i, "want a string key")
	}
	i, _, err := skipString(b, i)
	if err != nil {
		return i, err
	}
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return i, errAt(i, "want ':' after an object key")
	}
	i = skipSpace(b, i+1)
	return i, nil
}
