package derive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/bbengine/bbengine/codec/agentlog"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/codec/redact"
	"github.com/bbengine/bbengine/wal"
)

// maxImportRecord is the largest record an import frame carries: the
// frame's payload limit less the record's own header.
const maxImportRecord = frame.MaxPayload - 64<<10

// maxProblems is how many problems ReadImport lists per file; Unreadable
// counts them all (a binary file has one per "line").
const maxProblems = 10

// FileImport is what reading one source file for import found: the
// records to append, from where the engine's state says the file stopped.
type FileImport struct {
	// Path is the file's name in the engine: the path read, without a
	// ".zst" suffix.
	Path    string
	Source  string
	Session string
	Kind    string
	Gen     uint64
	// From is the offset reading started at: 0, or where an earlier
	// import stopped.
	From int64
	// Records are the records read (ReadImport; ScanImport hands them
	// to its emit function instead).
	Records []exchange.Import
	// Bytes is the size of the records' data.
	Bytes int64
	// Problems are the first records that were not imported, and why:
	// a line that is not JSON (with its column), JSON that is not a
	// record of the source, a line too long for a WAL frame, a
	// compressed file that does not decompress from some point on; or,
	// Kept, a record imported of which a part could not be read.
	// Unreadable counts all of them.
	Problems   []Problem
	Unreadable int64
	// Empty is set for a file that holds nothing: no byte, or blank
	// lines only.
	Empty bool
	// Tail is the size of an unterminated last line left for the next
	// import: the start of a JSON value (a file being written).
	Tail int64
	// Replaced is set when the file no longer starts with what was
	// imported from it: it is imported again as a new generation.
	Replaced bool
	// Sessions are the sessions a database's records belong to (see
	// LogFormat.Rows), in the order read; nil for a log file, whose
	// session is Session.
	Sessions []string

	// emit takes the chunks of records ScanImport reads; chunk is the
	// pending one, its data in arena.
	emit       func([]exchange.Import) error
	chunk      []exchange.Import
	chunkBytes int
	arena      []byte
	arenaSize  int
}

// Problem is a source record that was not imported.
type Problem struct {
	File string
	// Line is the record's line (0 for a whole file), Col the column of
	// a JSON syntax error in it (0 when there is none), Offset the
	// byte offset of the line.
	Line   int64
	Col    int64
	Offset int64
	Err    string
	// Kept is set when the record was imported all the same, and what
	// could be read of it derived (a database row whose data has a
	// member of the wrong type).
	Kept bool
}

// String formats p as "file:line:col: why (byte N, skipped)", or
// "file: why (skipped)" for a whole file; "imported, the rest of it
// read" in place of "skipped" when p.Kept.
func (p Problem) String() string {
	what := "skipped"
	if p.Kept {
		what = "imported, the rest of it read"
	}
	switch {
	case p.Line > 0 && p.Col > 0:
		return fmt.Sprintf("%s:%d:%d: %s (byte %d, %s)", p.File, p.Line, p.Col, p.Err, p.Offset, what)
	case p.Line > 0:
		return fmt.Sprintf("%s:%d: %s (byte %d, %s)", p.File, p.Line, p.Err, p.Offset, what)
	}
	return fmt.Sprintf("%s: %s (%s)", p.File, p.Err, what)
}

func (fi *FileImport) problem(p Problem) {
	fi.Unreadable++
	if len(fi.Problems) < maxProblems {
		fi.Problems = append(fi.Problems, p)
	}
}

// lineProblem records that line l was not imported because of err.
func (fi *FileImport) lineProblem(path string, l agentlog.Line, err error) {
	p := Problem{File: path, Line: l.Number, Offset: l.Offset, Err: err.Error()}
	var se *agentlog.SyntaxError
	if errors.As(err, &se) {
		p.Col, p.Err = se.Offset+1, "not JSON: "+se.Msg
	}
	fi.problem(p)
}

// ImportKind returns the kind of record a source file holds: a subagent's
// .meta.json is ImportMeta, a spilled tool output (tool-results/…) is
// ImportSpill, an ATIF or bbox document, or a file its source's
// LogFormat.Document says is one, is ImportDoc, and anything else is
// read line by line.
func ImportKind(source, path string) string {
	switch {
	case IsRows(source, path):
		return exchange.ImportRow
	case source == "atif" || source == "bbox", formats[source].Document != nil && formats[source].Document(path):
		return exchange.ImportDoc
	case strings.HasSuffix(path, ".meta.json"):
		return exchange.ImportMeta
	case filepath.Base(filepath.Dir(path)) == "tool-results":
		return exchange.ImportSpill
	}
	return exchange.ImportLine
}

// errNotATIF reports a JSON object that is no ATIF document.
var errNotATIF = errors.New(`not an ATIF document: no "schema_version": "ATIF-v1.N"`)

// CheckRecord returns why data, one record of a source file of kind, is
// not a record of source, or nil when it is one:
//
//	lines             what the source's LogFormat.CheckLine accepts
//	                  (Claude Code, Codex: a JSON object with a string
//	                  "type"), else a JSON object
//	.meta.json        a JSON object
//	atif document     a JSON object with "schema_version": "ATIF-…"
//	other document    what the source's LogFormat.CheckDoc accepts, else
//	                  a JSON object
//	spill, bbox       anything (text)
//
// A record of a type the source's importer does not know passes: it is
// kept, and counted as unknown.
func CheckRecord(source, kind string, data []byte) error {
	switch {
	case kind == exchange.ImportDoc && formats[source].Document != nil:
		if formats[source].CheckDoc != nil {
			return formats[source].CheckDoc(data)
		}
	case kind == exchange.ImportSpill, kind == exchange.ImportDoc && source != "atif":
		return nil
	case kind == exchange.ImportDoc:
		v, err := agentlog.Fields(data, "schema_version")
		if err != nil {
			return err
		}
		if !strings.HasPrefix(v[0], "ATIF-") {
			return errNotATIF
		}
		return nil
	case kind == exchange.ImportLine && formats[source].CheckLine != nil:
		return formats[source].CheckLine(data)
	}
	_, err := agentlog.Fields(data)
	return err
}

// ReadImport reads the source file path for import, given the engine's
// state of it (nil when it was never imported). Records that are not
// records of the source (see CheckRecord) are not imported: they are
// Problems. A read error of a compressed file is a Problem too, and the
// records before it are imported. The error return is for a file that
// cannot be read at all.
func ReadImport(source, path string, st *ImportFileState) (*FileImport, error) {
	if IsRows(source, path) {
		return ReadRows(source, path, func(string) (*ImportFileState, error) { return st, nil })
	}
	var recs []exchange.Import
	fi, err := ScanImport(source, path, st, func(chunk []exchange.Import) error {
		recs = append(recs, chunk...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	fi.Records = recs
	return fi, nil
}

// IsRows reports whether path, a file of source, is a database read row
// by row (LogFormat.Rows), not a log: source has Rows and path is no
// Document of it.
func IsRows(source, path string) bool {
	f := formats[source]
	return f.Rows != nil && (f.Document == nil || !f.Document(path))
}

// ReadRows reads the rows of path, a database of source (see
// LogFormat.Rows), that are new since the engine's state of each of its
// units, which state returns (nil for a unit never imported). path may
// name one unit, "<database>#<session id>": then only that session's
// rows are read.
func ReadRows(source, path string, state func(unit string) (*ImportFileState, error)) (*FileImport, error) {
	var recs []exchange.Import
	fi, err := ScanRows(context.Background(), source, path, state, func(chunk []exchange.Import) error {
		recs = append(recs, chunk...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	fi.Records = recs
	return fi, nil
}

// ScanRows reads path as ReadRows does, and hands the records of each
// session to emit as it reads them, in the database's order: the
// FileImport it returns has no Records. emit owns each chunk; an error
// from emit, or ctx's when it is done, stops the read and is returned. Memory is bounded by the
// largest session, whatever the database's size.
func ScanRows(ctx context.Context, source, path string, state func(unit string) (*ImportFileState, error), emit func([]exchange.Import) error) (*FileImport, error) {
	fn := formats[source].Rows
	if fn == nil {
		return nil, fmt.Errorf("engine: source %q has no database format", source)
	}
	fi, err := fn(ctx, path, state, func(chunk []exchange.Import) error {
		for i := range chunk {
			chunk[i].Source, chunk[i].Kind = source, exchange.ImportRow
		}
		return emit(chunk)
	})
	if err != nil {
		return nil, err
	}
	fi.Path, fi.Source, fi.Kind, fi.Records = path, source, exchange.ImportRow, nil
	if fi.Session == "" && len(fi.Sessions) == 1 {
		fi.Session = fi.Sessions[0]
	}
	return fi, nil
}

// importChunk is about how many bytes of records ScanImport hands over
// at a time.
const importChunk = 1 << 20

// ScanImport reads the source file path for import as ReadImport does,
// line by line, and hands the records to emit in file order, in chunks
// of about 1 MiB, as it reads them: the FileImport it returns has no
// Records (its counts and problems are complete). emit owns each chunk
// and its records' data; an error from emit stops the scan and is
// returned. Memory stays bounded by the longest line (agentlog.MaxLine)
// and a chunk, whatever the file's size.
func ScanImport(source, path string, st *ImportFileState, emit func([]exchange.Import) error) (*FileImport, error) {
	if IsRows(source, path) {
		return nil, fmt.Errorf("engine: %s is a database of source %q, read with ReadRows", path, source)
	}
	fi := &FileImport{Path: strings.TrimSuffix(path, ".zst"), Source: source, Kind: ImportKind(source, path), emit: emit}
	if err := fi.scan(path, st); err != nil {
		return nil, err
	}
	if err := fi.flush(); err != nil {
		return nil, err
	}
	return fi, nil
}

// scan reads path into fi (see ScanImport).
func (fi *FileImport) scan(path string, st *ImportFileState) error {
	source := fi.Source
	if st != nil {
		fi.Gen = st.Gen
	}
	if fi.Kind != exchange.ImportLine {
		return fi.readWhole(path, st)
	}
	var (
		line int64
		last = int64(-1) // the offset of the last imported record, read again
	)
	if st != nil && st.Records > 0 {
		ok, err := fi.continues(path, st)
		if err != nil {
			return err
		}
		if ok {
			// Read again from the last imported record (it may have
			// been an unterminated complete line that has its line
			// ending now); it is not imported twice.
			fi.From, line, fi.Session, last = st.LastOffset, st.Line-1, st.Session, st.LastOffset
		} else {
			fi.Replaced = true
			fi.Gen++
		}
	}
	f, err := agentlog.OpenAt(path, fi.From)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := agentlog.NewScanner(f, fi.From, line)
	defer sc.Release()
	blank := true
	for sc.Next() {
		l := sc.Line()
		if len(bytes.TrimSpace(l.Data)) == 0 {
			continue
		}
		blank = false
		if l.Offset == last {
			continue
		}
		if len(l.Data) > maxImportRecord {
			fi.problem(Problem{File: path, Line: l.Number, Offset: l.Offset,
				Err: fmt.Sprintf("line of %d MiB, over the %d MiB a WAL frame holds", len(l.Data)>>20, maxImportRecord>>20)})
			continue
		}
		if err := CheckRecord(source, fi.Kind, l.Data); err != nil {
			fi.lineProblem(path, l, err)
			continue
		}
		if fi.Session == "" {
			fi.Session = sessionOf(source, path, l.Data)
		}
		if err := fi.add(l.Number, l.Offset, l.Data); err != nil {
			return err
		}
	}
	for _, sk := range sc.Skipped() {
		fi.problem(Problem{File: path, Line: sk.Number, Offset: sk.Offset, Err: sk.Err.Error()})
		blank = false
	}
	if err := sc.Err(); err != nil {
		// The file stops being readable here: keep what was read.
		off, n := sc.End()
		var ce *agentlog.CorruptError
		if errors.As(err, &ce) {
			fi.problem(Problem{File: path, Err: fmt.Sprintf("zstd data corrupt or cut short near compressed byte %d (decompressed byte %d, line %d): %v; the rest of the file is not imported",
				ce.Compressed, ce.Offset, n+1, ce.Err)})
		} else {
			fi.problem(Problem{File: path, Line: n + 1, Offset: off, Err: fmt.Sprintf("read: %v; the rest of the file is not imported", err)})
		}
		blank = false
	}
	// An unterminated last line is a write in progress when it is the
	// start of a JSON value; a complete record is imported (a log that
	// ends without a line ending); anything else is a problem.
	t := sc.TailLine()
	switch {
	case sc.Tail() == 0:
	case t.Data == nil:
		blank = false
		fi.problem(Problem{File: path, Line: t.Number, Offset: t.Offset,
			Err: fmt.Sprintf("unterminated last line longer than %d MiB", agentlog.MaxLine>>20)})
	case len(bytes.TrimSpace(t.Data)) == 0:
	case t.Offset == last:
		blank = false
	default:
		blank = false
		err := CheckRecord(source, fi.Kind, t.Data)
		var se *agentlog.SyntaxError
		switch {
		case err == nil && len(t.Data) <= maxImportRecord:
			if fi.Session == "" {
				fi.Session = sessionOf(source, path, t.Data)
			}
			if err := fi.add(t.Number, t.Offset, t.Data); err != nil {
				return err
			}
		case errors.As(err, &se) && se.Truncated:
			fi.Tail = sc.Tail()
		case err == nil:
			fi.problem(Problem{File: path, Line: t.Number, Offset: t.Offset,
				Err: fmt.Sprintf("line of %d MiB, over the %d MiB a WAL frame holds", len(t.Data)>>20, maxImportRecord>>20)})
		default:
			fi.lineProblem(path, t, err)
		}
	}
	fi.Empty = blank && fi.From == 0
	if fi.Session == "" {
		fi.Session = sessionOf(source, path, nil)
	}
	return nil
}

// add adds a record of fi.Session to the pending chunk, its data copied
// into the chunk's arena, and hands the chunk over when it is full.
func (fi *FileImport) add(line, off int64, data []byte) error {
	if cap(fi.arena)-len(fi.arena) < len(data) {
		// A chunk ends when its arena is full: the next arena is not
		// left holding one record.
		if err := fi.flush(); err != nil {
			return err
		}
		// Arenas grow from 64 KiB to a chunk's size, so that a small
		// file does not cost a chunk's allocation.
		fi.arenaSize = min(max(2*fi.arenaSize, 64<<10), importChunk)
		fi.arena = make([]byte, 0, max(fi.arenaSize, len(data)))
	}
	start := len(fi.arena)
	fi.arena = append(fi.arena, data...)
	fi.chunk = append(fi.chunk, exchange.Import{Source: fi.Source, Session: fi.Session, File: fi.Path, Kind: fi.Kind, Gen: fi.Gen,
		Offset: off, Line: line, Data: fi.arena[start:len(fi.arena):len(fi.arena)]})
	fi.Bytes += int64(len(data))
	fi.chunkBytes += len(data)
	if fi.chunkBytes >= importChunk {
		return fi.flush()
	}
	return nil
}

// flush hands the pending chunk to emit; the next one has an arena of
// its own.
func (fi *FileImport) flush() error {
	if len(fi.chunk) == 0 {
		return nil
	}
	chunk := fi.chunk
	fi.chunk, fi.chunkBytes, fi.arena = nil, 0, nil
	return fi.emit(chunk)
}

// continues reports whether the file still holds what was imported from
// it: its first and its last imported records are where they were.
func (fi *FileImport) continues(path string, st *ImportFileState) (bool, error) {
	f, err := agentlog.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := agentlog.NewScanner(f, 0, 0)
	defer sc.Release()
	// The first record: the first line that is one.
	var (
		firstOff int64 = -1
		firstSHA string
	)
	for sc.Next() {
		if l := sc.Line(); CheckRecord(fi.Source, fi.Kind, l.Data) == nil {
			firstOff, firstSHA = l.Offset, sha(l.Data)
			break
		}
	}
	if t := sc.TailLine(); firstOff < 0 && t.Data != nil && CheckRecord(fi.Source, fi.Kind, t.Data) == nil {
		firstOff, firstSHA = t.Offset, sha(t.Data)
	}
	if firstOff < 0 || firstSHA != st.HeadSHA {
		return false, sc.Err()
	}
	if st.LastOffset == firstOff {
		return firstSHA == st.LastSHA, nil
	}
	if !f.Compressed {
		// Read the last record where it was.
		g, err := agentlog.OpenAt(path, st.LastOffset)
		if err != nil {
			return false, nil
		}
		defer g.Close()
		sc = agentlog.NewScanner(g, st.LastOffset, 0)
		defer sc.Release()
		if sc.Next() {
			return sha(sc.Line().Data) == st.LastSHA, nil
		}
		t := sc.TailLine()
		return t.Data != nil && sha(t.Data) == st.LastSHA, sc.Err()
	}
	// Skip to the last imported record and compare it.
	for sc.Next() {
		l := sc.Line()
		if l.Offset == st.LastOffset {
			return sha(l.Data) == st.LastSHA, nil
		}
		if l.Offset > st.LastOffset {
			return false, nil
		}
	}
	// The last record may have been the file's unterminated tail.
	if t := sc.TailLine(); t.Data != nil && t.Offset == st.LastOffset {
		return sha(t.Data) == st.LastSHA, nil
	}
	return false, sc.Err()
}

// readWhole reads a file that is one record.
func (fi *FileImport) readWhole(path string, st *ImportFileState) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if info.Size() > maxImportRecord {
		fi.problem(Problem{File: path,
			Err: fmt.Sprintf("file of %d MiB, over the %d MiB a WAL frame holds", info.Size()>>20, maxImportRecord>>20)})
		return nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if fn := formats[fi.Source].Clean; fn != nil {
		if c := fn(path, data); len(c) == len(data) {
			data = c
		}
	}
	if st != nil && st.Records > 0 {
		if st.End == int64(len(data)) && st.HeadSHA == sha(data) {
			return nil // unchanged
		}
	}
	if len(bytes.TrimSpace(data)) == 0 && fi.Kind != exchange.ImportSpill {
		fi.problem(Problem{File: path, Err: "empty file"})
		return nil
	}
	if err := CheckRecord(fi.Source, fi.Kind, data); err != nil {
		var se *agentlog.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(data[:se.Offset], []byte("\n"))
			col := se.Offset - int64(bytes.LastIndexByte(data[:se.Offset], '\n'))
			fi.problem(Problem{File: path, Line: int64(line), Col: col, Offset: se.Offset - col + 1, Err: "not JSON: " + se.Msg})
		} else {
			fi.problem(Problem{File: path, Err: err.Error()})
		}
		return nil
	}
	if st != nil && st.Records > 0 {
		fi.Replaced = true
		fi.Gen++
	}
	fi.Session = sessionOf(fi.Source, path, data)
	return fi.add(0, 0, data)
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// sessionOf names the session a source file belongs to, from its path and
// its first record (nil when it has none).
func sessionOf(source, path string, first []byte) string {
	name := filepath.Base(path)
	stem := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, ".zst"), ".jsonl"), ".json")
	if fn := formats[source].Session; fn != nil {
		if id := fn(path, first); id != "" {
			return source + ":" + id
		}
		return source + ":" + stem
	}
	switch source {
	case "atif":
		var v struct {
			SessionID    string `json:"session_id"`
			TrajectoryID string `json:"trajectory_id"`
		}
		if first != nil && json.Unmarshal(first, &v) == nil {
			if v.SessionID != "" {
				return "atif:" + v.SessionID
			}
			if v.TrajectoryID != "" {
				return "atif:" + v.TrajectoryID
			}
		}
		return "atif:" + stem
	}
	return source + ":" + stem
}

// importRedactor redacts imported records before they reach the WAL.
var importRedactor = sync.OnceValue(func() *redact.Redactor {
	r, _ := redact.New(nil)
	return r
})

// redactRecord returns data, an imported record, with its secrets
// replaced: a JSON record stays valid JSON. Most records hold no secret:
// for them the redactor's scan is the only work (no JSON validation).
func redactRecord(data []byte) []byte {
	r := importRedactor()
	out := r.Bytes(data)
	if len(out) == len(data) && (len(data) == 0 || &out[0] == &data[0]) {
		return data
	}
	if json.Valid(data) {
		return r.JSON(data)
	}
	return out
}

// EncodeImports returns recs as the import frames AppendImport writes,
// their data redacted. The payloads share one new buffer, owned by the
// caller. It is safe for concurrent use: the redaction, most of an
// append's cost, can run on every processor.
func EncodeImports(recs []exchange.Import) ([]wal.Record, error) {
	// The arena is sized for the records as they are, so that it is
	// allocated once (it grows only when redaction lengthens one).
	size := 0
	for i := range recs {
		r := &recs[i]
		size += 2 + 6*binary.MaxVarintLen64 + len(r.Source) + len(r.Session) + len(r.File) + len(r.Kind) + len(r.Data)
	}
	arena := make([]byte, 0, size)
	out := make([]wal.Record, 0, len(recs))
	starts := make([]int, 0, len(recs))
	for i := range recs {
		start := len(arena)
		rec := recs[i]
		rec.Data = redactRecord(rec.Data)
		arena = exchange.AppendImport(arena, &rec)
		if len(arena)-start > frame.MaxPayload {
			return nil, fmt.Errorf("engine: import record %s:%d is too large for a WAL frame", recs[i].File, recs[i].Line)
		}
		starts = append(starts, start)
	}
	for i, start := range starts {
		end := len(arena)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		out = append(out, wal.Record{Kind: frame.KindImport, Payload: arena[start:end:end]})
	}
	return out, nil
}

// AppendImport writes records to the WAL as import frames, in batches,
// their data redacted: an agent's log holds whatever its tools read.
func AppendImport(log *wal.Log, recs []exchange.Import) error {
	for len(recs) > 0 {
		n, size := 0, 0
		for n < len(recs) && size < 8<<20 {
			size += len(recs[n].Data)
			n++
		}
		batch, err := EncodeImports(recs[:n])
		if err != nil {
			return err
		}
		if _, err := log.AppendBatch(batch); err != nil {
			return err
		}
		recs = recs[n:]
	}
	return nil
}
