package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/bbengine/bbengine/engine/schema"
	"github.com/bbengine/bbengine/internal/crypt"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Peek is the derived state of a data directory opened read-only, for a
// look that writes nothing (bbengine doctor): it takes neither the
// directory's lock nor Pebble's, replays nothing into the store and
// derives nothing, so a process may open the engine while a Peek is
// open. What it reads is the state as OpenPeek found it: the last
// commit of the last process that held the directory.
//
// A process that opens the directory meanwhile writes under the Peek:
// its commits are not visible here (a read would lag behind it) and its
// compactions may remove files the Peek reads. So OpenPeek refuses a
// directory that is held, and every read checks the lock again after
// reading: when a process holds the directory, the read returns a
// *LockedError (wrapping ErrLocked) instead of a stale answer, and the
// caller asks the holder (ReadHolder) or tries again later. A read error
// while the directory is not held is one of the store itself. Safe for
// concurrent reads; Close it once done.
type Peek struct {
	dir string
	db  *pebble.DB
}

// OpenPeek opens the derived state of dir read-only, with keys when the
// directory is encrypted. A directory with no derived state is an error
// wrapping fs.ErrNotExist; one a process holds is a *LockedError.
func OpenPeek(dir string, keys *crypt.Keys) (*Peek, error) {
	if err := notHeld(dir); err != nil {
		return nil, err
	}
	dbDir := filepath.Join(dir, "db")
	if !hasManifest(dbDir) {
		return nil, fmt.Errorf("engine: no derived state in %s: %w", dbDir, fs.ErrNotExist)
	}
	if err := checkEncryption(dir, dbDir, keys); err != nil {
		return nil, err
	}
	fs := newOwnerFS(noLockFS{vfs.Default})
	if keys != nil {
		fs = newCryptFS(fs, keys)
	}
	o := &pebble.Options{FS: fs, ReadOnly: true, Logger: quietLogger{}, CacheSize: 1 << 20,
		EventListener: &pebble.EventListener{DataCorruption: func(pebble.DataCorruptionInfo) {}}}
	o.EnsureDefaults()
	db, err := pebble.Open(dbDir, o)
	if err != nil {
		if lerr := notHeld(dir); lerr != nil {
			return nil, lerr
		}
		return nil, fmt.Errorf("engine: open %s read-only: %w", dbDir, err)
	}
	p := &Peek{dir: dir, db: db}
	if err := notHeld(dir); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// notHeld returns a *LockedError when a process holds dir, or the error
// of reading its lock file.
func notHeld(dir string) error {
	h, held, err := ReadHolder(dir)
	if err != nil {
		return fmt.Errorf("engine: read the lock of %s: %w", dir, err)
	}
	if held {
		return &LockedError{Path: filepath.Join(dir, lockName), Holder: h}
	}
	return nil
}

// checked returns what a read of the store returned, or a *LockedError
// when a process holds the directory now: whatever was read may then
// be stale or torn, and so may the read's own error.
func (p *Peek) checked(err error) error {
	if lerr := notHeld(p.dir); lerr != nil {
		return lerr
	}
	return err
}

// hasManifest reports whether dbDir holds a Pebble manifest.
func hasManifest(dbDir string) bool {
	m, _ := filepath.Glob(filepath.Join(dbDir, "MANIFEST-*"))
	return len(m) > 0
}

// Applied returns the WAL offset up to which the derived state is built.
func (p *Peek) Applied() (uint64, error) {
	v, closer, err := p.db.Get(schema.KeyApplied)
	var applied uint64
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		err = nil
	case err != nil:
		err = fmt.Errorf("engine: read the applied offset: %w", err)
	default:
		applied = schema.U64(v)
		closer.Close()
	}
	if err := p.checked(err); err != nil {
		return 0, err
	}
	return applied, nil
}

// ImportState returns the state of the imported file path, as
// Engine.ImportState.
func (p *Peek) ImportState(path string) (ImportFileState, bool, error) {
	var st ImportFileState
	b, closer, err := p.db.Get(schema.ImportFileKey(path))
	found := err == nil
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		err = nil
	case err != nil:
		err = fmt.Errorf("engine: read the import state of %s: %w", path, err)
	default:
		err = json.Unmarshal(b, &st)
		closer.Close()
		if err != nil {
			err = fmt.Errorf("engine: decode the import state of %s: %w", path, err)
		}
	}
	if err := p.checked(err); err != nil {
		return ImportFileState{}, false, err
	}
	return st, found, nil
}

// Close closes the store. It is safe to call more than once.
func (p *Peek) Close() error {
	if p.db == nil {
		return nil
	}
	db := p.db
	p.db = nil
	return db.Close()
}

// noLockFS takes no lock of the store: Pebble's creates (truncates) the
// LOCK file, which is a write, and would keep a proxy starting meanwhile
// from opening the store. A Peek only reads; a file a compaction of
// another process removes under it fails a read, which Peek.checked
// then reports as the directory being held.
type noLockFS struct{ vfs.FS }

func (noLockFS) Lock(string) (io.Closer, error) { return io.NopCloser(nil), nil }
