package crypt

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bbengine/bbengine/internal/safefile"
)

// RewrapTarget is an encrypted file whose data key RewrapFiles re-wraps:
// its path and the AAD its header was made with.
type RewrapTarget struct {
	Path string
	AAD  []byte
}

// journalEntry is one line of a rewrap journal: a file and the header it
// gets.
type journalEntry struct {
	Path   string `json:"path"`
	Header string `json:"header"` // base64 of HeaderSize bytes
	// Salt is the file's salt (base64), which re-wrapping keeps: replay
	// writes the header only over the file it was made for, not over
	// another that took its name since.
	Salt string `json:"salt"`
}

// RewrapFiles re-wraps, by k's active generation, the data key of every
// target whose header is wrapped by generation gen; others are left
// alone. Only the 128-byte headers are rewritten, never the data. It is
// crash-safe through journal: every new header is computed and written
// to the journal (synced) before the first file is touched, and
// ReplayJournal, run before the files are next read, writes them all
// again. It returns how many files it re-wrapped. A target that no
// longer exists is skipped.
func RewrapFiles(journal string, k *Keys, gen uint32, targets []RewrapTarget) (int, error) {
	n, err := prepareRewrap(journal, k, gen, targets)
	if err != nil || n == 0 {
		return 0, err
	}
	if err := ReplayJournal(journal); err != nil {
		return 0, err
	}
	return n, nil
}

// prepareRewrap finishes an earlier journal, then writes the journal of
// a new rewrap without touching any file.
func prepareRewrap(journal string, k *Keys, gen uint32, targets []RewrapTarget) (int, error) {
	if err := ReplayJournal(journal); err != nil {
		return 0, err
	}
	var entries []journalEntry
	for _, t := range targets {
		b, err := readHeader(t.Path)
		short := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if errors.Is(err, fs.ErrNotExist) || (short && !IsEncrypted(b)) {
			continue // gone, or too short to be encrypted (a lock file)
		}
		if err != nil {
			return 0, err
		}
		if !IsEncrypted(b) {
			continue // a file kept in the clear
		}
		h, err := ParseHeader(b)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", t.Path, err)
		}
		if h.Gen != gen {
			continue
		}
		if err := h.Rewrap(k, t.AAD); err != nil {
			return 0, fmt.Errorf("%s: re-wrap the data key: %w", t.Path, err)
		}
		entries = append(entries, journalEntry{Path: t.Path, Header: base64.StdEncoding.EncodeToString(h.Append(nil)), Salt: base64.StdEncoding.EncodeToString(h.Salt[:])})
	}
	if len(entries) == 0 {
		return 0, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, e := range entries {
		if err := enc.Encode(e); err != nil {
			return 0, err
		}
	}
	if err := safefile.WriteFileSynced(journal, buf.Bytes(), 0o600); err != nil {
		return 0, fmt.Errorf("rewrap journal: %w", err)
	}
	return len(entries), nil
}

// ReplayJournal writes every header a rewrap journal holds into its file
// (one write at offset 0, synced), then removes the journal. Headers in
// the journal are complete and valid under the key set that made them,
// so replaying is idempotent. A missing journal is nothing to do.
func ReplayJournal(journal string) error {
	f, err := os.Open(journal)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	line := 0
	var entries []journalEntry
	for sc.Scan() {
		line++
		var e journalEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// A journal is synced whole before any header is written:
			// a torn journal means no file was touched yet.
			return removeSynced(journal)
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", journal, err)
	}
	for i, e := range entries {
		h, err := base64.StdEncoding.DecodeString(e.Header)
		if err != nil || len(h) != HeaderSize {
			return fmt.Errorf("%s:%d: bad header", journal, i+1)
		}
		if _, err := ParseHeader(h); err != nil {
			return fmt.Errorf("%s:%d: %w", journal, i+1, err)
		}
		// The salt (bytes 16-31) is the same in the old header and the
		// new, so even a header torn by a crash shows it.
		cur, err := readHeader(e.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if len(cur) < 32 || base64.StdEncoding.EncodeToString(cur[16:32]) != e.Salt {
			continue // another file has the name now
		}
		if err := writeHeader(e.Path, h); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s:%d: %w", journal, i+1, err)
		}
	}
	f.Close()
	return removeSynced(journal)
}

func readHeader(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, HeaderSize)
	if n, err := f.ReadAt(b, 0); err != nil {
		return b[:n], fmt.Errorf("%s: read the header: %w", path, err)
	}
	return b, nil
}

// writeHeader writes header h over path's. A file with other names (a
// backup's hard link to a blob, a checkpoint's to a table) is copied
// under the new header and renamed over path instead: writing in place
// would re-wrap the backup's copy too, by a generation its own keys.json
// does not hold.
func writeHeader(path string, h []byte) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if links(fi) > 1 {
		return copyWithHeader(path, h, fi.Mode().Perm())
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteAt(h, 0)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: write the header: %w", path, err)
	}
	return nil
}

func removeSynced(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return safefile.SyncDir(filepath.Dir(path))
}

// copyWithHeader replaces path by a copy of it whose first HeaderSize
// bytes are h: written to a temporary file beside it, synced, renamed
// over path, and the directory synced. Other names of the old file keep
// the old content.
func copyWithHeader(path string, h []byte, perm os.FileMode) error {
	in, err := os.Open(path)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(path), ".rewrap-*")
	if err != nil {
		return fmt.Errorf("%s: re-wrap: %w", path, err)
	}
	_, err = tmp.Write(h)
	if err == nil {
		_, err = in.Seek(HeaderSize, io.SeekStart)
	}
	if err == nil {
		_, err = io.Copy(tmp, in)
	}
	if err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: re-wrap a copy: %w", path, err)
	}
	return safefile.SyncDir(filepath.Dir(path))
}
