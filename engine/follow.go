package engine

import (
	"context"
	"time"

	"github.com/bbengine/bbengine/engine/schema"
)

// Derivation runs in package engine/derive (its Pipeline); the engine
// serializes its passes (run), refuses them once closed, and answers
// queries beside them.

// CatchUp reads every frame the WAL holds beyond the applied offset and
// commits what they derive.
func (e *Engine) CatchUp(ctx context.Context) (Progress, error) {
	e.run.Lock()
	defer e.run.Unlock()
	return e.pass(ctx, false, 0)
}

// CatchUpTo is CatchUp reading only the frames that start before the
// WAL offset end: an importer far ahead of derivation has the engine
// derive its records a bounded stretch at a time, so that what one pass
// holds (its sessions, the events handed to memory) does not grow with
// how far ahead the importer is.
func (e *Engine) CatchUpTo(ctx context.Context, end uint64) (Progress, error) {
	e.run.Lock()
	defer e.run.Unlock()
	return e.pass(ctx, false, end)
}

// Follow catches up and then keeps reading frames as the WAL grows, until
// ctx is done (it returns nil then) or a frame cannot be read.
func (e *Engine) Follow(ctx context.Context) error {
	e.run.Lock()
	defer e.run.Unlock()
	_, err := e.pass(ctx, true, 0)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// WaitCaughtUp waits until the derived state covers the WAL as it is
// when called (while Follow runs in another goroutine), or ctx is done.
func (e *Engine) WaitCaughtUp(ctx context.Context) error {
	end, err := e.log.End()
	if err != nil {
		return err
	}
	for {
		applied, err := e.Applied()
		if err != nil || applied >= end && e.pipe.MemApplied() >= end {
			return err
		}
		t := time.NewTimer(2 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// pass runs one pass of the pipeline (see derive.Pipeline.Apply); the
// caller holds e.run.
func (e *Engine) pass(ctx context.Context, follow bool, limit uint64) (Progress, error) {
	if e.isClosed() {
		return Progress{}, ErrClosed
	}
	return e.pipe.Apply(ctx, follow, limit)
}

// RebuildMemory drops every artifact and derives them again from the
// canonical events, with the current MemoryVersion (bbengine rebuild
// --derived). The user's corrections are kept: they come from the WAL.
func (e *Engine) RebuildMemory(ctx context.Context) (MemoryProgress, error) {
	e.run.Lock()
	defer e.run.Unlock()
	if e.isClosed() {
		return MemoryProgress{}, ErrClosed
	}
	p, err := e.pipe.RebuildMemory(ctx)
	if err == nil {
		// Every artifact and memory index key was dropped and written
		// again: compact the dead ones away, in the background.
		e.compactLater([]byte{schema.PrefixArtifact}, []byte{schema.PrefixArtifact + 1})
		e.compactLater([]byte{schema.PrefixIndex}, []byte{schema.PrefixIndex + 1})
	}
	return p, err
}

func (e *Engine) isClosed() bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.closed
}
