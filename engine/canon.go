package engine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/wal"
)

// Progress reports what one canonicalizer pass did.
type Progress struct {
	Frames    int    // frames read
	Bytes     int64  // stored bytes of those frames
	Exchanges int    // exchanges finished
	Events    int    // events written
	Applied   uint64 // WAL offset the derived state now covers
}

// pending is an exchange whose end frame has not been read yet.
type pending struct {
	id      uint64
	first   uint64 // offset of its first frame
	last    int64  // WAL time of its latest frame
	start   *exchange.RequestStart
	reqBody []byte
	resp    *exchange.ResponseStart
	body    []byte
	end     *exchange.ResponseEnd
	errs    []exchange.Error
	offsets []uint64
	kinds   []frame.Kind
	// reqFirst/reqLast and respFirst/respLast bound the frames of each
	// side; endTime is the WAL time of the end frame.
	reqFirst, reqLast   uint64
	respFirst, respLast uint64
	startTime, endTime  int64
}

// canonicalizer is the state of the one writer of derived state. It is
// used under Engine.run.
type canonicalizer struct {
	e        *Engine
	applied  uint64
	sessions map[string]*sessState
	open     map[uint64]*pending
	// replay holds the exchanges that were open at the last commit; frames
	// below replayEnd belong to them or to exchanges already finished.
	replay    map[uint64]bool
	replayEnd uint64
	ordinals  uint64

	batch    *pebble.Batch
	opened   map[uint64]uint64 // exchanges opened in this batch → first offset
	closed   map[uint64]bool   // exchanges finished in this batch
	progress Progress
	keyBuf   []byte
}

// sessState is the canonicalizer's cached view of one session.
type sessState struct {
	s     Session
	convo convo
	dirty bool
}

// load reads the canonicalizer's persistent state.
func (e *Engine) loadCanon() (*canonicalizer, error) {
	c := &canonicalizer{e: e, sessions: map[string]*sessState{}, open: map[uint64]*pending{}, replay: map[uint64]bool{}}
	var err error
	if c.applied, err = e.Applied(); err != nil {
		return nil, err
	}
	v, err := e.getMeta(keySessions)
	if err != nil {
		return nil, err
	}
	c.ordinals = u64(v)
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixOpen}, UpperBound: []byte{prefixOpen + 1}})
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	defer it.Close()
	c.replayEnd = c.applied
	for it.First(); it.Valid(); it.Next() {
		c.replay[u64(it.Key()[1:])] = true
	}
	return c, it.Error()
}

// resumeOffset is where reading starts: the first frame of the oldest
// exchange still open, or the applied offset.
func (c *canonicalizer) resumeOffset() (uint64, error) {
	off := c.applied
	for id := range c.replay {
		var v []byte
		v, closer, err := c.e.db.Get(openKey(nil, id))
		if err != nil {
			return 0, fmt.Errorf("engine: read open exchange %d: %w", id, err)
		}
		if first := u64(v); first < off {
			off = first
		}
		closer.Close()
	}
	return off, nil
}

// CatchUp reads every frame the WAL holds beyond the applied offset and
// commits what they derive.
func (e *Engine) CatchUp(ctx context.Context) (Progress, error) {
	e.run.Lock()
	defer e.run.Unlock()
	return e.pass(ctx, false)
}

// Follow catches up and then keeps reading frames as the WAL grows, until
// ctx is done (it returns nil then) or a frame cannot be read.
func (e *Engine) Follow(ctx context.Context) error {
	e.run.Lock()
	defer e.run.Unlock()
	_, err := e.pass(ctx, true)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// pass reads frames from the resume point to the end of the WAL (and on,
// when follow is set).
func (e *Engine) pass(ctx context.Context, follow bool) (Progress, error) {
	if e.db == nil {
		return Progress{}, ErrClosed
	}
	if e.canon == nil {
		c, err := e.loadCanon()
		if err != nil {
			return Progress{}, err
		}
		e.canon = c
	}
	c := e.canon
	c.progress = Progress{Applied: c.applied}
	from, err := c.resumeOffset()
	if err != nil {
		return c.progress, err
	}
	r := e.log.NewReader()
	defer r.Close()
	if err := r.Seek(from); err != nil {
		if !errors.Is(err, wal.ErrOutOfRange) {
			return c.progress, fmt.Errorf("engine: resume at WAL offset %d: %w", from, err)
		}
		// Retention removed the frames below the first retained one.
		first, ferr := e.log.First()
		if ferr != nil || first < from {
			return c.progress, fmt.Errorf("engine: resume at WAL offset %d: %w", from, err)
		}
		if err := r.Seek(first); err != nil {
			return c.progress, fmt.Errorf("engine: resume at WAL offset %d: %w", first, err)
		}
	}
	pendingBytes := 0
	for {
		for r.Next() {
			h := r.Header()
			p, err := r.Payload()
			if err != nil {
				c.discard()
				return c.progress, fmt.Errorf("engine: %w", err)
			}
			next := r.Offset() + frame.HeaderLen + uint64(len(r.Stored()))
			if err := c.frame(h, p); err != nil {
				c.discard()
				return c.progress, err
			}
			c.progress.Frames++
			c.progress.Bytes += int64(frame.HeaderLen + len(r.Stored()))
			pendingBytes += frame.HeaderLen + len(r.Stored())
			if next > c.applied {
				c.applied = next
			}
			if pendingBytes >= e.opts.BatchBytes {
				if err := c.commit(); err != nil {
					return c.progress, err
				}
				pendingBytes = 0
			}
		}
		if err := r.Err(); err != nil {
			c.discard()
			return c.progress, fmt.Errorf("engine: %w", err)
		}
		if err := c.commit(); err != nil {
			return c.progress, err
		}
		pendingBytes = 0
		if !follow {
			return c.progress, nil
		}
		if err := r.Wait(ctx); err != nil {
			if errors.Is(err, wal.ErrClosed) {
				return c.progress, nil
			}
			return c.progress, err
		}
	}
}

// frame takes one frame.
func (c *canonicalizer) frame(h frame.Header, p []byte) error {
	if h.Exchange == 0 {
		return nil
	}
	switch h.Kind {
	case frame.KindRequestStart, frame.KindRequestBody, frame.KindResponseStart,
		frame.KindResponseBody, frame.KindResponseEnd, frame.KindError:
	default:
		return nil
	}
	if h.Offset < c.replayEnd && !c.replay[h.Exchange] {
		return nil // finished before the last commit
	}
	x := c.open[h.Exchange]
	if x == nil {
		if h.Offset >= c.replayEnd {
			c.staleCheck(h.Time)
		}
		x = &pending{id: h.Exchange, first: h.Offset, startTime: h.Time, reqFirst: h.Offset, reqLast: h.Offset}
		c.open[h.Exchange] = x
		if h.Offset >= c.replayEnd {
			c.markOpen(x)
		}
	}
	x.last = h.Time
	x.offsets = append(x.offsets, h.Offset)
	x.kinds = append(x.kinds, h.Kind)
	fail := func(err error) error {
		return fmt.Errorf("engine: frame at WAL offset %d (exchange %d): %w", h.Offset, h.Exchange, err)
	}
	switch h.Kind {
	case frame.KindRequestStart:
		s, err := exchange.DecodeRequestStart(p)
		if err != nil {
			return fail(err)
		}
		x.start = &s
		x.startTime = h.Time
		x.reqFirst, x.reqLast = h.Offset, h.Offset
	case frame.KindRequestBody:
		x.reqBody = append(x.reqBody, p...)
		x.reqLast = h.Offset
	case frame.KindResponseStart:
		s, err := exchange.DecodeResponseStart(p)
		if err != nil {
			return fail(err)
		}
		x.resp = &s
		x.noteResp(h.Offset)
	case frame.KindResponseBody:
		x.body = append(x.body, p...)
		x.noteResp(h.Offset)
	case frame.KindError:
		e, err := exchange.DecodeError(p)
		if err != nil {
			return fail(err)
		}
		x.errs = append(x.errs, e)
		x.noteResp(h.Offset)
	case frame.KindResponseEnd:
		e, err := exchange.DecodeResponseEnd(p)
		if err != nil {
			return fail(err)
		}
		x.end = &e
		x.endTime = h.Time
		x.noteResp(h.Offset)
		return c.finish(x, "")
	}
	if h.Offset >= c.replayEnd {
		c.staleCheck(h.Time)
	}
	return nil
}

func (x *pending) noteResp(off uint64) {
	if x.respFirst == 0 {
		x.respFirst = off
	}
	x.respLast = off
}

// staleCheck closes exchanges that saw no frame for StaleAfter of WAL
// time before now. It depends only on the frames read, so a rebuild
// closes the same exchanges at the same points.
func (c *canonicalizer) staleCheck(now int64) {
	limit := now - int64(c.e.opts.StaleAfter)
	var stale []*pending
	for _, x := range c.open {
		if x.last < limit {
			stale = append(stale, x)
		}
	}
	slices.SortFunc(stale, func(a, b *pending) int { return compareU64(a.first, b.first) })
	for _, x := range stale {
		x.endTime = x.last
		c.finish(x, "abandoned: no end frame within the staleness window (its proxy stopped)")
	}
}

func compareU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (c *canonicalizer) ensureBatch() {
	if c.batch == nil {
		c.batch = c.e.db.NewBatch()
		c.opened = map[uint64]uint64{}
		c.closed = map[uint64]bool{}
	}
}

func (c *canonicalizer) markOpen(x *pending) {
	c.ensureBatch()
	c.opened[x.id] = x.first
}

// finish derives everything from an ended exchange into the batch.
func (c *canonicalizer) finish(x *pending, note string) error {
	delete(c.open, x.id)
	c.ensureBatch()
	if _, ok := c.opened[x.id]; ok {
		delete(c.opened, x.id)
	} else {
		c.closed[x.id] = true
	}
	delete(c.replay, x.id)
	n, err := c.derive(x, note)
	if err != nil {
		return err
	}
	c.progress.Exchanges++
	c.progress.Events += n
	return nil
}

// setJSON adds key → JSON(v) to the batch.
func (c *canonicalizer) setJSON(key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("engine: encode %q: %w", key[:1], err)
	}
	return c.batch.Set(key, b, nil)
}

// commit writes the batch with the applied offset and the open set.
func (c *canonicalizer) commit() error {
	c.ensureBatch()
	b := c.batch
	for _, st := range c.sortedDirty() {
		if err := c.setJSON(sessionKey(c.keyBuf[:0], st.s.ID), &st.s); err != nil {
			return err
		}
		if err := c.setJSON(convoKey(c.keyBuf[:0], st.s.Ordinal), &st.convo); err != nil {
			return err
		}
		st.dirty = false
	}
	for id, first := range c.opened {
		b.Set(openKey(nil, id), binary.BigEndian.AppendUint64(nil, first), nil)
	}
	for id := range c.closed {
		b.Delete(openKey(nil, id), nil)
	}
	b.Set(keyApplied, binary.BigEndian.AppendUint64(nil, c.applied), nil)
	b.Set(keySessions, binary.BigEndian.AppendUint64(nil, c.ordinals), nil)
	err := b.Commit(pebble.NoSync)
	b.Close()
	c.batch = nil
	if err != nil {
		c.e.canon = nil // reload from what is durable
		return fmt.Errorf("engine: commit: %w", err)
	}
	c.progress.Applied = c.applied
	return nil
}

// discard drops an uncommitted batch and forgets the cached state, so
// the next pass starts again from what was committed.
func (c *canonicalizer) discard() {
	if c.batch != nil {
		c.batch.Close()
		c.batch = nil
	}
	c.e.canon = nil
}

func (c *canonicalizer) sortedDirty() []*sessState {
	var out []*sessState
	for _, st := range c.sessions {
		if st.dirty {
			out = append(out, st)
		}
	}
	slices.SortFunc(out, func(a, b *sessState) int { return strings.Compare(a.s.ID, b.s.ID) })
	return out
}

// session returns the cached state of session id, loading or creating it.
func (c *canonicalizer) session(id string) (*sessState, error) {
	if st := c.sessions[id]; st != nil {
		return st, nil
	}
	st := &sessState{}
	ok, err := c.e.getJSON(sessionKey(nil, id), &st.s)
	if err != nil {
		return nil, err
	}
	if ok {
		if _, err := c.e.getJSON(convoKey(nil, st.s.Ordinal), &st.convo); err != nil {
			return nil, err
		}
	} else {
		c.ordinals++
		st.s = Session{ID: id, Ordinal: c.ordinals}
		c.ensureBatch()
		c.batch.Set(ordinalKey(nil, st.s.Ordinal), []byte(id), nil)
		st.dirty = true
	}
	if len(c.sessions) > 4096 {
		c.evict()
	}
	c.sessions[id] = st
	return st, nil
}

// evict drops clean cached sessions when the cache grows large.
func (c *canonicalizer) evict() {
	for id, st := range c.sessions {
		if !st.dirty {
			delete(c.sessions, id)
		}
	}
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
		if err != nil || applied >= end {
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
