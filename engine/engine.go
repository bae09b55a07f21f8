package engine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/bbengine/bbengine/internal/crypt"

	"github.com/bbengine/bbengine/engine/schema"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/bbengine/bbengine/codec/redact"
	"github.com/bbengine/bbengine/engine/derive"
	"github.com/bbengine/bbengine/internal/private"
	"github.com/bbengine/bbengine/wal"
)

// Options configure an Engine. The zero value (or nil) means defaults.
type Options struct {
	// Hold, when set, is asked before each write of derived state;
	// while it reports true derivation waits. The proxy holds it while
	// its WAL cannot be written: the store is on the same disk, and
	// Pebble crashes the process (a fatal error, past any recover) when
	// a rotation of its own log meets a full disk.
	Hold func() bool
	// Yield, when set, is called between the frames a pass derives and
	// before memory is derived; it may block for a short while to let
	// more urgent work (the proxy's requests) have the CPU first. It
	// returns how long it paused.
	Yield func(ctx context.Context) time.Duration
	// FS is the file system Pebble writes through (made owner-only).
	// The default is the operating system's; tests put Pebble's
	// vfs/errorfs here to inject faults.
	FS vfs.FS
	// Keys, when set, are the unlocked keys of an encrypted data
	// directory: Pebble's files, blobs and the index are written and read
	// encrypted under them. The default is nil: a directory in the clear.
	// Open refuses a directory that has a keys file when Keys is nil.
	Keys *crypt.Keys
	// WAL is the log to canonicalize. The caller keeps ownership (the
	// proxy passes the log it writes). The default opens <dir>/wal
	// read-only; a missing directory is an empty log.
	WAL *wal.Log
	// CacheSize is Pebble's block cache in bytes. The default is 64 MiB.
	CacheSize int64
	// MemTableSize is the size of Pebble's memtables in bytes (it keeps
	// up to two). The default is 16 MiB.
	MemTableSize uint64
	// L0CompactionThreshold is how many sublevels of level 0 tables
	// Pebble lets pile up before it compacts them into the level below
	// (Pebble's L0CompactionThreshold). More make each compaction take
	// more at once: a writer of keys spread over the key space (an
	// import's artifacts) then rewrites the level below less often, and
	// reads look at more tables. The default is Pebble's, 4.
	L0CompactionThreshold int
	// BatchBytes is how many bytes of WAL frames the canonicalizer reads
	// before it commits. The default is 4 MiB.
	BatchBytes int
	// StaleAfter is how long, in WAL time, an exchange may stay open with
	// no frame before it is closed as abandoned (its proxy died). The
	// default is 30 minutes.
	StaleAfter time.Duration
	// Redactor removes secrets from everything derived into memory. The
	// default has codec/redact's built-in rules.
	Redactor *redact.Redactor
	// MemoryWorkers is how many goroutines derive memory in a pass of
	// several sessions; 0 means GOMAXPROCS. The proxy sets 1: its
	// derivation then stays on the one low-priority thread it runs on,
	// and never takes both cores from the requests.
	MemoryWorkers int
	// OnMemory, when set, is called after each pass that derived memory
	// (a session's artifacts or the user's corrections changed), from the
	// canonicalizer's goroutine: it must not block (an index signals its
	// syncer).
	OnMemory func()
	// OnDerived, when set, is called from the canonicalizer's goroutine
	// after each commit of derived state, with the WAL frames the commit
	// covered and the wall time spent on them: reading, decoding,
	// staging and committing, and at the end of a pass deriving memory.
	// Waits for new frames are not counted (a Hold while the disk is
	// full is). It must not block; the proxy's metrics count it as the
	// time per frame.
	OnDerived func(frames int, took time.Duration)
	// Logf receives operational notes (an automatic rebuild). The default
	// discards them.
	Logf func(format string, args ...any)
	// TextLimit is the longest text of one event held in memory and
	// stored in the event: a streamed response's text is decoded as it
	// is read, and one longer than this goes whole to the blob store
	// (<dir>/blobs) while it streams; the event keeps its first
	// TextLimit bytes and names the blob (Event.TextBlob). The default
	// is 1 MiB.
	TextLimit int
	// CompactDelay is how long after a pass drops a key range (memory
	// derived again, a session imported again) the engine compacts the
	// dead keys away, in a goroutine of its own; the ranges dropped
	// meanwhile are compacted together. The default is 5 seconds.
	CompactDelay time.Duration
}

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	if v.CacheSize <= 0 {
		v.CacheSize = 64 << 20
	}
	if v.MemTableSize == 0 {
		v.MemTableSize = 16 << 20
	}
	if v.BatchBytes <= 0 {
		v.BatchBytes = 4 << 20
	}
	if v.StaleAfter <= 0 {
		v.StaleAfter = 30 * time.Minute
	}
	if v.TextLimit <= 0 {
		v.TextLimit = 1 << 20
	}
	if v.CompactDelay <= 0 {
		v.CompactDelay = 5 * time.Second
	}
	if v.Redactor == nil {
		v.Redactor, _ = redact.New(nil)
	}
	if v.Logf == nil {
		v.Logf = func(string, ...any) {}
	}
	return v
}

// Engine is an open data directory: the WAL, the Pebble database of
// derived state, and the canonicalizer that keeps one up to date with
// the other.
type Engine struct {
	dir  string
	opts Options
	// memChanges logs the sessions whose memory state changed
	// (MemoryChanges).
	memChanges memChanges
	lock       *dirLock
	// holder is what the lock file says (SetEndpoint, SetProxy).
	holderMu sync.Mutex
	holder   Holder
	db       *pebble.DB
	// popts are the options db was opened with, defaults filled in:
	// the event tables of imports (engine/derive/ingest.go) are written
	// with them.
	popts *pebble.Options
	log   *wal.Log
	// retainMu is held by a retention run that removes segments and by
	// WithoutRetention.
	retainMu sync.Mutex
	ownLog   bool

	// run serializes the pipeline's passes (CatchUp, Follow, Rebuild,
	// RebuildMemory).
	run  sync.Mutex
	pipe *derive.Pipeline
	// mu guards closed: readers hold it shared while they use the
	// database, Close exclusively while it closes it.
	mu     sync.RWMutex
	closed bool

	// comp compacts the key ranges derivation dropped (compact.go).
	comp compactor

	closeOnce sync.Once
	closeErr  error
}

// Open opens the data directory dir, creating it if needed: it takes the
// directory's lock, opens the WAL and the Pebble database, and checks the
// derived state against the code (an older builder or schema, or an
// applied offset beyond the WAL's end, means a rebuild, done before Open
// returns). It does not read new frames: call CatchUp or Follow.
func Open(dir string, opts *Options) (*Engine, error) {
	o := opts.withDefaults()
	// Everything under dir is owner-only (package internal/private): a
	// directory an older version left readable by others is tightened.
	if _, err := private.Secure(dir); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	lk, err := lock(dir)
	if err != nil {
		return nil, err
	}
	e := &Engine{dir: dir, opts: o, lock: lk, log: o.WAL}
	recoverSnapshot(dir)
	if e.log == nil {
		walDir := filepath.Join(dir, "wal")
		if err := private.MkdirAll(walDir); err != nil {
			lk.close()
			return nil, fmt.Errorf("engine: create %s: %w", walDir, err)
		}
		if e.log, err = wal.Open(walDir, &wal.Options{ReadOnly: true, Keys: o.Keys}); err != nil {
			lk.close()
			return nil, err
		}
		e.ownLog = true
	}
	dbDir := filepath.Join(dir, "db")
	// An encrypted directory opened without keys, or a store in the
	// clear with them, is refused before anything is written.
	if err := checkEncryption(dir, dbDir, o.Keys); err != nil {
		e.closeLog()
		lk.close()
		return nil, err
	}
	derr := private.MkdirAll(dbDir)
	if derr == nil {
		derr = private.Tighten(dbDir)
	}
	if derr != nil {
		e.closeLog()
		lk.close()
		return nil, fmt.Errorf("engine: %w", derr)
	}
	e.db, e.popts, err = openStore(dbDir, o)
	if err != nil {
		e.closeLog()
		lk.close()
		return nil, err
	}
	e.startCompactor()
	e.pipe = derive.New(derive.Store{Dir: dir, Blobs: e.Blobs(), DB: e.db, Tables: e.popts, Log: e.log,
		Get: e.getMeta, GetJSON: e.getJSON, Scan: e.scanRange,
		Events: e.Events, Reports: e.Reports, Brief: e.Brief, MemoryState: e.MemoryState, Artifact: e.artifact,
		Pin: e.pinRetention,
	}, derive.Options{Hold: o.Hold, Yield: o.Yield, BatchBytes: o.BatchBytes, StaleAfter: o.StaleAfter,
		Redactor: o.Redactor, OnMemory: o.OnMemory, OnMemoryStates: e.memChanges.add, OnDerived: o.OnDerived, Logf: o.Logf,
		TextLimit: o.TextLimit, MemoryWorkers: o.MemoryWorkers, Dropped: e.compactLater})
	if err := e.safeCheck(); err != nil {
		e.Close()
		return nil, damaged(dbDir, err)
	}
	return e, nil
}

// openStore opens the Pebble store at dbDir. Any failure but a lock, a
// permission or a full disk means the store cannot be read and is
// returned as a *DamagedError.
func openStore(dbDir string, o Options) (db *pebble.DB, po *pebble.Options, err error) {
	defer recoverDamage(dbDir, &err)
	base := vfs.Default
	if o.FS != nil {
		base = o.FS
	}
	// Owner-only files; with keys, encrypted above that (cryptfs.go),
	// so an errorfs in o.FS sees the real writes.
	fs := newOwnerFS(base)
	if o.Keys != nil {
		fs = newCryptFS(fs, o.Keys)
	}
	po = &pebble.Options{
		FS:                         fs,
		FormatMajorVersion:         pebble.FormatNewest,
		CacheSize:                  o.CacheSize,
		MemTableSize:               o.MemTableSize,
		CompactionConcurrencyRange: func() (int, int) { return 1, 2 },
		Logger:                     quietLogger{},
		// Without a listener Pebble calls the logger's Fatalf on
		// on-disk corruption, from any goroutine, compactions included;
		// with one the read or compaction returns the corruption error,
		// which the engine reports as a *DamagedError.
		// A compaction meeting it is not reported apart either.
		EventListener: &pebble.EventListener{
			DataCorruption: func(pebble.DataCorruptionInfo) {},
			BackgroundError: func(err error) {
				if !pebble.IsCorruptionError(err) {
					quietLogger{}.Errorf("background error: %s", err)
				}
			},
		},
	}
	setCompression(po)
	// An event table an import ingests (engine/derive/ingest.go) goes to the lowest
	// level its keys do not overlap; ingest-time splitting lets it go
	// there even when one table of that level spans its bounds without
	// holding keys inside them (the last events of earlier sessions and
	// the key families after them).
	po.Experimental.IngestSplit = func() bool { return true }
	po.Experimental.SpanPolicyFunc = eventSpan
	if n := o.L0CompactionThreshold; n > 0 {
		po.L0CompactionThreshold = n
		po.L0StopWritesThreshold = max(po.L0StopWritesThreshold, 4*n)
	}
	po.EnsureDefaults()
	// A table a killed import left unfinished or not ingested (one that
	// stays is replaced by the next).
	po.FS.Remove(filepath.Join(dbDir, ingestName))
	db, err = pebble.Open(dbDir, po)
	if err == nil {
		return db, po, nil
	}
	if os.IsPermission(err) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EROFS) {
		return nil, nil, fmt.Errorf("engine: open %s: %w", dbDir, err)
	}
	return nil, nil, &DamagedError{Path: dbDir, Err: err}
}

// setCompression writes the tables of level 0 uncompressed and those of
// the levels below with snappy, in blocks of tableBlock bytes. A flush
// writes every byte derived into a level 0 table, which the next
// compaction reads once and rewrites below: compressing it cost more CPU
// than the disk it saved (at 200 copies of the golden corpus compaction
// was a fifth of an import's CPU, snappy an eighth), while the levels
// below, where the data stays, keep the store small. Readers tell each
// block's compression from its trailer, so stores written with any
// setting open alike.
func setCompression(o *pebble.Options) {
	for i := range o.Levels {
		o.Levels[i].BlockSize = tableBlock
		o.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.SnappyCompression }
	}
	o.Levels[0].Compression = func() *sstable.CompressionProfile { return sstable.NoCompression }
}

// eventSpan makes every table Pebble writes end where the events' key
// family begins and where it ends, so that no table holds both events
// and other keys. The other families take a tenth of an import's store
// and are rewritten as they change, while most events are written once,
// into the last level (engine/derive/ingest.go): a table of other keys that reached
// into the events would make its compaction into the last level rewrite
// every event table between its keys.
func eventSpan(start []byte) (pebble.SpanPolicy, []byte, error) {
	switch {
	case len(start) == 0 || start[0] < schema.PrefixEvent:
		return pebble.SpanPolicy{}, []byte{schema.PrefixEvent}, nil
	case start[0] == schema.PrefixEvent:
		return pebble.SpanPolicy{}, []byte{schema.PrefixEvent + 1}, nil
	}
	return pebble.SpanPolicy{}, nil, nil
}

// tableBlock is the size of a table's data blocks. Pebble's default, 4
// KiB, made a table writer issue a write system call per block (its
// buffer is as large) and compress in small pieces: at 200 copies of
// the golden corpus 32 KiB blocks (CockroachDB's size) took 8% less CPU
// and made the store a quarter smaller. A point read decodes a larger
// block; the derived state is read mostly in ranges.
const tableBlock = 32 << 10

// safeCheck is check with Pebble's panics turned into errors.
func (e *Engine) safeCheck() (err error) {
	defer recoverDamage(filepath.Join(e.dir, "db"), &err)
	return e.check()
}

// Dir returns the data directory.
func (e *Engine) Dir() string { return e.dir }

// Keys returns the keys the engine was opened with (Options.Keys): nil
// for a directory in the clear. The index of the directory opens with
// them.
func (e *Engine) Keys() *crypt.Keys { return e.opts.Keys }

// Blobs returns the directory's blob store: encrypted under Keys when
// they are set, else in the clear.
func (e *Engine) Blobs() *Blobs { return schema.NewBlobsKeyed(e.dir, e.opts.Keys) }

// WAL returns the log the engine reads.
func (e *Engine) WAL() *wal.Log { return e.log }

// SetEndpoint records, in the lock file, the loopback address and token
// of this process's query endpoint, so that commands run while it holds
// the directory can ask it.
func (e *Engine) SetEndpoint(addr, token string) error {
	e.holderMu.Lock()
	defer e.holderMu.Unlock()
	e.holder.PID, e.holder.Addr, e.holder.Token = os.Getpid(), addr, token
	return e.lock.write(e.holder)
}

// SetProxy records, in the lock file, the address this process's
// recording proxy listens on.
func (e *Engine) SetProxy(addr string) error {
	e.holderMu.Lock()
	defer e.holderMu.Unlock()
	e.holder.PID, e.holder.Proxy = os.Getpid(), addr
	return e.lock.write(e.holder)
}

// check compares the stored builder, schema and applied offset with the
// code and the WAL, and rebuilds when they disagree.
func (e *Engine) check() error {
	builder, err := e.getMeta(schema.KeyBuilder)
	if err != nil {
		return err
	}
	layout, err := e.getMeta(schema.KeySchema)
	if err != nil {
		return err
	}
	applied, err := e.Applied()
	if err != nil {
		return err
	}
	end, err := e.log.End()
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	var why string
	first, _ := e.log.First()
	_, serr := os.Stat(filepath.Join(e.dir, snapshotDir))
	switch {
	case serr == nil && applied < first:
		// Retention removed frames this store never derived (a new
		// store, or one set aside): they are in the snapshot.
		why = fmt.Sprintf("it covers the WAL up to offset %d, and retention removed the frames before %d, which its snapshot holds", applied, first)
	case builder == nil && layout == nil && applied == 0:
		// A new database: write the versions.
		b := e.db.NewBatch()
		defer b.Close()
		b.Set(schema.KeyBuilder, []byte(BuilderVersion), nil)
		b.Set(schema.KeySchema, binary.BigEndian.AppendUint32(nil, SchemaVersion), nil)
		b.Set(schema.KeyMemory, []byte(MemoryVersion), nil)
		return b.Commit(pebble.Sync)
	case string(builder) != BuilderVersion:
		why = fmt.Sprintf("it was built by %q and this is %q", builder, BuilderVersion)
	case len(layout) != 4 || !schema.ReadsSchema(binary.BigEndian.Uint32(layout)):
		why = "its key layout is from another version"
	case applied > end:
		why = fmt.Sprintf("it covers the WAL up to offset %d but the WAL ends at %d (an unsynced WAL tail was lost)", applied, end)
	default:
		if binary.BigEndian.Uint32(layout) != SchemaVersion {
			// An older layout this build reads: from now on it writes
			// the new one, which older builds must not misread.
			if err := e.db.Set(schema.KeySchema, binary.BigEndian.AppendUint32(nil, SchemaVersion), pebble.Sync); err != nil {
				return fmt.Errorf("engine: mark the key layout version: %w", err)
			}
		}
		memory, err := e.getMeta(schema.KeyMemory)
		if err != nil {
			return err
		}
		if string(memory) != MemoryVersion {
			e.opts.Logf("engine: deriving memory again: it was built by %q and this is %q", memory, MemoryVersion)
			if _, err := e.RebuildMemory(context.Background()); err != nil {
				return err
			}
		}
		return e.pinRetention()
	}
	e.opts.Logf("engine: rebuilding the derived state from the WAL: %s", why)
	if _, err = e.Rebuild(context.Background()); err != nil {
		return err
	}
	return e.pinRetention()
}

func (e *Engine) getMeta(key []byte) ([]byte, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, ErrClosed
	}
	v, closer, err := e.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine: read %s: %w", key[1:], err)
	}
	defer closer.Close()
	return append([]byte(nil), v...), nil
}

// Applied returns the WAL offset up to which the derived state is built.
func (e *Engine) Applied() (uint64, error) {
	v, err := e.getMeta(schema.KeyApplied)
	return schema.U64(v), err
}

// Close stops using the directory: it closes the database and (if Open
// opened it) the WAL, and releases the lock. Stop Follow first (cancel
// its context). Close is safe to call more than once.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		e.stopCompactor()
		e.run.Lock()
		defer e.run.Unlock()
		e.mu.Lock()
		defer e.mu.Unlock()
		e.closed = true
		var errs []error
		if e.db != nil {
			errs = append(errs, closeStore(e.db))
		}
		errs = append(errs, e.closeLog(), e.lock.close())
		e.closeErr = errors.Join(errs...)
	})
	return e.closeErr
}

// closeStore closes db; a panic of a damaged store's Close is an error.
func closeStore(db *pebble.DB) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("engine: close the store: %v", r)
		}
	}()
	return db.Close()
}

func (e *Engine) closeLog() error {
	if e.ownLog && e.log != nil {
		return e.log.Close()
	}
	return nil
}

// getJSON reads key into v; false when the key is absent.
func (e *Engine) getJSON(key []byte, v any) (bool, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return false, ErrClosed
	}
	b, closer, err := e.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("engine: read: %w", err)
	}
	defer closer.Close()
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("engine: decode %q: %w", key[:1], err)
	}
	return true, nil
}

// quietLogger drops Pebble's informational logs and keeps its errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}
func (quietLogger) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}

// Fatalf panics rather than exiting: the proxy recovers a panic in
// derivation and pauses it, and recording goes on; commands turn it into
// a *DamagedError or one line. It prints nothing itself: whoever recovers
// the panic reports it once.
func (quietLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("pebble: "+format, args...))
}
