package opencode_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
)

// quiet is an ImportReporter that says nothing.
type quiet struct{ t *testing.T }

func (quiet) Start(int)           {}
func (quiet) Progress(int, int64) {}
func (q quiet) Say(msg string)    { q.t.Log(msg) }
func (quiet) Done(int, int64)     {}
func (quiet) Deriving(int)        {}

// TestFollow runs import rounds as `bbengine import opencode --follow`
// does while the database changes as opencode changes it: a round takes
// only the rows changed since the last (by fingerprint), an unchanged
// database is not opened, a rewritten row replaces its older version in
// the session, messages a revert deleted leave the timeline (a rewrite
// says so), and the check finds nothing lost after each round.
func TestFollow(t *testing.T) {
	h, db := home(t)
	t.Setenv("HOME", h)
	sink, err := api.OpenImportSink(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	im := api.NewImporter(sink, "opencode")
	roots := []string{filepath.Dir(db)}
	ctx := context.Background()
	round := func(what string, records int64) {
		t.Helper()
		st, err := im.Round(ctx, roots, true, false, quiet{t})
		if err != nil {
			t.Fatal(err)
		}
		if st.Records != records || st.Problems != 0 {
			t.Fatalf("%s: %+v, want %d records", what, st, records)
		}
		checks, err := im.Check()
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range checks {
			for _, r := range c.Rows {
				if r.Lost || r.Differs {
					t.Errorf("%s: %s: %+v", what, c.Session, r)
				}
			}
		}
	}
	events := func() string {
		t.Helper()
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
	round("first", 14)
	round("unchanged", 0)
	// opencode streams a text part: first written empty, then whole;
	// the message is completed after it.
	exec(t, db,
		`insert into part (id, message_id, session_id, time_created, time_updated, data) values ('prt_zz1', 'msg_21cc8d22a001psOdOU9JeGlMAc', '`+fixtureSession+`', 1795779260000, 1795779260000, '{"type":"text","text":""}')`)
	round("a new part", 1) // the part alone: the session row did not change
	exec(t, db,
		`update part set data = '{"type":"text","text":"And done."}', time_updated = 1795779260100 where id = 'prt_zz1'`,
		`update message set time_updated = 1795779260200 where id = 'msg_21cc8d22a001psOdOU9JeGlMAc'`)
	round("the part written whole, the message completed", 2)
	if got, want := events(), `user:"Run echo hi with bash"|assistant:I will run it.|assistant:It printed hi.|assistant:And done.|`; got != want {
		t.Errorf("messages\n got %s\nwant %s", got, want)
	}
	// A revert: opencode deletes the messages after its point (their
	// parts go with them) and updates the session row.
	exec(t, db,
		`pragma foreign_keys = on`,
		`delete from part where message_id = 'msg_21cc8d22a001psOdOU9JeGlMAc'`,
		`delete from message where id = 'msg_21cc8d22a001psOdOU9JeGlMAc'`,
		`update session set time_updated = 1795779270000`)
	round("a revert", 1) // the session row
	if got, want := events(), `user:"Run echo hi with bash"|assistant:I will run it.|`; got != want {
		t.Errorf("messages after the revert\n got %s\nwant %s", got, want)
	}
	evs, _ := sink.Reader().Events("opencode:"+fixtureSession, engine.EventFilter{})
	if last := evs[len(evs)-1]; last.Kind != engine.KindRewrite || last.Rewrite.Kind != "drop" || last.Rewrite.Dropped != 1 || last.Rewrite.Kept != 2 {
		t.Errorf("the timeline ends with %+v, want a rewrite dropping one message", last)
	}
}
