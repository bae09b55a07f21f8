package exchange

import (
	"encoding/binary"
	"fmt"
)

// Import is the payload of an import frame: one record of an agent's own
// log (a JSONL line, a subagent's meta file, a spilled tool output, a
// whole JSON document), with where it came from.
//
// The encoding is binary, so the record's bytes are stored as they are
// (no JSON escaping): the byte 'I', the version (1), then Source,
// Session, File and Kind as uvarint-length-prefixed strings, Gen, Offset
// and Line as uvarints, and Data as the rest of the payload.
type Import struct {
	// Source is the importer: "claude", "codex" or "atif".
	Source string
	// Session is the session the record belongs to, as the importer
	// named it from the file ("claude:<sessionId>").
	Session string
	// File is the absolute path of the source file.
	File string
	// Kind is what Data is: ImportLine, ImportMeta, ImportSpill,
	// ImportDoc or ImportRow.
	Kind string
	// Gen is the file's generation: it grows when the file was replaced
	// (its imported prefix changed), and only the newest generation's
	// records are derived.
	Gen uint64
	// Offset is the byte offset of the record in the file (of the
	// decompressed stream for a compressed file); Line its 1-based line
	// number (0 for a record that is a whole file).
	Offset int64
	Line   int64
	// Data is the record's bytes: a line without its line ending, or the
	// file's content.
	Data []byte
}

// The kinds of import record.
const (
	ImportLine  = "line"  // one line of a JSONL log
	ImportMeta  = "meta"  // a subagent's .meta.json file
	ImportSpill = "spill" // a tool output the agent spilled to its own file
	ImportDoc   = "doc"   // a whole JSON document (an ATIF trajectory)
	// ImportRow is one row of a database (opencode's opencode.db): a JSON
	// object naming its table and id. File is "<database>#<session id>",
	// the rows of one session, Offset the row's time_updated (Unix ms)
	// and Line 0. The rows of a file are not in offset order: a row is
	// imported again whenever it changed, and the last record of an id
	// is its newest version.
	ImportRow = "row"
)

const importVersion = 1

// AppendImport appends the encoding of r to dst.
func AppendImport(dst []byte, r *Import) []byte {
	dst = append(dst, 'I', importVersion)
	for _, s := range [...]string{r.Source, r.Session, r.File, r.Kind} {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	dst = binary.AppendUvarint(dst, r.Gen)
	dst = binary.AppendUvarint(dst, uint64(r.Offset))
	dst = binary.AppendUvarint(dst, uint64(r.Line))
	return append(dst, r.Data...)
}

// DecodeImport decodes an import payload. Data aliases b.
func DecodeImport(b []byte) (Import, error) {
	var r Import
	if len(b) < 2 || b[0] != 'I' {
		return r, fmt.Errorf("%w: import: not an import record", ErrPayload)
	}
	if b[1] != importVersion {
		return r, fmt.Errorf("%w: import: version %d", ErrPayload, b[1])
	}
	p := b[2:]
	var strs [4]string
	for i := range strs {
		n, k := binary.Uvarint(p)
		if k <= 0 || n > uint64(len(p)-k) {
			return r, fmt.Errorf("%w: import: field %d is cut short", ErrPayload, i+1)
		}
		strs[i] = string(p[k : k+int(n)])
		p = p[k+int(n):]
	}
	r.Source, r.Session, r.File, r.Kind = strs[0], strs[1], strs[2], strs[3]
	var nums [3]uint64
	for i := range nums {
		n, k := binary.Uvarint(p)
		if k <= 0 {
			return r, fmt.Errorf("%w: import: field %d is cut short", ErrPayload, i+5)
		}
		nums[i] = n
		p = p[k:]
	}
	if nums[1] > 1<<62 || nums[2] > 1<<62 {
		return r, fmt.Errorf("%w: import: offset or line out of range", ErrPayload)
	}
	r.Gen, r.Offset, r.Line = nums[0], int64(nums[1]), int64(nums[2])
	r.Data = p
	return r, nil
}
