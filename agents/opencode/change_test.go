package opencode_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
)

// followSetup returns an import sink, its importer over the fixture's
// database, the database, and a function that runs one import round and
// returns the fixture session's messages, "role:text|" each.
func followSetup(t *testing.T) (api.ImportSink, string, func(string) string) {
	h, db := home(t)
	t.Setenv("HOME", h)
	sink, err := api.OpenImportSink(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })
	im := api.NewImporter(sink, "opencode")
	roots := []string{filepath.Dir(db)}
	round := func(what string) string {
		t.Helper()
		st, err := im.Round(context.Background(), roots, true, false, quiet{t})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d records", what, st.Records)
		evs, err := sink.Reader().Events("opencode:"+fixtureSession, engine.EventFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, ev := range evs {
			if ev.Kind == engine.KindMessage {
				b.WriteString(ev.Role + ":" + ev.Text + "|")
			}
		}
		return b.String()
	}
	return sink, db, round
}

// TestSameMillisecondRewrite: a row rewritten in the millisecond of the
// version imported (opencode writes a streamed part empty, then whole) is
// imported again.
func TestSameMillisecondRewrite(t *testing.T) {
	_, db, round := followSetup(t)
	round("first")
	exec(t, db, `insert into part (id, message_id, session_id, time_created, time_updated, data) values ('prt_zz1', 'msg_21cc8d22a001psOdOU9JeGlMAc', '`+fixtureSession+`', 1795779260000, 1795779260000, '{"type":"text","text":""}')`)
	round("empty part")
	exec(t, db, `update part set data = '{"type":"text","text":"And done."}' where id = 'prt_zz1'`)
	if got := round("part written whole, same ms"); !strings.Contains(got, "And done.") {
		t.Errorf("the part's final version was never imported: %s", got)
	}
}

// TestOlderTimeUpdated: a row updated with a time_updated older than the
// newest imported (a clock stepped back) is imported, and stands.
func TestOlderTimeUpdated(t *testing.T) {
	_, db, round := followSetup(t)
	round("first")
	exec(t, db, `update part set data = '{"type":"text","text":"Rewritten."}', time_updated = 1795779252000 where id = 'prt_21cc8d28e001FcveW9Rl2oxsT1'`)
	if got := round("older time"); !strings.Contains(got, "Rewritten.") {
		t.Errorf("a row updated at an older time was not imported: %s", got)
	}
}

// TestTitleWithoutTimeBump: opencode sets a session's title without
// moving its time_updated; the title is imported.
func TestTitleWithoutTimeBump(t *testing.T) {
	sink, db, round := followSetup(t)
	round("first")
	exec(t, db, `update session set title = 'Echo hi, the generated title' where id = '`+fixtureSession+`'`)
	round("title set")
	s, err := sink.Reader().Session("opencode:" + fixtureSession)
	if err != nil {
		t.Fatal(err)
	}
	if s.Title != "Echo hi, the generated title" {
		t.Errorf("title %q", s.Title)
	}
}

// TestRacingImports: two imports read the database one after the other
// and append in the other order; no message is lost, and the next round
// leaves the session as the database is.
func TestRacingImports(t *testing.T) {
	sink, db, round := followSetup(t)
	round("first")
	state := func(unit string) (*engine.ImportFileState, error) { return sink.State(unit) }
	// A: a part of an existing message is rewritten.
	exec(t, db, `update part set data = '{"type":"text","text":"It printed hi!"}', time_updated = 1795779260000 where id = 'prt_21cc8d28e001FcveW9Rl2oxsT1'`)
	a, err := engine.ReadRows("opencode", db, state)
	if err != nil {
		t.Fatal(err)
	}
	// B, later: a new user message with its text, and the part again.
	exec(t, db,
		`insert into message (id, session_id, time_created, time_updated, data) values ('msg_zz9', '`+fixtureSession+`', 1795779261000, 1795779261000, '{"role":"user","time":{"created":1795779261000}}')`,
		`insert into part (id, message_id, session_id, time_created, time_updated, data) values ('prt_zz9', 'msg_zz9', '`+fixtureSession+`', 1795779261000, 1795779261000, '{"type":"text","text":"and again"}')`,
		`update part set data = '{"type":"text","text":"It printed hi!!"}', time_updated = 1795779261000 where id = 'prt_21cc8d28e001FcveW9Rl2oxsT1'`)
	b, err := engine.ReadRows("opencode", db, state)
	if err != nil {
		t.Fatal(err)
	}
	for _, recs := range [][]exchange.Import{b.Records, a.Records} {
		if err := sink.Append(recs); err != nil {
			t.Fatal(err)
		}
	}
	if err := sink.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := round("after the race")
	if !strings.Contains(got, "and again") || !strings.Contains(got, "It printed hi!!|") {
		t.Errorf("after the race and a round: %s", got)
	}
}

// TestManyRowsAtOneTime: a database migrated from the JSON tree has every
// row of a session at one time_updated; a round after the first reads
// them without importing any again.
func TestManyRowsAtOneTime(t *testing.T) {
	sink, db, _ := followSetup(t)
	n := 3000
	stmts := []string{"begin"}
	for i := range n {
		stmts = append(stmts, fmt.Sprintf(`insert into part (id, message_id, session_id, time_created, time_updated, data) values ('prt_m%06d', 'msg_21cc8d22a001psOdOU9JeGlMAc', '%s', 1795779252900, 1795779299999, '{"type":"text","text":"migrated row %d"}')`, i, fixtureSession, i))
	}
	exec(t, db, append(stmts, `update session set time_updated = 1795779299999`, "commit")...)
	state := func(unit string) (*engine.ImportFileState, error) { return sink.State(unit) }
	for pass := 1; pass <= 3; pass++ {
		var got int
		_, err := engine.ScanRows(context.Background(), "opencode", db, state, func(recs []exchange.Import) error {
			got += len(recs)
			return sink.Append(recs)
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := sink.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		st, _ := sink.State(db + "#" + fixtureSession)
		if pass == 1 && (got < n || len(st.Rows) < n) || pass > 1 && got != 0 {
			t.Errorf("pass %d: %d records, %d rows fingerprinted", pass, got, len(st.Rows))
		}
	}
}

// TestSessionRecordOnlyWhenChanged: a round that finds one changed part
// imports that part, not the session row with its whole message list.
func TestSessionRecordOnlyWhenChanged(t *testing.T) {
	sink, db, _ := followSetup(t)
	stmts := []string{"begin"}
	for i := range 500 {
		stmts = append(stmts, fmt.Sprintf(`insert into message (id, session_id, time_created, time_updated, data) values ('msg_m%06d', '%s', %d, %d, '{"role":"user","time":{"created":1}}')`, i, fixtureSession, 1795779253000+i, 1795779253000+i))
	}
	exec(t, db, append(stmts, "commit")...)
	state := func(unit string) (*engine.ImportFileState, error) { return sink.State(unit) }
	for pass := range 5 {
		exec(t, db, fmt.Sprintf(`update part set data = '{"type":"text","text":"streaming %d"}', time_updated = %d where id = 'prt_21cc8d28e001FcveW9Rl2oxsT1'`, pass, 1795779300000+pass))
		fi, err := engine.ScanRows(context.Background(), "opencode", db, state, func(recs []exchange.Import) error { return sink.Append(recs) })
		if err != nil {
			t.Fatal(err)
		}
		if err := sink.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if pass > 0 && fi.Bytes > 1000 {
			t.Errorf("pass %d: %d bytes of records for one changed part", pass, fi.Bytes)
		}
	}
}
