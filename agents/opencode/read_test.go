package opencode_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
)

// TestRoundRetriesAfterError: a round whose read of a database fails
// reads it again the next round though its size and times did not change
// (the error may pass: a busy database), and imports it then.
func TestRoundRetriesAfterError(t *testing.T) {
	h, db := home(t)
	t.Setenv("HOME", h)
	sink, err := api.OpenImportSink(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	im := api.NewImporter(sink, "opencode")
	roots := []string{filepath.Dir(db)}
	good, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := os.Stat(db)
	// The same size and modification time, a broken header.
	bad := append([]byte("not SQLite at all"), good[17:]...)
	if err := os.WriteFile(db, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(db, info.ModTime(), info.ModTime())
	st, err := im.Round(context.Background(), roots, true, false, quiet{t})
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != 0 || st.Problems == 0 {
		t.Fatalf("a database that cannot be read: %+v", st)
	}
	if err := os.WriteFile(db, good, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(db, info.ModTime(), info.ModTime())
	st, err = im.Round(context.Background(), roots, true, false, quiet{t})
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != 14 {
		t.Errorf("the round after the error: %+v, want the database's 14 records", st)
	}
}

// TestReadCancelled: a read whose context is done stops with its error,
// from the start or between sessions.
func TestReadCancelled(t *testing.T) {
	_, db := home(t)
	none := func(string) (*engine.ImportFileState, error) { return nil, nil }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := engine.ScanRows(ctx, "opencode", db, none, func([]exchange.Import) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled read: %v", err)
	}
}

// TestReadSQLError: an SQL error while reading a session's rows names
// the database, the table and the session.
func TestReadSQLError(t *testing.T) {
	_, db := home(t)
	exec(t, db, `alter table part rename to part_real`,
		`create view part as select id, message_id, session_id, time_created, time_updated, json_extract('{', '$') as data from part_real`)
	_, err := engine.ReadRows("opencode", db, func(string) (*engine.ImportFileState, error) { return nil, nil })
	if err == nil || !strings.Contains(err.Error(), db+": table part, session "+fixtureSession+": ") {
		t.Errorf("an SQL error: %v", err)
	}
}
