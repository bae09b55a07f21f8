package engine

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/exchange"
)

// The "rowdb" source is a toy database for the row import records
// (LogFormat.Rows): a file whose first line is its identity and whose
// other lines are rows {"s": session, "id": id, "t": time_updated, "v":
// value}, the last line of an id being the row as it is now. Its
// importer makes one user message per row, the last version of each id,
// in id order, so the tests see which versions the engine derived from.
func init() {
	registerImporter("rowdb", func(session string, files []ImportFile) (*Imported, error) {
		im := &Imported{Session: Session{Agent: "rowdb", Import: &ImportInfo{Source: "rowdb"}}}
		last := map[string]string{}
		for _, f := range files {
			for _, r := range f.Records {
				var v struct{ ID, V string }
				json.Unmarshal(r.Data, &v)
				if v.ID != "" {
					last[v.ID] = v.V
				}
			}
		}
		for _, id := range slices.Sorted(func(yield func(string) bool) {
			for k := range last {
				if !yield(k) {
					return
				}
			}
		}) {
			im.Session.Import.Records++
			im.Events = append(im.Events, Event{Kind: KindMessage, Role: "user", Text: id + "=" + last[id], UUID: id, Prov: Provenance{Side: "import"}})
		}
		return im, nil
	})
	if !IsRows("rowdb", "x.db") {
		RegisterLogFormat("rowdb", LogFormat{Rows: rowdbRows})
	}
}

// rowdbRows is the LogFormat.Rows of "rowdb".
func rowdbRows(_ context.Context, path string, state func(string) (*ImportFileState, error), emit func([]exchange.Import) error) (*FileImport, error) {
	db, only, _ := strings.Cut(path, "#")
	b, err := os.ReadFile(db)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	if !sc.Scan() {
		return nil, fmt.Errorf("%s: empty", db)
	}
	identity := fmt.Appendf(nil, `{"identity":%q}`, sc.Text())
	sum := sha256.Sum256(identity)
	idSHA := hex.EncodeToString(sum[:])
	type row struct {
		S, ID string
		T     int64
		data  []byte
	}
	var rows []row
	now := map[string]int{}
	for sc.Scan() {
		var r row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, err
		}
		r.data = slices.Clone(sc.Bytes())
		if i, ok := now[r.ID]; ok {
			rows[i] = r
		} else {
			now[r.ID] = len(rows)
			rows = append(rows, r)
		}
	}
	fi := &FileImport{}
	units := map[string][]row{}
	var order []string
	for _, r := range rows {
		if only != "" && r.S != only {
			continue
		}
		if units[r.S] == nil {
			order = append(order, r.S)
		}
		units[r.S] = append(units[r.S], r)
	}
	for _, s := range order {
		unit := db + "#" + s
		st, err := state(unit)
		if err != nil {
			return nil, err
		}
		fresh, gen := st == nil || st.Records == 0, uint64(0)
		if st != nil {
			gen = st.Gen
		}
		if !fresh && st.HeadSHA != idSHA {
			fresh, gen, fi.Replaced = true, gen+1, true
		}
		var recs []exchange.Import
		if fresh {
			recs = append(recs, exchange.Import{Session: "rowdb:" + s, File: unit, Gen: gen, Data: identity})
		}
		for _, r := range units[s] {
			if fresh || r.T >= st.RowSince() && st.RowChanged(r.ID, r.T, r.data) {
				recs = append(recs, exchange.Import{Session: "rowdb:" + s, File: unit, Gen: gen, Offset: r.T, Data: r.data})
			}
		}
		if len(recs) > 0 {
			if err := emit(recs); err != nil {
				return nil, err
			}
			fi.Sessions = append(fi.Sessions, "rowdb:"+s)
		}
	}
	return fi, nil
}

// importRows reads the database path against the engine's states and
// appends its records.
func importRows(t *testing.T, e *Engine, path string) *FileImport {
	t.Helper()
	catchUp(t, e)
	fi, err := ReadRows("rowdb", path, func(unit string) (*ImportFileState, error) {
		st, ok, err := e.ImportState(unit)
		if !ok || err != nil {
			return nil, err
		}
		return &st, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := AppendImport(e.WAL(), fi.Records); err != nil {
		t.Fatal(err)
	}
	catchUp(t, e)
	return fi
}

// TestImportRows imports a database whose rows change between imports:
// each import takes the rows updated since the last, one session's rows
// are derived from its own unit, rows of the same time are taken once,
// a replaced database is a new generation, and a rebuild derives the
// same bytes.
func TestImportRows(t *testing.T) {
	dir, log := newData(t)
	e := open(t, dir, log, nil)
	db := t.TempDir() + "/x.db"
	write := func(lines ...string) {
		if err := os.WriteFile(db, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	base := []string{"db-1",
		`{"s":"a","id":"m1","t":10,"v":"one"}`,
		`{"s":"b","id":"n1","t":11,"v":"other"}`,
		`{"s":"a","id":"m2","t":12,"v":"two"}`,
	}
	write(base...)
	fi := importRows(t, e, db)
	if len(fi.Records) != 5 || !slices.Equal(fi.Sessions, []string{"rowdb:a", "rowdb:b"}) {
		t.Fatalf("first import: %d records, sessions %v", len(fi.Records), fi.Sessions)
	}
	if got, want := texts(t, e, "rowdb:a"), "1:m1=one|2:m2=two|"; got != want {
		t.Fatalf("a: %s, want %s", got, want)
	}
	if got, want := texts(t, e, "rowdb:b"), "1:n1=other|"; got != want {
		t.Fatalf("b: %s, want %s", got, want)
	}
	if fi := importRows(t, e, db); len(fi.Records) != 0 {
		t.Fatalf("again: %d records", len(fi.Records))
	}
	st, _, _ := e.ImportState(db + "#a")
	if st.End != 12 || len(st.Rows) != 2 || st.Rows["m2"].T != 12 || st.Records != 3 {
		t.Fatalf("state of a: end %d rows %v records %d", st.End, st.Rows, st.Records)
	}
	// m1 is rewritten, m3 comes at the same time as m2, and m2 is
	// rewritten in the same millisecond: the three are taken.
	write(append(base[:3], `{"s":"a","id":"m2","t":12,"v":"two!"}`, `{"s":"a","id":"m1","t":13,"v":"uno"}`, `{"s":"a","id":"m3","t":12,"v":"three"}`)...)
	if fi := importRows(t, e, db); len(fi.Records) != 3 || !slices.Equal(fi.Sessions, []string{"rowdb:a"}) {
		t.Fatalf("rewritten: %d records, sessions %v", len(fi.Records), fi.Sessions)
	}
	if got, want := texts(t, e, "rowdb:a"), "1:m1=uno|2:m2=two!|3:m3=three|"; got != want {
		t.Fatalf("a: %s, want %s", got, want)
	}
	// One unit alone, every row of it (the census reads so).
	one, err := ReadImport("rowdb", db+"#b", nil)
	if err != nil || len(one.Records) != 2 || one.Session != "rowdb:b" || one.Kind != exchange.ImportRow {
		t.Fatalf("unit b: %v %+v", err, one)
	}
	sameAfterRebuild(t, e, dump(t, e), "rebuild after row imports")

	// A replaced database: its sessions start over as a new generation.
	write("db-2", `{"s":"a","id":"m9","t":5,"v":"nine"}`)
	fi = importRows(t, e, db)
	if !fi.Replaced || len(fi.Records) != 2 || fi.Records[0].Gen != 1 {
		t.Fatalf("replaced: %+v", fi)
	}
	if got, want := texts(t, e, "rowdb:a"), "1:m9=nine|"; got != want {
		t.Fatalf("a after replacement: %s, want %s", got, want)
	}
	sameAfterRebuild(t, e, dump(t, e), "rebuild after a replaced database")
}

// TestImportRowsReopen: row records appended to the WAL but not derived
// when the engine stopped (a crash after the append) are derived when it
// opens again, with the same marks: a second read takes nothing again,
// and the state equals a rebuild's.
func TestImportRowsReopen(t *testing.T) {
	dir, log := newData(t)
	e := open(t, dir, log, &Options{BatchBytes: 1})
	db := t.TempDir() + "/x.db"
	lines := "db-1\n"
	for i := range 30 {
		lines += fmt.Sprintf(`{"s":"s%d","id":"r%d","t":%d,"v":"v%d"}`+"\n", i%3, i, 100+i/2, i)
	}
	if err := os.WriteFile(db, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := ReadRows("rowdb", db, func(string) (*ImportFileState, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := AppendImport(log, fi.Records); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = open(t, dir, log, nil)
	catchUp(t, e)
	for s := range 3 {
		if got := texts(t, e, fmt.Sprintf("rowdb:s%d", s)); strings.Count(got, "|") != 10 {
			t.Errorf("s%d: %s", s, got)
		}
	}
	if fi := importRows(t, e, db); len(fi.Records) != 0 {
		t.Fatalf("after the reopen, a read takes %d records again", len(fi.Records))
	}
	sameAfterRebuild(t, e, dump(t, e), "rebuild after rows derived on reopen")
}
