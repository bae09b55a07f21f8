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
	fieldSubject  = "subject"
	fieldState    = "statement"
	fieldContext  = "context"
	fieldProject  = "project"
	fieldReplaced = "replaced_by"
	fieldSeqs     = "seqs"
	fieldClosedAt = "closed_seq"
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

// textFields are the fields Search matches, with their boosts. A
// decision's subject (what it is about: "the migration tool") weighs
// most, as a title does; the statement of a decision or constraint
// repeats its title uncut; a decision's context (the sentences around
// it that say why) weighs less than its own words.
var textFields = []struct {
	name  string
	boost float64
}{
	{fieldTitle, 2},
	{fieldSubject, 2},
	{fieldState, 1},
	{fieldContext, 0.5},
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

// replacedBy returns the id of the artifact that superseded a, or "".
func replacedBy(a *engine.Artifact) string {
	switch {
	case a.Decision != nil:
		return a.Decision.SupersededBy
	case a.Constraint != nil:
		return a.Constraint.SupersededBy
	}
	return ""
}

// statement returns the statement of a decision or a constraint.
func statement(a *engine.Artifact) string {
	switch {
	case a.Decision != nil:
		if d := a.Decision; d.Setting != "" && d.Head != "" {
			return d.Setting + " (" + d.Head + ")"
		}
		return a.Decision.Statement
	case a.Constraint != nil:
		return a.Constraint.Statement
	}
	return ""
}

// seqRange returns the first and last event seq a's evidence (or, for a
// transcript segment, its span) covers.
func seqRange(a *engine.Artifact) (lo, hi uint64) {
	for i, ev := range a.Evidence {
		if i == 0 || ev.Seq < lo {
			lo = ev.Seq
		}
		hi = max(hi, ev.Seq)
	}
	if sg := a.Segment; sg != nil && sg.LastSeq >= sg.FirstSeq && sg.LastSeq != 0 {
		if len(a.Evidence) == 0 || sg.FirstSeq < lo {
			lo = sg.FirstSeq
		}
		hi = max(hi, sg.LastSeq)
	}
	return lo, hi
}

// closedSeq returns the seq of the event that closed thread a, or 0.
func closedSeq(a *engine.Artifact) uint64 {
	if a.Thread != nil && a.Thread.ClosedBy != nil {
		return a.Thread.ClosedBy.Seq
	}
	return 0
}

// document makes the Bluge document of a, an artifact of a session of
// project. Analyzed text is capped at maxBytes, spent in field order:
// title, subject, statement, context, files, symbols, commands, errors,
// text; each value is cut at a rune boundary when the budget runs out.
func document(a *engine.Artifact, project string, maxBytes int) *bluge.Document {
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
	if project != "" {
		d.AddField(bluge.NewKeywordField(fieldProject, project).StoreValue())
	}
	d.AddField(text(fieldTitle, take(a.Title, maxTitleBytes)).StoreValue())
	if a.Decision != nil {
		if s := take(a.Decision.Subject, maxEntryBytes); s != "" {
			d.AddField(text(fieldSubject, s))
		}
	}
	if s := take(statement(a), maxEntryBytes); s != "" {
		d.AddField(text(fieldState, s))
	}
	if a.Decision != nil {
		if s := take(a.Decision.Rationale, maxEntryBytes); s != "" {
			d.AddField(text(fieldContext, s))
		}
	}
	if id := replacedBy(a); id != "" {
		d.AddField(bluge.NewKeywordField(fieldReplaced, id).StoreValue())
	}
	if lo, hi := seqRange(a); hi != 0 {
		d.AddField(bluge.NewStoredOnlyField(fieldSeqs, binary.AppendUvarint(binary.AppendUvarint(nil, lo), hi)))
	}
	if c := closedSeq(a); c != 0 {
		d.AddField(bluge.NewStoredOnlyField(fieldClosedAt, binary.AppendUvarint(nil, c)))
	}
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
	n := len(a.Title) + len(a.Text) + len(statement(a))
	if a.Decision != nil {
		n += len(a.Decision.Subject) + len(a.Decision.Rationale)
	}
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

// hit is a document as read back from its stored fields, and how Search
// ranks it.
type hit struct {
	id, typ, session, task, run, status, title, snippet string
	project, replacedBy                                 string
	files, symbols                                      []string
	time                                                int64
	taskN                                               int
	seqLo, seqHi, closedSeq                             uint64
	flags                                               uint8
	bm25, score                                         float64
	// inForce is score without the superseded and closed factors.
	inForce float64

	// doc is the document number in the reader Search used.
	doc uint64
	// other says the hit is outside the query's project; lifted is the
	// id of the hit it replaced, when it did not match and was added for
	// that; raised the id of the superseded hit whose higher score it
	// took; below the id of the hit it was placed below (its replacement
	// or closer).
	other          bool
	lifted, raised string
	below          string
	// factors are the ranking factors applied to bm25, for Explain.
	factors []Factor
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
	case fieldProject:
		h.project = string(value)
	case fieldReplaced:
		h.replacedBy = string(value)
	case fieldSeqs:
		var n int
		h.seqLo, n = binary.Uvarint(value)
		if n > 0 {
			h.seqHi, _ = binary.Uvarint(value[n:])
		}
	case fieldClosedAt:
		h.closedSeq, _ = binary.Uvarint(value)
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

// docVersion names what document makes of an artifact, the analyzer
// included; sum covers it, so a change to document changes every sum,
// and the state file's header records it, so Open discards an index
// whose documents another version made (the next Sync fills it again).
// doc/2: stems, the subject, statement, context, project, replaced_by,
// seqs and closed_seq fields.
const docVersion = "doc/3"

// sum returns the content sum of the document that document(a, project,
// maxBytes) makes: a hash of every value it reads, each length-prefixed.
// Two artifacts with the same sum make the same document.
func sum(a *engine.Artifact, project string, maxBytes int) Sum {
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
	str(project)
	for _, s := range []string{a.ID, string(a.Type), a.Session, a.Task, a.Run, a.Status, a.Title, a.Text,
		statement(a), replacedBy(a)} {
		str(s)
	}
	if d := a.Decision; d != nil {
		str(d.Subject)
		str(d.Rationale)
	} else {
		num(-1)
	}
	lo, hi := seqRange(a)
	num(int64(lo))
	num(int64(hi))
	num(int64(closedSeq(a)))
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
