package wal

import (
	"math"
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
	return l.expire(Policy{Age: l.opts.RetentionAge, Bytes: l.opts.RetentionBytes, Upto: math.MaxUint64}, now)
}

// Policy is what retention removes: sealed segments last written more
// than Age ago, and, oldest first, those beyond Bytes of the log; each
// off when zero. Upto bounds it: only segments that end at or before that
// offset go (what a deriver has read, say).
type Policy struct {
	Age   time.Duration
	Bytes int64
	Upto  uint64
}

// Segment describes one segment of the log.
type Segment struct {
	// Path is the segment's file; Base its first offset and End the
	// offset after its last complete frame.
	Path      string
	Base, End uint64
	Size      int64
	ModTime   time.Time
}

// Expirable returns the sealed, unpinned segments that Expire(p, now)
// would remove, oldest first, and the log's size before it.
func (l *Log) Expirable(p Policy, now time.Time) ([]Segment, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	drop, _, total := l.plan(p, now)
	out := make([]Segment, len(drop))
	for i, s := range drop {
		out[i] = Segment{Path: l.path(s.base), Base: s.base, End: s.base + uint64(s.size), Size: s.size, ModTime: s.modTime}
	}
	return out, total
}

// ActiveSize returns the bytes of the segment being written, which
// retention never removes.
func (l *Log) ActiveSize() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.segs) == 0 {
		return 0
	}
	return l.segs[len(l.segs)-1].size
}

// Expire removes the segments p selects at now (see Policy), never the
// active segment or a pinned one, and returns the paths removed. A
// segment removed between kept ones is recorded first, so its range
// reads as removed, not missing.
func (l *Log) Expire(p Policy, now time.Time) ([]string, error) {
	if l.readOnly {
		return nil, ErrReadOnly
	}
	return l.expire(p, now)
}

// plan splits the segments into those p drops at now and those it
// keeps, and returns the log's size. The caller holds mu.
func (l *Log) plan(p Policy, now time.Time) (drop, keep []segment, total int64) {
	for _, s := range l.segs {
		total += s.size
	}
	left := total
	keep = l.segs[:0:0]
	for i, s := range l.segs {
		end := s.base + uint64(s.size)
		pinned := false
		for _, pn := range l.pins {
			if pn.first < end && pn.last >= s.base {
				pinned = true
				break
			}
		}
		old := p.Age > 0 && now.Sub(s.modTime) > p.Age
		big := p.Bytes > 0 && left > p.Bytes
		if i < len(l.segs)-1 && !pinned && end <= p.Upto && (old || big) {
			drop = append(drop, s)
			left -= s.size
			continue
		}
		keep = append(keep, s)
	}
	return drop, keep, total
}

func (l *Log) expire(p Policy, now time.Time) ([]string, error) {
	l.mu.Lock()
	drop, keep, _ := l.plan(p, now)
	if len(drop) == 0 {
		l.mu.Unlock()
		return nil, nil
	}
	var holes []segment // dropped segments with a kept one before them
	for _, s := range drop {
		if len(keep) > 0 && keep[0].base < s.base {
			holes = append(holes, s)
		}
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
