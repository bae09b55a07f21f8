package derive

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bbengine/bbengine/engine/schema"

	"github.com/cockroachdb/pebble/v2"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/codec/llm"
	"github.com/bbengine/bbengine/internal/bodybuf"
	"github.com/bbengine/bbengine/wal"
)

// Progress reports what one canonicalizer pass did.
type Progress struct {
	Frames    int    // frames read
	Bytes     int64  // stored bytes of those frames
	Exchanges int    // exchanges finished
	Events    int    // events written
	Memory    int    // sessions whose memory was derived
	Artifacts int    // artifacts written (new or changed)
	Skipped   int    // resent messages recognized and not decoded again
	Resent    int    // requests whose resent part was found by hash, not scanned
	Merges    int    // merge groups of a proxied and an imported session derived again
	Applied   uint64 // WAL offset the derived state now covers
}

// pending is an exchange whose end frame has not been read yet: its
// frames as codec/exchange.Assembler put them together, and what was
// wrong with them.
type pending struct {
	*exchange.Exchange
	note string
	// The response body is not assembled: dec decodes it as its frames
	// come (identity encoding), or raw gathers it to be decompressed at
	// the end. body is set once a response body frame was read.
	dec  *llm.Decoder
	raw  []byte
	body bool
}

// responseBody takes one response body frame of x.
func (c *canonicalizer) responseBody(x *pending, p []byte) {
	if len(p) == 0 {
		return
	}
	if !x.body {
		x.body = true
		if x.Start != nil && x.Response != nil {
			x.dec = llm.DecoderFor(x.Start.Path, header(x.Response.Headers, "Content-Encoding"),
				&llm.DecoderOptions{TextLimit: c.e.opts.TextLimit, NewSpill: c.spill})
		}
	}
	if x.dec != nil {
		x.dec.Write(p)
		return
	}
	x.raw = append(x.raw, p...)
}

// spill opens a blob for a long text of a response being decoded.
func (c *canonicalizer) spill() (llm.Spill, error) {
	w, err := c.e.store.Blobs.Create()
	if err != nil {
		return nil, err
	}
	return w, nil
}

// timeOf returns the time of the exchange's first frame of kind k, or of
// its latest frame when it has none.
func (x *pending) timeOf(k frame.Kind) int64 {
	for i, kk := range x.Kinds {
		if kk == k {
			return x.Times[i]
		}
	}
	return x.last()
}

func (x *pending) last() int64      { return x.Times[len(x.Times)-1] }
func (x *pending) startTime() int64 { return x.timeOf(frame.KindRequestStart) }
func (x *pending) endTime() int64   { return x.timeOf(frame.KindResponseEnd) }

// canonicalizer is the state of the one writer of derived state. It is
// used by one pass at a time (Pipeline).
type canonicalizer struct {
	e *Pipeline
	// states are the sessions whose memory state the running memory
	// pass wrote (reportStates), under statesMu: workers add to it.
	statesMu sync.Mutex
	states   []string
	applied  uint64
	sessions map[string]*sessState
	asm      exchange.Assembler
	open     map[uint64]*pending
	// replay holds the exchanges that were open at the last commit; frames
	// below replayEnd belong to them or to exchanges already finished.
	replay    map[uint64]bool
	replayEnd uint64
	ordinals  uint64
	// resumed is set once a pass has started from the resume point; later
	// passes on the same state go on from the applied offset.
	resumed bool

	// files caches imported files' states; dirtyFiles are those changed
	// since the last commit; pendingImports the sessions to derive again
	// at the end of the pass (see importcanon.go).
	files          map[string]*ImportFileState
	dirtyFiles     map[string]bool
	pendingImports map[string]bool
	// pendingMerges are the import sessions whose merge group to derive
	// again after the imports (merge.go), marked in the store too.
	pendingMerges map[string]bool
	// viewMerges are the import sessions merged by content whose group
	// to compose again from its grown sides, without deciding it again
	// (mergecontent.go).
	viewMerges map[string]bool
	// handed are the events of the sessions deriveImports derived in
	// this pass, for deriveMemory (importhand.go); handedBytes their
	// encoded size.
	handed      map[string][]Event
	handedBytes int
	// frames are the import frames the pass read (nil outside a pass).
	frames *frameCache
	// lastRecs holds, for a dirty file, the data of its last record,
	// whose SHA-256 writeImportFiles puts in its state.
	lastRecs map[string][]byte

	// memPending are the sessions whose memory to derive at the end of
	// the pass (marked in the store too); scanPending is set until the
	// marks in the store were read once; corrections the correction states changed in the batch;
	// pinsChanged is set when a correction may change retention pins.
	memPending  map[string]bool
	scanPending bool
	corrections map[string]*CorrectionState
	pinsChanged bool
	// briefs are the session briefs changed in the batch.
	briefs map[string]*Brief
	// folds are the memory derivations kept of recent sessions.
	folds map[string]*memFold
	// corrected is set, for a deriveMemory, when the store holds a
	// correction.
	corrected bool

	batch *pebble.Batch
	// tab is the event table of imported sessions being written
	// (ingest.go), ingested when the batch commits.
	tab      *eventTable
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
	// memo is what the last request on each thread (by id) looked like,
	// in memory only (see prefix.go).
	memo map[int]*msgMemo
	// saved holds each thread's known keys as the store has them
	// (convostore.go).
	saved map[int][]string
	// joined are the import sessions the join keys of this live session
	// name that were written since it was loaded (merge.go).
	joined map[string]bool
}

// requestBody reads the request body of x from its frames in the WAL: the
// assembler let it go (DeferRequestBodies).
func (c *canonicalizer) requestBody(x *exchange.Exchange) ([]byte, error) {
	var n int64
	if x.Start != nil {
		n = x.Start.BodyBytes
	}
	body := make([]byte, 0, min(max(n, 0), 64<<20))
	r := c.e.log.NewReader()
	defer r.Close()
	for i, k := range x.Kinds {
		if k != frame.KindRequestBody {
			continue
		}
		off := x.Offsets[i]
		if err := r.Seek(off); err != nil {
			return nil, fmt.Errorf("frame at WAL offset %d: %w", off, err)
		}
		if !r.Next() {
			err := r.Err()
			if err == nil {
				err = errors.New("no frame there")
			}
			return nil, fmt.Errorf("frame at WAL offset %d: %w", off, err)
		}
		if h := r.Header(); h.Exchange != x.ID || h.Kind != frame.KindRequestBody {
			return nil, fmt.Errorf("frame at WAL offset %d: a %s frame of exchange %d, not a request body of exchange %d", off, h.Kind, h.Exchange, x.ID)
		}
		p, err := r.Payload()
		if err != nil {
			return nil, fmt.Errorf("frame at WAL offset %d: %w", off, err)
		}
		body = append(body, p...)
	}
	return body, nil
}

// load reads the canonicalizer's persistent state.
func (e *Pipeline) loadCanon() (*canonicalizer, error) {
	c := &canonicalizer{e: e, asm: exchange.Assembler{SkipResponseBodies: true, DeferRequestBodies: DeferRequestBodies, NewRequestBody: bodybuf.Get}, sessions: map[string]*sessState{}, open: map[uint64]*pending{}, replay: map[uint64]bool{},
		files: map[string]*ImportFileState{}, dirtyFiles: map[string]bool{}, pendingImports: map[string]bool{}, pendingMerges: map[string]bool{}, viewMerges: map[string]bool{},
		handed: map[string][]Event{}, lastRecs: map[string][]byte{}, memPending: map[string]bool{}, corrections: map[string]*CorrectionState{}, briefs: map[string]*Brief{}, folds: map[string]*memFold{}}
	var err error
	if c.applied, err = e.applied(); err != nil {
		return nil, err
	}
	v, err := e.getMeta(schema.KeySessions)
	if err != nil {
		return nil, err
	}
	c.ordinals = schema.U64(v)
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: []byte{schema.PrefixOpen}, UpperBound: []byte{schema.PrefixOpen + 1}})
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	defer it.Close()
	c.replayEnd = c.applied
	c.scanPending = true
	for it.First(); it.Valid(); it.Next() {
		c.replay[schema.U64(it.Key()[1:])] = true
	}
	if err := it.Error(); err != nil {
		return nil, err
	}
	if err := c.loadPendingImports(); err != nil {
		return nil, err
	}
	return c, c.loadPendingMerges()
}

// resumeOffset is where reading starts: the first frame of the oldest
// exchange still open, or the applied offset.
func (c *canonicalizer) resumeOffset() (uint64, error) {
	off := c.applied
	if c.resumed {
		return off, nil
	}
	for id := range c.replay {
		var v []byte
		v, closer, err := c.e.db.Get(schema.OpenKey(nil, id))
		if err != nil {
			return 0, fmt.Errorf("engine: read open exchange %d: %w", id, err)
		}
		if first := schema.U64(v); first < off {
			off = first
		}
		closer.Close()
	}
	return off, nil
}

// pass reads frames from the resume point to the end of the WAL (and on,
// when follow is set), or to the frame starting at limit when limit is
// not 0.
func (e *Pipeline) pass(ctx context.Context, follow bool, limit uint64) (Progress, error) {
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
	// The last pass's reader, with its buffers: a session's next request
	// is as large as its last.
	r := e.reader
	if r == nil {
		r = e.log.NewReader()
	} else {
		r.Reset()
	}
	e.reader = nil
	defer func() {
		r.Close()
		e.reader = r
	}()
	if err := c.seek(r, from); err != nil {
		return c.progress, err
	}
	c.resumed = true
	c.frames = &frameCache{}
	defer func() { c.frames = nil }()
	pendingBytes := 0
	// timed counts the frames read since the last commit, from began,
	// for Options.OnDerived.
	timed, began := 0, time.Time{}
	derived := func() {
		if e.opts.OnDerived != nil && timed > 0 {
			e.opts.OnDerived(timed, time.Since(began))
		}
		timed = 0
	}
	for {
		for r.Next() {
			if limit != 0 && r.Offset() >= limit {
				break // read again by the next pass
			}
			if e.opts.Yield != nil {
				// A pause for the proxy is not derivation time.
				began = began.Add(e.opts.Yield(ctx))
			}
			if timed == 0 {
				began = time.Now()
			}
			timed++
			h := r.Header()
			p, err := r.Payload()
			if err != nil {
				c.discard()
				return c.progress, fmt.Errorf("engine: %w", err)
			}
			next := r.Offset() + frame.HeaderLen + uint64(len(r.Stored()))
			if err := c.frame(h, r.Offset(), p); err != nil {
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
				if err := e.hold(ctx); err != nil {
					c.discard()
					return c.progress, err
				}
				if err := c.commit(); err != nil {
					return c.progress, err
				}
				pendingBytes = 0
				derived()
			}
		}
		if err := r.Err(); err != nil {
			c.discard()
			return c.progress, fmt.Errorf("engine: %w", err)
		}
		err := c.deriveImports()
		c.frames = &frameCache{} // the next round's (Follow)
		if err != nil {
			c.discard()
			return c.progress, err
		}
		if err := e.hold(ctx); err != nil {
			c.discard()
			return c.progress, err
		}
		if err := c.commit(); err != nil {
			return c.progress, err
		}
		// The merges read the sides as committed, and commit
		// themselves: a crash in between leaves their marks.
		if err := c.deriveMerges(ctx); err != nil {
			c.discard()
			return c.progress, err
		}
		pendingBytes = 0
		if e.opts.Yield != nil {
			e.opts.Yield(ctx)
		}
		if err := c.deriveMemory(ctx); err != nil {
			c.discard()
			return c.progress, err
		}
		derived()
		e.memApplied.Store(c.applied)
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

// holdPoll is how often a held engine looks whether it may write again.
const holdPoll = 100 * time.Millisecond

// errHeld is returned instead of writing derived state while
// Options.Hold says the store must not be written: Pebble shares the
// disk with the WAL, and a Pebble write that meets a full disk in its
// own log panics, at times fatally (a mutex unlocked twice on the way
// out), which no recover catches.
var errHeld = errors.New("engine: not writing derived state while the WAL cannot be written (they share the disk)")

// held is errHeld while Options.Hold says the store must not be written;
// it is asked right before each commit, since the WAL may fail while a
// pass runs.
func (e *Pipeline) held() error {
	if e.opts.Hold != nil && e.opts.Hold() {
		return errHeld
	}
	return nil
}

// hold waits while Options.Hold says the store must not be written (the
// disk the WAL is on is full), or until ctx is done.
func (e *Pipeline) hold(ctx context.Context) error {
	for e.opts.Hold != nil && e.opts.Hold() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(holdPoll):
		}
	}
	return nil
}

// seek positions r at from, or at the first frame after it when from
// falls where retention or a repair left a gap.
func (c *canonicalizer) seek(r *wal.Reader, from uint64) error {
	err := r.Seek(from)
	var be *wal.BoundaryError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &be):
		c.e.opts.Logf("engine: WAL offset %d is gone (a repaired segment); resuming at %d", from, be.Next)
		if err := r.Seek(be.Next); err != nil {
			return fmt.Errorf("engine: resume at WAL offset %d: %w", be.Next, err)
		}
		return nil
	case errors.Is(err, wal.ErrOutOfRange):
		// Retention removed the frames below the first retained one.
		first, ferr := c.e.log.First()
		if ferr != nil || first < from {
			return fmt.Errorf("engine: resume at WAL offset %d: %w", from, err)
		}
		c.e.opts.Logf("engine: WAL offsets %d to %d were removed by retention before they were derived", from, first)
		if err := r.Seek(first); err != nil {
			return fmt.Errorf("engine: resume at WAL offset %d: %w", first, err)
		}
		return nil
	}
	return fmt.Errorf("engine: resume at WAL offset %d: %w", from, err)
}

// frame takes one frame.
func (c *canonicalizer) frame(h frame.Header, off uint64, p []byte) error {
	if h.Kind == frame.KindImport {
		if off < c.replayEnd {
			return nil // applied before the last commit
		}
		return c.importFrame(off, p)
	}
	if h.Kind == frame.KindMemory {
		return c.memoryFrame(off, h.Time, p)
	}
	if h.Kind == frame.KindBreaker {
		return c.breakerFrame(off, p)
	}
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
			if err := c.staleCheck(h.Time); err != nil {
				return err
			}
		}
		x = &pending{}
		c.open[h.Exchange] = x
	}
	// A metadata payload that does not decode is noted on the exchange,
	// which is still derived from what did: one bad frame never stops
	// derivation.
	if err := c.asm.Add(h, p); err != nil && x.note == "" {
		x.note = fmt.Sprintf("a %s frame does not decode: %v", h.Kind, err)
	}
	x.Exchange = c.asm.Get(h.Exchange)
	if h.Kind == frame.KindResponseBody {
		c.responseBody(x, p)
	}
	if len(x.Offsets) == 1 && h.Offset >= c.replayEnd {
		c.markOpen(x)
	}
	if h.Kind == frame.KindResponseEnd {
		return c.finish(x, x.note)
	}
	if h.Offset >= c.replayEnd {
		return c.staleCheck(h.Time)
	}
	return nil
}

// staleCheck closes exchanges that saw no frame for StaleAfter of WAL
// time before now. It depends only on the frames read, so a rebuild
// closes the same exchanges at the same points.
func (c *canonicalizer) staleCheck(now int64) error {
	limit := now - int64(c.e.opts.StaleAfter)
	var stale []*pending
	for _, x := range c.open {
		if x.last() < limit {
			stale = append(stale, x)
		}
	}
	slices.SortFunc(stale, func(a, b *pending) int { return compareU64(a.Offsets[0], b.Offsets[0]) })
	for _, x := range stale {
		note := "abandoned: no end frame within the staleness window (its proxy stopped)"
		if x.note != "" {
			note += "; " + x.note
		}
		if err := c.finish(x, note); err != nil {
			return err
		}
	}
	return nil
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
	c.ensureBatchSize(0)
}

// ensureBatchSize is ensureBatch with a new batch's buffer allocated for
// size bytes at once (0: Pebble's default, grown by doubling).
func (c *canonicalizer) ensureBatchSize(size int) {
	if c.batch == nil {
		c.batch = c.e.db.NewBatchWithSize(size)
		c.opened = map[uint64]uint64{}
		c.closed = map[uint64]bool{}
	}
}

func (c *canonicalizer) markOpen(x *pending) {
	c.ensureBatch()
	c.opened[x.ID] = x.Offsets[0]
}

// finish derives everything from an ended exchange into the batch.
func (c *canonicalizer) finish(x *pending, note string) error {
	delete(c.open, x.ID)
	c.asm.Remove(x.ID)
	c.ensureBatch()
	if _, ok := c.opened[x.ID]; ok {
		delete(c.opened, x.ID)
	} else {
		c.closed[x.ID] = true
	}
	delete(c.replay, x.ID)
	n, err := c.derive(x, note)
	if x.dec != nil {
		x.dec.Abort() // not a model call after all
		x.dec = nil
	}
	if err != nil {
		return err
	}
	c.progress.Exchanges++
	c.progress.Events += n
	return nil
}

// setJSON adds key → JSON(v) to the batch, redacted: the canonical text
// joins what a stream split across events (a key sent in two deltas),
// so secrets the proxy could not see in the raw bytes are removed here,
// before anything derived, indexed or exported reads them.
func (c *canonicalizer) setJSON(key []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("engine: encode %q: %w", key[:1], err)
	}
	return c.batch.Set(key, c.e.opts.Redactor.JSON(b), nil)
}

// commit writes the batch with the applied offset and the open set.
func (c *canonicalizer) commit() error {
	c.ensureBatch()
	b := c.batch
	for _, st := range c.sortedDirty() {
		if err := c.setJSON(schema.SessionKey(c.keyBuf[:0], st.s.ID), &st.s); err != nil {
			return err
		}
		if err := c.saveConvo(st); err != nil {
			return err
		}
		b.Set(schema.MemPendingKey(st.s.ID), nil, nil)
		c.memPending[st.s.ID] = true
		st.dirty = false
	}
	if err := c.writeImportFiles(); err != nil {
		return err
	}
	for id, first := range c.opened {
		b.Set(schema.OpenKey(nil, id), binary.BigEndian.AppendUint64(nil, first), nil)
	}
	for id := range c.closed {
		b.Delete(schema.OpenKey(nil, id), nil)
	}
	b.Set(schema.KeyApplied, binary.BigEndian.AppendUint64(nil, c.applied), nil)
	b.Set(schema.KeySessions, binary.BigEndian.AppendUint64(nil, c.ordinals), nil)
	// The events the batch's sessions count go in first. Both under
	// the commit lock: a checkpoint (Quiesce) never holds the table
	// without the batch that counts it.
	c.e.commitMu.Lock()
	err := c.ingestTable()
	if err == nil {
		err = c.e.held()
	}
	if err == nil {
		err = b.Commit(pebble.NoSync)
	}
	c.e.commitMu.Unlock()
	b.Close()
	c.batch = nil
	if err != nil {
		c.e.canon = nil // reload from what is durable
		return fmt.Errorf("engine: commit: %w", err)
	}
	c.progress.Applied = c.applied
	clear(c.corrections)
	clear(c.briefs)
	return nil
}

// discard drops an uncommitted batch and forgets the cached state, so
// the next pass starts again from what was committed.
func (c *canonicalizer) discard() {
	c.dropTable()
	if c.batch != nil {
		c.batch.Close()
		c.batch = nil
	}
	for _, x := range c.open {
		if x.dec != nil {
			x.dec.Abort()
		}
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
	ok, err := c.e.getJSON(schema.SessionKey(nil, id), &st.s)
	if err != nil {
		return nil, err
	}
	if ok {
		if err := c.loadConvo(st); err != nil {
			return nil, err
		}
	} else {
		c.ordinals++
		st.s = Session{ID: id, Ordinal: c.ordinals}
		c.ensureBatch()
		c.batch.Set(schema.OrdinalKey(nil, st.s.Ordinal), []byte(id), nil)
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
