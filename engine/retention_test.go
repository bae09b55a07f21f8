package engine

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/internal/crypt"
	"github.com/bbengine/bbengine/wal"
)

// retentionRig opens an engine over a WAL of small segments in dir and
// records sessions tool-using sessions of six exchanges each through
// it, one pass per session. (Imported sessions would not do: retention
// keeps the frames of imported files, see pinImports.)
func retentionRig(t *testing.T, dir string, sessions int) (*Engine, *wal.Log, []string) {
	t.Helper()
	return retentionRigKeys(t, dir, sessions, nil)
}

// retentionRigKeys is retentionRig with the store encrypted under keys
// when they are set.
func retentionRigKeys(t *testing.T, dir string, sessions int, keys *crypt.Keys) (*Engine, *wal.Log, []string) {
	t.Helper()
	log, err := wal.Open(filepath.Join(dir, "wal"), &wal.Options{SegmentSize: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	e, err := Open(dir, suite(t, &Options{WAL: log, Keys: keys}))
	if err != nil {
		log.Close()
		t.Fatal(err)
	}
	var ids []string
	var c clock
	var id uint64
	for n := range sessions {
		s := fmt.Sprintf("rs%d", n)
		id = writeWAL(t, log, &c, id, toolLoop(s, 6))
		catchUp(t, e)
		ids = append(ids, s)
	}
	return e, log, ids
}

// TestExpireRaw: retention by size and by age (at an injected time)
// removes the oldest WAL segments, after a snapshot, never past what is
// derived; the sessions they held stay with their events, their ranges
// are recorded with the time; a dry run changes nothing; and rebuild
// gives back exactly the derived state the incremental engine has.
func TestExpireRaw(t *testing.T) {
	dir := t.TempDir()
	e, log, ids := retentionRig(t, dir, 4)
	defer log.Close()
	defer e.Close()
	ctx := context.Background()
	before := dump(t, e)
	first0, _ := log.First()

	now := time.Now().Add(time.Hour)
	dry, err := e.ExpireRaw(ctx, Retention{RawBytes: 8 << 10}, now, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(dry.Segments) == 0 || dry.Freed == 0 || dry.WALBytes == 0 {
		t.Fatalf("dry run plans nothing: %+v", dry)
	}
	if f, _ := log.First(); f != first0 {
		t.Fatal("a dry run removed segments")
	}
	if _, err := os.Stat(filepath.Join(dir, snapshotDir)); !os.IsNotExist(err) {
		t.Fatal("a dry run took a snapshot")
	}

	rep, err := e.ExpireRaw(ctx, Retention{RawBytes: 8 << 10}, now, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Segments) != len(dry.Segments) || rep.Freed != dry.Freed {
		t.Fatalf("removed %d segments (%d bytes), the dry run said %d (%d)", len(rep.Segments), rep.Freed, len(dry.Segments), dry.Freed)
	}
	first, _ := log.First()
	if first <= first0 {
		t.Fatalf("first offset %d, was %d", first, first0)
	}
	for _, s := range rep.Segments {
		if _, err := os.Stat(s.Path); !os.IsNotExist(err) {
			t.Errorf("%s still there", s.Path)
		}
		if at, ok := e.ExpiredAt(s.From); !ok || !at.Equal(now.UTC().Truncate(0)) && at.Sub(now) > time.Second {
			t.Errorf("offset %d: expired at %v, %v", s.From, at, ok)
		}
	}
	if _, ok := e.ExpiredAt(first); ok {
		t.Errorf("offset %d is still in the log, reported expired", first)
	}
	if after := dump(t, e); after != before {
		t.Fatal("retention changed the derived state")
	}
	sess, err := e.Session(ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if evs, err := e.Events(sess.ID, EventFilter{}); err != nil || len(evs) == 0 {
		t.Fatalf("the oldest session's events after retention: %d, %v", len(evs), err)
	}

	// By age: nothing is old at now; everything sealed is a day later.
	if rep, err := e.ExpireRaw(ctx, Retention{RawAge: 24 * time.Hour}, now, false); err != nil || len(rep.Segments) != 0 {
		t.Fatalf("by age, now: %+v, %v", rep, err)
	}
	rep, err = e.ExpireRaw(ctx, Retention{RawAge: 24 * time.Hour}, now.Add(48*time.Hour), false)
	if err != nil || len(rep.Segments) == 0 {
		t.Fatalf("by age, two days on: %+v, %v", rep, err)
	}

	if _, err := e.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if after := dump(t, e); after != before {
		t.Fatalf("rebuild after retention differs from the incremental state:\n%s", firstDiff(before, after))
	}
	// And once more, now that the snapshot is older than the WAL's start.
	if _, err := e.Rebuild(ctx); err != nil {
		t.Fatal(err)
	}
	if after := dump(t, e); after != before {
		t.Fatal("a second rebuild differs")
	}
}

// TestExpireRawWaitsForDerivation: segments derivation has not passed
// stay, reported as waiting, until it has.
func TestExpireRawWaitsForDerivation(t *testing.T) {
	dir := t.TempDir()
	e, log, _ := retentionRig(t, dir, 3)
	defer log.Close()
	defer e.Close()
	// More frames the engine has not derived.
	applied, _ := e.Applied()
	var c clock
	writeWAL(t, log, &c, 1000, toolLoop("late", 12))
	rep, err := e.ExpireRaw(context.Background(), Retention{RawBytes: 1}, time.Now(), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Waiting) == 0 {
		t.Fatalf("nothing waiting: %+v", rep)
	}
	for _, s := range rep.Segments {
		if s.To > applied {
			t.Errorf("removed %d-%d past the applied offset %d", s.From, s.To, applied)
		}
	}
	catchUp(t, e)
	if _, err := e.Session("late"); err != nil {
		t.Fatalf("the session written before retention: %v", err)
	}
}

// TestExpireRawKeepsImports: the WAL frames of imported files stay, so a
// session whose file grows later (the agent resumed it) is derived again
// from all its records.
func TestExpireRawKeepsImports(t *testing.T) {
	dir := t.TempDir()
	log, err := wal.Open(filepath.Join(dir, "wal"), &wal.Options{SegmentSize: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	e, err := Open(dir, suite(t, &Options{WAL: log}))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	sid := "99999999-2222-4333-8444-000000000777"
	write := func(resumed int) string {
		l := newClaudeLog(sid)
		for i := range 12 {
			l.User(fmt.Sprintf("Prompt %d: use goose for the migrations. %s", i, strings.Repeat("filler ", 30)))
			l.Reply(textBlock("Done."))
		}
		for i := range resumed {
			l.User(fmt.Sprintf("Resumed prompt %d.", i))
			l.Reply(textBlock("Done."))
		}
		path := filepath.Join(dir, sid+".jsonl")
		if err := os.WriteFile(path, l.Data(), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	importPath(t, e, "claude", write(0))
	var c clock
	writeWAL(t, log, &c, 0, toolLoop("rec", 12))
	catchUp(t, e)
	before, _ := e.Events("claude:"+sid, EventFilter{})
	rep, err := e.ExpireRaw(context.Background(), Retention{RawBytes: 1}, time.Now(), false)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := log.First()
	if first != 0 {
		t.Fatalf("retention removed the imported file's frames (WAL starts at %d; removed %d segments)", first, len(rep.Segments))
	}
	importPath(t, e, "claude", write(3))
	after, err := e.Events("claude:"+sid, EventFilter{})
	if err != nil || len(after) <= len(before) {
		t.Fatalf("the resumed session: %d events, was %d: %v", len(after), len(before), err)
	}
}

// TestNewStoreStartsFromSnapshot: a store set aside (as a DamagedError
// says to do) or lost after retention is rebuilt from the snapshot when
// the directory opens again, so no session of the removed range is lost,
// and a store lacking them never replaces the snapshot.
func TestNewStoreStartsFromSnapshot(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) { testNewStoreStartsFromSnapshot(t, m.keys()) })
	}
}

func testNewStoreStartsFromSnapshot(t *testing.T, keys *crypt.Keys) {
	dir := t.TempDir()
	e, log, _ := retentionRigKeys(t, dir, 4, keys)
	ctx := context.Background()
	want := dump(t, e)
	if rep, err := e.ExpireRaw(ctx, Retention{RawBytes: 8 << 10}, time.Now(), false); err != nil || len(rep.Segments) == 0 {
		t.Fatal(rep, err)
	}
	e.Close()
	log.Close()
	if err := os.Rename(filepath.Join(dir, "db"), filepath.Join(dir, "db.damaged")); err != nil {
		t.Fatal(err)
	}
	log2, err := wal.Open(filepath.Join(dir, "wal"), &wal.Options{SegmentSize: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer log2.Close()
	e2, err := Open(dir, suite(t, &Options{WAL: log2, Keys: keys}))
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	catchUp(t, e2)
	if got := dump(t, e2); got != want {
		t.Fatalf("a new store beside the snapshot:\n%s", firstDiff(want, got))
	}
	// A store that lacks the removed range cannot replace the snapshot.
	e2.Close()
	log2.Close()
	os.RemoveAll(filepath.Join(dir, "db"))
	e3, err := Open(dir, suite(t, &Options{WAL: nil, Keys: keys}))
	if err != nil {
		t.Fatal(err)
	}
	defer e3.Close()
	if got := dump(t, e3); got != want {
		t.Fatalf("a second new store:\n%s", firstDiff(want, got))
	}
}
