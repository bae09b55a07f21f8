package agentlog

import "unicode/utf8"

// The fast path of Fields: one scan over a line that checks the JSON
// grammar jsontext checks (with invalid UTF-8 and duplicate names
// allowed) and picks out the top-level members asked for, without a
// decoder. It answers only when it is sure: a line it does not accept
// whole (any syntax error, a name with an escape, a wanted string value
// with an escape or invalid UTF-8, nesting deeper than maxFastDepth)
// goes to the decoder, which says precisely what is wrong. FuzzFieldsFast checks that whatever it
// accepts, the decoder accepts with the same values.

// maxFastDepth is the deepest nesting the fast path follows, well
// within jsontext's limit (10000).
const maxFastDepth = 1000

// strStop marks the bytes a string's scan stops at: the quote, the
// backslash and the control characters.
var strStop = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// fastFields sets vals[i] to the value of b's top-level member keys[i]
// when it is a string (the last such member's) and reports true when b
// is one JSON object; false when it cannot tell.
func fastFields(b []byte, keys []string, vals []string) bool {
	i := skipSpace(b, 0)
	if i == len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		if i == len(b) || b[i] != '"' {
			return false
		}
		start := i + 1
		end, esc, ok := scanString(b, start)
		if !ok || esc {
			return false
		}
		name := b[start:end]
		i = skipSpace(b, end+1)
		if i == len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		k := -1
		for j, key := range keys {
			if string(name) == key {
				k = j
				break
			}
		}
		if k >= 0 && i < len(b) && b[i] == '"' {
			end, esc, ok := scanString(b, i+1)
			if !ok || esc || !utf8.Valid(b[i+1:end]) {
				return false // the decoder unescapes, or writes U+FFFD
			}
			vals[k] = string(b[i+1 : end])
			i = end + 1
		} else if i, ok = skipValue(b, i, 1); !ok {
			return false
		}
		i = skipSpace(b, i)
		if i == len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString scans the string whose content starts at b[i] and returns
// the index of its closing quote and whether it holds an escape.
func scanString(b []byte, i int) (end int, esc, ok bool) {
	for {
		for i < len(b) && !strStop[b[i]] {
			i++
		}
		if i == len(b) {
			return 0, false, false
		}
		switch c := b[i]; {
		case c == '"':
			return i, esc, true
		case c == '\\':
			esc = true
			if i+1 == len(b) {
				return 0, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return 0, false, false
				}
				for _, h := range b[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return 0, false, false
					}
				}
				i += 6
			default:
				return 0, false, false
			}
		default: // a control character
			return 0, false, false
		}
	}
}

// skipValue skips the value at b[i], nested depth deep, and returns the
// index after it.
func skipValue(b []byte, i, depth int) (int, bool) {
	if i == len(b) {
		return 0, false
	}
	switch c := b[i]; {
	case c == '"':
		end, _, ok := scanString(b, i+1)
		return end + 1, ok
	case c == '{' || c == '[':
		if depth >= maxFastDepth {
			return 0, false
		}
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == closer {
			return i + 1, true
		}
		for {
			if c == '{' {
				if i == len(b) || b[i] != '"' {
					return 0, false
				}
				end, _, ok := scanString(b, i+1)
				if !ok {
					return 0, false
				}
				i = skipSpace(b, end+1)
				if i == len(b) || b[i] != ':' {
					return 0, false
				}
				i = skipSpace(b, i+1)
			}
			var ok bool
			if i, ok = skipValue(b, i, depth+1); !ok {
				return 0, false
			}
			i = skipSpace(b, i)
			if i == len(b) {
				return 0, false
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
			case closer:
				return i + 1, true
			default:
				return 0, false
			}
		}
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return number(b, i)
	}
	return 0, false
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return 0, false
	}
	return i + len(lit), true
}

// number skips a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func number(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return 0, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return 0, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return 0, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}
