package memtext

import (
	"slices"
	"strings"
	"unicode"
)

// FixedErrors returns the errors a report says no longer happen, each as
// the words that name it: "no key errors" and "without any KeyError"
// give [key], "the timeout error is gone" gives [timeout], "fixed the
// import error" gives [import]. Words are lowercased and identifiers
// split at inner capitals, underscores and dots, as ErrorWords splits an
// error line. An error named by no word ("no errors", "no more
// failures") is left out: it does not say which failure ended.
func FixedErrors(text string) [][]string {
	toks := rawTokens(text)
	var out [][]string
	for i, tok := range toks {
		low := strings.ToLower(tok)
		var named []string // words of an identifier naming the error itself
		switch {
		case errorNoun[low]:
		case len(tok) > 5 && (strings.HasSuffix(tok, "Error") || strings.HasSuffix(tok, "Exception")) && unicode.IsUpper(rune(tok[0])):
			for _, w := range splitIdent(tok) {
				if !errorNoun[w] {
					named = append(named, w)
				}
			}
		default:
			continue
		}
		// The words before it that name it: at most two, back to a word
		// that is not part of a name.
		j := i
		for j > 0 && i-j < 2 && len(named) == 0 && !fixedLead[strings.ToLower(toks[j-1])] && !stopWords[strings.ToLower(toks[j-1])] {
			j--
		}
		var ws []string
		for _, t := range toks[j:i] {
			ws = append(ws, splitIdent(t)...)
		}
		ws = append(ws, named...)
		if len(ws) == 0 {
			continue
		}
		if fixedBefore(toks[:j]) || fixedAfter(toks[i+1:]) {
			slices.Sort(ws)
			out = append(out, slices.Compact(ws))
		}
	}
	return out
}

// errorNoun are the nouns of an error a report says is gone.
var errorNoun = map[string]bool{"error": true, "errors": true, "exception": true, "exceptions": true, "failure": true, "failures": true}

// fixedLead are the words between "no" and the error's name.
var fixedLead = map[string]bool{"no": true, "more": true, "longer": true, "any": true, "further": true, "without": true, "the": true, "fixed": true}

// fixedBefore reports whether the words before an error's name say it
// is gone: "no", "no more", "no longer any", "without (any)", "fixed
// (the)".
func fixedBefore(toks []string) bool {
	n := len(toks)
	at := func(k int) string {
		if k < 0 || k >= n {
			return ""
		}
		return strings.ToLower(toks[k])
	}
	k := n - 1
	for k >= 0 && (at(k) == "more" || at(k) == "any" || at(k) == "further" || at(k) == "the" || at(k) == "longer") && n-k <= 3 {
		k--
	}
	switch at(k) {
	case "no", "without":
		return true
	case "fixed", "resolved":
		return k == n-1 || at(k+1) == "the"
	}
	return false
}

// fixedAfter reports whether the words after an error's name say it is
// gone: "is gone", "are fixed", "no longer occurs".
func fixedAfter(toks []string) bool {
	at := func(k int) string {
		if k >= len(toks) {
			return ""
		}
		return strings.ToLower(toks[k])
	}
	switch at(0) {
	case "is", "are", "was", "were", "has", "have":
		k := 1
		if at(k) == "been" || at(k) == "now" {
			k++
		}
		switch at(k) {
		case "gone", "fixed", "resolved":
			return true
		}
	case "no":
		return at(1) == "longer"
	}
	return false
}

// rawTokens splits text into words and identifiers as they are written
// (case kept), at spaces and at punctuation other than "_", "." and "'"
// inside a word.
func rawTokens(text string) []string {
	f := strings.FieldsFunc(text, func(r rune) bool {
		return !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '.' || r == '\'')
	})
	out := f[:0]
	for _, t := range f {
		if t = strings.Trim(t, ".'_"); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// splitIdent splits an identifier into lowercased words at inner
// capitals, underscores, dots and digits' edges: "UniqueViolation" gives
// [unique violation], "shipping_country" [shipping country].
func splitIdent(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case r == '_' || r == '.' || r == '\'' || r == '-':
			flush()
			continue
		case unicode.IsUpper(r) && i > 0 && (unicode.IsLower(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1])):
			flush()
		}
		cur = append(cur, r)
	}
	flush()
	return out
}

// ErrorWords returns the words of an error line, lowercased, identifiers
// split as FixedErrors splits them, sorted and unique: "KeyError:
// 'shipping_country'" gives [country error key shipping].
func ErrorWords(line string) []string {
	var out []string
	for _, t := range rawTokens(line) {
		out = append(out, splitIdent(t)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ErrorFixed reports whether a report says that the error of line no
// longer happens: one of its FixedErrors is named by words all in the
// line (a plural "keys" counts for "key").
func ErrorFixed(report, line string) bool {
	fixed := FixedErrors(report)
	if len(fixed) == 0 {
		return false
	}
	ws := ErrorWords(line)
	has := func(w string) bool {
		_, ok := slices.BinarySearch(ws, w)
		if !ok && len(w) > 3 && strings.HasSuffix(w, "s") {
			_, ok = slices.BinarySearch(ws, w[:len(w)-1])
		}
		return ok
	}
	for _, g := range fixed {
		all := true
		for _, w := range g {
			all = all && has(w)
		}
		if all {
			return true
		}
	}
	return false
}
