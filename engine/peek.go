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
// look that writes nothing (bbengine doctor): it takes no lock of the
// directory, replays nothing into the store and derives nothing. What it
// reads is the state as of the last commit. A process that opens the
// engine meanwhile may find the store busy until Close; the caller opens
// a Peek only when no process holds the directory (ReadHolder). Safe for
// concurrent reads; Close it once done.
type Peek struct {
	db *pebble.DB
}

// OpenPeek opens the derived state of dir read-only, with keys when the
// directory is encrypted. A directory with no derived state is an error
// wrapping fs.ErrNotExist.
func OpenPeek(dir string, keys *crypt.Keys) (*Peek, error) {
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
		return nil, fmt.Errorf("engine: open %s read-only: %w", dbDir, err)
	}
	return &Peek{db: db}, nil
}

// hasManifest reports whether dbDir holds a Pebble manifest.
func hasManifest(dbDir string) bool {
	m, _ := filepath.Glob(filepath.Join(dbDir, "MANIFEST-*"))
	return len(m) > 0
}

// Applied returns the WAL offset up to which the derived state is built.
func (p *Peek) Applied() (uint64, error) {
	v, closer, err := p.db.Get(schema.KeyApplied)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("engine: read the applied offset: %w", err)
	}
	defer closer.Close()
	return schema.U64(v), nil
}

// ImportState returns the state of the imported file path, as
// Engine.ImportState.
func (p *Peek) ImportState(path string) (ImportFileState, bool, error) {
	var st ImportFileState
	b, closer, err := p.db.Get(schema.ImportFileKey(path))
	if errors.Is(err, pebble.ErrNotFound) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("engine: read the import state of %s: %w", path, err)
	}
	defer closer.Close()
	if err := json.Unmarshal(b, &st); err != nil {
		return st, false, fmt.Errorf("engine: decode the import state of %s: %w", path, err)
	}
	return st, true, nil
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
// another process removes under it is an error of the read.
type noLockFS struct{ vfs.FS }

func (noLockFS) Lock(string) (io.Closer, error) { return io.NopCloser(nil), nil }
