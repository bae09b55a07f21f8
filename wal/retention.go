package wal

import (
	"os"
	"sort"
	"time"
)

// Pin keeps every segment that holds any byte of [first, last] from being
// dropped by retention until Unpin(id). Pinning an id again replaces its
// range. Pins live in memory only: the engine pins the sessions and runs it
// still needs each time it opens the log. Pin is safe for concurrent use.
func (l *Log) Pin(id string, first, last uint64) {
	l.mu.Lock()
	l.pins[id] = pin{first, last}
	l.mu.Unlock()
}

// Unpin removes the pin named id, if any.
func (l *Log) Unpin(id string) {
	l.mu.Lock()
	delete(l.pins, id)
	l.mu.Unlock()
}

// Retain applies the retention options now: it removes sealed segments
// older than Options.RetentionAge and, oldest first, those beyond
// Options.RetentionBytes, except the active segment and pinned ones. It
// returns the paths removed. The writer also calls it on Open and after each
// rotation.
func (l *Log) Retain() ([]string, error) {
	if l.readOnly {
		return nil, ErrReadOnly
	}
	return l.applyRetention(time.Now())
}

func (l *Log) applyRetention(now time.Time) ([]string, error) {
	if l.opts.RetentionAge <= 0 && l.opts.RetentionBytes <= 0 {
		return nil, nil
	}
	l.mu.Lock()
	var total int64
	for _, s := range l.segs {
		total += s.size
	}
	var drop []segment
	var holes []segment // dropped segments with a kept one before them
	keep := l.segs[:0:0]
	for i, s := range l.segs {
		end := s.base + uint64(s.size)
		pinned := false
		for _, p := range l.pins {
			if p.first < end && p.last >= s.base {
				pinned = true
				break
			}
		}
		old := l.opts.RetentionAge > 0 && now.Sub(s.modTime) > l.opts.RetentionAge
		big := l.opts.RetentionBytes > 0 && total > l.opts.RetentionBytes
		if i < len(l.segs)-1 && !pinned && (old || big) {
			drop = append(drop, s)
			if len(keep) > 0 {
				holes = append(holes, s)
			}
			total -= s.size
			continue
		}
		keep = append(keep, s)
	}
	l.segs = keep
	first := keep[0].base
	l.mu.Unlock()
	var removed []string
	var firstErr error
	// Record a segment removed from the middle before removing it, so
	// that the gap it leaves is not reported as a missing segment.
	for _, s := range holes {
		if err := writeHole(l.dir, s.base, s.base+uint64(s.size)); err != nil {
			firstErr = err
		}
	}
	if len(holes) > 0 && firstErr == nil {
		firstErr = syncDir(l.dir)
	}
	if firstErr != nil {
		// Keep every segment rather than leave an unexplained gap;
		// the next pass tries again.
		l.mu.Lock()
		l.segs = mergeSegs(l.segs, drop)
		l.mu.Unlock()
		return nil, firstErr
	}
	for _, s := range drop {
		p := l.path(s.base)
		if err := os.Remove(p); err != nil && firstErr == nil {
			firstErr = err
			continue
		}
		removed = append(removed, p)
	}
	removeHolesBefore(l.dir, first)
	return removed, firstErr
}

// mergeSegs returns a and b merged in offset order.
func mergeSegs(a, b []segment) []segment {
	out := append(append([]segment(nil), a...), b...)
	sort.Slice(out, func(i, j int) bool { return out[i].base < out[j].base })
	return out
}
