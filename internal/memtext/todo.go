package memtext

import (
	"slices"
	"strings"
)

// TODO is a TODO, FIXME, XXX or HACK comment in source text.
type TODO struct {
	// Marker is the word as written: TODO, FIXME, XXX or HACK.
	Marker string
	// Text is the comment after the marker, its owner "(name)" and
	// separator removed, trimmed, without a closing "*/" or "-->".
	Text string
	// Line is the 1-based line number.
	Line int
}

var todoMarkers = []string{"TODO", "FIXME", "XXX", "HACK"}

// TODOs returns the TODO, FIXME, XXX and HACK comments in code: a marker
// that is the first word of a comment opened by //, #, --, /*, <!-- or ;
// (or of a line inside a /* */ or <!-- --> block). Markers in string
// literals that merely contain "// TODO" are reported too: the function
// does not parse languages.
func TODOs(code string) []TODO {
	var out []TODO
	inBlock, inHTML := false, false
	line := 0
	for off := 0; off <= len(code); {
		line++
		end := strings.IndexByte(code[off:], '\n')
		if end < 0 {
			end = len(code)
		} else {
			end += off
		}
		l := strings.TrimRight(code[off:end], "\r")
		off = end + 1
		if inBlock || inHTML {
			body := strings.TrimLeft(l, " \t*")
			if t, ok := todoAt(body, line); ok {
				out = append(out, t)
			}
			if inBlock && strings.Contains(l, "*/") {
				inBlock = false
			}
			if inHTML && strings.Contains(l, "-->") {
				inHTML = false
			}
			if end == len(code) {
				break
			}
			continue
		}
		for i := 0; i < len(l); i++ {
			n := commentOpener(l, i)
			if n == 0 {
				continue
			}
			if t, ok := todoAt(strings.TrimLeft(l[i+n:], " \t*!/#;-"), line); ok {
				out = append(out, t)
			}
			switch {
			case strings.HasPrefix(l[i:], "/*") && !strings.Contains(l[i+2:], "*/"):
				inBlock = true
			case strings.HasPrefix(l[i:], "<!--") && !strings.Contains(l[i+4:], "-->"):
				inHTML = true
			}
			break
		}
		if end == len(code) {
			break
		}
	}
	return out
}

// commentOpener returns the length of a comment opener at l[i], or 0. '#',
// "--" and ';' open a comment only at the line start or after a space, so
// "#include", "a--" and "x;" do not.
func commentOpener(l string, i int) int {
	atWord := i == 0 || l[i-1] == ' ' || l[i-1] == '\t'
	switch {
	case strings.HasPrefix(l[i:], "<!--"):
		return 4
	case strings.HasPrefix(l[i:], "//"), strings.HasPrefix(l[i:], "/*"):
		return 2
	case strings.HasPrefix(l[i:], "--") && atWord:
		return 2
	case l[i] == '#' && atWord && (i+1 == len(l) || l[i+1] == ' ' || l[i+1] == '\t' || l[i+1] == '#'):
		return 1
	case l[i] == ';' && atWord:
		return 1
	}
	return 0
}

// todoAt reads a marker at the start of s.
func todoAt(s string, line int) (TODO, bool) {
	for _, m := range todoMarkers {
		if !strings.HasPrefix(s, m) {
			continue
		}
		rest := s[len(m):]
		if rest != "" && (isAlnum(rest[0]) || rest[0] == '_') {
			return TODO{}, false
		}
		if strings.HasPrefix(rest, "(") {
			if k := strings.IndexByte(rest, ')'); k >= 0 {
				rest = rest[k+1:]
			}
		}
		rest = strings.TrimLeft(rest, " \t:-–—")
		rest = strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(rest), "*/"), "-->"))
		return TODO{Marker: m, Text: rest, Line: line}, true
	}
	return TODO{}, false
}

// todoLabels open a list of work not done yet.
var todoLabels = []string{
	"still need to", "still needs", "still to do", "pending tasks", "pending", "remaining work", "remaining tasks",
	"remaining", "left to do", "next steps", "todo", "to do", "not done yet", "open items", "outstanding",
}

// TodoList returns the items of the lists of work not done that text
// holds: the list items (-, *, 1.) that follow a line such as "Still need
// to:", "Pending Tasks:", "7. Pending Tasks:" or "Next steps:", up to the
// first line that is neither a list item nor blank. Of nested items only
// the innermost are kept ("Fix X" under "spotter-dov.3: …"). Items are
// cleaned of markdown and capped at 400 bytes.
func TodoList(text string) []string {
	var out []string
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		if !todoLabel(lines[i]) {
			continue
		}
		type item struct {
			ind  int
			text string
		}
		var items []item
		j := i + 1
		for ; j < len(lines); j++ {
			l := strings.TrimRight(lines[j], " \t\r")
			if strings.TrimSpace(l) == "" {
				if len(items) > 0 {
					break
				}
				continue
			}
			ind := len(l) - len(strings.TrimLeft(l, " \t"))
			t := strings.TrimLeft(l, " \t")
			n := bulletMark(t)
			if n == 0 {
				break
			}
			items = append(items, item{ind, t[n:]})
		}
		for k, it := range items {
			if k+1 < len(items) && items[k+1].ind > it.ind {
				continue // it has sub-items
			}
			if s := capBytes(clean(it.text), maxSentence); s != "" && !lookItem(s) {
				out = append(out, s)
			}
		}
		i = j - 1
	}
	return out
}

// todoLabel reports whether line is a label that opens a list of work
// not done: short, ending in ':', naming pending work.
func todoLabel(line string) bool {
	t := strings.TrimSpace(stripLineMarks(strings.TrimSpace(line)))
	t = strings.Trim(t, "*_ ")
	if !strings.HasSuffix(t, ":") || len(t) > 40 {
		return false
	}
	t = strings.ToLower(strings.Trim(strings.TrimSuffix(t, ":"), "*_ "))
	for len(t) > 0 && (t[0] >= '0' && t[0] <= '9' || t[0] == '.' || t[0] == ' ') {
		t = t[1:]
	}
	for _, l := range todoLabels {
		if t == l || strings.HasPrefix(t, l+" ") && len(t) < len(l)+12 {
			return true
		}
	}
	return false
}

// AllDone reports whether an agent's message says that all the work is
// finished: "All done.", "Everything is committed and pushed.", "All
// tasks are complete." Tickets closed ("All 3 subtasks closed") are not
// all the work.
func AllDone(text string) bool {
	for _, sn := range sentences(nil, text) {
		ws := words(text[sn.s:sn.e])
		if len(ws) < 2 || ws[0] != "all" && ws[0] != "everything" {
			continue
		}
		rest := ws[1:]
		if ws[0] == "all" {
			// "All 3 subtasks", "All the tasks", "All done".
			for len(rest) > 0 && (rest[0] == "the" || rest[0] == "of" || rest[0] == "my" || leadingDigit(rest[0])) {
				rest = rest[1:]
			}
			if len(rest) > 0 {
				switch rest[0] {
				case "done", "finished", "complete", "completed":
					return true
				case "tasks", "subtasks", "todos", "items", "steps", "work", "changes":
					rest = rest[1:]
				default:
					continue
				}
			}
		}
		if slices.ContainsFunc(ws, func(w string) bool {
			switch w {
			case "not", "except", "but", "remaining", "left", "still", "pending", "missing":
				return true
			}
			return false
		}) {
			continue
		}
		for _, w := range rest {
			switch w {
			case "done", "finished", "complete", "completed", "pushed", "merged", "shipped":
				return true
			}
		}
	}
	return false
}

// leadingDigit reports whether s is a count: "3", "three".
func leadingDigit(s string) bool {
	switch s {
	case "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "both":
		return true
	}
	return s != "" && s[0] >= '0' && s[0] <= '9'
}

// lookItem reports whether a list item is a step of looking rather than
// work: "Haven't yet read the CSS file", "Check the logs".
func lookItem(s string) bool {
	ws := words(s)
	for len(ws) > 0 {
		switch ws[0] {
		case "haven't", "have", "not", "yet", "still", "also", "then", "first":
			ws = ws[1:]
			continue
		}
		break
	}
	return len(ws) > 0 && narrationVerbs[ws[0]] && ws[0] != "test" && ws[0] != "run"
}

// irregularDone are past participles that are not the verb plus -ed.
var irregularDone = map[string]string{
	"make": "made", "write": "written", "do": "done", "set": "set", "run": "run", "build": "built",
	"put": "put", "split": "split", "keep": "kept", "rewrite": "rewritten", "get": "got", "add": "added",
	"move": "moved", "remove": "removed", "delete": "deleted", "update": "updated", "rename": "renamed",
	"bump": "bumped", "pin": "pinned", "drop": "dropped", "wrap": "wrapped", "ship": "shipped",
}

// ReportsDone reports whether an agent's message says the work of todo
// (an imperative: "rename the .up.sql files to tern's layout") is done;
// see Report.Done.
func ReportsDone(todo, text string) bool { return ReadReport(text).Done(todo) }

// Report is a message read once for what it says happened: the words
// and terms of each of its sentences that is no question and does not
// say something is still to do or did not happen.
type Report struct{ sents []reportSentence }

type reportSentence struct{ words, terms []string }

// ReadReport reads text as a Report.
func ReadReport(text string) *Report {
	r := &Report{}
	for _, sn := range sentences(nil, text) {
		s := text[sn.s:sn.e]
		if endsWithQuestion(s) {
			continue
		}
		ws := words(s)
		if slices.ContainsFunc(ws, func(w string) bool {
			switch w {
			case "not", "yet", "still", "remaining", "left", "pending", "todo", "haven't", "hasn't", "hadn't", "isn't", "aren't",
				"wasn't", "weren't", "won't", "didn't", "if", "once", "when", "after", "until":
				return true
			}
			return false
		}) {
			continue
		}
		r.sents = append(r.sents, reportSentence{words: ws, terms: Terms(s)})
	}
	return r
}

// said reports whether a sentence of r has one of the past forms (any
// words when past is nil) and at least min of the terms need.
func (r *Report) said(past, need []string, min int) bool {
	for _, s := range r.sents {
		if past != nil && !slices.ContainsFunc(s.words, func(w string) bool { return slices.Contains(past, w) }) {
			continue
		}
		n := 0
		for _, w := range need {
			if slices.Contains(s.terms, w) {
				n++
			}
		}
		if n >= min {
			return true
		}
	}
	return false
}

// Done reports whether r says the work of todo is done: a sentence uses
// the todo's verb in the past ("The migration files are renamed to
// tern's layout") and shares at least two of its other words.
func (r *Report) Done(todo string) bool {
	tw := words(todo)
	for len(tw) > 0 && (tw[0] == "todo" || tw[0] == "to" || tw[0] == "then" || tw[0] == "also") {
		tw = tw[1:]
	}
	if len(tw) < 2 || !imperativeVerb(tw[0]) {
		return false
	}
	want := Terms(strings.Join(tw[1:], " "))
	return len(want) >= 2 && r.said(pastForms(tw[0]), want, 2)
}

// Covers reports whether a sentence of r restates most of terms, the
// terms of a piece of work, as done: at least three of them and at
// least half ("temporary SMTP errors snooze the job for 60 seconds" for
// "make perform/1 return {:snooze, 60} on temporary SMTP errors").
func (r *Report) Covers(terms []string) bool {
	need := max(3, (len(terms)+1)/2)
	return len(terms) >= 3 && r.said(nil, terms, need)
}

// pastForms are the past participles of verb: "renamed", "made",
// "shipped" (a final consonant doubled) and "copied".
func pastForms(verb string) []string {
	var out []string
	if done := irregularDone[verb]; done != "" {
		out = append(out, done)
	}
	n := len(verb)
	switch {
	case strings.HasSuffix(verb, "e"):
		out = append(out, verb+"d")
	case strings.HasSuffix(verb, "y") && n > 2 && !strings.ContainsRune("aeiou", rune(verb[n-2])):
		out = append(out, verb[:n-1]+"ied")
	default:
		out = append(out, verb+"ed")
		if n >= 3 && !strings.ContainsRune("aeiouwxy", rune(verb[n-1])) && strings.ContainsRune("aeiou", rune(verb[n-2])) && !strings.ContainsRune("aeiou", rune(verb[n-3])) {
			out = append(out, verb+verb[n-1:]+"ed")
		}
	}
	return out
}
