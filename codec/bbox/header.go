package bbox

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// HeaderKind is what a header line is.
type HeaderKind uint8

// The kinds of header line.
const (
	HeaderPair    HeaderKind = iota // key: value
	HeaderBlank                     // empty line
	HeaderComment                   // # comment
	HeaderNested                    // indented line continuing the previous key (YAML block)
	HeaderRaw                       // anything else; kept verbatim, reported by Validate
)

// HeaderLine is one line between the header's --- markers.
type HeaderLine struct {
	Kind HeaderKind
	// Key and Value are set for HeaderPair. Value is the raw YAML text
	// after "key:", trimmed; use Header.Get for the decoded scalar.
	Key, Value string
	// Text is the line for the other kinds: a comment with its '#', a
	// nested line with its indent, a raw line as written.
	Text string
	Line int // 1-based line number in the file; Equal ignores it
}

// Header is the YAML-style block that opens a document.
type Header struct {
	Lines []HeaderLine
	// Closed reports whether the closing --- was found.
	Closed bool
}

// Required lists the header keys every document must have.
var Required = []string{"format", "id", "repo_sha"}

// Raw returns the raw value of the first key, and whether it was present.
func (h *Header) Raw(key string) (string, bool) {
	if h == nil {
		return "", false
	}
	for _, l := range h.Lines {
		if l.Kind == HeaderPair && l.Key == key {
			return l.Value, true
		}
	}
	return "", false
}

// Get returns the value of key decoded as a YAML scalar: quotes removed
// and a trailing comment dropped, so `client_version: "2.0.71"` gives
// 2.0.71. Values that are not scalars (lists, maps) are returned raw.
func (h *Header) Get(key string) string {
	raw, ok := h.Raw(key)
	if !ok {
		return ""
	}
	return scalar(raw)
}

// scalar decodes a one-line YAML value; on failure it returns raw.
func scalar(raw string) string {
	if raw == "" {
		return ""
	}
	switch raw[0] {
	case '[', '{', '|', '>', '&', '*', '!':
		return raw
	}
	if raw[0] != '"' && raw[0] != '\'' && !strings.Contains(raw, " #") {
		return raw
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte("v: "+raw), &n); err != nil || len(n.Content) == 0 {
		return raw
	}
	m := n.Content[0]
	if len(m.Content) != 2 || m.Content[1].Kind != yaml.ScalarNode {
		return raw
	}
	return m.Content[1].Value
}

// Set replaces the value of key, or appends a key: value line.
func (h *Header) Set(key, value string) {
	for i, l := range h.Lines {
		if l.Kind == HeaderPair && l.Key == key {
			h.Lines[i].Value = value
			return
		}
	}
	h.Lines = append(h.Lines, HeaderLine{Kind: HeaderPair, Key: key, Value: value})
}

// Extra returns the header's extra.* keys without the prefix, in order.
func (h *Header) Extra() []HeaderLine {
	var out []HeaderLine
	for _, l := range h.Lines {
		if l.Kind == HeaderPair && strings.HasPrefix(l.Key, "extra.") {
			l.Key = l.Key[len("extra."):]
			out = append(out, l)
		}
	}
	return out
}

// parseHeaderLine parses a line inside the header; s has no terminator.
func parseHeaderLine(s string, num int) HeaderLine {
	s = trimRight(s)
	switch {
	case trimSpace(s) == "":
		return HeaderLine{Kind: HeaderBlank, Line: num}
	case isSpace(s[0]):
		return HeaderLine{Kind: HeaderNested, Text: s, Line: num}
	case s[0] == '#':
		return HeaderLine{Kind: HeaderComment, Text: s, Line: num}
	}
	if k := headerKeyLen(s); k > 0 {
		return HeaderLine{Kind: HeaderPair, Key: s[:k], Value: trimSpace(s[k+1:]), Line: num}
	}
	return HeaderLine{Kind: HeaderRaw, Text: s, Line: num}
}

// headerKeyLen returns the length of the key of a "key: value" line: a
// run of non-space bytes ending at the first ':' that is followed by a
// space or the end of the line.
func headerKeyLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isSpace(c) {
			return 0
		}
		if c == ':' && (i+1 == len(s) || isSpace(s[i+1])) {
			if i == 0 || s[0] == '-' || s[0] == '"' || s[0] == '\'' {
				return 0
			}
			return i
		}
	}
	return 0
}

// Equal reports whether h and g hold the same lines, ignoring positions.
func (h *Header) Equal(g *Header) bool {
	if h == nil || g == nil {
		return h == g
	}
	if h.Closed != g.Closed || len(h.Lines) != len(g.Lines) {
		return false
	}
	for i := range h.Lines {
		a, b := h.Lines[i], g.Lines[i]
		if a.Kind != b.Kind || a.Key != b.Key || a.Value != b.Value || a.Text != b.Text {
			return false
		}
	}
	return true
}
