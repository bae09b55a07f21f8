package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/engine/schema"
	"github.com/bbengine/bbengine/wal"
	"github.com/cockroachdb/pebble/v2"
)

// retentionRig opens an engine over a WAL of small segments in dir and
// imports sessions Claude Code sessions of a dozen prompts each, one
// import (and one pass) per session.
func retentionRig(t *testing.T, dir string, sessions int) (*Engine, *wal.Log, []string) {
	t.Helper()
	log, err := wal.Open(filepath.Join(dir, "wal"), &wal.Options{SegmentSize: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	e, err := Open(dir, &Options{WAL: log})
	if err != nil {
		log.Close()
		t.Fatal(err)
	}
	var ids []string
	for n := range sessions {
		l := newClaudeLog(fmt.Sprintf("99999999-2222-4333-8444-%012d", n))
		for i := range 12 {
			l.User(fmt.Sprintf("Prompt %d of session %d: use goose for the migrations. %s", i, n, strings.Repeat("filler ", 30)))
			l.Reply(textBlock("Done."))
		}
		path := filepath.Join(dir, l.Session+".jsonl")
		if err := os.WriteFile(path, l.Data(), 0o644); err != nil {
			t.Fatal(err)
		}
		importPath(t, e, "claude", path)
		catchUp(t, e)
		ids = append(ids, "claude:"+l.Session)
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
	l := newClaudeLog("99999999-2222-4333-8444-999999999999")
	for i := range 30 {
		l.User(fmt.Sprintf("Undelivered prompt %d. %s", i, strings.Repeat("filler ", 30)))
		l.Reply(textBlock("Done."))
	}
	path := filepath.Join(dir, l.Session+".jsonl")
	if err := os.WriteFile(path, l.Data(), 0o644); err != nil {
		t.Fatal(err)
	}
	applied, _ := e.Applied()
	importWithout(t, e, path)
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
	if _, err := e.Session("claude:" + l.Session); err != nil {
		t.Fatalf("the session written before retention: %v", err)
	}
}

// importWithout appends the import records of path to the WAL without
// deriving them.
func importWithout(t *testing.T, e *Engine, path string) {
	t.Helper()
	fi, err := ReadImport("claude", path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := AppendImport(e.WAL(), fi.Records); err != nil {
		t.Fatal(err)
	}
}

// TestSnapshotSwapRecovered: a crash in the middle of replacing the
// snapshot leaves the old one, which the next open puts back, and no
// half-written one.
func TestSnapshotSwapRecovered(t *testing.T) {
	dir := t.TempDir()
	e, log, _ := retentionRig(t, dir, 3)
	if _, err := e.ExpireRaw(context.Background(), Retention{RawBytes: 8 << 10}, time.Now(), false); err != nil {
		t.Fatal(err)
	}
	before := dump(t, e)
	e.Close()
	log.Close()
	snap := filepath.Join(dir, snapshotDir)
	// The crash: the old snapshot moved aside, the new one half written.
	if err := os.Rename(snap, snap+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(snap+".new", 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(snap+".new", "000001.log"), []byte("torn"), 0o600)
	e2, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	for _, p := range []string{snap + ".old", snap + ".new"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left after open", p)
		}
	}
	if _, err := e2.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	if after := dump(t, e2); after != before {
		t.Fatalf("rebuild from the recovered snapshot differs:\n%s", firstDiff(before, after))
	}
}

// TestExpireRawRecordFails: when the record of what goes cannot be
// written, nothing goes.
func TestExpireRawRecordFails(t *testing.T) {
	dir := t.TempDir()
	e, log, _ := retentionRig(t, dir, 3)
	defer log.Close()
	defer e.Close()
	// A directory where the record's file goes: writing it fails.
	if err := os.MkdirAll(filepath.Join(dir, expiredFile, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	first, _ := log.First()
	if _, err := e.ExpireRaw(context.Background(), Retention{RawBytes: 1}, time.Now(), false); err == nil || !strings.Contains(err.Error(), expiredFile) {
		t.Fatalf("ExpireRaw: %v, want an error naming %s", err, expiredFile)
	}
	if f, _ := log.First(); f != first {
		t.Fatalf("segments removed though their record failed: first %d, was %d", f, first)
	}
}

// TestRebuildRefusesOtherSchemaSnapshot: a snapshot written by another
// schema version is refused by name, before anything is dropped.
func TestRebuildRefusesOtherSchemaSnapshot(t *testing.T) {
	dir := t.TempDir()
	e, log, _ := retentionRig(t, dir, 3)
	defer log.Close()
	defer e.Close()
	if _, err := e.ExpireRaw(context.Background(), Retention{RawBytes: 8 << 10}, time.Now(), false); err != nil {
		t.Fatal(err)
	}
	// Rewrite the snapshot's schema version.
	db, err := pebble.Open(filepath.Join(dir, snapshotDir), &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Set(schema.KeySchema, []byte{0, 0, 0, 99}, pebble.Sync)
	db.Close()
	before := dump(t, e)
	if _, err := e.Rebuild(context.Background()); !errors.Is(err, ErrSnapshotSchema) || !strings.Contains(err.Error(), snapshotDir) {
		t.Fatalf("Rebuild: %v, want ErrSnapshotSchema naming the snapshot", err)
	}
	if after := dump(t, e); after != before {
		t.Fatal("a refused rebuild changed the derived state")
	}
}
