package engine

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/bbengine/bbengine/engine/schema"
	"github.com/cockroachdb/pebble/v2"
)

// Checkpoint writes a consistent copy of the derived state to dst, a
// directory that must not exist: Pebble's checkpoint of the store (its
// tables hard-linked when dst is on the same file system, its own log
// flushed and copied), taken while no commit of the canonical state is
// under way, so that it holds whole commits. It returns the WAL offset
// the copy covers (its applied offset): dst as <dir>/db beside a WAL
// that reaches at least that offset is a data directory Open resumes
// from there. It is safe to call while the engine follows the WAL.
func (e *Engine) Checkpoint(dst string) (applied uint64, err error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return 0, ErrClosed
	}
	dbDir := filepath.Join(e.dir, "db")
	defer recoverDamage(dbDir, &err)
	err = e.pipe.Quiesce(func() error {
		v, closer, err := e.db.Get(schema.KeyApplied)
		switch {
		case errors.Is(err, pebble.ErrNotFound):
		case err != nil:
			return fmt.Errorf("engine: read the applied offset: %w", err)
		default:
			applied = schema.U64(v)
			closer.Close()
		}
		if err := e.db.Checkpoint(dst, pebble.WithFlushedWAL()); err != nil {
			return fmt.Errorf("engine: checkpoint the derived state to %s: %w", dst, err)
		}
		return nil
	})
	return applied, damaged(dbDir, err)
}
