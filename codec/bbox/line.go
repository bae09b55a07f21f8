package bbox

import "strings"

// Kind is what a body line is, decided by its prefix.
type Kind uint8

// The kinds of body line. KindBlank is an empty (or whitespace-only) line;
// KindUnknown is a line with no known prefix, kept verbatim.
const (
	KindBlank        Kind = iota
	KindUser              // u: user message
	KindAgent             // a: agent message
	KindTool              // t: tool call (completed, or with inline result)
	KindToolStart         // t!: tool started (streaming)
	KindToolProgress      // t~: incremental tool output
	KindObservation       // o: deferred result of a call
	KindSkill             // s: skill
	KindPlan              // p: plan action
	KindMode              // m: mode switch
	KindRecall            // r: recall / memory query
	KindSubagent          // x: subagent
	KindMCP               // c: MCP call (server.method)
	KindQuestion          // q: question to the user
	KindThinking          // th: model thinking
	KindTodos             // td: todo list state
	KindComment           // # comment or metrics
	KindLifecycle         // @ lifecycle primitive (@start, @phase, ...)
	KindUnknown           // no known prefix; Body holds the whole line
	kindN
)

var kindPrefix = [kindN]string{
	KindBlank:        "",
	KindUser:         "u:",
	KindAgent:        "a:",
	KindTool:         "t:",
	KindToolStart:    "t!:",
	KindToolProgress: "t~:",
	KindObservation:  "o:",
	KindSkill:        "s:",
	KindPlan:         "p:",
	KindMode:         "m:",
	KindRecall:       "r:",
	KindSubagent:     "x:",
	KindMCP:          "c:",
	KindQuestion:     "q:",
	KindThinking:     "th:",
	KindTodos:        "td:",
	KindComment:      "#",
	KindLifecycle:    "@",
	KindUnknown:      "",
}

var kindName = [kindN]string{
	KindBlank:        "blank",
	KindUser:         "u",
	KindAgent:        "a",
	KindTool:         "t",
	KindToolStart:    "t!",
	KindToolProgress: "t~",
	KindObservation:  "o",
	KindSkill:        "s",
	KindPlan:         "p",
	KindMode:         "m",
	KindRecall:       "r",
	KindSubagent:     "x",
	KindMCP:          "c",
	KindQuestion:     "q",
	KindThinking:     "th",
	KindTodos:        "td",
	KindComment:      "#",
	KindLifecycle:    "@",
	KindUnknown:      "?",
}

// String returns the kind's short name: the prefix without its colon
// ("u", "t!", "#", "@"), "blank" or "?".
func (k Kind) String() string {
	if k < kindN {
		return kindName[k]
	}
	return "?"
}

// Prefix returns the text that starts a line of kind k ("t!:", "#", "@"),
// or "" for KindBlank and KindUnknown.
func (k Kind) Prefix() string {
	if k < kindN {
		return kindPrefix[k]
	}
	return ""
}

// KindOf returns the kind whose String is s, and false when there is none.
func KindOf(s string) (Kind, bool) {
	for k := Kind(0); k < kindN; k++ {
		if kindName[k] == s {
			return k, true
		}
	}
	return KindUnknown, false
}

// Named reports whether lines of kind k carry a name right after the prefix
// (t:read, s:deploy, p:create, m:auto, x:explore, c:github.issues, @start).
func (k Kind) Named() bool {
	switch k {
	case KindTool, KindToolStart, KindToolProgress, KindSkill, KindPlan,
		KindMode, KindSubagent, KindMCP, KindLifecycle:
		return true
	}
	return false
}

// HasResult reports whether lines of kind k split at the first unquoted
// arrow into a call part and a result. Messages, thinking, todos, modes and
// comments never do: an arrow there is text.
func (k Kind) HasResult() bool {
	switch k {
	case KindTool, KindToolStart, KindToolProgress, KindObservation, KindSkill,
		KindPlan, KindRecall, KindSubagent, KindMCP, KindQuestion, KindLifecycle:
		return true
	}
	return false
}

// Event reports whether k is a prefixed event line (not blank, comment or
// unknown).
func (k Kind) Event() bool {
	return k > KindBlank && k < KindComment || k == KindLifecycle
}

// Line is one body line of a document with its continuation lines.
//
// The call part and the result are split at the first arrow (→ or ->) that
// is outside a double-quoted string, and only for kinds that take results
// (Kind.HasResult). Name, Body and Result are substrings of the source with
// the whitespace around them removed; nothing else is dropped. Strings are
// immutable, so a Line may be kept and shared freely.
type Line struct {
	Kind Kind
	// Name is the word right after the prefix for named kinds: the tool,
	// skill, plan action, mode, subagent type, "server.method" of an MCP
	// call, or the lifecycle verb ("start", "wait-approval").
	Name string
	// Body is the rest of the line before the separator: arguments,
	// message text or comment text. For KindUnknown it is the whole line.
	Body string
	// Arrow reports whether the line has a separator (and so a Result,
	// possibly empty).
	Arrow  bool
	Result string
	// More holds continuation lines, without their indent (two spaces or
	// one tab). They continue the Result when Arrow is set, else the Body.
	More []string
	// Pos is where the line was found; Equal ignores it.
	Pos Pos
}

// Pos is the source position of a line. Columns are 1-based byte columns;
// zero means unknown.
type Pos struct {
	Line      int // 1-based line number of the event line
	NameCol   int
	BodyCol   int
	ResultCol int
}

// Equal reports whether l and m hold the same content, ignoring Pos.
func (l *Line) Equal(m *Line) bool {
	if l.Kind != m.Kind || l.Name != m.Name || l.Body != m.Body ||
		l.Arrow != m.Arrow || l.Result != m.Result || len(l.More) != len(m.More) {
		return false
	}
	for i := range l.More {
		if l.More[i] != m.More[i] {
			return false
		}
	}
	return true
}

// Text returns the body with its continuation lines joined by newlines
// when the continuations belong to the body, else the body alone.
func (l *Line) Text() string {
	if l.Arrow || len(l.More) == 0 {
		return l.Body
	}
	return l.Body + "\n" + strings.Join(l.More, "\n")
}

// FullResult returns the result with its continuation lines joined by
// newlines.
func (l *Line) FullResult() string {
	if !l.Arrow || len(l.More) == 0 {
		return l.Result
	}
	return l.Result + "\n" + strings.Join(l.More, "\n")
}

// classify returns the kind of a body line and the length of its prefix.
// s must not be blank and must not be a continuation line.
func classify(s string) (Kind, int) {
	if len(s) == 0 {
		return KindBlank, 0
	}
	switch s[0] {
	case '#':
		return KindComment, 1
	case '@':
		return KindLifecycle, 1
	}
	if len(s) >= 2 && s[1] == ':' {
		switch s[0] {
		case 'u':
			return KindUser, 2
		case 'a':
			return KindAgent, 2
		case 't':
			return KindTool, 2
		case 'o':
			return KindObservation, 2
		case 's':
			return KindSkill, 2
		case 'p':
			return KindPlan, 2
		case 'm':
			return KindMode, 2
		case 'r':
			return KindRecall, 2
		case 'x':
			return KindSubagent, 2
		case 'c':
			return KindMCP, 2
		case 'q':
			return KindQuestion, 2
		}
	}
	if len(s) >= 3 && s[0] == 't' && s[2] == ':' {
		switch s[1] {
		case '!':
			return KindToolStart, 3
		case '~':
			return KindToolProgress, 3
		case 'h':
			return KindThinking, 3
		case 'd':
			return KindTodos, 3
		}
	}
	return KindUnknown, 0
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }

func trimSpace(s string) string {
	i, j := 0, len(s)
	for i < j && isSpace(s[i]) {
		i++
	}
	for j > i && isSpace(s[j-1]) {
		j--
	}
	return s[i:j]
}

func trimRight(s string) string {
	j := len(s)
	for j > 0 && (isSpace(s[j-1]) || s[j-1] == '\r') {
		j--
	}
	return s[:j]
}

// arrowAt returns the length of the separator starting at s[i] (3 for →,
// 2 for ->), or 0.
func arrowAt(s string, i int) int {
	if s[i] == 0xE2 && i+2 < len(s) && s[i+1] == 0x86 && s[i+2] == 0x92 {
		return 3
	}
	if s[i] == '-' && i+1 < len(s) && s[i+1] == '>' {
		return 2
	}
	return 0
}

// findArrow returns the index and length of the first separator in s that
// is outside a double-quoted string, or -1, 0. A quote opens at any '"'
// and closes at the next '"' not escaped by a backslash.
func findArrow(s string) (int, int) {
	quoted := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if quoted {
			switch c {
			case '\\':
				i++
			case '"':
				quoted = false
			}
			continue
		}
		switch c {
		case '"':
			quoted = true
		case 0xE2, '-':
			if n := arrowAt(s, i); n > 0 {
				return i, n
			}
		}
	}
	return -1, 0
}

// nameEnd returns the end of the name that starts s: the first space, tab
// or separator.
func nameEnd(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isSpace(c) {
			return i
		}
		if (c == 0xE2 || c == '-') && arrowAt(s, i) > 0 {
			return i
		}
	}
	return len(s)
}

// parseLine parses one body line: s has no line terminator and is neither
// blank nor a continuation. The returned strings are substrings of s.
func parseLine(s string, num int) Line {
	s = trimRight(s)
	k, n := classify(s)
	l := Line{Kind: k, Pos: Pos{Line: num}}
	if k == KindUnknown {
		l.Body = s
		l.Pos.BodyCol = 1
		return l
	}
	i := n
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	if k.Named() {
		e := i + nameEnd(s[i:])
		l.Name = s[i:e]
		if e > i {
			l.Pos.NameCol = i + 1
		}
		i = e
		for i < len(s) && isSpace(s[i]) {
			i++
		}
	}
	rest := s[i:]
	l.Pos.BodyCol = i + 1
	if k.HasResult() {
		if a, an := findArrow(rest); a >= 0 {
			l.Arrow = true
			l.Body = trimRight(rest[:a])
			r := a + an
			for r < len(rest) && isSpace(rest[r]) {
				r++
			}
			l.Result = rest[r:]
			l.Pos.ResultCol = i + r + 1
			return l
		}
	}
	l.Body = rest
	return l
}
