package index

import (
	"encoding/binary"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/blugelabs/bluge"
	"github.com/cespare/xxhash/v2"

	"github.com/bbengine/bbengine/engine"
)

// Field names. docs/format/index.md describes each.
const (
	fieldID       = "_id"
	fieldType     = "type"
	fieldSession  = "session"
	fieldTask     = "task"
	fieldRun      = "run"
	fieldStatus   = "status"
	fieldTitle    = "title"
	fieldText     = "text"
	fieldFiles    = "files"
	fieldFile     = "file"
	fieldSymbols  = "symbols"
	fieldSymbol   = "symbol"
	fieldCommands = "commands"
	fieldErrors   = "errors"
	fieldTime     = "time"
	fieldTimeNS   = "time_ns"
	fieldTaskN    = "task_n"
	fieldFlag     = "flag"
	fieldSnippet  = "snippet"
)

// textFields are the fields Search matches, with their boosts.
var textFields = []struct {
	name  string
	boost float64
}{
	{fieldTitle, 2},
	{fieldText, 1},
	{fieldFiles, 1},
	{fieldSymbols, 1},
	{fieldCommands, 1},
	{fieldErrors, 1},
}

// Flag values of the flag field.
const (
	flagSuperseded = "superseded"
	flagClosed     = "closed"
	flagForgotten  = "forgotten"
	flagPinned     = "pinned"
)

// Bits of hit.flags.
const (
	bitSuperseded uint8 = 1 << iota
	bitClosed
	bitForgotten
	bitPinned
)

var flagBits = map[string]uint8{
	flagSuperseded: bitSuperseded,
	flagClosed:     bitClosed,
	flagForgotten:  bitForgotten,
	flagPinned:     bitPinned,
}

// Caps on what one document holds.
const (
	// SnippetRunes is the longest snippet a card carries, in runes.
	SnippetRunes  = 240
	maxTitleBytes = 512
	maxEntryBytes = 1 << 10 // one file, symbol, command or error
	maxEntries    = 256     // files, symbols, commands or errors per document
)

// flags returns the flag values of a.
func flags(a *engine.Artifact) []string {
	var fs []string
	if a.Status == "superseded" ||
		(a.Decision != nil && a.Decision.SupersededBy != "") ||
		(a.Constraint != nil && a.Constraint.SupersededBy != "") {
		fs = append(fs, flagSuperseded)
	}
	if a.Type == engine.ArtifactThread && (a.Status == "closed" || (a.Thread != nil && a.Thread.ClosedBy != nil)) {
		fs = append(fs, flagClosed)
	}
	if a.Forgotten {
		fs = append(fs, flagForgotten)
	}
	if a.Pinned {
		fs = append(fs, flagPinned)
	}
	return fs
}

// document makes the Bluge document of a. Analyzed text is capped at
// maxBytes, spent in field order: title, files, symbols, commands,
// errors, text; each value is cut at a rune boundary when the budget
// runs out.
func document(a *engine.Artifact, maxBytes int) *bluge.Document {
	budget := maxBytes
	take := func(s string, limit int) string {
		s = truncate(s, min(limit, budget))
		budget -= len(s)
		return s
	}
	text := func(name, value string) *bluge.TermField {
		return bluge.NewTextField(name, value).WithAnalyzer(codeAnalyzer)
	}
	d := bluge.NewDocument(a.ID)
	d.AddField(bluge.NewKeywordField(fieldType, string(a.Type)).StoreValue())
	d.AddField(bluge.NewKeywordField(fieldSession, a.Session).StoreValue())
	if a.Task != "" {
		d.AddField(bluge.NewKeywordField(fieldTask, a.Task).StoreValue())
	}
	if a.Run != "" {
		d.AddField(bluge.NewKeywordField(fieldRun, a.Run).StoreValue())
	}
	if a.Status != "" {
		d.AddField(bluge.NewKeywordField(fieldStatus, a.Status).StoreValue())
	}
	d.AddField(text(fieldTitle, take(a.Title, maxTitleBytes)).StoreValue())
	for i, f := range a.Files {
		if i == maxEntries {
			break
		}
		f = truncate(f, maxEntryBytes)
		d.AddField(bluge.NewKeywordField(fieldFile, f).StoreValue())
		if s := take(f, maxEntryBytes); s != "" {
			d.AddField(text(fieldFiles, s))
		}
	}
	for i, s := range a.Symbols {
		if i == maxEntries {
			break
		}
		s = truncate(s, maxEntryBytes)
		d.AddField(bluge.NewKeywordField(fieldSymbol, s).StoreValue())
		if s := take(s, maxEntryBytes); s != "" {
			d.AddField(text(fieldSymbols, s))
		}
	}
	for _, list := range []struct {
		name   string
		values []string
	}{{fieldCommands, a.Commands}, {fieldErrors, a.Errors}} {
		for i, v := range list.values {
			if i == maxEntries {
				break
			}
			if s := take(v, maxEntryBytes); s != "" {
				d.AddField(text(list.name, s))
			}
		}
	}
	if s := take(a.Text, budget); s != "" {
		d.AddField(text(fieldText, s))
	}
	d.AddField(bluge.NewStoredOnlyField(fieldSnippet, []byte(Snippet(a.Text))))
	d.AddField(bluge.NewNumericField(fieldTime, float64(a.Last)))
	d.AddField(bluge.NewStoredOnlyField(fieldTimeNS, strconv.AppendInt(nil, a.Last, 10)))
	d.AddField(bluge.NewNumericField(fieldTaskN, float64(a.TaskN)).StoreValue())
	for _, f := range flags(a) {
		d.AddField(bluge.NewKeywordField(fieldFlag, f).StoreValue())
	}
	return d
}

// docBytes is the number of text bytes of a, for throughput figures.
func docBytes(a *engine.Artifact) int {
	n := len(a.Title) + len(a.Text)
	for _, l := range [][]string{a.Files, a.Symbols, a.Commands, a.Errors} {
		for _, s := range l {
			n += len(s)
		}
	}
	return n
}

// truncate returns the longest prefix of s of at most n bytes that ends at
// a rune boundary.
func truncate(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Snippet returns the card snippet of text: its runs of white space made
// one space, cut to at most SnippetRunes runes at a rune boundary, with
// "…" as the last rune when it was cut.
func Snippet(text string) string {
	out := make([]rune, 0, 64)
	space := false
	for _, r := range strings.TrimSpace(text) {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space {
			out = append(out, ' ')
			space = false
		}
		out = append(out, r)
		if len(out) > SnippetRunes {
			out = append(out[:SnippetRunes-1], '…')
			break
		}
	}
	return string(out)
}

// hit is a document as read back from its stored fields.
type hit struct {
	id, typ, session, task, run, status, title, snippet string
	files, symbols                                      []string
	time                                                int64
	taskN                                               int
	flags                                               uint8
	bm25, score                                         float64
}

// visit is a stored-field visitor that fills h. Values are copied: Bluge
// reuses its buffers.
func (h *hit) visit(field string, value []byte) bool {
	switch field {
	case fieldID:
		h.id = string(value)
	case fieldType:
		h.typ = string(value)
	case fieldSession:
		h.session = string(value)
	case fieldTask:
		h.task = string(value)
	case fieldRun:
		h.run = string(value)
	case fieldStatus:
		h.status = string(value)
	case fieldTitle:
		h.title = string(value)
	case fieldSnippet:
		h.snippet = string(value)
	case fieldFile:
		h.files = append(h.files, string(value))
	case fieldSymbol:
		h.symbols = append(h.symbols, string(value))
	case fieldTimeNS:
		h.time, _ = strconv.ParseInt(string(value), 10, 64)
	case fieldTaskN:
		if f, err := bluge.DecodeNumericFloat64(value); err == nil {
			h.taskN = int(f)
		}
	case fieldFlag:
		h.flags |= flagBits[string(value)]
	}
	return true
}

// card returns the card of h with score s.
func (h *hit) card() engine.Card {
	return engine.Card{
		ID:        h.id,
		Type:      engine.ArtifactType(h.typ),
		Title:     h.title,
		Snippet:   h.snippet,
		Score:     h.score,
		Status:    h.status,
		Session:   h.session,
		Task:      h.task,
		Run:       h.run,
		Files:     h.files,
		Time:      h.time,
		Pinned:    h.flags&bitPinned != 0,
		Forgotten: h.flags&bitForgotten != 0,
	}
}

// docVersion names what document makes of an artifact; sum covers it, so
// a change to document changes every sum and the index takes every
// artifact again.
const docVersion = "doc/1"

// sum returns the content sum of the document that document(a, maxBytes)
// makes: a hash of every value it reads, each length-prefixed. Two
// artifacts with the same sum make the same document.
func sum(a *engine.Artifact, maxBytes int) Sum {
	h := xxhash.New()
	var buf [binary.MaxVarintLen64]byte
	num := func(v int64) { h.Write(binary.AppendVarint(buf[:0], v)) }
	str := func(s string) { num(int64(len(s))); h.WriteString(s) }
	list := func(l []string) {
		num(int64(len(l)))
		for _, s := range l {
			str(s)
		}
	}
	str(docVersion)
	num(int64(maxBytes))
	for _, s := range []string{a.ID, string(a.Type), a.Session, a.Task, a.Run, a.Status, a.Title, a.Text} {
		str(s)
	}
	list(a.Files)
	list(a.Symbols)
	list(a.Commands)
	list(a.Errors)
	num(a.Last)
	num(int64(a.TaskN))
	list(flags(a))
	if s := Sum(h.Sum64()); s != 0 {
		return s
	}
	return 1
}
