package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/bbengine/bbengine/internal/crypt"
	"github.com/bbengine/bbengine/wal"
)

// TestCheckpointWhileFollowing takes checkpoints of the derived state
// while the engine follows a growing WAL in small commits, and makes a
// data directory of each with a copy of the WAL: it opens, resumes from
// the checkpoint's applied offset, and its state is the one a rebuild
// of the same WAL gives, byte for byte.
func TestCheckpointWhileFollowing(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) { testCheckpointWhileFollowing(t, m.keys()) })
	}
}

func testCheckpointWhileFollowing(t *testing.T, keys *crypt.Keys) {
	dir, log := newData(t)
	var c clock
	e := open(t, dir, log, &Options{BatchBytes: 2048, Keys: keys})
	ctx, cancel := context.WithCancel(context.Background())
	followed := make(chan error, 1)
	go func() { followed <- e.Follow(ctx) }()
	id := uint64(0)
	for i := range 4 {
		id = interleaveWAL(t, log, &c, id, toolLoop(fmt.Sprintf("a%d", i), 4), toolLoop(fmt.Sprintf("b%d", i), 3))
		dst := t.TempDir()
		applied, err := e.Checkpoint(filepath.Join(dst, "db"))
		if err != nil {
			t.Fatal(err)
		}
		copied, err := log.Copy(filepath.Join(dst, "wal"))
		if err != nil {
			t.Fatal(err)
		}
		if applied > copied.End {
			t.Fatalf("checkpoint %d covers the WAL up to %d, beyond the copy's end %d", i, applied, copied.End)
		}
		ro, err := wal.Open(filepath.Join(dst, "wal"), &wal.Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		back := open(t, dst, ro, &Options{Keys: keys})
		if got, err := back.Applied(); err != nil || got != applied {
			t.Fatalf("checkpoint %d opens at applied %d (%v), want %d", i, got, err, applied)
		}
		catchUp(t, back)
		sameAfterRebuild(t, back, dump(t, back), fmt.Sprintf("checkpoint %d resumed differs from a rebuild", i))
		back.Close()
		ro.Close()
	}
	cancel()
	if err := <-followed; err != nil {
		t.Fatal(err)
	}
	// A checkpoint of a closed engine is refused.
	e.Close()
	if _, err := e.Checkpoint(filepath.Join(t.TempDir(), "db")); err == nil {
		t.Fatal("a closed engine made a checkpoint")
	}
}
