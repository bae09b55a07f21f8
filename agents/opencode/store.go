package opencode

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite", pure Go
)

// A database is read row by row (engine.LogFormat.Rows): the rows of one
// session are a unit of their own, named "<database>#<session id>", whose
// records are, in order, the database's identity (the first time, and
// again as a new generation when the database was replaced), then every
// session, message, part and session_message row that changed since it
// was imported: the rows updated since engine.RowWindow before the
// newest time_updated imported (engine.ImportFileState.RowSince) are
// read and compared with their fingerprints (RowChanged), so a row
// rewritten in the same millisecond, or with an older time_updated, is
// imported again; the session record is built every time and imported
// when it changed. Each record's data is one JSON object:
//
//	{"table":"db","created":<first migration's time_completed>,"migration":"<its id>"}
//	{"table":"session","id":…,"project_id":…,"parent_id":…,"directory":…,"title":…,"version":…,
//	 "time_created":…,"time_updated":…,…,"children":[{"id":…,"agent":…,"title":…}],"message_ids":[…]}
//	{"table":"message","id":…,"session_id":…,"time_created":…,"time_updated":…,"data":{…}}
//	{"table":"part","id":…,"message_id":…,"session_id":…,"time_created":…,"time_updated":…,"data":{…}}
//	{"table":"session_message","id":…,"type":"user"|"assistant"|…,"seq":…,"session_id":…,"time_created":…,"time_updated":…,"data":{…}}
//
// The session record names the session's subagents (the sessions whose
// parent_id is its id) in children, so that a session derives from its
// own unit alone, and its message and session_message rows as they are
// in message_ids, so that the importer leaves out the ones opencode has
// deleted since they were imported (a revert deletes the messages after
// its point when the session goes on, and updates the session row); a
// new or deleted message changes it. No other table is read:
// account, control_account, credential and session_share hold access
// tokens.

// unitSep separates a database's path from the session id in a unit's
// name.
const unitSep = "#"

// unitOf returns the unit of session id in database db.
func unitOf(db, id string) string { return db + unitSep + id }

// splitUnit returns the database and the session id a unit names, or
// path and "" when path names a database.
func splitUnit(path string) (db, id string) {
	i := strings.LastIndex(path, unitSep)
	if i < 0 || !strings.HasPrefix(path[i+1:], "ses_") || strings.ContainsRune(path[i+1:], '/') {
		return path, ""
	}
	return path[:i], path[i+1:]
}

// The columns read, by table. A required column that is missing stops
// the import with an error naming it; an optional one is read when the
// table has it.
var (
	sessionRequired = []string{"id", "project_id", "parent_id", "directory", "title", "version", "time_created", "time_updated"}
	sessionOptional = []string{"slug", "agent", "model", "cost", "tokens_input", "tokens_output", "tokens_reasoning",
		"tokens_cache_read", "tokens_cache_write", "time_archived"}
	messageColumns = []string{"id", "session_id", "time_created", "time_updated", "data"}
	v2Columns      = []string{"id", "session_id", "type", "seq", "time_created", "time_updated", "data"}
	partColumns    = []string{"id", "message_id", "session_id", "time_created", "time_updated", "data"}
)

// jsonColumns are the session columns that hold JSON.
var jsonColumns = map[string]bool{"model": true}

// openDB opens the database at path read-only: SQLite reads its -wal too
// (opencode keeps its recent rows there until a checkpoint) and takes
// the ordinary shared lock, so reading is safe while opencode writes.
// Never immutable=1, which ignores the -wal.
//
// A file that is not an SQLite database (shorter than its 100-byte
// header, or without its magic string) is refused before SQLite sees it:
// opening an empty opencode.db read-only would make SQLite delete the
// opencode.db-wal beside it, the rows opencode has not checkpointed.
func openDB(path string) (*sql.DB, error) {
	if err := checkHeader(path); err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: "mode=ro&_pragma=busy_timeout(5000)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// sqliteMagic begins every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// checkHeader returns an error naming path unless it begins with an
// SQLite database header.
func checkHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var h [100]byte
	n, err := io.ReadFull(f, h[:])
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		return fmt.Errorf("%s: not an SQLite database: %d bytes, shorter than its 100-byte header (bbengine did not open it, so that SQLite leaves its -wal alone; opencode makes the database when it starts)", path, n)
	case err != nil:
		return fmt.Errorf("%s: %w", path, err)
	case string(h[:len(sqliteMagic)]) != sqliteMagic:
		return fmt.Errorf("%s: not an SQLite database: its first bytes are not %q", path, strings.TrimSuffix(sqliteMagic, "\x00"))
	}
	return nil
}

// openErr explains a database that SQLite would not open read-only.
func openErr(path string, err error) error {
	if _, serr := os.Stat(path + "-shm"); serr != nil {
		return fmt.Errorf("%s: cannot open it read-only: %w (SQLite reads a WAL database through %s-shm, which is missing, and could not create it: let the directory be written, or run opencode once to make it)",
			path, err, filepath.Base(path))
	}
	return fmt.Errorf("%s: cannot open it read-only: %w", path, err)
}

// columns returns the columns of table, or nil when there is no such
// table.
func columns(ctx context.Context, tx *sql.Tx, table string) (map[string]bool, error) {
	rows, err := tx.QueryContext(ctx, "select name from pragma_table_info(?)", table)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		out[name] = true
	}
	if len(out) == 0 {
		return nil, rows.Err()
	}
	return out, rows.Err()
}

// need returns an error naming the first of want that table lacks.
func need(path, table string, have map[string]bool, want []string) error {
	if have == nil {
		return fmt.Errorf("%s: no table %s: not an opencode 1.2 or later database", path, table)
	}
	for _, c := range want {
		if !have[c] {
			return fmt.Errorf("%s: table %s has no column %s: a version of opencode this bbengine does not know", path, table, c)
		}
	}
	return nil
}

// unitMark is where reading a unit starts.
type unitMark struct {
	fresh bool                    // read every row
	st    *engine.ImportFileState // the unit's state, unless fresh
	gen   uint64
}

// changed reports whether the row id, updated at t and recorded as
// data, is to be imported: every row of a fresh unit, else one that
// differs from its version last imported.
func (m *unitMark) changed(id string, t int64, data []byte) bool {
	return m.fresh || m.st.RowChanged(id, t, data)
}

// readRows is the LogFormat.Rows of source "opencode". ctx stops the
// read between rows.
func readRows(ctx context.Context, path string, state func(unit string) (*engine.ImportFileState, error), emit func([]exchange.Import) error) (*engine.FileImport, error) {
	dbPath, only := splitUnit(path)
	db, err := openDB(dbPath)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, openErr(dbPath, err)
	}
	defer tx.Rollback()
	fi := &engine.FileImport{}
	r := &rowReader{ctx: ctx, tx: tx, path: dbPath, fi: fi, emit: emit}
	if err := r.read(only, state); err != nil {
		var pe *problemError
		var ee *emitError
		switch {
		case errors.As(err, &pe):
			return nil, err
		case errors.As(err, &ee):
			return nil, ee.error
		case ctx.Err() != nil:
			return nil, ctx.Err()
		}
		if strings.Contains(err.Error(), "unable to open") || strings.Contains(err.Error(), "readonly") {
			return nil, openErr(dbPath, err)
		}
		return nil, fmt.Errorf("%s: %w", dbPath, err)
	}
	return fi, nil
}

// problemError is an error that names its database already.
type problemError struct{ error }

// emitError is an error of emit's, returned as it is.
type emitError struct{ error }

// rowReader reads one database in one read transaction.
type rowReader struct {
	ctx  context.Context
	tx   *sql.Tx
	path string
	fi   *engine.FileImport
	emit func([]exchange.Import) error
	// identity is the database's identity record, idSHA its SHA-256.
	identity []byte
	idSHA    string
	// v2 is set when the database has session_message.
	v2 bool
}

func (r *rowReader) read(only string, state func(unit string) (*engine.ImportFileState, error)) error {
	scols, err := columns(r.ctx, r.tx, "session")
	if err != nil {
		return fmt.Errorf("table session: %w", err)
	}
	if err := need(r.path, "session", scols, sessionRequired); err != nil {
		return &problemError{err}
	}
	for _, t := range []struct {
		name string
		want []string
	}{{"message", messageColumns}, {"part", partColumns}} {
		have, err := columns(r.ctx, r.tx, t.name)
		if err != nil {
			return fmt.Errorf("table %s: %w", t.name, err)
		}
		if err := need(r.path, t.name, have, t.want); err != nil {
			return &problemError{err}
		}
	}
	// session_message, the newer store (opencode serve's v2 API writes
	// it), is read when the database has it.
	v2, err := columns(r.ctx, r.tx, "session_message")
	if err != nil {
		return fmt.Errorf("table session_message: %w", err)
	}
	if v2 != nil {
		if err := need(r.path, "session_message", v2, v2Columns); err != nil {
			return &problemError{err}
		}
		r.v2 = true
	}
	if err := r.readIdentity(); err != nil {
		return err
	}
	cols := slices.Clone(sessionRequired)
	for _, c := range sessionOptional {
		if scols[c] {
			cols = append(cols, c)
		}
	}
	sessions, err := r.sessions(cols)
	if err != nil {
		return fmt.Errorf("table session: %w", err)
	}
	children := map[string][]child{}
	for _, s := range sessions {
		if s.parent != "" {
			children[s.parent] = append(children[s.parent], child{ID: s.id, Agent: s.agent, Title: s.title})
		}
	}
	for _, s := range sessions {
		if only != "" && s.id != only {
			continue
		}
		if err := r.unit(s, children[s.id], state); err != nil {
			return err
		}
	}
	return nil
}

// readIdentity reads what tells this database from one that replaced it
// at the same path: its first migration, whose time is when opencode
// made it.
func (r *rowReader) readIdentity() error {
	var (
		id      string
		created int64
	)
	err := r.tx.QueryRowContext(r.ctx, "select id, time_completed from migration order by time_completed, id limit 1").Scan(&id, &created)
	if err != nil && !errors.Is(err, sql.ErrNoRows) && !strings.Contains(err.Error(), "no such table") {
		return fmt.Errorf("table migration: %w", err)
	}
	r.identity = appendString(fmt.Appendf(nil, `{"table":"db","created":%d,"migration":`, created), id)
	r.identity = append(r.identity, '}')
	sum := sha256.Sum256(r.identity)
	r.idSHA = hex.EncodeToString(sum[:])
	return nil
}

// child is a subagent's session, as its parent's session record lists it.
type child struct {
	ID    string `json:"id"`
	Agent string `json:"agent,omitempty"`
	Title string `json:"title,omitempty"`
}

// sessionRow is a session row, read as a JSON object of its columns.
type sessionRow struct {
	id, parent, agent, title string
	updated                  int64
	obj                      []byte // the columns, without the closing brace
}

// sessions reads the session rows (every one: a subagent's parent needs
// its children's), in (time_created, id) order.
func (r *rowReader) sessions(cols []string) ([]sessionRow, error) {
	rows, err := r.tx.QueryContext(r.ctx, "select "+strings.Join(cols, ", ")+" from session order by time_created, id")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []sessionRow
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		var s sessionRow
		b := []byte(`{"table":"session"`)
		for i, c := range cols {
			v := vals[i]
			if v == nil {
				continue
			}
			b = append(b, ',')
			b = appendString(b, c)
			b = append(b, ':')
			var str string
			switch v := v.(type) {
			case int64:
				b = strconv.AppendInt(b, v, 10)
				if c == "time_updated" {
					s.updated = v
				}
				continue
			case float64:
				if math.IsNaN(v) || math.IsInf(v, 0) {
					b = append(b, "null"...)
				} else {
					b = strconv.AppendFloat(b, v, 'g', -1, 64)
				}
				continue
			case string:
				str = v
			case []byte:
				str = string(v)
			default:
				str = fmt.Sprint(v)
			}
			if jsonColumns[c] && isObject([]byte(str)) {
				b = append(b, str...)
			} else {
				b = appendString(b, str)
			}
			switch c {
			case "id":
				s.id = str
			case "parent_id":
				s.parent = str
			case "agent":
				s.agent = str
			case "title":
				s.title = str
			}
		}
		s.obj = b
		out = append(out, s)
	}
	return out, rows.Err()
}

// messageIDs returns the ids of session id's message rows (and
// session_message rows), as they are now.
func (r *rowReader) messageIDs(id string) ([]string, error) {
	q := "select id from message where session_id = ? order by time_created, id"
	if r.v2 {
		q = "select id from message where session_id = ?1 union all select id from session_message where session_id = ?1"
	}
	rows, err := r.tx.QueryContext(r.ctx, q, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// appendString appends s to b as a JSON string (invalid UTF-8 becomes
// U+FFFD, as encoding/json writes it).
func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s)
	return append(b, q...)
}

// isObject reports whether b is one JSON object.
func isObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// unit reads the rows of session s past its unit's mark.
func (r *rowReader) unit(s sessionRow, kids []child, state func(unit string) (*engine.ImportFileState, error)) error {
	unit := unitOf(r.path, s.id)
	st, err := state(unit)
	if err != nil {
		return err
	}
	m := unitMark{fresh: true}
	switch {
	case st == nil || st.Records == 0:
		if st != nil {
			m.gen = st.Gen
		}
	case st.HeadSHA != r.idSHA:
		m.gen = st.Gen + 1
		r.fi.Replaced = true
	default:
		m = unitMark{st: st, gen: st.Gen}
	}
	session := "opencode:" + s.id
	var recs []exchange.Import
	add := func(t int64, data []byte) {
		recs = append(recs, exchange.Import{Session: session, File: unit, Gen: m.gen, Offset: t, Data: data})
	}
	if m.fresh {
		add(0, r.identity)
	}
	// Messages, then parts, updated since the window before the mark,
	// that changed since they were imported.
	since := int64(-1 << 62)
	if !m.fresh {
		since = m.st.RowSince()
	}
	tables := []struct {
		table, query string
		n            int
	}{
		{"message", "select id, session_id, time_created, time_updated, data from message where session_id = ? and time_updated >= ? order by time_created, id", 4},
		{"part", "select id, message_id, session_id, time_created, time_updated, data from part where session_id = ? and time_updated >= ? order by message_id, id", 5},
	}
	if r.v2 {
		tables = append(tables, struct {
			table, query string
			n            int
		}{"session_message", "select id, type, seq, session_id, time_created, time_updated, data from session_message where session_id = ? and time_updated >= ? order by seq", 6})
	}
	for _, t := range tables {
		rows, err := r.tx.QueryContext(r.ctx, t.query, s.id, since)
		if err != nil {
			return fmt.Errorf("table %s, session %s: %w", t.table, s.id, err)
		}
		vals := make([]sql.RawBytes, t.n+1)
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				rows.Close()
				return fmt.Errorf("table %s, session %s: %w", t.table, s.id, err)
			}
			id := string(vals[0])
			tu, _ := strconv.ParseInt(string(vals[t.n-1]), 10, 64)
			data := vals[t.n]
			if !isObject(data) {
				r.fi.Unreadable++
				if len(r.fi.Problems) < 10 {
					r.fi.Problems = append(r.fi.Problems, engine.Problem{File: r.path,
						Err: fmt.Sprintf("table %s, id %s: data is not a JSON object", t.table, id)})
				}
				continue
			}
			odd := oddShape(t.table, data)
			b := appendString(fmt.Appendf(nil, `{"table":%q,"id":`, t.table), id)
			switch t.table {
			case "part":
				b = appendString(append(b, `,"message_id":`...), string(vals[1]))
			case "session_message":
				seq, _ := strconv.ParseInt(string(vals[2]), 10, 64)
				b = fmt.Appendf(appendString(append(b, `,"type":`...), string(vals[1])), `,"seq":%d`, seq)
			}
			tc, _ := strconv.ParseInt(string(vals[t.n-2]), 10, 64)
			b = fmt.Appendf(appendString(append(b, `,"session_id":`...), s.id), `,"time_created":%d,"time_updated":%d,"data":`, tc, tu)
			b = append(append(b, bytes.TrimSpace(data)...), '}')
			if m.changed(id, tu, b) {
				add(tu, b)
				if odd != "" {
					// Imported, and what could be read of it derived.
					r.fi.Unreadable++
					if len(r.fi.Problems) < 10 {
						r.fi.Problems = append(r.fi.Problems, engine.Problem{File: r.path, Kept: true,
							Err: fmt.Sprintf("table %s, id %s: %s", t.table, id, odd)})
					}
				}
			}
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("table %s, session %s: %w", t.table, s.id, err)
		}
	}
	// The session row with its children and its message ids, when it
	// changed: a new message, a deleted one, a new subagent or a column
	// (opencode sets the title without moving time_updated).
	b := s.obj
	if len(kids) > 0 {
		k, _ := json.Marshal(kids)
		b = append(append(slices.Clip(b), `,"children":`...), k...)
	}
	ids, err := r.messageIDs(s.id)
	if err != nil {
		return fmt.Errorf("table message, session %s: %w", s.id, err)
	}
	k, _ := json.Marshal(ids)
	b = append(append(slices.Clip(b), `,"message_ids":`...), k...)
	b = append(slices.Clip(b), '}')
	if m.changed(s.id, s.updated, b) {
		rec := exchange.Import{Session: session, File: unit, Gen: m.gen, Offset: s.updated, Data: b}
		i := 0
		if m.fresh {
			i = 1 // after the identity
		}
		recs = slices.Insert(recs, i, rec)
	}
	if len(recs) == 0 {
		return nil
	}
	for _, rec := range recs {
		r.fi.Bytes += int64(len(rec.Data))
	}
	r.fi.Sessions = append(r.fi.Sessions, session)
	if err := r.emit(recs); err != nil {
		return &emitError{err}
	}
	return nil
}
