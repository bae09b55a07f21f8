package derive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bbengine/bbengine/engine/schema"

	"github.com/cockroachdb/pebble/v2"

	"github.com/bbengine/bbengine/codec/exchange"
)

// memoryFrame applies a memory frame: a user's correction or a harness
// note. A payload that does not decode is skipped (it was validated when
// written; one bad frame never stops derivation).
func (c *canonicalizer) memoryFrame(off uint64, t int64, p []byte) error {
	if off < c.replayEnd {
		return nil // applied before the last commit
	}
	m, err := exchange.DecodeMemory(p)
	if err != nil {
		c.e.opts.Logf("engine: memory frame at WAL offset %d skipped: %v", off, err)
		return nil
	}
	c.ensureBatch()
	if m.Note != nil {
		return c.note(off, t, m.Note)
	}
	return c.correction(off, t, *m.Correction)
}

// correction applies a user's correction.
func (c *canonicalizer) correction(off uint64, t int64, cr exchange.Correction) error {
	key := schema.CorrectionKey(cr.Target, cr.ID)
	st := c.corrections[string(key)]
	if st == nil {
		st = &CorrectionState{}
		if _, err := c.e.getJSON(key, st); err != nil {
			return err
		}
		c.corrections[string(key)] = st
	}
	st.Target, st.ID, st.Time, st.Offset = cr.Target, cr.ID, t, off
	if cr.Reason != "" {
		st.Reason = cr.Reason
	}
	switch cr.Op {
	case "forget":
		st.Forgotten = true
	case "unforget":
		st.Forgotten = false
	case "pin":
		st.Pinned = true
	case "unpin":
		st.Pinned = false
	}
	if err := c.setJSON(key, st); err != nil {
		return err
	}
	session := cr.ID
	if cr.Target == "artifact" {
		var a Artifact
		ok, err := c.e.getJSON(schema.ArtifactKey(cr.ID), &a)
		if err != nil || !ok {
			// An artifact not derived yet takes its correction when it is.
			return err
		}
		session = a.Session
	}
	c.memPending[session] = true
	c.dropCorrections(session)
	c.pinsChanged = true
	return nil
}

// deriveMemory derives the memory of every session marked pending, in
// batches, and clears the marks. It runs at the end of each pass, after
// the canonical state it reads is committed.
func (c *canonicalizer) deriveMemory(ctx context.Context) error {
	// Whatever states this pass wrote are reported, even when it stops
	// on an error after committing some (see Options.OnMemoryStates).
	defer c.reportStates()
	var ids []string
	if c.scanPending {
		// The marks left by an earlier process or by RebuildMemory; the
		// canonicalizer's own are in memPending too, so later passes need
		// not step over the deleted marks of every earlier pass.
		err := c.e.scan([]byte{schema.PrefixIndex, schema.MemPending}, func(k, _ []byte) error {
			ids = append(ids, string(k[2:]))
			return nil
		})
		if err != nil {
			return err
		}
		c.scanPending = false
	}
	for id := range c.memPending {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	clear(c.memPending)
	// Most stores hold no correction: then no artifact's is looked up
	// (a lookup of an absent key reads every level).
	c.corrected = false
	err := c.e.scan([]byte{schema.PrefixIndex, schema.MemCorrection}, func(_, _ []byte) error {
		c.corrected = true
		return errStopScan
	})
	if err != nil && !errors.Is(err, errStopScan) {
		return err
	}
	// The events deriveImports handed over are for this pass only: a
	// session left for the next pass reads its events from the store.
	handed := c.handed
	c.handed, c.handedBytes = map[string][]Event{}, 0
	if len(ids) == 0 {
		if c.pinsChanged {
			c.pinsChanged = false
			return c.e.pinRetention()
		}
		return nil
	}
	b := c.e.db.NewBatch()
	defer func() { b.Close() }()
	n := 0
	// applied takes the result of deriving a session, in id order: the
	// writes in its own batch, if it has one, go into b.
	applied := func(j *memJob) error {
		if j.b != nil {
			err := b.Apply(j.b, nil)
			j.b.Close()
			if err != nil {
				delete(c.folds, j.id)
				return err
			}
		}
		c.keepFold(j.id, j.kept, j.f)
		c.progress.Artifacts += j.written
		b.Delete(schema.MemPendingKey(j.id), nil)
		n++
		if b.Len() > 8<<20 {
			if err := b.Commit(pebble.NoSync); err != nil {
				return fmt.Errorf("engine: commit memory: %w", err)
			}
			b.Close()
			b = c.e.db.NewBatch()
		}
		return nil
	}
	workers := runtime.GOMAXPROCS(0)
	if n := c.e.opts.MemoryWorkers; n > 0 {
		workers = n
	}
	if len(ids) == 1 || workers <= 1 {
		// A live pass: derive into b itself.
		for i, id := range ids {
			if err := ctx.Err(); err != nil && n > 0 {
				for _, id := range ids[i:] {
					c.memPending[id] = true // the next pass's
				}
				break
			}
			j := memJob{id: id, kept: c.folds[id], events: handed[id]}
			delete(handed, id)
			var err error
			if j.f, j.written, err = c.deriveSessionMemory(b, id, j.kept, j.events); err != nil {
				delete(c.folds, id)
				return err
			}
			if err := applied(&j); err != nil {
				return err
			}
		}
	} else if err := c.deriveMemoryConcurrently(ctx, ids, workers, handed, applied); err != nil {
		return err
	}
	if err := c.e.held(); err != nil {
		c.e.canon = nil // reload from what is durable
		return err
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("engine: commit memory: %w", err)
	}
	c.progress.Memory += n
	c.pinsChanged = false
	c.reportStates()
	if f := c.e.opts.OnMemory; f != nil {
		f()
	}
	return c.e.pinRetention()
}

// memJob is the memory derivation of one session: its fold as the
// canonicalizer keeps it (kept, or nil), its events when an import
// handed them over (nil: read from the store), and what deriving it gave: the
// writes in b (nil: the pass's batch), the fold to keep (f) and the
// artifacts written.
type memJob struct {
	id      string
	kept    *memFold
	events  []Event
	b       *pebble.Batch
	f       *memFold
	written int
	err     error
	done    chan struct{} // closed when derived
}

// memWindow is how many sessions per worker deriveMemoryConcurrently
// has in flight: enough that the largest of a pass, derived first, runs
// while the others are.
const memWindow = 8

// deriveMemoryConcurrently derives the sessions ids on workers
// goroutines, each into a batch of its own, and hands the results to
// applied in id order, so that what is stored is what deriving them one
// by one stores. At most memWindow x workers sessions are in flight,
// the largest derived first. A job
// touches only its own fold and batch, and reads only keys of its own
// session, which no other job's writes touch. Sessions left when ctx is
// done are marked pending again.
func (c *canonicalizer) deriveMemoryConcurrently(ctx context.Context, ids []string, workers int, handed map[string][]Event, applied func(*memJob) error) error {
	window := memWindow * workers
	queue := newLargestFirst[*memJob]()
	var wg sync.WaitGroup
	for range min(workers, len(ids)) {
		wg.Go(func() {
			for {
				j, ok := queue.pop()
				if !ok {
					return
				}
				func() {
					defer close(j.done)
					defer catch(&j.err)
					j.f, j.written, j.err = c.deriveSessionMemory(j.b, j.id, j.kept, j.events)
					j.events = nil
				}()
			}
		})
	}
	var inflight []*memJob // queued, not applied, in id order
	defer func() {
		queue.close()
		wg.Wait()
		// A job not applied may have moved its kept fold past what is
		// stored: the session's next derivation loads it again.
		for _, j := range inflight {
			j.b.Close()
			delete(c.folds, j.id)
		}
	}()
	next := 0
	for i := range ids {
		if err := ctx.Err(); err != nil && i > 0 {
			for _, id := range ids[i:] {
				c.memPending[id] = true // the next pass's
			}
			return nil
		}
		for ; next < len(ids) && next < i+window; next++ {
			id := ids[next]
			j := &memJob{id: id, kept: c.folds[id], events: handed[id], b: c.e.db.NewBatch(), done: make(chan struct{})}
			delete(handed, id)
			inflight = append(inflight, j)
			// The events an import handed over tell a session's size;
			// one read from the store counts as small.
			queue.push(int64(len(j.events)), j)
		}
		j := inflight[0]
		<-j.done
		inflight = inflight[1:]
		rethrow(j.err)
		if j.err != nil {
			j.b.Close()
			delete(c.folds, j.id)
			return j.err
		}
		if err := applied(j); err != nil {
			return err
		}
	}
	return nil
}

// keepFold keeps the fold f of session id, derived from kept, the one
// kept before (either may be nil): an imported session's is not kept.
func (c *canonicalizer) keepFold(id string, kept, f *memFold) {
	if f == nil || f == kept {
		return
	}
	if f.s.Import != nil {
		if kept != nil {
			delete(c.folds, id)
		}
		return
	}
	if _, ok := c.folds[id]; !ok && len(c.folds) >= maxFolds {
		for id := range c.folds {
			delete(c.folds, id)
			break
		}
	}
	c.folds[id] = f
}

// memFold is the canonicalizer's memory derivation of one session: a
// miner holding the fold of the session's events read so far, and what
// is stored of its artifacts, so that a pass reads only the session's
// new events and writes only the artifacts whose bytes changed.
type memFold struct {
	s    Session
	m    *miner
	seen uint64 // the events folded are 1..seen
	// stored is the SHA-256 of each stored artifact's value; state that
	// of the stored MemoryState.
	stored map[string][32]byte
	state  [32]byte
	// project is the session's project as the index has it; keys the
	// project index keys of each artifact (project.go).
	project string
	keys    map[string][]string
	// corr caches correction states by key; a correction of the
	// session or one of its artifacts drops it.
	corr map[string]CorrectionState
}

// maxFolds bounds the sessions whose miners the canonicalizer keeps; a
// session whose miner was dropped is loaded again from its events. An
// imported session's miner is not kept: an import derives the session's
// timeline again, so its miner would be loaded again anyway, and an
// import of many sessions would hold them all.
const maxFolds = 64

// errStopScan ends a scan early.
var errStopScan = errors.New("engine: stop scan")

// correction returns the correction state of key, cached; none when the
// store holds no correction at all (corrected unset).
func (f *memFold) correction(e *Pipeline, corrected bool, key []byte) (CorrectionState, error) {
	if !corrected {
		return CorrectionState{}, nil
	}
	if cs, ok := f.corr[string(key)]; ok {
		return cs, nil
	}
	var cs CorrectionState
	if _, err := e.getJSON(key, &cs); err != nil {
		return cs, err
	}
	if f.corr == nil {
		f.corr = map[string]CorrectionState{}
	}
	f.corr[string(key)] = cs
	return cs, nil
}

// dropCorrections forgets the cached corrections of a session.
func (c *canonicalizer) dropCorrections(session string) {
	if f := c.folds[session]; f != nil {
		f.corr = nil
	}
}

// fold returns the memory fold of session s with every event of s folded
// in: kept (the canonicalizer's, or nil) with the new events added when
// they extend what it read, or a new one loaded from all the events and
// what is stored. handed, when not nil, are the session's events as its
// import derived them (importhand.go), used when they are all of them.
// It reads the store only; keepFold keeps the result.
func (c *canonicalizer) fold(s *Session, kept *memFold, handed []Event) (*memFold, error) {
	e := c.e
	f := kept
	if f != nil && s.Events < f.seen {
		f = nil
	}
	if f != nil {
		var evs []Event
		if s.Events > f.seen {
			var err error
			if evs, err = e.events(s.ID, EventFilter{After: f.seen}); err != nil {
				return nil, err
			}
		}
		// Even without new events the session may read differently (its
		// subagents): add checks.
		f.s = *s
		if f.m.add(evs) {
			f.seen = lastSeq(evs, f.seen)
			return f, nil
		}
	}
	f = &memFold{s: *s, stored: map[string][32]byte{}, keys: map[string][]string{}}
	evs := handed
	if handed == nil || uint64(len(handed)) != s.Events {
		var err error
		if evs, err = e.events(s.ID, EventFilter{}); err != nil {
			return nil, err
		}
	}
	f.m = newMiner(&f.s, e.opts.Redactor)
	f.m.load(evs)
	f.seen = lastSeq(evs, 0)
	// What is stored, so that unchanged artifacts are not written again.
	var old MemoryState
	v, err := e.getMeta(schema.MemStateKey(s.Ordinal))
	if err != nil {
		return nil, err
	}
	if v != nil {
		f.state = sha256.Sum256(v)
		if err := json.Unmarshal(v, &old); err != nil {
			return nil, fmt.Errorf("engine: decode memory state of session %s: %w", s.ID, err)
		}
	}
	f.project = old.Project
	for _, id := range old.Artifacts {
		v, err := e.getMeta(schema.ArtifactKey(id))
		if err != nil {
			return nil, err
		}
		if v == nil {
			continue
		}
		f.stored[id] = sha256.Sum256(v)
		if indexed(id) && f.project != "" {
			var a Artifact
			if err := json.Unmarshal(v, &a); err != nil {
				return nil, fmt.Errorf("engine: decode artifact %s: %w", id, err)
			}
			f.keys[id] = projectKeys(f.project, &a)
		}
	}
	return f, nil
}

// digestArtifact writes an artifact's part of a session's digest: its
// id, the SHA-256 of its stored bytes and its corrections.
func digestArtifact(h hash.Hash, id string, sum *[32]byte, cs CorrectionState) {
	var buf [160]byte
	b := append(buf[:0], id...)
	b = append(b, 0)
	b = hex.AppendEncode(b, sum[:])
	b = append(b, 0)
	b = strconv.AppendBool(b, cs.Forgotten)
	b = append(b, 0)
	b = strconv.AppendBool(b, cs.Pinned)
	h.Write(append(b, 0))
}

// indexed reports whether artifact id may have project index entries.
func indexed(id string) bool {
	return inForceKind(id) || strings.HasPrefix(id, "out-")
}

// inForceKind reports whether id is a decision, a constraint or a thread:
// the artifacts a project keeps in force for its next sessions.
func inForceKind(id string) bool {
	return strings.HasPrefix(id, "dec-") || strings.HasPrefix(id, "con-") || strings.HasPrefix(id, "thr-")
}

func lastSeq(evs []Event, seq uint64) uint64 {
	if len(evs) > 0 {
		return max(seq, evs[len(evs)-1].Seq)
	}
	return seq
}

// deriveSessionMemory derives the artifacts of session id from the
// events not folded yet into kept (nil: none kept), and puts in b those
// whose bytes changed, the deletion of those it no longer has, and its
// MemoryState if changed. It returns the session's fold (nil for a
// session not recorded) and the number of artifacts written. It reads
// the store and writes only b and the fold, so sessions may be derived
// concurrently.
func (c *canonicalizer) deriveSessionMemory(b *pebble.Batch, id string, kept *memFold, handed []Event) (*memFold, int, error) {
	e := c.e
	var s Session
	ok, err := e.getJSON(schema.SessionKey(nil, id), &s)
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		return nil, 0, nil // a correction of a session not (yet) recorded
	}
	// A merged session's memory is derived from its merged view under
	// its canonical id; an absorbed member derives none, which drops
	// what it had (merge.go).
	merged, view, err := c.mergedMemory(&s)
	if err != nil {
		return nil, 0, err
	}
	if merged {
		kept, handed = nil, view
	}
	f, err := c.fold(&s, kept, handed)
	if err != nil {
		return nil, 0, err
	}
	written := 0
	arts, encs, tasks := f.m.snapshotEncoded(true)
	reports, err := e.reports(s.ID)
	if err != nil {
		return f, written, err
	}
	arts, tasks = foldReports(s.ID, arts, tasks, reports, e.opts.Redactor)
	for _, r := range reports {
		// The outcome a report went into is not what its cached bytes
		// hold.
		id := OutcomeID(s.ID, r.Task)
		if i := slices.IndexFunc(arts, func(a Artifact) bool { return a.ID == id }); i >= 0 && i < len(encs) {
			encs[i] = nil
		}
	}
	st := MemoryState{Session: s.ID, Ordinal: s.Ordinal, Events: s.Events, Tasks: tasks, Builder: MemoryVersion,
		Artifacts: make([]string, 0, len(arts)), Project: ProjectOf(&s)}
	// A session that moved to another project moves all its entries.
	moved := st.Project != f.project
	f.project = st.Project
	stored := make(map[string][32]byte, len(arts))
	h := sha256.New()
	for i := range arts {
		a := &arts[i]
		st.Artifacts = append(st.Artifacts, a.ID)
		var v []byte
		var sum [32]byte
		if i < len(encs) && encs[i] != nil {
			v, sum = encs[i].v, encs[i].sum
		} else {
			v, err = json.Marshal(a)
			if err != nil {
				return f, written, fmt.Errorf("engine: encode artifact %s: %w", a.ID, err)
			}
			v = e.opts.Redactor.JSON(v)
			sum = sha256.Sum256(v)
		}
		old, ok := f.stored[a.ID]
		if !ok || old != sum {
			if err := b.Set(schema.ArtifactKey(a.ID), v, nil); err != nil {
				return f, written, err
			}
			written++
		}
		if (!ok || old != sum || moved) && indexed(a.ID) {
			keys := projectKeys(st.Project, a)
			if err := putProjectKeys(b, f.keys[a.ID], keys, s.Ordinal, a.Last); err != nil {
				return f, written, err
			}
			f.keys[a.ID] = keys
		}
		stored[a.ID] = sum
		cs, err := f.correction(e, c.corrected, schema.CorrectionKey("artifact", a.ID))
		if err != nil {
			return f, written, err
		}
		digestArtifact(h, a.ID, &sum, cs)
	}
	cs, err := f.correction(e, c.corrected, schema.CorrectionKey("session", s.ID))
	if err != nil {
		return f, written, err
	}
	fmt.Fprintf(h, "session\x00%t\x00%t", cs.Forgotten, cs.Pinned)
	slices.Sort(st.Artifacts)
	for id := range f.stored {
		if _, ok := stored[id]; !ok {
			b.Delete(schema.ArtifactKey(id), nil)
			if err := putProjectKeys(b, f.keys[id], nil, s.Ordinal, 0); err != nil {
				return f, written, err
			}
			delete(f.keys, id)
		}
	}
	f.stored = stored
	st.Digest = hex.EncodeToString(h.Sum(nil))
	v, err := json.Marshal(&st)
	if err != nil {
		return f, written, err
	}
	if sum := sha256.Sum256(v); sum != f.state {
		f.state = sum
		c.stateWritten(s.ID)
		return f, written, b.Set(schema.MemStateKey(s.Ordinal), v, nil)
	}
	return f, written, nil
}

// stateWritten notes that a memory pass wrote session's memory state;
// memory workers call it concurrently.
func (c *canonicalizer) stateWritten(session string) {
	if c.e.opts.OnMemoryStates == nil {
		return
	}
	c.statesMu.Lock()
	c.states = append(c.states, session)
	c.statesMu.Unlock()
}

// reportStates tells Options.OnMemoryStates the states written since the
// last report.
func (c *canonicalizer) reportStates() {
	f := c.e.opts.OnMemoryStates
	if f == nil {
		return
	}
	c.statesMu.Lock()
	ids := c.states
	c.states = nil
	c.statesMu.Unlock()
	if len(ids) > 0 {
		f(ids)
	}
}

// MemoryProgress reports what RebuildMemory did.
type MemoryProgress struct {
	Sessions  int           `json:"sessions"`
	Artifacts int           `json:"artifacts"`
	Took      time.Duration `json:"took_ns"`
}

// RebuildMemory drops every artifact and derives them again from the
// canonical events, with the current MemoryVersion (bbengine rebuild
// --derived). The user's corrections are kept: they come from the WAL.
func (e *Pipeline) RebuildMemory(ctx context.Context) (MemoryProgress, error) {
	start := time.Now()
	b := e.db.NewBatch()
	b.DeleteRange([]byte{schema.PrefixArtifact}, []byte{schema.PrefixArtifact + 1}, nil)
	b.DeleteRange([]byte{schema.PrefixIndex, schema.MemState}, []byte{schema.PrefixIndex, schema.MemState + 1}, nil)
	b.DeleteRange([]byte{schema.PrefixIndex, schema.MemPending}, []byte{schema.PrefixIndex, schema.MemPending + 1}, nil)
	b.DeleteRange([]byte{schema.PrefixIndex, schema.MemProject}, []byte{schema.PrefixIndex, schema.MemProject + 1}, nil)
	var ids []string
	err := e.scan([]byte{schema.PrefixOrdinal}, func(_, v []byte) error {
		ids = append(ids, string(v))
		return nil
	})
	if err != nil {
		b.Close()
		return MemoryProgress{}, err
	}
	for _, id := range ids {
		b.Set(schema.MemPendingKey(id), nil, nil)
	}
	b.Set(schema.KeyMemory, []byte(MemoryVersion), nil)
	err = b.Commit(pebble.Sync)
	b.Close()
	if err != nil {
		return MemoryProgress{}, fmt.Errorf("engine: rebuild memory: %w", err)
	}
	if e.canon == nil {
		if e.canon, err = e.loadCanon(); err != nil {
			return MemoryProgress{}, err
		}
	}
	if f := e.opts.OnMemoryStates; f != nil {
		f(nil) // every state is gone, and comes back as it is derived
	}
	// The artifacts the miners say are stored are gone.
	clear(e.canon.folds)
	e.canon.scanPending = true
	if err := e.canon.deriveMemory(context.Background()); err != nil {
		return MemoryProgress{}, err
	}
	p := MemoryProgress{Sessions: len(ids), Took: time.Since(start)}
	err = e.scan([]byte{schema.PrefixArtifact}, func(_, _ []byte) error { p.Artifacts++; return nil })
	return p, err
}
