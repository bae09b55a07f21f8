package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	From    int64
	Records []exchange.Import
	// Bytes is the size of the records' data.
	Bytes int64
	// Problems are lines that are not JSON (they are imported all the
	// same, and counted as parse errors by the importer) and lines that
	// could not be imported at all (too long).
	Problems []Problem
	// Tail is the size of an unterminated last line left for the next
	// import (a file being written).
	Tail int64
	// Replaced is set when the file no longer starts with what was
	// imported from it: it is imported again as a new generation.
	Replaced bool
}

// Problem is a source record an import reports.
type Problem struct {
	File   string
	Line   int64
	Offset int64
	Err    string
	// Skipped is set when the record was not imported at all.
	Skipped bool
}

func (p Problem) String() string {
	what := "imported as is, counted as a parse error"
	if p.Skipped {
		what = "not imported"
	}
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d (byte %d): %s (%s)", p.File, p.Line, p.Offset, p.Err, what)
	}
	return fmt.Sprintf("%s: %s (%s)", p.File, p.Err, what)
}

// ImportKind returns the kind of record a source file holds: a subagent's
// .meta.json is ImportMeta, a spilled tool output (tool-results/…) is
// ImportSpill, an ATIF or bbox document is ImportDoc, and anything else
// is read line by line.
func ImportKind(source, path string) string {
	switch {
	case source == "atif" || source == "bbox":
		return exchange.ImportDoc
	case strings.HasSuffix(path, ".meta.json"):
		return exchange.ImportMeta
	case filepath.Base(filepath.Dir(path)) == "tool-results":
		return exchange.ImportSpill
	}
	return exchange.ImportLine
}

// ReadImport reads the source file path for import, given the engine's
// state of it (nil when it was never imported).
func ReadImport(source, path string, st *ImportFileState) (*FileImport, error) {
	fi := &FileImport{Path: strings.TrimSuffix(path, ".zst"), Source: source, Kind: ImportKind(source, path)}
	if st != nil {
		fi.Gen = st.Gen
	}
	if fi.Kind != exchange.ImportLine {
		return fi, fi.readWhole(path, st)
	}
	var line int64
	if st != nil && st.Records > 0 {
		ok, err := fi.continues(path, st)
		if err != nil {
			return nil, err
		}
		if ok {
			// Read again from the last imported record (it may have
			// been an unterminated complete line that has its line
			// ending now); it is dropped below when unchanged.
			fi.From, line, fi.Session = st.LastOffset, st.Line-1, st.Session
		} else {
			fi.Replaced = true
			fi.Gen++
		}
	}
	f, err := agentlog.OpenAt(path, fi.From)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := agentlog.NewScanner(f, fi.From, line)
	for sc.Next() {
		l := sc.Line()
		if len(bytes.TrimSpace(l.Data)) == 0 {
			continue
		}
		if len(l.Data) > maxImportRecord {
			fi.Problems = append(fi.Problems, Problem{File: path, Line: l.Number, Offset: l.Offset, Skipped: true,
				Err: fmt.Sprintf("line of %d MiB, over the %d MiB a WAL frame holds", len(l.Data)>>20, maxImportRecord>>20)})
			continue
		}
		if !json.Valid(l.Data) {
			fi.Problems = append(fi.Problems, Problem{File: path, Line: l.Number, Offset: l.Offset, Err: "not valid JSON"})
		}
		if fi.Session == "" {
			fi.Session = sessionOf(source, path, l.Data)
		}
		fi.add(l.Number, l.Offset, l.Data)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, sk := range sc.Skipped() {
		fi.Problems = append(fi.Problems, Problem{File: path, Line: sk.Number, Offset: sk.Offset, Err: sk.Err.Error(), Skipped: true})
	}
	// An unterminated last line is a write in progress, unless it is
	// complete JSON (a log that ends without a line ending).
	if t := sc.TailLine(); t.Data != nil && json.Valid(t.Data) {
		if fi.Session == "" {
			fi.Session = sessionOf(source, path, t.Data)
		}
		fi.add(t.Number, t.Offset, t.Data)
	} else {
		fi.Tail = sc.Tail()
	}
	if fi.Session == "" {
		fi.Session = sessionOf(source, path, nil)
	}
	if len(fi.Records) > 0 && st != nil && !fi.Replaced && fi.Records[0].Offset == st.LastOffset {
		fi.Bytes -= int64(len(fi.Records[0].Data))
		fi.Records = fi.Records[1:]
		fi.Problems = slices.DeleteFunc(fi.Problems, func(p Problem) bool { return p.Offset == st.LastOffset })
	}
	for i := range fi.Records {
		fi.Records[i].Session = fi.Session
	}
	return fi, nil
}

func (fi *FileImport) add(line, off int64, data []byte) {
	fi.Records = append(fi.Records, exchange.Import{Source: fi.Source, File: fi.Path, Kind: fi.Kind, Gen: fi.Gen,
		Offset: off, Line: line, Data: bytes.Clone(data)})
	fi.Bytes += int64(len(data))
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
	if !f.Compressed && st.LastOffset > 0 {
		// Compare the first record, then read the last one where it was.
		if !sc.Next() || sha(sc.Line().Data) != st.HeadSHA {
			return false, sc.Err()
		}
		g, err := agentlog.OpenAt(path, st.LastOffset)
		if err != nil {
			return false, nil
		}
		defer g.Close()
		sc = agentlog.NewScanner(g, st.LastOffset, 0)
		if sc.Next() {
			return sha(sc.Line().Data) == st.LastSHA, nil
		}
		t := sc.TailLine()
		return t.Data != nil && sha(t.Data) == st.LastSHA, sc.Err()
	}

	var first []byte
	for sc.Next() {
		if len(bytes.TrimSpace(sc.Line().Data)) > 0 {
			first = sc.Line().Data
			break
		}
	}
	if first == nil {
		first = sc.TailLine().Data
	}
	if first == nil || sha(first) != st.HeadSHA {
		return false, sc.Err()
	}
	if st.LastOffset == sc.Line().Offset {
		return sha(first) == st.LastSHA, nil
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
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if len(data) > maxImportRecord {
		fi.Problems = append(fi.Problems, Problem{File: path, Skipped: true,
			Err: fmt.Sprintf("file of %d MiB, over the %d MiB a WAL frame holds", len(data)>>20, maxImportRecord>>20)})
		return nil
	}
	if st != nil && st.Records > 0 {
		if st.End == int64(len(data)) && st.HeadSHA == sha(data) {
			return nil // unchanged
		}
		fi.Replaced = true
		fi.Gen++
	}
	if fi.Kind == exchange.ImportDoc && !json.Valid(data) && fi.Source == "atif" {
		fi.Problems = append(fi.Problems, Problem{File: path, Err: "not valid JSON"})
	}
	fi.Session = sessionOf(fi.Source, path, data)
	fi.add(0, 0, data)
	fi.Records[0].Session = fi.Session
	return nil
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
	switch source {
	case "claude":
		// <sid>/subagents/agent-*.jsonl (and .meta.json), <sid>/tool-results/*.
		dir := filepath.Base(filepath.Dir(path))
		if dir == "subagents" || dir == "tool-results" {
			return "claude:" + filepath.Base(filepath.Dir(filepath.Dir(path)))
		}
		var v struct {
			SessionID string `json:"sessionId"`
		}
		if first != nil && json.Unmarshal(first, &v) == nil && v.SessionID != "" {
			return "claude:" + v.SessionID
		}
		return "claude:" + stem
	case "codex":
		var v struct {
			Type    string `json:"type"`
			Payload struct {
				ID string `json:"id"`
			} `json:"payload"`
		}
		if first != nil && json.Unmarshal(first, &v) == nil && v.Type == "session_meta" && v.Payload.ID != "" {
			return "codex:" + v.Payload.ID
		}
		// rollout-YYYY-MM-DDThh-mm-ss-<uuid>
		if len(stem) >= 36 && strings.HasPrefix(stem, "rollout-") {
			return "codex:" + stem[len(stem)-36:]
		}
		return "codex:" + stem
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
// replaced: a JSON record stays valid JSON.
func redactRecord(data []byte) []byte {
	r := importRedactor()
	if json.Valid(data) {
		return r.JSON(data)
	}
	return r.Bytes(data)
}

// AppendImport writes records to the WAL as import frames, in batches,
// their data redacted: an agent's log holds whatever its tools read.
func AppendImport(log *wal.Log, recs []exchange.Import) error {
	var (
		batch []wal.Record
		size  int
		arena []byte
	)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := log.AppendBatch(batch)
		batch, size, arena = batch[:0], 0, nil
		return err
	}
	for i := range recs {
		start := len(arena)
		rec := recs[i]
		rec.Data = redactRecord(rec.Data)
		arena = exchange.AppendImport(arena, &rec)
		if len(arena)-start > frame.MaxPayload {
			return fmt.Errorf("engine: import record %s:%d is too large for a WAL frame", recs[i].File, recs[i].Line)
		}
		batch = append(batch, wal.Record{Kind: frame.KindImport, Payload: arena[start:len(arena):len(arena)]})
		size += len(arena) - start
		if size >= 8<<20 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}
