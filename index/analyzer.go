package index

import (
	"fmt"
	"strings"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/blugelabs/bluge/analysis"
	"github.com/blugelabs/bluge/analysis/lang/en"
)

// maxTokenBytes is the longest term the analyzer emits. A longer whole
// token (a base64 blob, a minified line) is dropped; its parts are kept
// when they are short enough.
const maxTokenBytes = 255

// codeAnalyzer is the analyzer of every text field: codeTokenizer, no
// filters (the tokenizer lowercases).
var codeAnalyzer = &analysis.Analyzer{Tokenizer: codeTokenizer{}}

// Tokens returns the terms the index makes of text, in order: for each
// token its whole lowercased form (a word's stem), then its parts, each
// followed by its stem when that differs. Search analyzes query text the
// same way.
func Tokens(text string) []string {
	ts := codeTokenizer{}.Tokenize([]byte(text))
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = string(t.Term)
	}
	return out
}

// codeTokenizer splits text into identifiers and words. A token is a run
// of letters, digits and the joiners _ - . / \ : @ that starts with a
// letter, a digit, an underscore or a run of dashes followed by one (a
// command-line flag) and ends at its last letter, digit or underscore, so
// "segment.go," is "segment.go". For each token it emits the whole token
// and then, when the token has more than one, its parts: the pieces
// between joiners and their camelCase words. A token that is one word of
// ASCII letters is emitted as its English (Snowball) stem, so "tagging",
// "tags" and "tag" are one term and BM25 counts a word once; a part of
// ASCII letters is followed by its stem when that differs, so an
// identifier matches by its parts as written and by their stems.
//
//	parseHTTPRequest        parsehttprequest parse pars http request
//	internal/wal/segment.go internal/wal/segment.go internal intern wal segment go
//	--dry-run               --dry-run dry dri run
//	tagging tests           tag test
//	parseConfigs            parseconfigs parse pars configs config
//
// Terms are lowercased (strings.ToLower of the input bytes they span, which
// Start and End give), or the stem of that. The whole token has
// PositionIncr 1, its parts and their stems 0. Invalid UTF-8 separates
// tokens.
type codeTokenizer struct{}

// analyzerPanics counts panics recovered in Tokenize, and lastAnalyzerPanic
// holds the latest value. Tokenize runs in Bluge's analysis goroutines,
// where a panic cannot be recovered by the caller of Batch, so it recovers
// itself and the index reports the panic after the batch (see batch).
var (
	analyzerPanics    atomic.Uint64
	lastAnalyzerPanic atomic.Value // string
)

func (codeTokenizer) Tokenize(in []byte) (ts analysis.TokenStream) {
	defer func() {
		if r := recover(); r != nil {
			lastAnalyzerPanic.Store(fmt.Sprint(r))
			analyzerPanics.Add(1)
			ts = nil
		}
	}()
	i := 0
	for i < len(in) {
		start, end, next := nextToken(in, i)
		if start < 0 {
			break
		}
		ts = appendToken(ts, in, start, end)
		i = next
	}
	return ts
}

// runeClass is how the tokenizer treats a rune.
type runeClass uint8

const (
	classOther  runeClass = iota
	classWord             // letter, digit, underscore
	classJoiner           // - . / \ : @
)

func classify(r rune) runeClass {
	switch {
	case r < utf8.RuneSelf:
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '_':
			return classWord
		case r == '-', r == '.', r == '/', r == '\\', r == ':', r == '@':
			return classJoiner
		}
		return classOther
	case r == utf8.RuneError:
		return classOther
	case unicode.IsLetter(r), unicode.IsDigit(r):
		return classWord
	}
	return classOther
}

// nextToken finds the first token at or after i. It returns the token's
// byte span and where to continue, or start -1 when there is none.
func nextToken(in []byte, i int) (start, end, next int) {
	// Find a start: a word rune, or dashes followed by a word rune.
	start = -1
	for i < len(in) {
		r, n := utf8.DecodeRune(in[i:])
		c := classify(r)
		if c == classWord {
			start = i
			break
		}
		if r == '-' {
			j := i
			for j < len(in) && in[j] == '-' {
				j++
			}
			if j < len(in) {
				r2, _ := utf8.DecodeRune(in[j:])
				if classify(r2) == classWord {
					start = i
					break
				}
			}
			i = j
			continue
		}
		i += n
	}
	if start < 0 {
		return -1, 0, len(in)
	}
	// Extend over word runes and joiners; remember the last word rune.
	end = start
	j := start
	for j < len(in) {
		r, n := utf8.DecodeRune(in[j:])
		c := classify(r)
		if c == classOther {
			break
		}
		j += n
		if c == classWord {
			end = j
		}
	}
	return start, end, j
}

// appendToken appends the whole token in[start:end] and its parts.
func appendToken(ts analysis.TokenStream, in []byte, start, end int) analysis.TokenStream {
	incr := 1
	whole := len(ts)
	if end-start <= maxTokenBytes {
		ts = append(ts, newToken(in, start, end, incr))
		incr = 0
	}
	// Parts: pieces between joiners (and underscores), then camelCase.
	var parts [][2]int
	seg := -1
	for j := start; j < end; {
		r, n := utf8.DecodeRune(in[j:])
		if classify(r) == classWord && r != '_' {
			if seg < 0 {
				seg = j
			}
		} else if seg >= 0 {
			parts = appendCamel(parts, in, seg, j)
			seg = -1
		}
		j += n
	}
	if seg >= 0 {
		parts = appendCamel(parts, in, seg, end)
	}
	if len(ts) > whole && (len(parts) == 0 || len(parts) == 1 && parts[0] == [2]int{start, end}) {
		w := ts[whole]
		short := abbreviations[string(w.Term)]
		stemWord(w)
		if short != "" {
			ts = append(ts, &analysis.Token{Start: w.Start, End: w.End, Term: []byte(short), Type: analysis.AlphaNumeric})
		}
	}
	for _, p := range parts {
		if p == [2]int{start, end} || p[1]-p[0] > maxTokenBytes {
			continue
		}
		t := newToken(in, p[0], p[1], incr)
		ts = appendStem(append(ts, t), t)
		if short := abbreviations[string(t.Term)]; short != "" {
			ts = append(ts, &analysis.Token{Start: t.Start, End: t.End, Term: []byte(short), Type: analysis.AlphaNumeric})
		}
		incr = 0
	}
	return ts
}

// abbreviations map words to the short form code and paths use for
// them, which the analyzer emits after the word's stem: "configured"
// also gives "config", so a question about where something is
// configured finds config/config.exs, and "repo" finds "repository".
// The short forms are words as the analyzer emits them (stemmed).
var abbreviations = map[string]string{}

func init() {
	for _, l := range strings.Split(`config: configure configured configures configuring configuration configurations
		repo: repository repositories
		auth: authentication authenticate authenticated authenticating
		env: environment environments
		dir: directory directories
		app: application applications
		doc: documentation
		param: parameter parameters
		arg: argument arguments
		prod: production
		dev: development
		temp: temporary
		max: maximum
		min: minimum
		lib: library libraries
		msg: message messages
		spec: specification specifications
		info: information
		stat: statistics
		init: initialize initialization initialise initialisation
		impl: implementation implementations
		dep: dependency dependencies
		k8s: kubernetes`, "\n") {
		short, long, _ := strings.Cut(strings.TrimSpace(l), ":")
		for _, w := range strings.Fields(long) {
			abbreviations[w] = short
		}
	}
}

// minStemBytes is the shortest word that is stemmed: the Snowball
// English stemmer leaves shorter ones alone.
const minStemBytes = 3

// stemmer is the English Snowball stemmer of Bluge's analysis/lang/en.
var stemmer = en.StemmerFilter()

// stemWord replaces t's term by its stem when the term is a word of
// lower-case ASCII letters.
func stemWord(t *analysis.Token) {
	if s := stem(t); s != nil {
		t.Term = s
	}
}

// appendStem appends the stem of t's term after it when the term is a
// word of lower-case ASCII letters and its stem differs.
func appendStem(ts analysis.TokenStream, t *analysis.Token) analysis.TokenStream {
	if s := stem(t); s != nil {
		return append(ts, &analysis.Token{Start: t.Start, End: t.End, Term: s, Type: analysis.AlphaNumeric})
	}
	return ts
}

// stem returns the stem of t's term when the term is a word of
// lower-case ASCII letters and its stem differs, else nil.
func stem(t *analysis.Token) []byte {
	if len(t.Term) < minStemBytes {
		return nil
	}
	for _, c := range t.Term {
		if c < 'a' || c > 'z' {
			return nil
		}
	}
	s := &analysis.Token{Term: t.Term}
	stemmer.Filter(analysis.TokenStream{s}) // replaces s.Term, t.Term is not changed
	if string(s.Term) == string(t.Term) {
		return nil
	}
	return s.Term
}

// appendCamel appends the piece in[s:e] (letters and digits only) and,
// when it has camelCase words, each word. A word starts at an upper-case
// letter that follows a lower-case letter or a digit, or that follows an
// upper-case letter and is followed by a lower-case one ("HTTPRequest" is
// HTTP Request). Digits stay with their word: utf8, sha256, Base64.
func appendCamel(parts [][2]int, in []byte, s, e int) [][2]int {
	parts = append(parts, [2]int{s, e})
	ws := s
	var prev rune = -1
	for j := s; j < e; {
		r, n := utf8.DecodeRune(in[j:])
		if j > s && unicode.IsUpper(r) {
			boundary := unicode.IsLower(prev) || unicode.IsDigit(prev)
			if !boundary && unicode.IsUpper(prev) && j+n < e {
				r2, _ := utf8.DecodeRune(in[j+n:])
				boundary = unicode.IsLower(r2)
			}
			if boundary {
				parts = append(parts, [2]int{ws, j})
				ws = j
			}
		}
		prev = r
		j += n
	}
	if ws == s {
		return parts // one word: the piece itself
	}
	parts = append(parts, [2]int{ws, e})
	return parts
}

// newToken makes the token for in[s:e]. Its term aliases the input when
// the input is already lower-case ASCII (Bluge copies a stored field's
// value before analyzing it, so the input outlives the token).
func newToken(in []byte, s, e, incr int) *analysis.Token {
	b := in[s:e]
	term := b
	for _, c := range b {
		if c >= utf8.RuneSelf || ('A' <= c && c <= 'Z') {
			term = []byte(strings.ToLower(string(b)))
			break
		}
	}
	return &analysis.Token{Start: s, End: e, Term: term, PositionIncr: incr, Type: analysis.AlphaNumeric}
}
