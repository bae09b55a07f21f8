package engine

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// compactor compacts, in a goroutine of its own, the key ranges the
// derivation dropped or rewrote: Pebble's automatic compactions drop dead
// keys only when they happen to rewrite the tables that hold them, so a
// store that deleted most of a family (RebuildMemory, a session imported
// again) would otherwise keep the dead bytes on disk for long. It never
// runs on a caller's path: a pass only records the range.
type compactor struct {
	mu      sync.Mutex
	pending [][2][]byte
	// done counts the compactions run, for tests.
	done   int
	wake   chan struct{}
	stop   context.CancelFunc
	exited chan struct{}
}

// startCompactor starts the compactor goroutine; Close stops it.
func (e *Engine) startCompactor() {
	ctx, cancel := context.WithCancel(context.Background())
	e.comp.wake = make(chan struct{}, 1)
	e.comp.stop = cancel
	e.comp.exited = make(chan struct{})
	go e.compactLoop(ctx)
}

// stopCompactor stops the goroutine and waits for it (a compaction in
// flight is abandoned: Pebble cancels it). Safe to call twice.
func (e *Engine) stopCompactor() {
	if e.comp.stop == nil {
		return
	}
	e.comp.stop()
	<-e.comp.exited
}

// compactLater records that the keys from lo up to hi were dropped or
// rewritten, for the compactor. It does not block.
func (e *Engine) compactLater(lo, hi []byte) {
	e.comp.mu.Lock()
	e.comp.pending = append(e.comp.pending, [2][]byte{slices.Clone(lo), slices.Clone(hi)})
	e.comp.mu.Unlock()
	select {
	case e.comp.wake <- struct{}{}:
	default:
	}
}

func (e *Engine) compactLoop(ctx context.Context) {
	defer close(e.comp.exited)
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.comp.wake:
		}
		t := time.NewTimer(e.opts.CompactDelay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		// While the disk is full (the proxy's Hold) compaction, which
		// writes new tables before it drops the old, waits.
		for e.opts.Hold != nil && e.opts.Hold() {
			t := time.NewTimer(time.Second)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		if err := e.CompactPending(ctx); err != nil && ctx.Err() == nil {
			e.opts.Logf("engine: compact the derived state: %v", err)
		}
	}
}

// CompactPending compacts now the key ranges dropped or rewritten since
// the last compaction (the compactor does it in the background a few
// seconds after a pass drops some, Options.CompactDelay). Overlapping ranges are compacted
// once.
func (e *Engine) CompactPending(ctx context.Context) error {
	e.comp.mu.Lock()
	ranges := mergeRanges(e.comp.pending)
	e.comp.pending = nil
	e.comp.mu.Unlock()
	for i, r := range ranges {
		if err := e.compactRange(ctx, r[0], r[1]); err != nil {
			// Keep what is left for the next round.
			e.comp.mu.Lock()
			e.comp.pending = append(e.comp.pending, ranges[i:]...)
			e.comp.mu.Unlock()
			return err
		}
	}
	return nil
}

// Compactions returns how many ranges the compactor has compacted.
func (e *Engine) Compactions() int {
	e.comp.mu.Lock()
	defer e.comp.mu.Unlock()
	return e.comp.done
}

func (e *Engine) compactRange(ctx context.Context, lo, hi []byte) (err error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return ErrClosed
	}
	defer recoverDamage(filepath.Join(e.dir, "db"), &err)
	if err := e.db.Compact(ctx, lo, hi, false); err != nil {
		return fmt.Errorf("compact %q..%q: %w", lo, hi, err)
	}
	e.comp.mu.Lock()
	e.comp.done++
	e.comp.mu.Unlock()
	return nil
}

// mergeRanges sorts key ranges and joins those that overlap or touch.
func mergeRanges(rs [][2][]byte) [][2][]byte {
	slices.SortFunc(rs, func(a, b [2][]byte) int { return bytes.Compare(a[0], b[0]) })
	var out [][2][]byte
	for _, r := range rs {
		if n := len(out); n > 0 && bytes.Compare(r[0], out[n-1][1]) <= 0 {
			if bytes.Compare(r[1], out[n-1][1]) > 0 {
				out[n-1][1] = r[1]
			}
			continue
		}
		out = append(out, r)
	}
	return out
}
