package engine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/bbengine/bbengine/engine/schema"
	"github.com/bbengine/bbengine/internal/safefile"
	"github.com/bbengine/bbengine/wal"
)

// Retention of raw capture. The WAL is the only truth, but a user may cap
// it by age and size (Retention). Raw frames then go, oldest first; what
// was derived from them stays. Before any segment goes, the engine takes
// a snapshot of the derived state (a Pebble checkpoint of the derived key
// families, <dir>/snapshot) and removes only segments that end before
// the point derivation would resume from in that snapshot. Rebuild
// starts from the snapshot and derives the rest of the WAL, as the engine
// does when it reopens after a crash, so what the snapshot holds is never
// lost and the result is the incremental one. The ranges removed, with
// when, are kept in <dir>/expired.json, so that an event whose frames
// are gone says so.

// Retention is what a user keeps of the raw capture and of memory
// (retention: in bbengine.yaml, the --retention-* flags,
// BBENGINE_RETENTION_*). Zero values keep everything.
type Retention struct {
	// RawAge removes WAL segments last written longer ago than this.
	RawAge time.Duration
	// RawBytes removes the oldest WAL segments while the WAL is larger.
	RawBytes int64
	// MemoryAge forgets the memory of sessions whose last activity is
	// older than this (forget corrections in the WAL, so a rebuild keeps
	// them forgotten). Pinned sessions are kept.
	MemoryAge time.Duration
}

// Off reports whether r keeps everything.
func (r Retention) Off() bool { return r.RawAge <= 0 && r.RawBytes <= 0 && r.MemoryAge <= 0 }

// ExpiredRange is a stretch of the WAL that retention removed.
type ExpiredRange struct {
	From uint64    `json:"from"`
	To   uint64    `json:"to"`
	At   time.Time `json:"at"`
}

// ExpiredSegment is a WAL segment retention removed or would remove.
type ExpiredSegment struct {
	Path     string    `json:"path"`
	From     uint64    `json:"from"`
	To       uint64    `json:"to"`
	Bytes    int64     `json:"bytes"`
	Modified time.Time `json:"modified"`
}

// ExpireReport says what ExpireRaw removed, or would remove.
type ExpireReport struct {
	DryRun bool      `json:"dry_run"`
	At     time.Time `json:"at"`
	// WALBytes is the WAL's size before; Segments the segments removed
	// (or that would be) and Freed their bytes.
	WALBytes int64            `json:"wal_bytes"`
	Segments []ExpiredSegment `json:"segments"`
	Freed    int64            `json:"freed"`
	// Waiting are segments the policy selects that derivation has not
	// passed yet: they go once it has.
	Waiting []ExpiredSegment `json:"waiting,omitempty"`
	// Active is the size of the segment being written, which retention
	// never removes (it goes once sealed: bbengine proxy
	// --wal-segment-size).
	Active int64 `json:"active"`
}

const (
	snapshotDir = "snapshot"
	expiredFile = "expired.json"
)

// ErrSnapshotSchema is returned by Rebuild when the snapshot of derived
// state that retention took was written by another schema version.
var ErrSnapshotSchema = errors.New("engine: the snapshot of expired raw frames was written by another schema version")

// ExpireRaw removes the WAL segments r selects at now (by RawAge and
// RawBytes; pinned sessions' segments and the active segment stay),
// after taking a snapshot of the derived state, and only those that end
// before the point derivation resumes from in it. With dryRun it changes
// nothing and reports what would go. It may run beside Follow: the
// snapshot is a consistent checkpoint, and the derived state only moves
// forward.
func (e *Engine) ExpireRaw(ctx context.Context, r Retention, now time.Time, dryRun bool) (ExpireReport, error) {
	rep := ExpireReport{DryRun: dryRun, At: now, Segments: []ExpiredSegment{}}
	if e.isClosed() {
		return rep, ErrClosed
	}
	if r.RawAge <= 0 && r.RawBytes <= 0 {
		return rep, nil
	}
	if !dryRun {
		e.retainMu.Lock()
		defer e.retainMu.Unlock()
	}
	if err := e.pinRetention(); err != nil {
		return rep, err
	}
	if err := e.pinImports(); err != nil {
		return rep, err
	}
	policy := wal.Policy{Age: r.RawAge, Bytes: r.RawBytes, Upto: math.MaxUint64}
	plan, total := e.log.Expirable(policy, now)
	rep.WALBytes, rep.Active = total, e.log.ActiveSize()
	if len(plan) == 0 {
		return rep, nil
	}
	var upto uint64
	if dryRun {
		var err error
		if upto, err = resumePoint(e.db); err != nil {
			return rep, err
		}
	} else {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		var err error
		if upto, err = e.snapshot(); err != nil {
			return rep, err
		}
	}
	var drop []wal.Segment
	for _, s := range plan {
		if s.End <= upto {
			drop = append(drop, s)
		} else {
			rep.Waiting = append(rep.Waiting, segmentOf(s))
		}
	}
	if dryRun || len(drop) == 0 {
		for _, s := range drop {
			rep.Segments = append(rep.Segments, segmentOf(s))
			rep.Freed += s.Size
		}
		return rep, nil
	}
	// Say what goes before it goes: a crash in between leaves a record
	// of a range still present, which reads as present.
	ranges, err := e.Expired()
	if err != nil {
		return rep, err
	}
	for _, s := range drop {
		ranges = append(ranges, ExpiredRange{From: s.Base, To: s.End, At: now.UTC()})
	}
	if err := writeExpired(e.dir, ranges); err != nil {
		return rep, err
	}
	policy.Upto = drop[len(drop)-1].End
	removed, err := e.log.Expire(policy, now)
	for _, s := range drop {
		if slices.Contains(removed, s.Path) {
			rep.Segments = append(rep.Segments, segmentOf(s))
			rep.Freed += s.Size
		}
	}
	if err != nil {
		return rep, fmt.Errorf("engine: retention: %w", err)
	}
	return rep, nil
}

func segmentOf(s wal.Segment) ExpiredSegment {
	return ExpiredSegment{Path: s.Path, From: s.Base, To: s.End, Bytes: s.Size, Modified: s.ModTime.UTC()}
}

// pinImports keeps the WAL frames of every imported file from retention:
// a file that grows (a session resumed) is derived again from all its
// records, which are read back from the WAL (engine/derive/importcanon.go).
func (e *Engine) pinImports() error {
	return e.scan([]byte{schema.PrefixImportFile}, func(k, v []byte) error {
		var st ImportFileState
		if err := json.Unmarshal(v, &st); err != nil {
			return fmt.Errorf("engine: decode import state %q: %w", k[1:], err)
		}
		first, last := uint64(math.MaxUint64), uint64(0)
		for _, r := range st.Runs {
			first, last = min(first, r.Start), max(last, r.Last)
		}
		if last >= first {
			e.log.Pin("import:"+string(k[1:]), first, last)
		}
		return nil
	})
}

// WithoutRetention runs fn while no retention run removes anything or
// replaces the snapshot: a backup copies the WAL, the snapshot and the
// record of what expired as one.
func (e *Engine) WithoutRetention(fn func() error) error {
	e.retainMu.Lock()
	defer e.retainMu.Unlock()
	return fn()
}

// RetentionFiles returns the files under the data directory that
// retention wrote (the snapshot of derived state and the record of the
// ranges it removed), relative to it, sorted; none when it never
// removed anything. Call it within WithoutRetention to copy them.
func (e *Engine) RetentionFiles() ([]string, error) {
	var out []string
	if _, err := os.Stat(filepath.Join(e.dir, expiredFile)); err == nil {
		out = append(out, expiredFile)
	}
	err := filepath.WalkDir(filepath.Join(e.dir, snapshotDir), func(p string, d os.DirEntry, err error) error {
		if errors.Is(err, os.ErrNotExist) {
			return filepath.SkipAll
		}
		if err != nil || !d.Type().IsRegular() || d.Name() == "LOCK" {
			return err
		}
		rel, err := filepath.Rel(e.dir, p)
		out = append(out, filepath.ToSlash(rel))
		return err
	})
	slices.Sort(out)
	return out, err
}

// Expired returns the WAL ranges retention removed, oldest first.
func (e *Engine) Expired() ([]ExpiredRange, error) { return readExpired(e.dir) }

// ExpiredIn returns the WAL ranges retention removed from the data
// directory dir, oldest first: what the WAL no longer holds, and when it
// went. A range whose segment is still there (a crash came between the
// record and the removal, or the removal failed) is left out.
func ExpiredIn(dir string) ([]ExpiredRange, error) {
	rs, err := readExpired(dir)
	if err != nil {
		return nil, err
	}
	out := rs[:0]
	for _, r := range rs {
		if _, err := os.Stat(filepath.Join(dir, "wal", fmt.Sprintf("%016x.wal", r.From))); errors.Is(err, os.ErrNotExist) {
			out = append(out, r)
		}
	}
	return out, nil
}

// ExpiredAt returns when retention removed the WAL frame at offset off,
// and false when it did not.
func (e *Engine) ExpiredAt(off uint64) (time.Time, bool) {
	rs, err := ExpiredIn(e.dir)
	if err != nil {
		return time.Time{}, false
	}
	for _, r := range rs {
		if off >= r.From && off < r.To {
			return r.At, true
		}
	}
	return time.Time{}, false
}

func readExpired(dir string) ([]ExpiredRange, error) {
	path := filepath.Join(dir, expiredFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	var rs []ExpiredRange
	if err := json.Unmarshal(b, &rs); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("engine: %s: at byte %d: %v (retention's record of the WAL ranges it removed)", path, se.Offset, err)
		}
		return nil, fmt.Errorf("engine: %s: %v (retention's record of the WAL ranges it removed)", path, err)
	}
	return rs, nil
}

func writeExpired(dir string, rs []ExpiredRange) error {
	slices.SortFunc(rs, func(a, b ExpiredRange) int {
		if a.From != b.From {
			if a.From < b.From {
				return -1
			}
			return 1
		}
		return 0
	})
	rs = slices.CompactFunc(rs, func(a, b ExpiredRange) bool { return a.From == b.From })
	b, err := json.MarshalIndent(rs, "", "  ")
	if err != nil {
		return err
	}
	if err := safefile.WriteFileSynced(filepath.Join(dir, expiredFile), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("engine: record expired ranges: %w", err)
	}
	return nil
}

// snapshot replaces <dir>/snapshot with a checkpoint of the derived
// state and returns the WAL offset derivation resumes from in it.
func (e *Engine) snapshot() (uint64, error) {
	final := filepath.Join(e.dir, snapshotDir)
	tmp := final + ".new"
	old := final + ".old"
	if err := os.RemoveAll(tmp); err != nil {
		return 0, fmt.Errorf("engine: snapshot: %w", err)
	}
	// The derived state may cover WAL bytes not synced yet; a power cut
	// would leave the snapshot past the WAL's end. Sync first.
	if err := e.log.Sync(); err != nil {
		return 0, fmt.Errorf("engine: snapshot: sync the WAL: %w", err)
	}
	// A store that lacks what the WAL no longer holds (a new or a set
	// aside one) must not replace the snapshot that has it.
	if live, err := resumePoint(e.db); err != nil {
		return 0, err
	} else if first, ferr := e.log.First(); ferr == nil && live < first {
		return 0, fmt.Errorf("engine: snapshot: the derived state starts at WAL offset %d, after the WAL's first frame was removed (%d): run bbengine rebuild, which starts from the snapshot %s", live, first, final)
	}
	// The store holds derived state only: the snapshot is a checkpoint
	// of it, taken between commits as a backup's is.
	if _, err := e.Checkpoint(tmp); err != nil {
		os.RemoveAll(tmp)
		return 0, fmt.Errorf("engine: snapshot of derived state: %w", err)
	}
	upto, err := snapshotResume(tmp, e.popts)
	if err != nil {
		os.RemoveAll(tmp)
		return 0, err
	}
	// Swap: the old snapshot is kept until the new one is in place.
	if err := os.RemoveAll(old); err != nil {
		return 0, fmt.Errorf("engine: snapshot: %w", err)
	}
	if err := os.Rename(final, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("engine: snapshot: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Rename(old, final)
		return 0, fmt.Errorf("engine: snapshot: %w", err)
	}
	if err := safefile.SyncDir(e.dir); err != nil {
		return 0, fmt.Errorf("engine: snapshot: %w", err)
	}
	os.RemoveAll(old)
	return upto, nil
}

// recoverSnapshot finishes a snapshot swap a crash interrupted: the old
// snapshot comes back when the new one is not in place, and a half
// written one goes.
func recoverSnapshot(dir string) {
	final := filepath.Join(dir, snapshotDir)
	os.RemoveAll(final + ".new")
	if _, err := os.Stat(final); errors.Is(err, os.ErrNotExist) {
		os.Rename(final+".old", final)
	}
	os.RemoveAll(final + ".old")
}

// openSnapshot opens the snapshot at path read-only, or returns nil when
// there is none.
func openSnapshot(path string, po *pebble.Options) (*pebble.DB, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	o := po.Clone()
	o.ReadOnly = true
	o.EnsureDefaults()
	db, err := pebble.Open(path, o)
	if err != nil {
		return nil, fmt.Errorf("engine: open the snapshot of derived state %s: %w", path, err)
	}
	return db, nil
}

// snapshotResume returns the WAL offset derivation resumes from in the
// snapshot at path.
func snapshotResume(path string, po *pebble.Options) (uint64, error) {
	db, err := openSnapshot(path, po)
	if err != nil {
		return 0, err
	}
	if db == nil {
		return 0, fmt.Errorf("engine: no snapshot at %s", path)
	}
	defer db.Close()
	return resumePoint(db)
}

// resumePoint returns where derivation of the store db resumes: its
// applied offset, or the first frame of an exchange still open.
func resumePoint(db pebble.Reader) (uint64, error) {
	v, closer, err := db.Get(schema.KeyApplied)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("engine: read the applied offset: %w", err)
	}
	off := schema.U64(v)
	closer.Close()
	it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{schema.PrefixOpen}, UpperBound: []byte{schema.PrefixOpen + 1}})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		if first := schema.U64(it.Value()); first < off {
			off = first
		}
	}
	return off, it.Error()
}

// checkSnapshot returns an error when there is a snapshot this build
// cannot read.
func (e *Engine) checkSnapshot() error {
	path := filepath.Join(e.dir, snapshotDir)
	db, err := openSnapshot(path, e.popts)
	if err != nil || db == nil {
		return err
	}
	defer db.Close()
	return snapshotSchema(db, path)
}

// snapshotSchema returns an error when the snapshot db at path was
// written by another schema version.
func snapshotSchema(db *pebble.DB, path string) error {
	v, closer, err := db.Get(schema.KeySchema)
	if err != nil {
		return fmt.Errorf("engine: the snapshot of derived state %s: read its schema version: %w", path, err)
	}
	defer closer.Close()
	if len(v) != 4 || !schema.ReadsSchema(binary.BigEndian.Uint32(v)) {
		return fmt.Errorf("%w (%x; this build reads %d): %s", ErrSnapshotSchema, v, SchemaVersion, path)
	}
	return nil
}

// snapshotMemory returns the memory version of the snapshot's artifacts,
// "" when there is no snapshot.
func (e *Engine) snapshotMemory() (string, error) {
	db, err := openSnapshot(filepath.Join(e.dir, snapshotDir), e.popts)
	if err != nil || db == nil {
		return "", err
	}
	defer db.Close()
	v, closer, err := db.Get(schema.KeyMemory)
	if errors.Is(err, pebble.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer closer.Close()
	return string(v), nil
}

// restoreSnapshot copies the derived families of the snapshot, if there
// is one, into the store. It returns false when there is none.
func (e *Engine) restoreSnapshot() (bool, error) {
	path := filepath.Join(e.dir, snapshotDir)
	db, err := openSnapshot(path, e.popts)
	if err != nil || db == nil {
		return false, err
	}
	defer db.Close()
	if err := snapshotSchema(db, path); err != nil {
		return false, err
	}
	b := e.db.NewBatch()
	defer func() { b.Close() }()
	for _, p := range schema.DerivedPrefixes {
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: []byte{p}, UpperBound: []byte{p + 1}})
		if err != nil {
			return false, err
		}
		for it.First(); it.Valid(); it.Next() {
			if err := b.Set(it.Key(), it.Value(), nil); err != nil {
				it.Close()
				return false, err
			}
			if b.Len() > 4<<20 {
				if err := b.Commit(pebble.NoSync); err != nil {
					it.Close()
					return false, err
				}
				b.Close()
				b = e.db.NewBatch()
			}
		}
		if err := it.Close(); err != nil {
			return false, fmt.Errorf("engine: read the snapshot %s: %w", path, err)
		}
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return false, err
	}
	return true, nil
}
