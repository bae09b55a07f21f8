package derive

import (
	"context"
	"fmt"
	"slices"

	"github.com/bbengine/bbengine/codec/census"
	"github.com/bbengine/bbengine/codec/exchange"
)

// ImportRecord is one record of an agent's own log as an import frame
// carried it.
type ImportRecord struct {
	exchange.Import
	// WAL is the offset of the record's import frame (0 for records that
	// never went through the WAL: bbengine convert).
	WAL uint64
}

// ImportFile is the records of one source file of an imported session,
// in file order.
type ImportFile struct {
	Path    string
	Records []ImportRecord
}

// Imported is what an importer derives from the records of one session.
type Imported struct {
	// Session has the fields an importer knows: ID, Agent, Client,
	// Source, First, Last, Requests, Errors, Threads, Usage, Models,
	// Title, CWD, Branch, Version, Agents and Import. The engine sets
	// Ordinal and Events.
	Session Session
	// Events is the timeline, in order, with Seq unset. Each event's
	// Prov has Side "import", First and Last (the WAL offsets of its
	// first and last records), File and Line (of its first record).
	Events []Event
}

// SpanEvents sets Session.First and Last to the earliest and latest
// time of im's events (left as they are when it has none).
func (im *Imported) SpanEvents() {
	if len(im.Events) == 0 {
		return
	}
	s := &im.Session
	s.First, s.Last = im.Events[0].Time, im.Events[0].Time
	for i := range im.Events {
		s.First = min(s.First, im.Events[i].Time)
		s.Last = max(s.Last, im.Events[i].Time)
	}
}

// An Importer derives one session from the records of its files (in
// path order; each file's records in file order). It is a pure function
// of its input: a rebuild derives the same bytes. Records that do not
// parse are counted in Session.Import.Errors, never fatal; the error
// return is for input no importer could use at all.
type Importer func(session string, files []ImportFile) (*Imported, error)

// importers maps a source name to its importer; each importer's package
// registers it.
var importers = map[string]Importer{}

// RegisterImporter makes fn the importer of source. Every importer lives
// outside the engine: the agents' packages register theirs ("claude"
// from agents/claude, "codex" from agents/codex) and package export
// registers "atif", "bbox" and "trajectory". Call it from an init
// function: the map is not guarded, and imports read it. An imported
// session whose source has no importer in the running program derives
// no events (the engine logs it), so every program that opens an engine
// links the same importers. It panics when fn is nil or source already
// has an importer.
func RegisterImporter(source string, fn Importer) {
	if fn == nil {
		panic("engine: RegisterImporter of a nil importer for " + source)
	}
	if importers[source] != nil {
		panic("engine: RegisterImporter called twice for " + source)
	}
	importers[source] = fn
}

// ImportSources lists the registered importers.
func ImportSources() []string {
	var out []string
	for k := range importers {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// DeriveImport runs the importer of source over files, outside any
// engine (bbengine convert), and numbers the events. The session keeps
// the id its importer gave it (a bbox document's own), else session.
func DeriveImport(source, session string, files []ImportFile) (*Imported, error) {
	fn := importers[source]
	if fn == nil {
		return nil, fmt.Errorf("engine: no importer for %q", source)
	}
	slices.SortFunc(files, func(a, b ImportFile) int {
		switch {
		case a.Path < b.Path:
			return -1
		case a.Path > b.Path:
			return 1
		}
		return 0
	})
	im, err := fn(session, files)
	if err != nil {
		return nil, err
	}
	if im.Session.ID == "" {
		im.Session.ID = session
	}
	for i := range im.Events {
		im.Events[i].Seq = uint64(i + 1)
	}
	im.Session.Events = uint64(len(im.Events))
	return im, nil
}

// Census counts what a session's events hold, by the rules every
// importer's source census follows (see codec/census).
func Census(s *Session, events []Event) census.Counts {
	var c census.Counts
	if s.Import != nil {
		c.Records, c.ParseErrors = s.Import.Records, s.Import.Errors
	} else {
		c.Records, c.ParseErrors = census.NA, census.NA
	}
	calls, results, uuids := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i := range events {
		ev := &events[i]
		if ev.UUID != "" {
			uuids[ev.UUID] = true
		}
		switch ev.Kind {
		case KindMessage:
			switch {
			case ev.Role == "user" && ev.Meta == "":
				c.UserPrompts++
			case ev.Role == "user":
				c.MetaUser++
			case ev.Role == "assistant":
				c.Assistant++
			}
		case KindModelCall:
			c.Responses++
		case KindThinking:
			c.Thinking++
		case KindToolCall:
			if ev.Tool != nil {
				calls[ev.Tool.ID] = true
			}
		case KindToolResult:
			if ev.Tool != nil {
				results[ev.Tool.ID] = true
			}
		case KindError:
			c.Errors++
		case KindUsage:
			if u := ev.Usage; u != nil {
				c.TokensIn += u.Input - u.CacheRead - u.CacheCreation
				c.TokensOut += u.Output
				c.CacheRead += u.CacheRead
				c.CacheCreation += u.CacheCreation
			}
		case KindRecord:
			if ev.Record != nil && ev.Record.Known {
				c.Kept++
			} else {
				c.Unknown++
			}
		}
	}
	c.ToolCalls, c.ToolResults, c.UUIDs = int64(len(calls)), int64(len(results)), int64(len(uuids))
	for id := range results {
		calls[id] = true
	}
	c.CallIDs = int64(len(calls))
	c.Subagents = int64(len(s.Agents))
	return c
}

// A LogFormat is what the engine needs of an agent's own log format
// besides its Importer: how ReadImport and ScanImport check its lines
// and name the session of a file, and how the data-loss check counts
// its records. An agent's package registers it with RegisterLogFormat,
// beside its importer. Every field may be nil.
type LogFormat struct {
	// CheckLine returns why a line of a source file is not a record of
	// the source, or nil when it is one (a record of a type the importer
	// does not know is one). Nil: any JSON object is a record.
	CheckLine func(line []byte) error
	// Session returns the id of the session a source file belongs to
	// (the engine names it "<source>:<id>"), from the file's path and its
	// first record (nil when it has none); "" for the file's name without
	// its extensions, which is also what a nil Session gives.
	Session func(path string, first []byte) string
	// Census counts what a session's files hold by the format's own
	// rules (see codec/census), independently of the importer. Nil:
	// every count is NA.
	Census func(files []ImportFile) census.Counts
	// Document reports whether a source file is one JSON document, read
	// whole into one record (kind exchange.ImportDoc) rather than line by
	// line: an older version's log (Gemini CLI's session-*.json). Nil:
	// every file is read by line.
	Document func(path string) bool
	// CheckDoc returns why a Document is not one of the source's, or nil;
	// a *agentlog.SyntaxError's offset is in the document. Nil: any JSON
	// object is one.
	CheckDoc func(doc []byte) error
	// Clean, when set, returns a Document as it is to be stored: the
	// format's secrets blanked out (opencode's share URL). It must keep
	// the document's length (blank, not cut), so that the engine's state
	// of the file (End, its size) still tells whether it was imported,
	// and be a pure function of its input, which it must not modify.
	// Nil: a document is stored as it is.
	Clean func(path string, doc []byte) []byte
	// Rows, when set, says the source's files that are no Document are
	// databases, not logs: the engine calls it instead of reading the
	// file's bytes (ReadRows).
	// It reads the rows of path (a database) that are new since the
	// engine's state of each of its sessions' units, as state returns
	// it (nil for a unit never imported), as records of kind
	// exchange.ImportRow whose File is the unit, "<path>#<session id>",
	// and whose Session names the session, and hands each session's
	// records to emit (which owns them) as it reads them. path may
	// itself name one unit: then Rows reads that session's rows alone.
	// The FileImport it returns has Problems (a row that is no JSON
	// names the database, table and id), Unreadable, Bytes and Sessions;
	// Replaced when a unit is imported again as a new generation (the
	// database was replaced), its records carrying the new Gen. The
	// error return is for a database that cannot be read at all, or
	// emit's.
	// ctx stops the read: Rows returns its error.
	Rows func(ctx context.Context, path string, state func(unit string) (*ImportFileState, error), emit func([]exchange.Import) error) (*FileImport, error)
}

// formats maps a source to its log format.
var formats = map[string]LogFormat{}

// RegisterLogFormat makes f the log format of source. Call it from an
// init function, as RegisterImporter; it panics when source already has
// a log format.
func RegisterLogFormat(source string, f LogFormat) {
	if _, ok := formats[source]; ok {
		panic("engine: RegisterLogFormat called twice for " + source)
	}
	formats[source] = f
}

// SourceCensus counts what source files hold, for the data-loss check.
// A source without a census of its own reports every count as NA.
func SourceCensus(source string, files []ImportFile) census.Counts {
	if fn := formats[source].Census; fn != nil {
		return fn(files)
	}
	na := int64(census.NA)
	return census.Counts{Records: na, ParseErrors: na, UserPrompts: na, MetaUser: na, Assistant: na, Responses: na,
		Thinking: na, ToolCalls: na, ToolResults: na, Errors: na, UUIDs: na, CallIDs: na, TokensIn: na, TokensOut: na,
		CacheRead: na, CacheCreation: na, Subagents: na, Kept: na, Unknown: na}
}
