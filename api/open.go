package api

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	// Every agent registers its log importer with the engine: an engine
	// opened here derives the sessions imported from its logs.
	_ "github.com/bbengine/bbengine/agents/all"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/index"
	"github.com/bbengine/bbengine/internal/private"
	"github.com/bbengine/bbengine/wal"
)

// Open returns the service of the data directory dir: a client of the
// running proxy that owns it, or else the engine and index opened here,
// caught up with the WAL. write opens the WAL for corrections and notes.
// close releases what was opened.
func Open(ctx context.Context, dir string, write bool) (s Service, close func() error, err error) {
	if r := Dial(dir); r != nil {
		return r, func() error { return nil }, nil
	}
	return OpenLocal(ctx, dir, write)
}

// OpenReader is Open for the session queries alone (Sessions, Session,
// Events, Exchange, Breakers): opened here, it opens no index, so its
// memory operations fail.
func OpenReader(ctx context.Context, dir string) (s Service, close func() error, err error) {
	if r := Dial(dir); r != nil {
		return r, func() error { return nil }, nil
	}
	e, err := engine.Open(dir, nil)
	if err != nil {
		var le *engine.LockedError
		if errors.As(err, &le) {
			return nil, nil, fmt.Errorf("%w; it serves no queries (no endpoint in the lock file; a proxy may still be rebuilding), so stop it or retry later", err)
		}
		return nil, nil, err
	}
	if _, err := e.CatchUp(ctx); err != nil {
		e.Close()
		return nil, nil, err
	}
	return NewLocal(e, nil), e.Close, nil
}

// Dial returns a client of the proxy that owns dir, or nil when none
// does. A proxy that is starting holds the directory a moment before it
// writes its endpoint: Dial waits for that briefly.
func Dial(dir string) *Remote {
	for deadline := time.Now().Add(3 * time.Second); ; {
		h, held, err := engine.ReadHolder(dir)
		if err != nil || !held {
			return nil
		}
		if h.Addr != "" {
			return &Remote{Addr: h.Addr, Token: h.Token, PID: h.PID, Proxy: h.Proxy}
		}
		if time.Now().After(deadline) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// OpenLocal opens the engine and the index of dir here, holding the
// directory until the returned function closes them.
func OpenLocal(ctx context.Context, dir string, write bool) (*Local, func() error, error) {
	e, log, closeEL, err := OpenEngine(ctx, dir, write)
	if err != nil {
		return nil, nil, err
	}
	ix, err := index.Open(IndexDir(dir), &index.Options{Keys: e.Keys()})
	if err != nil {
		closeEL()
		return nil, nil, err
	}
	m := NewLocal(e, &LocalOptions{Index: ix, WAL: log})
	if err := m.sync(); err != nil {
		ix.Close()
		closeEL()
		return nil, nil, err
	}
	return m, func() error { return errors.Join(ix.Close(), closeEL()) }, nil
}

// OpenEngine opens the engine of dir in this process, caught up with the
// WAL, holding the directory until close; with write, the WAL is open
// for appending (log is nil without).
func OpenEngine(ctx context.Context, dir string, write bool) (e *engine.Engine, log *wal.Log, close func() error, err error) {
	var opts *engine.Options
	if write {
		if err := SecureDataDir(dir); err != nil {
			return nil, nil, nil, err
		}
		if log, err = wal.Open(filepath.Join(dir, "wal"), nil); err != nil {
			return nil, nil, nil, fmt.Errorf("open the WAL: %w", err)
		}
		opts = &engine.Options{WAL: log}
	}
	closeLog := func() error {
		if log != nil {
			return log.Close()
		}
		return nil
	}
	e, err = engine.Open(dir, opts)
	if err != nil {
		closeLog()
		var le *engine.LockedError
		if errors.As(err, &le) {
			return nil, nil, nil, fmt.Errorf("%w; it serves no queries (no endpoint in the lock file), so stop it or retry later", err)
		}
		return nil, nil, nil, err
	}
	if _, err := e.CatchUp(ctx); err != nil {
		e.Close()
		closeLog()
		return nil, nil, nil, err
	}
	return e, log, func() error { return errors.Join(e.Close(), closeLog()) }, nil
}

// SecureDataDir makes the data directory dir and its wal/ owner-only
// (package internal/private), creating them when missing.
func SecureDataDir(dir string) error {
	if _, err := private.Secure(dir); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	if err := private.MkdirAll(filepath.Join(dir, "wal")); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	return nil
}
