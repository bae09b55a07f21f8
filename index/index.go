package index

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blugelabs/bluge"
	blugeindex "github.com/blugelabs/bluge/index"
	"github.com/blugelabs/bluge/index/mergeplan"
	"github.com/cespare/xxhash/v2"

	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/internal/crypt"
	"github.com/bbengine/bbengine/internal/private"
)

// blugeName is the Bluge directory inside the index directory.
const blugeName = "bluge"

// Options configure an Index. The zero value of a field means its default.
type Options struct {
	// MaxBatch is the most documents (updates plus deletes) one Bluge
	// batch holds: Bluge's memory grows with the batch (blugelabs/bluge#89,
	// #146). The default is 500.
	MaxBatch int
	// MaxDocBytes caps the text analyzed for one artifact; longer text is
	// cut at a rune boundary. The default is 32 KiB.
	MaxDocBytes int
	// RecentTasks is how many of a session's latest tasks count as recent
	// for Search's recency boost. The default is 3.
	RecentTasks int
	// StateEvery is how often at most the state file is written while
	// the index changes: writing it fsyncs, and a state that is older
	// than the Bluge files is safe (see the package comment). Close
	// writes it. The default is 5 seconds.
	StateEvery time.Duration
	// Rebuild makes Open discard what dir holds (the Bluge files and the
	// state file, which is not read, so a corrupt one does not stop it)
	// and start empty; the caller then fills the index with Sync. The
	// default is false.
	Rebuild bool
	// Keys, when set, are the unlocked keys of an encrypted data
	// directory: Bluge's segments and snapshots and the state file are
	// written and read encrypted under them (cryptdir.go). Open refuses
	// an encrypted index without keys and an index in the clear with
	// them. The default is nil: an index in the clear.
	Keys *crypt.Keys
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	if r.MaxBatch <= 0 {
		r.MaxBatch = 500
	}
	if r.MaxDocBytes <= 0 {
		r.MaxDocBytes = 32 << 10
	}
	if r.RecentTasks <= 0 {
		r.RecentTasks = 3
	}
	if r.StateEvery <= 0 {
		r.StateEvery = 5 * time.Second
	}
	return r
}

// Index is a Bluge index of memory artifacts. See the package comment.
type Index struct {
	dir  string
	opts Options
	// changedApart counts the calls that changed the index apart from a
	// sync (Reset, Apply, Remove): see ChangedApart.
	changedApart atomic.Uint64

	// wmu serialises the writing methods (Apply, Remove, Sync, Reset) and
	// Close. A writing method reads states without mu: only holders of
	// wmu change it. It also guards verified, dirty and lastWrite.
	wmu sync.Mutex
	// verified holds the sessions whose entry in states is exactly what
	// Bluge holds, ids and sums: those applied by this process. The
	// state file may be older than the Bluge files (a crash between a
	// batch and the next state write), so a session read from it is
	// looked up in Bluge and indexed whole the first time it is applied.
	verified map[string]bool
	// dirty says states changed since the state file was written at
	// lastWrite.
	dirty     bool
	lastWrite time.Time
	// projects counts the sessions in states of each project.
	projects map[string]int
	// mu guards w, states, projects and closed. Search and Related hold it shared
	// for their whole run; Reset and Close hold it exclusively to replace
	// or close the writer, and writing methods briefly to change states.
	mu     sync.RWMutex
	w      *bluge.Writer
	states map[string]*sessionState
	closed bool

	// minCutoff is the common-terms cutoff's floor: the constant, but
	// for tests.
	minCutoff uint64
}

// Open opens the index in dir, creating it when it does not exist. nil
// opts means the defaults. A state file that cannot be read is a
// *CorruptionError; Options.Rebuild opens such an index empty. An index
// whose state file names another document version (docVersion, or none)
// is opened empty too: its documents are of another schema, and the
// next Sync makes them again.
func Open(dir string, opts *Options) (*Index, error) {
	o := opts.withDefaults()
	// The index holds text from prompts and tool outputs: owner-only,
	// like the rest of the data directory (Bluge creates its files 0600
	// and directories 0700; what an older version wrote is tightened).
	if err := private.MkdirAll(dir); err != nil {
		return nil, fmt.Errorf("index: open %s: %w", dir, err)
	}
	if err := private.Tighten(dir); err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	if o.Rebuild {
		if err := removeFiles(dir); err != nil {
			return nil, err
		}
	}
	// A state file a crash cut short before its rename is never read.
	if err := os.Remove(filepath.Join(dir, stateName+".tmp")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("index: %w", err)
	}
	if err := checkEncryption(dir, o.Keys); err != nil {
		return nil, err
	}
	states, clean, err := readState(filepath.Join(dir, stateName), o.Keys)
	if errors.Is(err, errStaleDocs) {
		// Documents of another docVersion: start empty, and the next
		// Sync indexes every session again.
		if err := removeFiles(dir); err != nil {
			return nil, err
		}
		states, clean, err = map[string]*sessionState{}, false, nil
	}
	if err != nil {
		return nil, err
	}
	// After a clean Close, Bluge holds exactly what the state says: its
	// sessions are verified. The file stops saying so before anything
	// can change, since the next state write may come after a crash.
	verified := map[string]bool{}
	if clean {
		if err := writeState(dir, states, false, o.Keys); err != nil {
			return nil, err
		}
		for name := range states {
			verified[name] = true
		}
	}
	w, err := openWriter(dir, o.Keys)
	if err != nil {
		return nil, err
	}
	x := &Index{dir: dir, opts: o, w: w, states: map[string]*sessionState{}, projects: map[string]int{}, verified: verified,
		lastWrite: time.Now(), minCutoff: minCutoff}
	for name, st := range states {
		x.setState(name, st)
	}
	return x, nil
}

// setState records st as the state of session, or forgets the session
// when st is nil, keeping projects. The caller holds mu, or owns x.
func (x *Index) setState(session string, st *sessionState) {
	if old := x.states[session]; old != nil && old.Project != "" {
		if x.projects[old.Project]--; x.projects[old.Project] <= 0 {
			delete(x.projects, old.Project)
		}
	}
	if st == nil {
		delete(x.states, session)
		return
	}
	x.states[session] = st
	if st.Project != "" {
		x.projects[st.Project]++
	}
}

// removeFiles removes the index's files from dir, leaving anything else.
func removeFiles(dir string) error {
	for _, name := range []string{blugeName, stateName, stateName + ".tmp"} {
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("index: remove %s: %w", name, err)
		}
	}
	return nil
}

// config returns the Bluge configuration of the index at path: BM25 (the
// correct one) for every field and the code analyzer for queries. d is
// the directory Bluge keeps its items in; nil means Bluge's own
// (FileSystemDirectory, in the clear).
func config(path string, d blugeindex.Directory) bluge.Config {
	cfg := defaultConfig(path, d)
	sim := NewBM25()
	cfg.DefaultSimilarity = sim
	// PerFieldSimilarity is also the map Bluge's norm function consults
	// at indexing time, so every field is listed.
	for _, f := range []string{fieldID, fieldType, fieldSession, fieldTask, fieldRun, fieldStatus,
		fieldTitle, fieldText, fieldFiles, fieldFile, fieldSymbols, fieldSymbol, fieldCommands,
		fieldErrors, fieldTime, fieldTaskN, fieldFlag, fieldSubject, fieldState, fieldContext,
		fieldProject, fieldReplaced} {
		cfg.PerFieldSimilarity[f] = sim
	}
	cfg.DefaultSearchAnalyzer = codeAnalyzer
	return cfg
}

// floorSegment is the merge policy's floor segment size, in documents:
// segments smaller than it count as this big when the tiered merge
// policy plans. Bluge's default, 2000, makes an index of fewer than
// 2000 documents merge into one segment after every batch, so each
// derivation pass of a session rewrote the whole index in the
// background (BenchmarkSyncTurn); with 100, small batches merge with
// each other and the big segments are rewritten once per tier.
const floorSegment = 100

// segmentsPerTier is how many segments of one size the merge policy lets
// an index hold, and how many one merge takes. Every search looks each
// query term up in every segment's dictionary of every text field,
// which was the largest part of a search at 100k artifacts: Bluge's 10
// left 21 segments there, 5 leaves about 10, at the price of merging
// about as often.
const segmentsPerTier = 5

// mergeOptions guards mergeplan.DefaultMergePlanOptions while
// defaultConfig changes it: Bluge's Config does not expose its merge
// options, and index.DefaultConfig copies that variable.
var mergeOptions sync.Mutex

// defaultConfig is bluge.DefaultConfig, or with d
// bluge.DefaultConfigWithDirectory, with floorSegment and
// segmentsPerTier.
func defaultConfig(path string, d blugeindex.Directory) bluge.Config {
	mergeOptions.Lock()
	defer mergeOptions.Unlock()
	saved := mergeplan.DefaultMergePlanOptions
	mergeplan.DefaultMergePlanOptions.FloorSegmentSize = floorSegment
	mergeplan.DefaultMergePlanOptions.MaxSegmentsPerTier = segmentsPerTier
	mergeplan.DefaultMergePlanOptions.SegmentsPerMergeTask = segmentsPerTier
	defer func() { mergeplan.DefaultMergePlanOptions = saved }()
	if d != nil {
		return bluge.DefaultConfigWithDirectory(func() blugeindex.Directory { return d })
	}
	return bluge.DefaultConfig(path)
}

// openWriter opens the Bluge writer of the index in dir, encrypted under
// keys when they are set.
func openWriter(dir string, keys *crypt.Keys) (*bluge.Writer, error) {
	path := filepath.Join(dir, blugeName)
	var cd *cryptDir
	var d blugeindex.Directory
	if keys != nil {
		cd = newCryptDir(path, keys)
		d = cd
	}
	var w *bluge.Writer
	err := guard("open", func() error {
		var err error
		w, err = bluge.OpenWriter(config(path, d))
		return err
	})
	if cd != nil {
		// Bluge skips a snapshot it cannot load and reports only that
		// none could be (see cryptDir): the item that failed is the
		// error.
		if lerr := cd.failed(); lerr != nil {
			if w != nil {
				guard("close", w.Close)
			}
			w, err = nil, lerr
		}
	}
	if err != nil {
		return nil, fmt.Errorf("index: open %s: %w; run `bbengine rebuild --index` to rebuild the index from the store", dir, err)
	}
	return w, nil
}

// Close closes the index. It waits for running calls; calls after it
// return ErrClosed. Closing twice is safe.
func (x *Index) Close() error {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil
	}
	x.closed = true
	err := guard("close", x.w.Close)
	x.w = nil
	if err != nil {
		return fmt.Errorf("index: close: %w", err)
	}
	// Bluge persisted every batch before Batch returned, and the writer
	// is closed: the state is exactly what Bluge holds.
	if err := writeState(x.dir, x.states, true, x.opts.Keys); err != nil {
		return err
	}
	x.dirty = false
	return nil
}

// Reset empties the index: it removes the Bluge files and the state file
// and starts again (bbengine rebuild --index, followed by Sync).
func (x *Index) Reset() error {
	x.changedApart.Add(1)
	x.wmu.Lock()
	defer x.wmu.Unlock()
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return ErrClosed
	}
	if err := guard("close", x.w.Close); err != nil {
		x.closed = true
		return fmt.Errorf("index: reset: %w", err)
	}
	x.w = nil
	x.states = map[string]*sessionState{}
	x.projects = map[string]int{}
	x.verified = map[string]bool{}
	x.dirty = false
	if err := removeFiles(x.dir); err != nil {
		x.closed = true
		return err
	}
	w, err := openWriter(x.dir, x.opts.Keys)
	if err != nil {
		x.closed = true
		return err
	}
	x.w = w
	return nil
}

// Source is where Sync reads memory from: the engine's store.
type Source interface {
	// MemoryStates returns the state of every session that has memory.
	MemoryStates() ([]engine.MemoryState, error)
	// Artifacts returns the artifacts of one session, with the user's
	// corrections (Forgotten, Pinned) merged in.
	Artifacts(session string) ([]engine.Artifact, error)
}

// SumSource is a Source that can sum what it holds of each artifact
// without decoding it (the engine's store: engine.ArtifactSums). Sync
// then reads with ArtifactsByID only the artifacts whose sum differs from
// the one the index recorded, which makes a pass of a long session cost
// what changed rather than the session.
type SumSource interface {
	Source
	// ArtifactSums returns the ids of a session's artifacts, sorted, and
	// a sum of each: equal sums mean equal artifacts.
	ArtifactSums(session string) (ids []string, sums []uint64, err error)
	// ArtifactsByID returns the artifacts with these ids, leaving out
	// those no longer held.
	ArtifactsByID(ids []string) ([]engine.Artifact, error)
}

// SyncStats says what Apply, Remove or Sync did.
type SyncStats struct {
	Applied   int // sessions indexed again
	Unchanged int // sessions whose digest matched
	Removed   int // sessions no longer listed, removed
	Docs      int // documents added or updated
	Skipped   int // documents whose content the index already held, not sent
	Deleted   int // documents deleted
	Batches   int // Bluge batches
}

// Apply makes the index hold exactly arts for session st.Session: it adds
// or updates every artifact and deletes the session's documents that are
// not among them, then records st in the state file. Every artifact must
// belong to st.Session and have a distinct id.
func (x *Index) Apply(st engine.MemoryState, arts []engine.Artifact) error {
	x.changedApart.Add(1)
	x.wmu.Lock()
	defer x.wmu.Unlock()
	if x.closed {
		return ErrClosed
	}
	b := x.newBatcher(nil)
	err := x.planSession(b, st, arts)
	return b.finish(err)
}

// Remove deletes every document of session and forgets the session.
func (x *Index) Remove(session string) error {
	x.changedApart.Add(1)
	x.wmu.Lock()
	defer x.wmu.Unlock()
	if x.closed {
		return ErrClosed
	}
	b := x.newBatcher(nil)
	err := x.planRemove(b, session)
	return b.finish(err)
}

// Sync brings the index up to date with src: it applies every session
// whose digest or project differs from the one the index recorded (or
// that it does not hold) and removes the sessions src no longer lists. Batches hold at
// most Options.MaxBatch documents; the state file is written after a
// batch at most once a second, and at the end. An error stops Sync; what
// was applied before it stays applied and recorded.
func (x *Index) Sync(src Source) (SyncStats, error) {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	var stats SyncStats
	if x.closed {
		return stats, ErrClosed
	}
	states, err := src.MemoryStates()
	if err != nil {
		return stats, fmt.Errorf("index: sync: memory states: %w", err)
	}
	listed, err := sessionsOf(states)
	if err != nil {
		return stats, err
	}
	states = slices.Clone(states)
	slices.SortFunc(states, func(a, b engine.MemoryState) int {
		if a.Session < b.Session {
			return -1
		}
		if a.Session > b.Session {
			return 1
		}
		return 0
	})
	b := x.newBatcher(&stats)
	var gone []string
	for name := range x.states {
		if !listed[name] {
			gone = append(gone, name)
		}
	}
	slices.Sort(gone)
	for _, name := range gone {
		if err := x.planRemove(b, name); err != nil {
			return stats, b.finish(err)
		}
		stats.Removed++
	}
	for _, st := range states {
		if err := x.planState(b, &stats, st, src); err != nil {
			return stats, b.finish(err)
		}
	}
	return stats, b.finish(nil)
}

// ChangedApart counts the calls that changed the index other than by
// syncing it (Reset, Apply, Remove). A reader that syncs only the
// sessions it knows changed (SyncSessions) syncs whole when it moved.
func (x *Index) ChangedApart() uint64 { return x.changedApart.Load() }

// SyncSessions is Sync for the given states only: it applies each
// whose digest or project differs from the one the index recorded, and
// removes nothing. A reader that knows which sessions' states changed
// (engine.MemoryChanges) syncs with it at the cost of those sessions,
// not of every session held.
func (x *Index) SyncSessions(src Source, states []engine.MemoryState) (SyncStats, error) {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	var stats SyncStats
	if x.closed {
		return stats, ErrClosed
	}
	if _, err := sessionsOf(states); err != nil {
		return stats, err
	}
	b := x.newBatcher(&stats)
	for _, st := range states {
		if err := x.planState(b, &stats, st, src); err != nil {
			return stats, b.finish(err)
		}
	}
	return stats, b.finish(nil)
}

// sessionsOf returns the set of the sessions of states, which must each
// name one, once.
func sessionsOf(states []engine.MemoryState) (map[string]bool, error) {
	listed := make(map[string]bool, len(states))
	for _, st := range states {
		if st.Session == "" {
			return nil, fmt.Errorf("%w: sync: a memory state without a session", ErrInvalid)
		}
		if listed[st.Session] {
			return nil, fmt.Errorf("%w: sync: session %s listed twice", ErrInvalid, st.Session)
		}
		listed[st.Session] = true
	}
	return listed, nil
}

// planState queues what brings session st.Session up to st: nothing
// when its digest and project are those recorded.
func (x *Index) planState(b *batcher, stats *SyncStats, st engine.MemoryState, src Source) error {
	if cur := x.states[st.Session]; cur != nil && st.Digest != "" && cur.Digest == st.Digest && cur.Project == st.Project {
		stats.Unchanged++
		return nil
	}
	var err error
	if ss, ok := src.(SumSource); ok {
		err = x.planSums(b, st, ss)
	} else {
		var arts []engine.Artifact
		if arts, err = src.Artifacts(st.Session); err != nil {
			err = fmt.Errorf("index: sync: artifacts of session %s: %w", st.Session, err)
		} else {
			err = x.planSession(b, st, arts)
		}
	}
	if err != nil {
		return err
	}
	stats.Applied++
	return nil
}

// planSession queues the batch operations that make the index hold
// exactly arts for st.Session, and the session's new state.
func (x *Index) planSession(b *batcher, st engine.MemoryState, arts []engine.Artifact) error {
	if st.Session == "" {
		return fmt.Errorf("%w: apply: memory state without a session", ErrInvalid)
	}
	ids := make([]string, len(arts))
	tasks := st.Tasks
	for i := range arts {
		a := &arts[i]
		switch {
		case a.ID == "":
			return fmt.Errorf("%w: apply %s: artifact %d has no id", ErrInvalid, st.Session, i)
		case a.Session != st.Session:
			return fmt.Errorf("%w: apply %s: artifact %s belongs to session %s", ErrInvalid, st.Session, a.ID, a.Session)
		case !a.Type.Valid():
			return fmt.Errorf("%w: apply %s: artifact %s has unknown type %q", ErrInvalid, st.Session, a.ID, a.Type)
		}
		ids[i] = a.ID
		tasks = max(tasks, a.TaskN)
	}
	order := make([]int, len(arts))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return strings.Compare(ids[i], ids[j]) })
	sorted := make([]string, len(arts))
	for k, i := range order {
		sorted[k] = ids[i]
	}
	for i := 1; i < len(sorted); i++ {
		if sorted[i] == sorted[i-1] {
			return fmt.Errorf("%w: apply %s: artifact %s given twice", ErrInvalid, st.Session, sorted[i])
		}
	}
	old, err := x.heldIDs(st.Session)
	if err != nil {
		return err
	}
	// What the index holds of a verified session is exactly its state:
	// an artifact whose sum is the one recorded is not sent again.
	var prev *sessionState
	if cur := x.states[st.Session]; x.verified[st.Session] && cur != nil && !cur.Store {
		prev = cur
	}
	sums := make([]Sum, len(arts))
	for k, i := range order {
		a := &arts[i]
		sums[k] = sum(a, st.Project, x.opts.MaxDocBytes)
		if prev != nil && prev.sumOf(a.ID) == sums[k] {
			b.stats.Skipped++
			continue
		}
		if err := b.add(op{doc: document(a, st.Project, x.opts.MaxDocBytes)}); err != nil {
			return err
		}
		b.stats.Docs++
	}
	for _, id := range old {
		if _, found := slices.BinarySearch(sorted, id); !found {
			if err := b.add(op{del: id}); err != nil {
				return err
			}
			b.stats.Deleted++
		}
	}
	b.commitAfter(st.Session, &sessionState{Session: st.Session, Digest: st.Digest, Project: st.Project, Tasks: tasks, IDs: sorted, Sums: sums})
	return nil
}

// planSums is planSession for a SumSource: it reads only the artifacts
// whose source sum (mixed with what document depends on, see storeSum)
// differs from the one recorded for a verified session.
func (x *Index) planSums(b *batcher, st engine.MemoryState, src SumSource) error {
	ids, srcSums, err := src.ArtifactSums(st.Session)
	if err != nil {
		return fmt.Errorf("index: sync: artifact sums of session %s: %w", st.Session, err)
	}
	if len(ids) != len(srcSums) || !slices.IsSorted(ids) {
		return fmt.Errorf("%w: sync %s: %d artifact sums for %d ids, or ids not sorted", ErrInvalid, st.Session, len(srcSums), len(ids))
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			return fmt.Errorf("%w: apply %s: artifact %s given twice", ErrInvalid, st.Session, ids[i])
		}
	}
	old, err := x.heldIDs(st.Session)
	if err != nil {
		return err
	}
	var prev *sessionState
	if cur := x.states[st.Session]; x.verified[st.Session] && cur != nil && cur.Store {
		prev = cur
	}
	sums := make([]Sum, len(ids))
	var changed []string
	for i, id := range ids {
		sums[i] = storeSum(srcSums[i], st.Project, x.opts.MaxDocBytes)
		if prev != nil && prev.sumOf(id) == sums[i] {
			b.stats.Skipped++
			continue
		}
		changed = append(changed, id)
	}
	arts, err := src.ArtifactsByID(changed)
	if err != nil {
		return fmt.Errorf("index: sync: artifacts of session %s: %w", st.Session, err)
	}
	tasks := st.Tasks
	if prev != nil {
		tasks = max(tasks, prev.Tasks)
	}
	got := make(map[string]bool, len(arts))
	for i := range arts {
		a := &arts[i]
		switch {
		case a.Session != st.Session:
			return fmt.Errorf("%w: apply %s: artifact %s belongs to session %s", ErrInvalid, st.Session, a.ID, a.Session)
		case !a.Type.Valid():
			return fmt.Errorf("%w: apply %s: artifact %s has unknown type %q", ErrInvalid, st.Session, a.ID, a.Type)
		case got[a.ID]:
			return fmt.Errorf("%w: apply %s: artifact %s given twice", ErrInvalid, st.Session, a.ID)
		}
		if _, found := slices.BinarySearch(changed, a.ID); !found {
			return fmt.Errorf("%w: apply %s: artifact %s was not asked for", ErrInvalid, st.Session, a.ID)
		}
		got[a.ID] = true
		tasks = max(tasks, a.TaskN)
		if err := b.add(op{doc: document(a, st.Project, x.opts.MaxDocBytes)}); err != nil {
			return err
		}
		b.stats.Docs++
	}
	// Changed ids the source no longer holds (memory moved on between
	// the two reads) are left out: the next sync sees them gone.
	keepIDs, keepSums := ids[:0:0], sums[:0:0]
	for i, id := range ids {
		if _, found := slices.BinarySearch(changed, id); found && !got[id] {
			continue
		}
		keepIDs, keepSums = append(keepIDs, id), append(keepSums, sums[i])
	}
	for _, id := range old {
		if _, found := slices.BinarySearch(keepIDs, id); !found {
			if err := b.add(op{del: id}); err != nil {
				return err
			}
			b.stats.Deleted++
		}
	}
	b.commitAfter(st.Session, &sessionState{Session: st.Session, Digest: st.Digest, Project: st.Project, Tasks: tasks, IDs: keepIDs, Sums: keepSums, Store: true})
	return nil
}

// storeSum is the Sum recorded for an artifact whose SumSource sum is s:
// s mixed with what document depends on besides the artifact (the
// session's project among it).
func storeSum(s uint64, project string, maxBytes int) Sum {
	h := xxhash.New()
	var buf [binary.MaxVarintLen64 + 8]byte
	h.Write(binary.LittleEndian.AppendUint64(buf[:0], s))
	h.WriteString(docVersion)
	h.Write(binary.AppendVarint(buf[:0], int64(maxBytes)))
	h.Write(binary.AppendVarint(buf[:0], int64(len(project))))
	h.WriteString(project)
	if v := Sum(h.Sum64()); v != 0 {
		return v
	}
	return 1
}

// planRemove queues the deletion of every document of session.
func (x *Index) planRemove(b *batcher, session string) error {
	old, err := x.heldIDs(session)
	if err != nil {
		return err
	}
	for _, id := range old {
		if err := b.add(op{del: id}); err != nil {
			return err
		}
		b.stats.Deleted++
	}
	b.commitAfter(session, nil)
	return nil
}

// heldIDs returns the ids the index holds for session, sorted: those the
// state lists and, unless the session is verified, those Bluge has, so
// that documents written by a batch whose state was never recorded (a
// crash between the two) are found too. The result must not be
// modified.
func (x *Index) heldIDs(session string) ([]string, error) {
	st := x.states[session]
	if x.verified[session] {
		if st == nil {
			return nil, nil
		}
		return st.IDs, nil
	}
	var ids []string
	if st != nil {
		ids = append(ids, st.IDs...)
	}
	held, err := x.blugeIDs(session)
	if err != nil {
		return nil, err
	}
	ids = append(ids, held...)
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// blugeIDs returns the ids of the documents Bluge holds for session, in
// no particular order.
func (x *Index) blugeIDs(session string) ([]string, error) {
	var ids []string
	err := x.withReader("session ids", func(r *bluge.Reader) error {
		req := bluge.NewAllMatches(bluge.NewTermQuery(session).SetField(fieldSession))
		it, err := r.Search(context.Background(), req)
		if err != nil {
			return err
		}
		for {
			m, err := it.Next()
			if err != nil {
				return err
			}
			if m == nil {
				return nil
			}
			err = m.VisitStoredFields(func(field string, value []byte) bool {
				if field == fieldID {
					ids = append(ids, string(value))
					return false
				}
				return true
			})
			if err != nil {
				return err
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("index: ids of session %s: %w", session, err)
	}
	return ids, nil
}

// withReader calls f with a reader of the index's current contents, and
// turns a panic in either into an error. The caller holds wmu or mu.
func (x *Index) withReader(op string, f func(r *bluge.Reader) error) error {
	return guard(op, func() error {
		r, err := x.w.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		return f(r)
	})
}

// op is one batch operation: an update of doc, or the deletion of del.
type op struct {
	doc *bluge.Document
	del string
}

// pending is a session state to record once the operations queued before
// it are in the index; st nil removes the session.
type pending struct {
	after   int
	session string
	st      *sessionState
}

// batcher collects batch operations, sends them to Bluge MaxBatch at a
// time, and records session states once their operations are in.
type batcher struct {
	x       *Index
	stats   *SyncStats
	ops     []op
	queued  int // operations ever queued
	sent    int // operations ever sent
	waiting []pending
	failed  bool // a batch failed
}

func (x *Index) newBatcher(stats *SyncStats) *batcher {
	if stats == nil {
		stats = new(SyncStats)
	}
	return &batcher{x: x, stats: stats}
}

func (b *batcher) add(o op) error {
	b.ops = append(b.ops, o)
	b.queued++
	if len(b.ops) >= b.x.opts.MaxBatch {
		return b.flush()
	}
	return nil
}

// commitAfter records st for session once every operation queued so far
// is in the index.
func (b *batcher) commitAfter(session string, st *sessionState) {
	b.waiting = append(b.waiting, pending{after: b.queued, session: session, st: st})
}

// flush sends the queued operations as one Bluge batch, then records the
// session states they complete, and writes the state file when
// Options.StateEvery has passed since it was last written.
func (b *batcher) flush() error {
	if len(b.ops) > 0 {
		bb := bluge.NewBatch()
		for _, o := range b.ops {
			if o.doc != nil {
				bb.Update(o.doc.ID(), o.doc)
			} else {
				bb.Delete(bluge.Identifier(o.del))
			}
		}
		if err := b.x.batch(bb); err != nil {
			b.failed = true
			// What Bluge holds of the sessions in the batch is unknown
			// now: look them up again.
			clear(b.x.verified)
			return err
		}
		b.sent += len(b.ops)
		clear(b.ops)
		b.ops = b.ops[:0]
		b.stats.Batches++
	}
	n := 0
	for n < len(b.waiting) && b.waiting[n].after <= b.sent {
		n++
	}
	if n > 0 {
		b.x.mu.Lock()
		for _, p := range b.waiting[:n] {
			b.x.setState(p.session, p.st)
			b.x.verified[p.session] = true
		}
		b.x.mu.Unlock()
		b.waiting = b.waiting[n:]
		b.x.dirty = true
	}
	if b.x.dirty && time.Since(b.x.lastWrite) >= b.x.opts.StateEvery {
		return b.x.writeState()
	}
	return nil
}

// writeState writes the state file. The caller holds wmu.
func (x *Index) writeState() error {
	if err := writeState(x.dir, x.states, false, x.opts.Keys); err != nil {
		return err
	}
	x.dirty = false
	x.lastWrite = time.Now()
	return nil
}

// finish sends what is queued; it returns err (the caller's) joined with
// its own. The queue holds only whole sessions' operations (a session is
// planned completely before the next error can occur), so it is sent even
// after the caller's error, unless a batch failed. The state file is
// written when Options.StateEvery has passed, or by Close.
func (b *batcher) finish(err error) error {
	if !b.failed {
		err = errors.Join(err, b.flush())
	}
	return err
}

// batch sends one Bluge batch, turning a panic into an error, including
// one the analyzer recovered in Bluge's analysis goroutines.
func (x *Index) batch(b *blugeindex.Batch) error {
	before := analyzerPanics.Load()
	err := guard("batch", func() error { return x.w.Batch(b) })
	if err == nil && analyzerPanics.Load() != before {
		err = &PanicError{Op: "analyze", Value: lastAnalyzerPanic.Load()}
	}
	if err != nil {
		return fmt.Errorf("index: batch: %w", err)
	}
	return nil
}

// Stats describe an index.
type Stats struct {
	Docs     uint64 // documents
	Sessions int    // sessions recorded in the state file
	Bytes    int64  // bytes of the index's files on disk
}

// Stats returns the index's document and session counts and its size on
// disk.
func (x *Index) Stats() (Stats, error) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var s Stats
	if x.closed {
		return s, ErrClosed
	}
	s.Sessions = len(x.states)
	err := x.withReader("count", func(r *bluge.Reader) error {
		var err error
		s.Docs, err = r.Count()
		return err
	})
	if err != nil {
		return s, fmt.Errorf("index: stats: %w", err)
	}
	err = filepath.WalkDir(x.dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // a segment merged away while we walked
			}
			return err
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				s.Bytes += info.Size()
			}
		}
		return nil
	})
	if err != nil {
		return s, fmt.Errorf("index: stats: %w", err)
	}
	return s, nil
}
