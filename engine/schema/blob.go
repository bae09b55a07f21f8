package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/bbengine/bbengine/internal/private"
)

// Blobs is a content-addressed store of large outputs under a data
// directory: <dir>/blobs/sha256/<first two hex digits>/<hex digest>.
// Blobs are written once (to a temporary file, then renamed) and never
// change, so any number of processes may read and write the store at once.
type Blobs struct{ dir string }

// NewBlobs returns the blob store of data directory dir.
func NewBlobs(dir string) *Blobs { return &Blobs{dir: filepath.Join(dir, "blobs", "sha256")} }

// NewBlobsAt returns a blob store rooted at dir itself (bbengine convert's
// .bbox-blobs folder beside its output): <dir>/sha256/ab/abcdef….
func NewBlobsAt(dir string) *Blobs { return &Blobs{dir: filepath.Join(dir, "sha256")} }

// Path returns the file of the blob with hex digest sum.
func (b *Blobs) Path(sum string) string {
	if len(sum) < 2 {
		return filepath.Join(b.dir, sum)
	}
	return filepath.Join(b.dir, sum[:2], sum)
}

// Put stores data and returns its SHA-256 as hex.
func (b *Blobs) Put(data []byte) (string, error) {
	h := sha256.Sum256(data)
	sum := hex.EncodeToString(h[:])
	path := b.Path(sum)
	if _, err := os.Stat(path); err == nil {
		touch(path)
		return sum, nil
	}
	if err := private.MkdirAll(filepath.Dir(path)); err != nil {
		return "", fmt.Errorf("engine: blob store: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return "", fmt.Errorf("engine: blob store: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("engine: blob store: write %s: %w", path, err)
	}
	return sum, nil
}

// PutString stores text, written in pieces (a long text is never copied
// whole), and returns its SHA-256 as hex.
func (b *Blobs) PutString(text string) (string, error) {
	w, err := b.Create()
	if err != nil {
		return "", err
	}
	for s := text; len(s) > 0; {
		n := min(len(s), 64<<10)
		if _, err := io.WriteString(w, s[:n]); err != nil {
			w.Abort()
			return "", err
		}
		s = s[n:]
	}
	return w.Commit()
}

// touch sets the modification time of a blob stored again to now: blob
// gc (engine.GCBlobs) keeps a blob younger than its grace period, which
// the event about to name it needs when the blob was there already.
func touch(path string) {
	now := time.Now()
	os.Chtimes(path, now, now)
}

// Get returns the blob with hex digest sum.
func (b *Blobs) Get(sum string) ([]byte, error) {
	data, err := os.ReadFile(b.Path(sum))
	if err != nil {
		return nil, fmt.Errorf("engine: blob %s: %w", sum, err)
	}
	return data, nil
}

// Create returns a writer of a new blob whose content is not known yet:
// it is written to a temporary file in the store, hashed as it goes, and
// named by its digest on Commit. It implements llm.Spill, so a response
// decoder streams a long text into the store without holding it.
func (b *Blobs) Create() (*BlobWriter, error) {
	if err := private.MkdirAll(b.dir); err != nil {
		return nil, fmt.Errorf("engine: blob store: %w", err)
	}
	f, err := os.CreateTemp(b.dir, ".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("engine: blob store: %w", err)
	}
	return &BlobWriter{b: b, f: f, h: sha256.New()}, nil
}

// BlobWriter writes one blob; see Blobs.Create. Exactly one of Commit
// and Abort must be called.
type BlobWriter struct {
	b   *Blobs
	f   *os.File
	h   hash.Hash
	n   int64
	err error
}

// Write appends p to the blob. A write error is sticky and returned by
// Commit too.
func (w *BlobWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.f.Write(p)
	w.h.Write(p[:n])
	w.n += int64(n)
	if err != nil {
		w.err = fmt.Errorf("engine: blob store: write %s: %w", w.f.Name(), err)
	}
	return n, w.err
}

// Commit closes the blob and moves it to its place; it returns the hex
// SHA-256 of its content. A blob the store holds already is kept as it is.
func (w *BlobWriter) Commit() (string, error) {
	name := w.f.Name()
	err := w.err
	if cerr := w.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("engine: blob store: write %s: %w", name, cerr)
	}
	if err != nil {
		os.Remove(name)
		return "", err
	}
	sum := hex.EncodeToString(w.h.Sum(nil))
	path := w.b.Path(sum)
	if _, err := os.Stat(path); err == nil {
		os.Remove(name)
		touch(path)
		return sum, nil
	}
	if err := private.MkdirAll(filepath.Dir(path)); err != nil {
		os.Remove(name)
		return "", fmt.Errorf("engine: blob store: %w", err)
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return "", fmt.Errorf("engine: blob store: %w", err)
	}
	return sum, nil
}

// Abort drops the blob.
func (w *BlobWriter) Abort() {
	w.f.Close()
	os.Remove(w.f.Name())
}

// MarkBlobTexts returns events with the text of each event whose text is
// a blob (Event.TextBlob) ended by a line that says where the rest is,
// for formats that have no blob references of their own (ATIF,
// trajectory, rlog): "[… 209715200 bytes in all: blob sha256=…]". The
// events are copied only when one changes.
func MarkBlobTexts(events []Event) []Event {
	var out []Event
	for i := range events {
		if events[i].TextBlob == "" {
			continue
		}
		if out == nil {
			out = slices.Clone(events)
		}
		ev := &out[i]
		ev.Text += fmt.Sprintf("\n[… %d bytes in all: blob sha256=%s]", ev.TextBytes, ev.TextBlob)
	}
	if out == nil {
		return events
	}
	return out
}
