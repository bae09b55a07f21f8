package memtext

import "strings"

// sent is one prose sentence: text[s:e], and whether it is a heading or
// sits in a section headed "Decision(s)".
type sent struct {
	s, e       int
	heading    bool
	decSection bool
	// item: the sentence is the first of a bulleted or numbered line.
	item bool
}

// sentences returns the prose sentences of text, in order. It skips fenced
// code, indented code after a blank line, quoted lines, table rows, diff
// lines, log and tool output, and the output that follows a shell prompt
// or a traceback up to the next blank line.
func sentences(dst []sent, text string) []sent {
	diff := hasDiffMarkers(text)
	inFence := false
	var fenceCh byte
	fenceN := 0
	prevBlank, prevCode, inOutput := true, false, false
	pStart, pEnd := -1, -1
	decSection, item := false, false
	flush := func() {
		if pStart >= 0 {
			n := len(dst)
			dst = splitSentences(dst, text, pStart, pEnd, decSection)
			if item && len(dst) > n {
				dst[n].item = true
			}
			pStart, item = -1, false
		}
	}
	for off := 0; off < len(text); {
		lineEnd, next := len(text), len(text)
		if nl := strings.IndexByte(text[off:], '\n'); nl >= 0 {
			lineEnd, next = off+nl, off+nl+1
		}
		if lineEnd > off && text[lineEnd-1] == '\r' {
			lineEnd--
		}
		line := text[off:lineEnd]
		ind, i := 0, 0
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			if line[i] == '\t' {
				ind += 4
			} else {
				ind++
			}
			i++
		}
		rest := line[i:]
		lineOff := off
		off = next
		if inFence {
			if ch, n := fenceMark(rest); n >= fenceN && ch == fenceCh && strings.TrimSpace(rest[n:]) == "" {
				inFence = false
			}
			prevBlank, prevCode = false, false
			continue
		}
		if ch, n := fenceMark(rest); n >= 3 && ind < 4 {
			flush()
			inFence, fenceCh, fenceN = true, ch, n
			continue
		}
		if strings.TrimSpace(rest) == "" {
			flush()
			prevBlank, prevCode, inOutput = true, false, false
			continue
		}
		if ind >= 4 && (prevBlank || prevCode) {
			flush()
			prevBlank, prevCode = false, true
			continue
		}
		prevBlank, prevCode = false, false
		if inOutput {
			continue
		}
		if startsOutput(rest) {
			flush()
			inOutput = true
			continue
		}
		if skipLine(rest, ind, diff) {
			flush()
			continue
		}
		if n := headingMark(rest); n > 0 {
			flush()
			s, e := trimSpan(text, lineOff+i+n, lineEnd)
			for e > s && text[e-1] == '#' {
				e--
			}
			s, e = trimSpan(text, s, e)
			if s < e {
				dst = append(dst, sent{s: s, e: e, heading: true})
				decSection = isDecisionHeading(text[s:e])
			}
			continue
		}
		if n := bulletMark(rest); n > 0 {
			flush()
			pStart, pEnd, item = lineOff+i+n, lineEnd, true
			continue
		}
		if pStart < 0 {
			pStart = lineOff + i
		}
		pEnd = lineEnd
	}
	flush()
	return dst
}

func trimSpan(text string, s, e int) (int, int) {
	for s < e && isSpace(text[s]) {
		s++
	}
	for e > s && isSpace(text[e-1]) {
		e--
	}
	return s, e
}

// fenceMark returns the fence character and the length of a run of three
// or more backticks or tildes at the start of s.
func fenceMark(s string) (byte, int) {
	if len(s) < 3 || (s[0] != '`' && s[0] != '~') {
		return 0, 0
	}
	n := 0
	for n < len(s) && s[n] == s[0] {
		n++
	}
	if n < 3 {
		return 0, 0
	}
	return s[0], n
}

func isDecisionHeading(h string) bool {
	ws := words(h)
	if len(ws) == 0 || len(ws) > 3 {
		return false
	}
	for _, w := range ws {
		if w == "decision" || w == "decisions" {
			return true
		}
	}
	return false
}

// hasDiffMarkers reports whether text holds a unified diff: a hunk header
// or a diff/---/+++ file header at the start of a line.
func hasDiffMarkers(text string) bool {
	for _, m := range []string{"@@ -", "diff --git ", "+++ ", "--- a/"} {
		if strings.HasPrefix(text, m) || strings.Contains(text, "\n"+m) {
			return true
		}
	}
	return false
}

// startsOutput reports whether the line starts a block of tool output that
// runs to the next blank line: a shell prompt, a traceback, a Go panic or
// goroutine dump, go test's verbose markers.
func startsOutput(s string) bool {
	switch {
	case strings.HasPrefix(s, "$ "), strings.HasPrefix(s, "% ") && len(s) > 2 && isAlnum(s[2]),
		strings.HasPrefix(s, "Traceback (most recent call last)"),
		strings.HasPrefix(s, "panic: "), strings.HasPrefix(s, "goroutine ") && len(s) > 10 && s[10] >= '0' && s[10] <= '9',
		strings.HasPrefix(s, "--- FAIL"), strings.HasPrefix(s, "=== RUN"),
		strings.HasPrefix(s, "thread '") && strings.Contains(s, "panicked"),
		strings.HasPrefix(s, "Exception in thread"):
		return true
	}
	return false
}

// skipLine reports whether a line (s, after ind columns of indentation) is
// not prose: a quote, a table row, a diff line, or log or tool output.
func skipLine(s string, ind int, diff bool) bool {
	switch s[0] {
	case '>', '|':
		return true
	case '+':
		return true
	case '@':
		return strings.HasPrefix(s, "@@")
	case '-':
		if strings.HasPrefix(s, "--") {
			return true
		}
		if len(s) > 1 && s[1] != ' ' && s[1] != '\t' {
			return true
		}
		if len(s) > 2 && (s[2] == ' ' || s[2] == '\t') {
			return true
		}
		return diff
	case ':':
		return strings.Trim(s, ":-| ") == ""
	}
	if diff && (strings.HasPrefix(s, "diff --git ") || strings.HasPrefix(s, "index ")) {
		return true
	}
	return isLogLine(s, ind)
}

// logPrefixes start a line of log or tool output. Each must be followed by
// a non-letter.
var logPrefixes = []string{
	"ERROR", "ERR!", "ERR", "WARN", "WARNING", "INFO", "DEBUG", "TRACE", "FATAL", "CRITICAL", "NOTICE",
	"error:", "error[", "Error:", "warning:", "Warning:", "fatal:", "Fatal:", "panic:", "npm ERR!", "npm WARN",
	"npm notice", "npm error", "yarn error", "FAIL", "PASS", "ok  ", "ok\t", "E   ", "Caused by:",
	"File \"", "Switched to ", "remote:", "hint:", "Cloning into", "make:", "make[", "Requirement already",
	"created by ", "stack backtrace:", "note: run with", "Segmentation fault",
}

func isLogLine(s string, ind int) bool {
	for _, p := range logPrefixes {
		if strings.HasPrefix(s, p) {
			last := p[len(p)-1]
			if !isAlnum(last) || len(s) == len(p) || !isAlnum(s[len(p)]) {
				return true
			}
		}
	}
	if s[0] == '[' && len(s) > 1 && (s[1] >= '0' && s[1] <= '9' || isLevelWord(s[1:])) {
		return true
	}
	if hasTimestamp(s) {
		return true
	}
	// Stack frames: "at fn (file:1:2)", "main.main()", "\t/src/main.go:44 +0x85".
	if strings.HasPrefix(s, "at ") && (ind > 0 || strings.HasSuffix(s, ")")) {
		return true
	}
	first := s
	if k := strings.IndexAny(s, " \t"); k >= 0 {
		first = s[:k]
	}
	if strings.HasSuffix(first, ")") && strings.Contains(first, "(") && strings.Contains(first, ".") && len(first) == len(s) {
		return true
	}
	if isFileLine(first) {
		return true
	}
	if strings.Contains(s, "+0x") && (s[0] == '/' || ind > 0) {
		return true
	}
	// "ValueError: ...", "TypeError: ...", "java.lang.IllegalStateException: ..."
	if k := strings.IndexByte(first, ':'); k > 0 && k == len(first)-1 {
		name := first[:k]
		for _, suf := range []string{"Error", "Exception", "Warning", "Interrupt", "Exit"} {
			if strings.HasSuffix(name, suf) && len(name) > len(suf) {
				return true
			}
		}
	}
	return false
}

func isLevelWord(s string) bool {
	for _, w := range []string{"ERROR", "WARN", "INFO", "DEBUG", "TRACE", "FATAL", "error", "warn", "info", "debug", "trace"} {
		if strings.HasPrefix(s, w) {
			return true
		}
	}
	return false
}

// isFileLine reports whether f (the first field of a line) is a compiler
// or test location: file.ext:LINE, with an optional column.
func isFileLine(f string) bool {
	k := strings.IndexByte(f, ':')
	if k <= 0 || k+1 >= len(f) || f[k+1] < '0' || f[k+1] > '9' {
		return false
	}
	name := f[:k]
	dot := strings.LastIndexByte(name, '.')
	return dot > 0 && dot < len(name)-1 && isAlnum(name[dot+1])
}

// hasTimestamp reports whether s starts with a date (2024-05-01,
// 2024/05/01), a time of day (12:00:00), or a glog header (E0501 12:00).
func hasTimestamp(s string) bool {
	digits := func(s string, n int) bool {
		if len(s) < n {
			return false
		}
		for k := 0; k < n; k++ {
			if s[k] < '0' || s[k] > '9' {
				return false
			}
		}
		return true
	}
	if digits(s, 4) && len(s) >= 10 && (s[4] == '-' || s[4] == '/') && digits(s[5:], 2) && s[7] == s[4] && digits(s[8:], 2) {
		return true
	}
	if digits(s, 2) && len(s) >= 8 && s[2] == ':' && digits(s[3:], 2) && s[5] == ':' && digits(s[6:], 2) {
		return true
	}
	if len(s) >= 11 && strings.IndexByte("IWEF", s[0]) >= 0 && digits(s[1:], 4) && s[5] == ' ' && digits(s[6:], 2) && s[8] == ':' {
		return true
	}
	return false
}

// splitSentences appends the sentences of the paragraph text[ps:pe].
func splitSentences(dst []sent, text string, ps, pe int, dec bool) []sent {
	add := func(s, e int) {
		s, e = trimSpan(text, s, e)
		if s < e {
			dst = append(dst, sent{s: s, e: e, decSection: dec})
		}
	}
	s := ps
	for i := ps; i < pe; {
		c := text[i]
		switch c {
		case '`':
			end, n := codeSpanEnd(text, i, pe)
			if end < 0 {
				i += n
			} else {
				i = end
			}
			continue
		case '.', '!', '?':
			j := i + 1
			for j < pe && (text[j] == '.' || text[j] == '!' || text[j] == '?') {
				j++
			}
			k := j
			for k < pe && (text[k] == '"' || text[k] == '\'' || text[k] == ')' || text[k] == '*' || text[k] == '_') {
				k++
			}
			if k == pe || isSpace(text[k]) {
				if c == '.' && j == i+1 && isAbbrev(text[s:i]) {
					i = k
					continue
				}
				if c == '.' && j == i+3 && capsAround(text, s, i, k, pe) {
					// "INSERT ... ON CONFLICT": an ellipsis inside code
					// written in capitals ends nothing.
					i = k
					continue
				}
				add(s, k)
				s = k
				i = k
				continue
			}
			i = j
		default:
			i++
		}
	}
	add(s, pe)
	return dst
}

// isAbbrev reports whether the word before a '.' at the end of s is an
// abbreviation or an initial, after which a period does not end the
// sentence.
func isAbbrev(s string) bool {
	k := len(s)
	for k > 0 && !isSpace(s[k-1]) && s[k-1] != '(' {
		k--
	}
	w := strings.ToLower(s[k:])
	switch w {
	case "e.g", "i.e", "etc", "vs", "cf", "approx", "mr", "mrs", "ms", "dr", "no", "fig", "incl", "resp", "viz", "al":
		return true
	}
	return false
}

// capsAround reports whether the words just before text[i] (back to s)
// and just after text[k] (up to e) are both written in capitals of at
// least two letters, as SQL keywords are.
func capsAround(text string, s, i, k, e int) bool {
	b := i
	for b > s && text[b-1] == ' ' {
		b--
	}
	a := b
	for a > s && text[a-1] >= 'A' && text[a-1] <= 'Z' {
		a--
	}
	c := k
	for c < e && text[c] == ' ' {
		c++
	}
	d := c
	for d < e && text[d] >= 'A' && text[d] <= 'Z' {
		d++
	}
	return b-a >= 2 && d-c >= 2 && (a == s || !isLetter(text[a-1])) && (d == e || !isLetter(text[d]))
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
