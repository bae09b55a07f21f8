package index

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/bbengine/bbengine/internal/crypt"
	"github.com/bbengine/bbengine/internal/safefile"
)

// errStaleDocs is readState's error for a state file of documents of
// another docVersion: Open starts such an index again.
var errStaleDocs = errors.New("index: documents of another version")

// stateName is the state file in the index directory.
const stateName = "state.jsonl"

// stateFormat and stateVersion are the state file's header values.
const (
	stateFormat  = "bbengine-index-state"
	stateVersion = 1
)

// stateHeader is the state file's first line.
type stateHeader struct {
	Format   string `json:"format"`
	Version  int    `json:"version"`
	Sessions int    `json:"sessions"`
	// Doc is the docVersion of the documents the index holds; a file
	// without it is older than doc/2.
	Doc string `json:"doc,omitempty"`
	// Clean says Close wrote the file: the Bluge files hold exactly
	// what it says, and its sums can be trusted. Open clears it on disk
	// before the index changes.
	Clean bool `json:"clean,omitempty"`
}

// sessionState is what the index holds of one session: one line of the
// state file.
type sessionState struct {
	Session string `json:"session"`
	// Digest is the MemoryState.Digest last applied.
	Digest string `json:"digest"`
	// Project is the MemoryState.Project last applied: every document of
	// the session has it in its project field.
	Project string `json:"project,omitempty"`
	// Tasks is the session's number of tasks (recency counts back from
	// it).
	Tasks int `json:"tasks"`
	// IDs are the ids of its indexed artifacts, sorted.
	IDs []string `json:"ids"`
	// Sums are the content sums of the documents of IDs, in the same
	// order (see sum); a file written before sums has none, and its
	// sessions are indexed whole the next time they change.
	Sums []Sum `json:"sums,omitempty"`
	// Store says the sums are a SumSource's (mixed by storeSum), not
	// sums of the documents: the two never compare equal.
	Store bool `json:"store,omitempty"`
}

// sumOf returns the sum recorded for id, or 0 when there is none.
func (s *sessionState) sumOf(id string) Sum {
	if s == nil || len(s.Sums) != len(s.IDs) {
		return 0
	}
	i, found := slices.BinarySearch(s.IDs, id)
	if !found {
		return 0
	}
	return s.Sums[i]
}

// Sum is the content sum of an artifact's document: 64 bits of xxhash,
// written in the state file as 16 hex digits. It is never 0.
type Sum uint64

// MarshalText returns the 16 hex digits of s.
func (s Sum) MarshalText() ([]byte, error) {
	return fmt.Appendf(nil, "%016x", uint64(s)), nil
}

// UnmarshalText reads 16 hex digits.
func (s *Sum) UnmarshalText(b []byte) error {
	if len(b) != 16 {
		return fmt.Errorf("sum %q: want 16 hex digits", b)
	}
	v, err := strconv.ParseUint(string(b), 16, 64)
	if err != nil {
		return fmt.Errorf("sum %q: want 16 hex digits", b)
	}
	*s = Sum(v)
	return nil
}

// readState reads the state file at path and whether Close wrote it. A
// missing file is an empty state. With keys the file is encrypted
// (internal/crypt's chunked shape, bound to the name state.jsonl), and
// a file that fails to authenticate is a *CorruptionError.
func readState(path string, keys *crypt.Keys) (map[string]*sessionState, bool, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]*sessionState{}, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("index: read state: %w", err)
	}
	if keys != nil {
		plain, err := crypt.ReadAll(data, keys, stateAAD, path)
		if err != nil {
			var ce *crypt.CorruptionError
			if errors.As(err, &ce) {
				return nil, false, &CorruptionError{File: path, Offset: ce.Offset, Err: err}
			}
			return nil, false, &CorruptionError{File: path, Err: err}
		}
		data = plain
	}
	return parseState(path, data)
}

// stateAAD is the associated data an encrypted state file's data key is
// bound to.
var stateAAD = []byte("bbengine index/1 " + stateName)

// parseState parses a state file's bytes; path names it in errors.
func parseState(path string, data []byte) (_ map[string]*sessionState, clean bool, _ error) {
	corrupt := func(off int, format string, args ...any) error {
		return &CorruptionError{File: path, Offset: int64(off), Err: fmt.Errorf(format, args...)}
	}
	lineErr := func(off int, err error) error {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return corrupt(off+int(se.Offset), "%v", err)
		case errors.As(err, &te):
			return corrupt(off+int(te.Offset), "%v", err)
		}
		return corrupt(off, "%v", err)
	}
	states := map[string]*sessionState{}
	var h stateHeader
	off, n := 0, 0
	for off < len(data) {
		end := bytes.IndexByte(data[off:], '\n')
		if end < 0 {
			return nil, false, corrupt(len(data), "last line has no newline (truncated file)")
		}
		line := data[off : off+end]
		if n == 0 {
			if err := json.Unmarshal(line, &h); err != nil {
				return nil, false, lineErr(off, err)
			}
			if h.Format != stateFormat {
				return nil, false, corrupt(off, "format %q, want %q", h.Format, stateFormat)
			}
			if h.Version != stateVersion {
				return nil, false, corrupt(off, "version %d, want %d", h.Version, stateVersion)
			}
			if h.Sessions < 0 {
				return nil, false, corrupt(off, "negative session count %d", h.Sessions)
			}
			if h.Doc != docVersion {
				return nil, false, fmt.Errorf("%w: %s holds documents %q, want %q", errStaleDocs, path, h.Doc, docVersion)
			}
		} else {
			if n > h.Sessions {
				return nil, false, corrupt(off, "more sessions than the header's %d", h.Sessions)
			}
			s := new(sessionState)
			if err := json.Unmarshal(line, s); err != nil {
				return nil, false, lineErr(off, err)
			}
			if s.Session == "" {
				return nil, false, corrupt(off, "session without a name")
			}
			if states[s.Session] != nil {
				return nil, false, corrupt(off, "session %q listed twice", s.Session)
			}
			if !slices.IsSorted(s.IDs) {
				return nil, false, corrupt(off, "ids of session %q are not sorted", s.Session)
			}
			if s.Sums != nil && len(s.Sums) != len(s.IDs) {
				return nil, false, corrupt(off, "session %q has %d sums for %d ids", s.Session, len(s.Sums), len(s.IDs))
			}
			states[s.Session] = s
		}
		off += end + 1
		n++
	}
	if n == 0 {
		return nil, false, corrupt(0, "empty file")
	}
	if n-1 != h.Sessions {
		return nil, false, corrupt(len(data), "%d sessions, the header says %d (truncated file)", n-1, h.Sessions)
	}
	return states, h.Clean, nil
}

// appendState appends the state file's bytes for states: the header
// (with clean), then one line per session in session order.
func appendState(dst []byte, states map[string]*sessionState, clean bool) ([]byte, error) {
	names := make([]string, 0, len(states))
	for name := range states {
		names = append(names, name)
	}
	slices.Sort(names)
	b, err := json.Marshal(stateHeader{Format: stateFormat, Version: stateVersion, Doc: docVersion, Sessions: len(names), Clean: clean})
	if err != nil {
		return nil, err
	}
	dst = append(append(dst, b...), '\n')
	for _, name := range names {
		b, err := json.Marshal(states[name])
		if err != nil {
			return nil, err
		}
		dst = append(append(dst, b...), '\n')
	}
	return dst, nil
}

// writeState replaces the state file in dir atomically: it writes a
// temporary file (encrypted under keys when they are set), syncs it,
// renames it over the old one and syncs dir.
func writeState(dir string, states map[string]*sessionState, clean bool, keys *crypt.Keys) error {
	data, err := appendState(nil, states, clean)
	if err != nil {
		return fmt.Errorf("index: encode state: %w", err)
	}
	path := filepath.Join(dir, stateName)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("index: write state: %w", err)
	}
	if keys == nil {
		_, err = f.Write(data)
	} else {
		var cw *crypt.Writer
		if cw, err = crypt.NewWriter(f, keys, cryptChunkLog, stateAAD); err == nil {
			if _, err = cw.Write(data); err == nil {
				err = cw.Close()
			}
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = safefile.SyncDir(dir)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("index: write state %s: %w", path, err)
	}
	return nil
}
