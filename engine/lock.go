package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/bbengine/bbengine/internal/private"
)

// lockName is the lock file in a data directory.
const lockName = "engine.lock"

// Holder describes the process that owns a data directory, as written in
// its lock file.
type Holder struct {
	PID int
	// Addr and Token reach the owner's query endpoint on loopback, when it
	// serves one (a running proxy does); both are empty otherwise.
	Addr  string
	Token string
	// Proxy is the address the owner's recording proxy listens on, when
	// it runs one (bbengine run sends its agent there).
	Proxy string
}

func (h Holder) encode() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "pid=%d\n", h.PID)
	if h.Addr != "" {
		fmt.Fprintf(&b, "addr=%s\ntoken=%s\n", h.Addr, h.Token)
	}
	if h.Proxy != "" {
		fmt.Fprintf(&b, "proxy=%s\n", h.Proxy)
	}
	return []byte(b.String())
}

func parseHolder(b []byte) Holder {
	var h Holder
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
		switch k {
		case "pid":
			h.PID, _ = strconv.Atoi(v)
		case "addr":
			h.Addr = v
		case "token":
			h.Token = v
		case "proxy":
			h.Proxy = v
		}
	}
	return h
}

// LockedError reports a data directory another process owns.
type LockedError struct {
	Path   string
	Holder Holder
}

func (e *LockedError) Error() string {
	who := "another process"
	if e.Holder.PID > 0 {
		who = fmt.Sprintf("process %d", e.Holder.PID)
	}
	return fmt.Sprintf("%v: %s holds %s", ErrLocked, who, e.Path)
}

func (e *LockedError) Unwrap() error { return ErrLocked }

// ReadHolder returns the owner recorded in dir's lock file and whether a
// process holds the lock now.
func ReadHolder(dir string) (Holder, bool, error) {
	path := filepath.Join(dir, lockName)
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return Holder{}, false, nil
	}
	if err != nil {
		return Holder{}, false, err
	}
	held, err := isLocked(path)
	return parseHolder(b), held, err
}

// dirLock is a held lock file.
type dirLock struct {
	f    *os.File
	path string
}

// lock takes dir's lock and records this process as its holder.
func lock(dir string) (*dirLock, error) {
	path := filepath.Join(dir, lockName)
	f, err := private.OpenFile(path, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, fmt.Errorf("engine: open %s: %w", path, err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("engine: lock %s: %w", path, err)
	}
	if !held {
		b, _ := os.ReadFile(path)
		f.Close()
		return nil, &LockedError{Path: path, Holder: parseHolder(b)}
	}
	l := &dirLock{f: f, path: path}
	if err := l.write(Holder{PID: os.Getpid()}); err != nil {
		l.close()
		return nil, err
	}
	return l, nil
}

// write records h: the new content first, then the file cut to its
// length, so a reader never sees an empty file while the lock is held.
func (l *dirLock) write(h Holder) error {
	b := h.encode()
	if _, err := l.f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("engine: write %s: %w", l.path, err)
	}
	if err := l.f.Truncate(int64(len(b))); err != nil {
		return fmt.Errorf("engine: write %s: %w", l.path, err)
	}
	return nil
}

// close clears the holder and releases the lock.
func (l *dirLock) close() error {
	if l == nil || l.f == nil {
		return nil
	}
	l.f.Truncate(0)
	err := l.f.Close() // closing the descriptor releases the flock
	l.f = nil
	return err
}

// Held is a data directory held by Lock.
type Held struct{ l *dirLock }

// Lock holds the data directory dir as an open engine does, for
// maintenance that must run with no proxy or engine in it (key retire).
// It fails with a *LockedError when another process holds it.
func Lock(dir string) (*Held, error) {
	l, err := lock(dir)
	if err != nil {
		return nil, err
	}
	return &Held{l}, nil
}

// Close releases the directory. It is safe to call twice.
func (h *Held) Close() error {
	if h.l == nil {
		return nil
	}
	l := h.l
	h.l = nil
	return l.close()
}
