package memtext

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// Token kinds.
const (
	tWord uint8 = iota
	tPunct
	tCode
)

// tok is one token of a sentence. w is the lowercased word, the
// punctuation character, or "`" for an inline code span; s and e are its
// byte offsets in the text the tokenizer ran over.
type tok struct {
	w    string
	s, e int
	kind uint8
}

// lowerASCII returns s with ASCII letters lowercased. Other bytes are kept,
// so every offset into s is an offset into the result.
func lowerASCII(s string) string {
	i := 0
	for i < len(s) && (s[i] < 'A' || s[i] > 'Z') {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s)
	for ; i < len(b); i++ {
		if c := b[i]; c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// wordByte reports whether the byte at text[i] continues or starts a word:
// letters, digits, '_' and non-ASCII runes other than the general
// punctuation block (U+2000..U+206F: dashes, curly quotes, ellipsis).
func wordByte(text string, i int) bool {
	c := text[i]
	if c < utf8.RuneSelf {
		return isAlnum(c) || c == '_'
	}
	if c == 0xE2 && i+1 < len(text) && (text[i+1] == 0x80 || text[i+1] == 0x81) {
		return false
	}
	return true
}

// isRSQuote reports whether text[i:] starts with U+2019 (’).
func isRSQuote(text string, i int) bool {
	return i+2 < len(text) && text[i] == 0xE2 && text[i+1] == 0x80 && text[i+2] == 0x99
}

// wordEnd returns the end of the word starting at i (which must be a word
// byte). Inner '.', '/', '-', '\” , '’' and "::" join word parts when a
// word byte follows them, so sync.Pool, cmd/main.go, follow-up, don't and
// tests::it_works are one word each.
func wordEnd(text string, i, end int) int {
	for i < end {
		if wordByte(text, i) {
			_, n := utf8.DecodeRuneInString(text[i:])
			i += n
			continue
		}
		c := text[i]
		switch {
		case (c == '.' || c == '/' || c == '-' || c == '\'') && i+1 < end && wordByte(text, i+1):
			i++
		case c == ':' && i+2 < end && text[i+1] == ':' && wordByte(text, i+2):
			i += 2
		case isRSQuote(text, i) && i+3 < end && wordByte(text, i+3):
			i += 3
		default:
			return i
		}
	}
	return end
}

// codeSpanEnd returns the end of the inline code span that opens at
// text[i] (a run of backticks), or -1 when the run is not closed before
// end.
func codeSpanEnd(text string, i, end int) (int, int) {
	n := 0
	for i+n < end && text[i+n] == '`' {
		n++
	}
	j := i + n
	for j < end {
		k := strings.IndexByte(text[j:end], '`')
		if k < 0 {
			return -1, n
		}
		j += k
		m := 0
		for j+m < end && text[j+m] == '`' {
			m++
		}
		if m == n {
			return j + m, n
		}
		j += m
	}
	return -1, n
}

// tokenize appends the tokens of text[s:e] to dst. low is text with ASCII
// lowercased (same length). Emphasis marks (*, ~) are dropped; a code span
// becomes one tCode token.
func tokenize(dst []tok, text, low string, s, e int) []tok {
	for i := s; i < e; {
		c := text[i]
		switch {
		case c == '`':
			end, n := codeSpanEnd(text, i, e)
			if end < 0 {
				i += n
				continue
			}
			dst = append(dst, tok{w: "`", s: i, e: end, kind: tCode})
			i = end
		case wordByte(text, i):
			j := wordEnd(text, i, e)
			a, b := i, j
			for a < b && text[a] == '_' {
				a++
			}
			for b > a && text[b-1] == '_' {
				b--
			}
			if a < b {
				w := low[a:b]
				if strings.Contains(w, "’") {
					w = strings.ReplaceAll(w, "’", "'")
				}
				dst = append(dst, tok{w: w, s: a, e: b})
			}
			i = j
		case c == 0xE2 && i+2 < e && text[i+1] == 0x80 && (text[i+2] == 0x94 || text[i+2] == 0x93):
			dst = append(dst, tok{w: "—", s: i, e: i + 3, kind: tPunct})
			i += 3
		case c == '-' && (i+1 >= e || isSpace(text[i+1])) && (i == s || isSpace(text[i-1])):
			dst = append(dst, tok{w: "—", s: i, e: i + 1, kind: tPunct})
			i++
		case c == ',' || c == ';' || c == ':' || c == '?' || c == '!' || c == '.' || c == '(' || c == ')' || c == '"':
			dst = append(dst, tok{w: text[i : i+1], s: i, e: i + 1, kind: tPunct})
			i++
		default:
			_, n := utf8.DecodeRuneInString(text[i:])
			i += n
		}
	}
	return dst
}

// clean returns s as a sentence for display: markdown emphasis, heading
// marks, bullets and quote marks removed outside code spans, whitespace
// collapsed to single spaces, trimmed.
func clean(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	s = strings.TrimSpace(s)
	s = stripLineMarks(s)
	space := false
	var open map[string]int // emphasis runs opened and not yet closed
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '`':
			end, n := codeSpanEnd(s, i, len(s))
			if end < 0 {
				end = i + n
			}
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			for _, r := range s[i:end] {
				if r == '\n' || r == '\t' || r == '\r' {
					r = ' '
				}
				b.WriteRune(r)
			}
			i = end
		case isSpace(c):
			space = true
			i++
			// A new line may start with a bullet or a quote mark.
			if c == '\n' {
				j := i
				for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
					j++
				}
				i = j + (len(s[j:]) - len(stripLineMarks(s[j:])))
			}
		case c == '*' || c == '_' || c == '~':
			j := i
			for j < len(s) && s[j] == c {
				j++
			}
			leftSpace := i == 0 || isSpace(s[i-1])
			rightSpace := j == len(s) || isSpace(s[j])
			leftWord := i > 0 && wordByte(s, i-1)
			rightWord := j < len(s) && wordByte(s, j)
			emphasis := leftSpace != rightSpace
			if c == '*' && leftWord != rightWord {
				// "**Default**: use" closes before punctuation.
				emphasis = true
			}
			if c == '_' {
				emphasis = emphasis && !(leftWord && rightWord)
			}
			if c == '~' {
				emphasis = emphasis && j-i == 2
			}
			if emphasis {
				// Only a run with its partner is emphasis: the "*" of
				// "/docs/* URLs" and the "_" of "_redirects" stay.
				run := s[i:j]
				switch {
				case !leftSpace && open[run] > 0:
					open[run]--
				case !rightSpace && strings.Contains(s[j:], run):
					if open == nil {
						open = map[string]int{}
					}
					open[run]++
				case i == 0 && rightWord,
					i > 0 && (leftWord || strings.IndexByte(".!?:)", s[i-1]) >= 0) && strings.Trim(s[j:], ".!?:;,)\"'") == "":
					// At the edge of a sentence its partner may sit in
					// the next or last one: "**Do not push. Do not
					// touch master.**"
				default:
					emphasis = false
				}
			}
			if emphasis {
				i = j
				continue
			}
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteString(s[i:j])
			i = j
		default:
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			_, n := utf8.DecodeRuneInString(s[i:])
			b.WriteString(s[i : i+n])
			i += n
		}
	}
	return b.String()
}

// stripLineMarks removes a leading heading mark, quote mark, bullet or
// numbered-list mark from s.
func stripLineMarks(s string) string {
	for {
		t := s
		if n := headingMark(t); n > 0 {
			t = strings.TrimLeft(t[n:], " \t")
		}
		if len(t) > 1 && t[0] == '>' {
			t = strings.TrimLeft(t[1:], " \t")
		}
		if n := bulletMark(t); n > 0 {
			t = t[n:]
		}
		if t == s {
			return s
		}
		s = t
	}
}

// headingMark returns the length of a markdown heading mark ("## ") at the
// start of s, or 0.
func headingMark(s string) int {
	n := 0
	for n < len(s) && n < 7 && s[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n >= len(s) || (s[n] != ' ' && s[n] != '\t') {
		return 0
	}
	return n + 1
}

// bulletMark returns the length of a list mark ("- ", "* ", "• ", "1. ",
// "2) ", with an optional "[ ] " checkbox) at the start of s, or 0.
func bulletMark(s string) int {
	n := 0
	switch {
	case len(s) >= 2 && (s[0] == '-' || s[0] == '*' || s[0] == '+') && (s[1] == ' ' || s[1] == '\t'):
		n = 2
	case strings.HasPrefix(s, "• "):
		n = len("• ")
	default:
		d := 0
		for d < len(s) && d < 4 && s[d] >= '0' && s[d] <= '9' {
			d++
		}
		if d > 0 && d+1 < len(s) && (s[d] == '.' || s[d] == ')') && (s[d+1] == ' ' || s[d+1] == '\t') {
			n = d + 2
		}
	}
	if n == 0 {
		return 0
	}
	for n < len(s) && (s[n] == ' ' || s[n] == '\t') {
		n++
	}
	if len(s) >= n+4 && s[n] == '[' && (s[n+1] == ' ' || s[n+1] == 'x' || s[n+1] == 'X') && s[n+2] == ']' && s[n+3] == ' ' {
		n += 4
	}
	return n
}

// capBytes returns s cut to at most n bytes at a rune boundary.
func capBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// words returns the lowercased words of s (markdown and punctuation
// dropped, code spans unwrapped), with ’ read as '.
func words(s string) []string {
	low := lowerASCII(s)
	var out []string
	for i := 0; i < len(s); {
		if s[i] == '`' {
			i++
			continue
		}
		if !wordByte(s, i) {
			_, n := utf8.DecodeRuneInString(s[i:])
			i += n
			continue
		}
		j := wordEnd(s, i, len(s))
		w := strings.Trim(low[i:j], "_")
		if w != "" {
			if strings.Contains(w, "’") {
				w = strings.ReplaceAll(w, "’", "'")
			}
			if !isASCII(w) {
				w = strings.ToLower(w)
			}
			out = append(out, w)
		}
		i = j
	}
	return out
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// fillers are the leading phrases Normalize drops, as word sequences. The
// longest match is tried first by listing longer phrases before their
// prefixes.
var fillers = [][]string{
	{"the", "decision", "is", "to"}, {"the", "decision", "was", "to"},
	{"the", "plan", "is", "to"}, {"our", "plan", "is", "to"},
	{"we", "have", "decided", "to"}, {"we've", "decided", "to"}, {"we", "decided", "to"},
	{"i", "have", "decided", "to"}, {"i've", "decided", "to"}, {"i", "decided", "to"},
	{"we've", "decided"}, {"we", "decided"}, {"i", "decided"}, {"decided", "to"},
	{"we", "are", "going", "to"}, {"we're", "going", "to"}, {"i'm", "going", "to"}, {"i", "am", "going", "to"},
	{"we", "are", "going", "with"}, {"we're", "going", "with"}, {"i'm", "going", "with"},
	{"we", "went", "with"}, {"i", "went", "with"}, {"went", "with"},
	{"going", "with"}, {"go", "with"}, {"going", "forward"}, {"from", "now", "on"},
	{"we", "opted", "for"}, {"i", "opted", "for"}, {"opted", "for"}, {"we", "opted", "to"}, {"i", "opted", "to"},
	{"we", "settled", "on"}, {"i", "settled", "on"}, {"settled", "on"}, {"we", "chose", "to"}, {"i", "chose", "to"},
	{"we", "chose"}, {"i", "chose"}, {"we", "agreed", "to"}, {"the", "team", "agreed", "to"}, {"we", "picked"}, {"i", "picked"},
	{"after", "comparing", "both"}, {"after", "discussion"},
	{"final", "decision"}, {"decision"}, {"decisions"}, {"decided"},
	{"let's"}, {"let", "us"}, {"lets"}, {"we'll"}, {"we", "will"}, {"i'll"}, {"i", "will"}, {"we", "shall"},
	{"ok"}, {"okay"}, {"so"}, {"alright"}, {"all", "right"}, {"well"}, {"also"}, {"and"}, {"then"},
	{"yes"}, {"yeah"}, {"sure"}, {"great"}, {"thanks"}, {"please"}, {"note"}, {"important"},
	{"use"}, {"using"}, {"we're"}, {"i'm"}, {"we've"}, {"i've"}, {"we"}, {"i"},
}

// Normalize returns s as a dedupe key: lowercased, markdown and
// punctuation stripped (inner dots, slashes, hyphens and underscores of
// identifiers kept), spaces collapsed, and leading filler dropped ("we
// decided to", "decision:", "let's", "we'll", "i'll", "going with", "ok,",
// "so,", "use"), so "We decided to use SQLite.", "Decision: use SQLite"
// and "we'll use sqlite" all give "sqlite".
func Normalize(s string) string {
	ws := words(s)
	for {
		matched := false
		for _, f := range fillers {
			if len(ws) > len(f) && slices.Equal(ws[:len(f)], f) {
				ws = ws[len(f):]
				matched = true
				break
			}
		}
		if !matched {
			break
		}
	}
	return strings.Join(ws, " ")
}

// stopWords are the words Terms drops: function words, modals and the
// verbs every decision or constraint uses.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a about above after again against all also always am an and any are aren't as at
		be because been before being below between both but by can can't cannot could couldn't did didn't do does doesn't
		doing don't dont down during each either else even ever every few for from further had hadn't has hasn't have
		haven't having he her here hers herself him himself his how however i i'd i'll i'm i've if in instead into is
		isn't it it's its itself just let let's lets like may maybe me might more most must mustn't my myself need needs
		never no nor not now of off ok okay on once only or other our ours ourselves out over own please rather really
		same shall she should shouldn't so some still such than that that's the their theirs them themselves then there
		there's these they they'd they'll they're they've this those through to too under until up upon us use used uses
		using very via was wasn't we we'd we'll we're we've were weren't what what's when where which while who whom why
		will with won't would wouldn't yes yet you you'd you'll you're you've your yours yourself yourselves decided
		decide decision decisions going go went gonna make sure required always also etc e.g i.e vs`) {
		stopWords[w] = true
	}
}

// Terms returns the content words of s: lowercased, stop words and
// one-letter words removed, identifiers (sync.pool, cmd/main.go,
// snake_case) kept whole, sorted and unique.
func Terms(s string) []string {
	ws := words(s)
	out := ws[:0]
	for _, w := range ws {
		if len(w) < 2 || stopWords[w] {
			continue
		}
		out = append(out, w)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// maxIdentifiers caps what Identifiers returns.
const maxIdentifiers = 64

// Identifiers returns the code identifiers text mentions: camelCase and
// PascalCase words with an inner capital, snake_case, dotted names
// (pkg.Func, a.b.c), `backticked` spans, and paths with a slash or a file
// extension (cmd/main.go, README.md). It keeps the first 64 found, sorted
// and unique.
func Identifiers(text string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) bool {
		if s == "" || seen[s] {
			return len(out) < maxIdentifiers
		}
		seen[s] = true
		out = append(out, s)
		return len(out) < maxIdentifiers
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c == '`' {
			end, n := codeSpanEnd(text, i, len(text))
			if end >= 0 {
				inner := strings.TrimSpace(text[i+n : end-n])
				if inner != "" && len(inner) <= 200 && !strings.ContainsAny(inner, "\n") {
					if !add(inner) {
						break
					}
				}
				i = end
				continue
			}
			i += n
			continue
		}
		if isSpace(c) {
			i++
			continue
		}
		j := i
		for j < len(text) && !isSpace(text[j]) && text[j] != '`' {
			j++
		}
		if w := identifier(text[i:j]); w != "" {
			if !add(w) {
				break
			}
		}
		i = j
	}
	slices.Sort(out)
	return out
}

// identifier returns the identifier in the whitespace-delimited field f,
// with surrounding punctuation trimmed, or "" when f is not one.
func identifier(f string) string {
	f = strings.TrimLeft(f, "([{<\"'*_~")
	f = strings.TrimRight(f, ")]}>\"',;:.!?*~")
	f = strings.TrimSuffix(f, "()")
	f = strings.TrimRight(f, ".,;:")
	if len(f) < 2 || len(f) > 200 {
		return ""
	}
	if strings.Contains(f, "://") || strings.HasPrefix(f, "www.") {
		return ""
	}
	letters, upperInner, lower := 0, false, false
	for k := 0; k < len(f); k++ {
		c := f[k]
		switch {
		case c >= 'a' && c <= 'z':
			letters++
			lower = true
		case c >= 'A' && c <= 'Z':
			letters++
			if k > 0 {
				upperInner = true
			}
		case c == '_' || c == '.' || c == '/' || c == '-' || c == ':' || c >= '0' && c <= '9':
		case c >= utf8.RuneSelf:
			return ""
		default:
			return ""
		}
	}
	if letters == 0 {
		return ""
	}
	switch strings.ToLower(f) {
	case "e.g", "i.e", "etc", "vs", "a.m", "p.m", "and/or", "n/a", "w/o", "either/or", "u.s":
		return ""
	}
	if strings.Contains(f, "/") {
		if f == "/" || strings.Count(f, "/") == len(f) {
			return ""
		}
		return f
	}
	if strings.Contains(f, "::") {
		return f
	}
	if k := strings.IndexByte(f, '_'); k >= 0 && strings.Trim(f, "_") != "" {
		return f
	}
	if strings.Contains(f, ".") {
		if isVersion(f) {
			return ""
		}
		if f[0] == '.' {
			if len(f) > 1 && isAlnum(f[1]) {
				return f
			}
			return ""
		}
		for k := 1; k+1 < len(f); k++ {
			if f[k] == '.' && isAlnum(f[k-1]) && isAlnum(f[k+1]) {
				return f
			}
		}
		return ""
	}
	if upperInner && lower && !strings.Contains(f, "-") {
		// Plural acronyms (APIs, PRs, JWTs) are not identifiers.
		if f[len(f)-1] == 's' && isUpperRun(f[:len(f)-1]) {
			return ""
		}
		return f
	}
	return ""
}

func isUpperRun(s string) bool {
	for k := 0; k < len(s); k++ {
		if s[k] < 'A' || s[k] > 'Z' {
			return false
		}
	}
	return s != ""
}

// isVersion reports whether f is a version or a number: v1.2.3, 1.22, 3.11.
func isVersion(f string) bool {
	f = strings.TrimPrefix(strings.TrimPrefix(f, "v"), "V")
	for k := 0; k < len(f); k++ {
		if (f[k] < '0' || f[k] > '9') && f[k] != '.' {
			return false
		}
	}
	return true
}
