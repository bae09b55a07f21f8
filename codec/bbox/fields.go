package bbox

import (
	"strings"
	"unicode/utf8"
)

// Field is one space-separated token of a call part or result: a
// key=value pair, or a positional argument when Key is empty.
type Field struct {
	Key string
	// Value is the value with quotes removed and escapes (\" \\ \n \t \r)
	// decoded; any other backslash sequence is kept as written, so a regular
	// expression such as "tier\|plan" survives.
	Value  string
	Quoted bool
	// Start and End are the byte offsets of the whole token in the string
	// it was read from.
	Start, End int
}

// Fields splits s into tokens. Tokens are separated by spaces or tabs; a
// value may be double-quoted (with backslash escapes) or bare, and a bare
// value keeps spaces inside balanced brackets, so options=["a", "b"] is
// one token. A token that starts with '#' begins an inline comment: it and
// everything after it are not tokens; Fields returns its offset as comment
// (len(s) when there is none).
func Fields(s string) (fields []Field, comment int) {
	comment = len(s)
	eachField(s, func(f Field) bool {
		fields = append(fields, f)
		return true
	}, &comment)
	return fields, comment
}

// eachField calls fn for each token of s until fn returns false. When
// comment is not nil it receives the offset of an inline comment.
func eachField(s string, fn func(Field) bool, comment *int) {
	i := 0
	for {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			return
		}
		if s[i] == '#' {
			if comment != nil {
				*comment = i
			}
			return
		}
		f := Field{Start: i}
		if k := keyLen(s[i:]); k > 0 {
			f.Key = s[i : i+k]
			i += k + 1
		}
		v, quoted, end := scanValue(s, i)
		f.Value, f.Quoted, f.End = v, quoted, end
		i = end
		if !fn(f) {
			return
		}
	}
}

// keyLen returns the length of the key of a key=value token at the start
// of s, or 0. Keys start with a letter or underscore and hold letters,
// digits, '_', '.', and '-'.
func keyLen(s string) int {
	if len(s) == 0 || !(isLetter(s[0]) || s[0] == '_') {
		return 0
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '=':
			return i
		case isLetter(c) || isDigit(c) || c == '_' || c == '.' || c == '-':
		default:
			return 0
		}
	}
	return 0
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isDigit(c byte) bool  { return c >= '0' && c <= '9' }

// scanValue reads the value starting at s[i] and returns it, whether it
// was quoted, and the offset just past it.
func scanValue(s string, i int) (string, bool, int) {
	if i < len(s) && s[i] == '"' {
		if end, ok := quotedEnd(s, i); ok {
			return unescape(s[i+1 : end-1]), true, end
		}
	}
	// Bare: up to the first space outside brackets and quotes. If a bracket
	// never closes, fall back to the first space.
	depth, quoted := 0, false
	j := i
	for ; j < len(s); j++ {
		c := s[j]
		if quoted {
			switch c {
			case '\\':
				j++
			case '"':
				quoted = false
			}
			continue
		}
		switch c {
		case '"':
			quoted = true
		case '[', '{', '(':
			depth++
		case ']', '}', ')':
			if depth > 0 {
				depth--
			}
		case ' ', '\t':
			if depth == 0 {
				return s[i:j], false, j
			}
		}
	}
	if depth > 0 || quoted {
		j = i
		for j < len(s) && !isSpace(s[j]) {
			j++
		}
	}
	if j > len(s) {
		j = len(s)
	}
	return s[i:j], false, j
}

// quotedEnd returns the offset just past the closing quote of the quoted
// string that starts at s[i].
func quotedEnd(s string, i int) (int, bool) {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

func unescape(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch s[i] {
		case '"':
			b.WriteByte('"')
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		default:
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// Quote returns v as a value token: bare when it needs no quotes, else
// double-quoted with ", \, newline, tab and carriage return escaped. A
// backslash is escaped only where leaving it would change the value, so
// Fields reads back exactly v.
func Quote(v string) string {
	if v != "" && !needsQuote(v) {
		return v
	}
	var b strings.Builder
	b.Grow(len(v) + 2)
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		case '\\':
			// Kept single unless the next byte would form a known escape
			// or it is the last byte (it would escape the closing quote).
			if i+1 == len(v) || strings.IndexByte(`"\ntr`, v[i+1]) >= 0 || v[i+1] == '\n' || v[i+1] == '\t' || v[i+1] == '\r' {
				b.WriteString(`\\`)
			} else {
				b.WriteByte('\\')
			}
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func needsQuote(v string) bool {
	if v[0] == '#' || v[0] == '"' || keyLen(v) > 0 {
		return true
	}
	depth := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch c {
		case ' ', '\t', '\n', '\r', '"', '\\':
			return true
		case '[', '{', '(':
			depth++
		case ']', '}', ')':
			if depth > 0 {
				depth--
			}
		case 0xE2, '-':
			if arrowAt(v, i) > 0 {
				return true
			}
		}
	}
	if depth > 0 {
		return true
	}
	return !utf8.ValidString(v)
}

// Lookup returns the value of the first key=value field named key in s
// (before any inline comment).
func Lookup(s, key string) (Field, bool) {
	var out Field
	found := false
	eachField(s, func(f Field) bool {
		if f.Key == key {
			out, found = f, true
			return false
		}
		return true
	}, nil)
	return out, found
}

// Meta is the metadata a line carries as key=value fields: correlation
// ids, step and time, and outcome signals. Each is "" when absent; values
// are as written (validation checks their syntax).
type Meta struct {
	ID, Tid, Span, Parent string
	Step, TS              string
	Attempt, LatencyMS    string
	Level                 string
}

// Meta returns the metadata fields of the line's call part. For messages
// (u:, a:, th:, td:) only the trailing run of key=value tokens counts, so
// prose such as "set x=1 in the loop" is not mistaken for metadata.
func (l *Line) Meta() Meta {
	var m Meta
	set := func(f Field) {
		switch f.Key {
		case "id":
			m.ID = f.Value
		case "tid":
			m.Tid = f.Value
		case "span":
			m.Span = f.Value
		case "parent":
			m.Parent = f.Value
		case "step":
			m.Step = f.Value
		case "ts":
			m.TS = f.Value
		case "attempt":
			m.Attempt = f.Value
		case "latency_ms":
			m.LatencyMS = f.Value
		case "level":
			m.Level = f.Value
		}
	}
	if l.Kind.HasResult() || l.Kind.Named() {
		eachField(l.Body, func(f Field) bool {
			if f.Key != "" && m.fieldUnset(f.Key) {
				set(f)
			}
			return true
		}, nil)
		return m
	}
	if l.Kind == KindComment || l.Kind == KindUnknown || l.Kind == KindBlank {
		return m
	}
	for _, f := range l.TrailingFields() {
		set(f)
	}
	return m
}

func (m *Meta) fieldUnset(key string) bool {
	switch key {
	case "id":
		return m.ID == ""
	case "tid":
		return m.Tid == ""
	case "span":
		return m.Span == ""
	case "parent":
		return m.Parent == ""
	case "step":
		return m.Step == ""
	case "ts":
		return m.TS == ""
	case "attempt":
		return m.Attempt == ""
	case "latency_ms":
		return m.LatencyMS == ""
	case "level":
		return m.Level == ""
	}
	return true
}

// TrailingFields returns the run of key=value tokens that ends a message
// body (before an inline comment), in order.
func (l *Line) TrailingFields() []Field {
	fields, _ := Fields(l.Body)
	i := len(fields)
	for i > 0 && fields[i-1].Key != "" {
		i--
	}
	return fields[i:]
}

// MessageText returns a message body without its trailing metadata fields
// and inline comment, with continuation lines joined by newlines.
func (l *Line) MessageText() string {
	fields, comment := Fields(l.Body)
	end := comment
	i := len(fields)
	for i > 0 && fields[i-1].Key != "" {
		end = fields[i-1].Start
		i--
	}
	text := trimSpace(l.Body[:end])
	if len(l.More) > 0 && !l.Arrow {
		text += "\n" + strings.Join(l.More, "\n")
	}
	return text
}
