package derive

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bbengine/bbengine/engine/schema"

	"github.com/cockroachdb/pebble/v2"

	"github.com/bbengine/bbengine/codec/redact"
	"github.com/bbengine/bbengine/wal"
)

// Options configure a Pipeline. The engine fills every field from its
// own Options (engine.Options says what each means and its default);
// New takes them as they are.
type Options struct {
	// Hold, when set, is asked before each write of derived state;
	// while it reports true derivation waits.
	Hold func() bool
	// Yield, when set, is called between the frames a pass derives and
	// before memory is derived; it returns how long it paused.
	Yield func(ctx context.Context) time.Duration
	// BatchBytes is how many bytes of WAL frames a pass reads before it
	// commits.
	BatchBytes int
	// StaleAfter is how long, in WAL time, an exchange may stay open
	// with no frame before it is closed as abandoned.
	StaleAfter time.Duration
	// Redactor removes secrets from everything derived.
	Redactor *redact.Redactor
	// MemoryWorkers is how many goroutines derive memory in a pass of
	// several sessions; 0 means GOMAXPROCS.
	MemoryWorkers int
	// OnMemory, when set, is called after each pass that derived memory.
	OnMemory func()
	// OnMemoryStates, when set, is told after each memory pass the
	// sessions whose memory state (MemoryState) it wrote, before
	// OnMemory; nil sessions means any state may have changed or gone
	// (RebuildMemory). A reader that syncs from it (the search index)
	// then reads those states only.
	OnMemoryStates func(sessions []string)
	// OnDerived, when set, is called after each commit with the frames
	// it covered and the time spent on them.
	OnDerived func(frames int, took time.Duration)
	// Logf receives operational notes.
	Logf func(format string, args ...any)
	// TextLimit is the longest text of one event kept in the event; a
	// longer one goes to the blob store.
	TextLimit int
	// Dropped, when set, is told of each key range a pass deletes whole
	// (a re-derived session's old timeline), so that the engine can
	// compact the dead keys away later. It must not block.
	Dropped func(lo, hi []byte)
}

// Store is the engine's side of a Pipeline: the Pebble database it
// writes, the WAL it reads, and the engine's reads of what is already
// derived. The reads hold the engine's read lock, so the queries a
// Pipeline answers (Resolve, ProjectMemory) are safe beside Close.
type Store struct {
	// Dir is the data directory: long texts go to its blob store.
	Dir string
	// Blobs is the blob store long texts go to (encrypted in an
	// encrypted directory). The default is NewBlobs(Dir).
	Blobs *Blobs
	// DB is the store; the pipeline writes it in batches.
	DB *pebble.DB
	// Tables are the options DB was opened with, defaults filled in:
	// the event tables of imports are written with them.
	Tables *pebble.Options
	// Log is the WAL to derive.
	Log *wal.Log

	// Get returns a copy of key's value, nil when it is absent.
	Get func(key []byte) ([]byte, error)
	// GetJSON decodes key's value into v; false when it is absent.
	GetJSON func(key []byte, v any) (bool, error)
	// Scan calls fn for every key from lo up to (not including) hi.
	Scan func(lo, hi []byte, fn func(k, v []byte) error) error
	// Events, Reports, Brief, MemoryState and Artifact are the engine's
	// queries of the same names (Artifact with its corrections, by its
	// exact id).
	Events      func(session string, f EventFilter) ([]Event, error)
	Reports     func(session string) ([]Report, error)
	Brief       func(session string) (Brief, error)
	MemoryState func(session string) (MemoryState, error)
	Artifact    func(id string) (Artifact, error)
	// Pin pins in the WAL the range of every pinned session, so that
	// retention keeps it; a pass calls it when a correction may have
	// changed the pins.
	Pin func() error
}

// Pipeline is the derivation of one data directory: it applies WAL
// frames to the store, and owns the state that takes across frames and
// passes (the sessions in flight, their conversations and resent
// prefixes, the exchanges still open, the imported files, the memory
// folds). Apply, RebuildMemory and Reset must not run concurrently (the
// engine serializes them); Resolve, ProjectState and ProjectMemory only
// read, and are safe for concurrent use with them.
type Pipeline struct {
	dir   string
	opts  Options
	db    *pebble.DB
	popts *pebble.Options
	log   *wal.Log
	store Store

	// canon is the state, nil until a pass loads it from the store (and
	// again after a failed commit, or Reset).
	canon *canonicalizer
	// reader is the last pass's WAL reader, closed, kept for the
	// buffers it reads frames into (wal.Reader.Reset); passes are
	// serialized.
	reader *wal.Reader
	// memApplied is the applied offset as of the last pass that derived
	// memory.
	memApplied atomic.Uint64
	// commitMu is held across each commit of the canonical state (the
	// event table's ingestion and the batch with the applied offset), and
	// by Quiesce.
	commitMu sync.Mutex
}

// Quiesce runs fn while no commit of the canonical state is under way,
// so that what fn reads of the store (a checkpoint) holds whole commits
// and the applied offset they reach. Memory's commits may go on: each is
// one batch, and the sessions whose memory is not derived yet stay
// marked pending in the store. Quiesce is safe for concurrent use with
// Apply.
func (e *Pipeline) Quiesce(fn func() error) error {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	return fn()
}

// New returns the pipeline of the store s. It reads nothing until the
// first Apply.
func New(s Store, opts Options) *Pipeline {
	if s.Blobs == nil {
		s.Blobs = NewBlobs(s.Dir)
	}
	return &Pipeline{dir: s.Dir, opts: opts, db: s.DB, popts: s.Tables, log: s.Log, store: s}
}

// Apply derives the WAL's frames from where the derived state stops
// (the applied offset, or the first frame of an exchange still open) to
// the end of the WAL, or up to the frame that starts at limit when
// limit is not 0, and commits what they derive: events, sessions,
// exchanges, imported sessions, then the memory of the sessions that
// changed. With follow set it then waits for the WAL to grow and goes
// on until ctx is done or a frame cannot be read.
func (e *Pipeline) Apply(ctx context.Context, follow bool, limit uint64) (Progress, error) {
	return e.pass(ctx, follow, limit)
}

// Reset forgets the pipeline's state: the next Apply loads it from the
// store (Rebuild calls it after dropping the derived families).
func (e *Pipeline) Reset() { e.canon = nil }

// MemApplied returns the WAL offset that the memory of the last pass
// covers.
func (e *Pipeline) MemApplied() uint64 { return e.memApplied.Load() }

func (e *Pipeline) getMeta(key []byte) ([]byte, error)      { return e.store.Get(key) }
func (e *Pipeline) getJSON(key []byte, v any) (bool, error) { return e.store.GetJSON(key, v) }

// scan calls fn for every key with prefix p, reading the store directly:
// it is for the pass's own reads, made while the engine holds the lock
// that Close waits for, so the store stays open (and fn, called
// statically, is not allocated per call). Reads made for a query
// (projectView) go through the Store's locked Scan.
func (e *Pipeline) scan(p []byte, fn func(k, v []byte) error) error {
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: schema.UpperBound(p)})
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			return err
		}
	}
	return it.Error()
}

// scanLocked is scan through the engine's read lock (Store.Scan), for
// the queries the pipeline answers beside its passes.
func (e *Pipeline) scanLocked(p []byte, fn func(k, v []byte) error) error {
	return e.store.Scan(p, schema.UpperBound(p), fn)
}

// events, reports, brief, memoryState, artifact and pinRetention are
// the Store's functions of the same names.
func (e *Pipeline) events(session string, f EventFilter) ([]Event, error) {
	// Derivation reads a session's own timeline, never a merged view.
	f.Raw = true
	return e.store.Events(session, f)
}

// view reads the merged view of a merged session (merge.go).
func (e *Pipeline) view(session string) ([]Event, error) {
	return e.store.Events(session, EventFilter{})
}
func (e *Pipeline) reports(session string) ([]Report, error) { return e.store.Reports(session) }
func (e *Pipeline) brief(session string) (Brief, error)      { return e.store.Brief(session) }
func (e *Pipeline) memoryState(session string) (MemoryState, error) {
	return e.store.MemoryState(session)
}
func (e *Pipeline) artifact(id string) (Artifact, error) { return e.store.Artifact(id) }
func (e *Pipeline) pinRetention() error                  { return e.store.Pin() }

// applied returns the WAL offset up to which the derived state is
// built.
func (e *Pipeline) applied() (uint64, error) {
	v, err := e.getMeta(schema.KeyApplied)
	return schema.U64(v), err
}
