package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"path/filepath"

	"github.com/bbengine/bbengine/engine/schema"

	"github.com/cockroachdb/pebble/v2"
)

// Rebuild drops every derived entry and derives it again from the start
// of the WAL, or, when retention removed part of the WAL, from the
// snapshot of the derived state it took then (see ExpireRaw). The result is byte-identical to what the incremental
// canonicalizer writes for the same frames. A store that cannot be read
// (Pebble reports corruption, or panics on it) is reported as a
// *DamagedError: set it aside and open the engine again.
func (e *Engine) Rebuild(ctx context.Context) (p Progress, err error) {
	defer func() { err = damaged(filepath.Join(e.dir, "db"), err) }()
	defer recoverDamage(filepath.Join(e.dir, "db"), &err)
	e.run.Lock()
	defer e.run.Unlock()
	if e.isClosed() {
		return Progress{}, ErrClosed
	}
	// Every memory state was dropped and written again (some from a
	// snapshot, not by a pass): a reader in step with them reads them
	// all once more.
	defer e.memChanges.add(nil)
	// A snapshot this build cannot read is refused before anything is
	// dropped.
	if err := e.checkSnapshot(); err != nil {
		return Progress{}, err
	}
	b := e.db.NewBatch()
	for _, p := range schema.DerivedPrefixes {
		b.DeleteRange([]byte{p}, []byte{p + 1}, nil)
	}
	err = b.Commit(pebble.Sync)
	b.Close()

	if err != nil {
		return Progress{}, fmt.Errorf("engine: rebuild: %w", err)
	}
	// What retention removed from the WAL was derived before it went:
	// start from the snapshot of that, and derive the rest. Its memory is
	// derived again from its events when this build's extractors differ.
	snapMemory, err := e.snapshotMemory()
	if err != nil {
		return Progress{}, fmt.Errorf("engine: rebuild: %w", err)
	}
	restored, err := e.restoreSnapshot()
	if err != nil {
		return Progress{}, fmt.Errorf("engine: rebuild: %w", err)
	}
	b = e.db.NewBatch()
	b.Set(schema.KeyBuilder, []byte(BuilderVersion), nil)
	b.Set(schema.KeySchema, binary.BigEndian.AppendUint32(nil, SchemaVersion), nil)
	b.Set(schema.KeyMemory, []byte(MemoryVersion), nil)
	err = b.Commit(pebble.Sync)
	b.Close()
	if err != nil {
		return Progress{}, fmt.Errorf("engine: rebuild: %w", err)
	}
	e.pipe.Reset()
	p, err = e.pass(ctx, false, 0)
	if err != nil {
		return p, err
	}
	if restored && snapMemory != MemoryVersion {
		if _, err := e.pipe.RebuildMemory(ctx); err != nil {
			return p, err
		}
	}
	// Compact the dropped ranges away so the rebuilt store holds only
	// live data.
	if err := e.db.Compact(ctx, []byte{0}, []byte{0xff}, false); err != nil {
		return p, fmt.Errorf("engine: compact after rebuild: %w", err)
	}
	return p, e.db.Flush()
}
