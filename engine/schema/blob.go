package schema

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bbengine/bbengine/internal/crypt"
	"github.com/bbengine/bbengine/internal/private"
)

// Blobs is a content-addressed store of large outputs under a data
// directory. Blobs are written once (to a temporary file, then renamed)
// and never change, so any number of processes may read and write the
// store at once. Every directory and file is owner-only.
//
// A directory in the clear names a blob by the SHA-256 of its content
// and holds the content as it is:
//
//	<dir>/blobs/sha256/ab/abcdef…   (64 hex digits)
//
// An encrypted directory (NewBlobsKeyed) names a blob by the
// HMAC-SHA256 of its content under the directory's blob name key, so
// that listing the store does not confirm a guessed content, and holds
// it in internal/crypt's chunked shape with 64 KiB chunks, its data key
// bound to the blob's name (swapping two blob files is detected):
//
//	<dir>/blobs/hmac/ab/abcdef…     (64 hex digits)
//
// Either way a name is 64 lowercase hex digits, which is what events
// hold (Event.TextBlob) and what blob gc and backup look for.
type Blobs struct {
	dir  string
	keys *crypt.Keys
}

// BlobChunkLog is the log2 of the chunk size of an encrypted blob:
// reads are of whole blobs, so the chunks are large.
const BlobChunkLog = 16

// NewBlobs returns the blob store of data directory dir, in the clear.
func NewBlobs(dir string) *Blobs { return &Blobs{dir: filepath.Join(dir, "blobs", "sha256")} }

// NewBlobsKeyed returns the blob store of data directory dir encrypted
// under keys (<dir>/blobs/hmac); nil keys give NewBlobs(dir).
func NewBlobsKeyed(dir string, keys *crypt.Keys) *Blobs {
	if keys == nil {
		return NewBlobs(dir)
	}
	return &Blobs{dir: filepath.Join(dir, "blobs", "hmac"), keys: keys}
}

// NewBlobsAt returns a blob store rooted at dir itself (bbengine convert's
// .bbox-blobs folder beside its output): <dir>/sha256/ab/abcdef…. It is
// output the user asked for, in the clear.
func NewBlobsAt(dir string) *Blobs { return &Blobs{dir: filepath.Join(dir, "sha256")} }

// Encrypted reports whether the store encrypts its blobs.
func (b *Blobs) Encrypted() bool { return b.keys != nil }

// Path returns the file of the blob named sum.
func (b *Blobs) Path(sum string) string {
	if len(sum) < 2 {
		return filepath.Join(b.dir, sum)
	}
	return filepath.Join(b.dir, sum[:2], sum)
}

// newHash returns the hash that names the store's blobs.
func (b *Blobs) newHash() hash.Hash {
	if b.keys != nil {
		return b.keys.NameHash()
	}
	return sha256.New()
}

// blobAAD is the associated data an encrypted blob's data key is bound
// to: its name.
func blobAAD(sum string) []byte { return []byte("bbengine blob/1 " + sum) }

// Put stores data and returns its name (see Blobs).
func (b *Blobs) Put(data []byte) (string, error) {
	h := b.newHash()
	h.Write(data)
	sum := hex.EncodeToString(h.Sum(nil))
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
	if b.keys == nil {
		_, err = f.Write(data)
	} else {
		err = writeSealed(f, b.keys, sum, bytes.NewReader(data))
	}
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

// writeSealed writes the content r as the encrypted blob named sum to w.
func writeSealed(w io.Writer, keys *crypt.Keys, sum string, r io.Reader) error {
	cw, err := crypt.NewWriter(w, keys, BlobChunkLog, blobAAD(sum))
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<BlobChunkLog)
	if _, err := io.CopyBuffer(cw, onlyReader{r}, buf); err != nil {
		return err
	}
	return cw.Close()
}

// onlyReader hides a reader's WriterTo, so io.CopyBuffer uses the
// buffer it is given.
type onlyReader struct{ io.Reader }

// PutString stores text, written in pieces (a long text is never copied
// whole), and returns its name.
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

// Get returns the content of the blob named sum. An encrypted blob is
// authenticated whole: a changed, cut or swapped file is an error that
// names it.
func (b *Blobs) Get(sum string) ([]byte, error) {
	path := b.Path(sum)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("engine: blob %s: %w", sum, err)
	}
	if b.keys == nil {
		return data, nil
	}
	plain, err := crypt.ReadAll(data, b.keys, blobAAD(sum), path)
	if err != nil {
		return nil, fmt.Errorf("engine: blob %s: %w", sum, err)
	}
	return plain, nil
}

// CheckBlob checks that the blob file at path holds what its name says:
// in a sha256/ store the SHA-256 of its content, in an hmac/ store (which
// needs keys) the HMAC of its content under keys' name key, and every
// chunk authentic. It reads the file in pieces.
func CheckBlob(path string, keys *crypt.Keys) error {
	name := filepath.Base(path)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if filepath.Base(filepath.Dir(filepath.Dir(path))) != "hmac" {
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return fmt.Errorf("read blob %s: %w", path, err)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != name {
			return fmt.Errorf("the blob's content has SHA-256 %s, not its name", got)
		}
		return nil
	}
	if keys == nil {
		return fmt.Errorf("the blob is encrypted: checking it needs the data directory's keys")
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	r, err := crypt.NewReader(f, fi.Size(), keys, blobAAD(name), path)
	if err != nil {
		return err
	}
	h := keys.NameHash()
	buf := make([]byte, 1<<BlobChunkLog)
	if _, err := io.CopyBuffer(h, io.NewSectionReader(r, 0, r.Size()), buf); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != name {
		return fmt.Errorf("the blob's content has HMAC %s, not its name", got)
	}
	return nil
}

// Create returns a writer of a new blob whose content is not known yet:
// it is written to a temporary file in the store, hashed as it goes
// (encrypted as it goes, in an encrypted store), and named by its hash
// on Commit. It implements llm.Spill, so a response decoder streams a
// long text into the store without holding it.
func (b *Blobs) Create() (*BlobWriter, error) {
	if err := private.MkdirAll(b.dir); err != nil {
		return nil, fmt.Errorf("engine: blob store: %w", err)
	}
	f, err := os.CreateTemp(b.dir, ".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("engine: blob store: %w", err)
	}
	w := &BlobWriter{b: b, f: f, h: b.newHash(), to: f}
	if b.keys != nil {
		// The name is not known yet, so the temporary file's data key
		// is bound to the file's own temporary name; Commit re-seals
		// it under the blob's name.
		if w.cw, err = crypt.NewWriter(f, b.keys, BlobChunkLog, tempAAD(f.Name())); err != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, fmt.Errorf("engine: blob store: %w", err)
		}
		w.to = w.cw
	}
	return w, nil
}

// tempAAD is the associated data of a blob being written to the
// temporary file at path.
func tempAAD(path string) []byte { return []byte("bbengine blob tmp/1 " + filepath.Base(path)) }

// BlobWriter writes one blob; see Blobs.Create. Exactly one of Commit
// and Abort must be called.
type BlobWriter struct {
	b   *Blobs
	f   *os.File
	cw  *crypt.Writer // encrypting into f, in an encrypted store
	to  io.Writer     // f or cw
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
	n, err := w.to.Write(p)
	w.h.Write(p[:n])
	w.n += int64(n)
	if err != nil {
		w.err = fmt.Errorf("engine: blob store: write %s: %w", w.f.Name(), err)
	}
	return n, w.err
}

// Commit closes the blob and moves it to its place; it returns its name.
// A blob the store holds already is kept as it is.
func (w *BlobWriter) Commit() (string, error) {
	name := w.f.Name()
	err := w.err
	if w.cw != nil && err == nil {
		if cerr := w.cw.Close(); cerr != nil {
			err = fmt.Errorf("engine: blob store: write %s: %w", name, cerr)
		}
	}
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
	if w.cw != nil {
		sealed, err := w.reseal(name, sum)
		os.Remove(name)
		if err != nil {
			return "", fmt.Errorf("engine: blob store: write %s: %w", path, err)
		}
		name = sealed
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return "", fmt.Errorf("engine: blob store: %w", err)
	}
	return sum, nil
}

// reseal copies the encrypted temporary file tmp into a new temporary
// file whose data key is bound to the blob's name sum, decrypting and
// encrypting a chunk at a time, and returns the new file's path.
// crypt's header binds the data key to the file's associated data when
// the file starts, before a streamed blob's name is known.
func (w *BlobWriter) reseal(tmp, sum string) (string, error) {
	in, err := os.Open(tmp)
	if err != nil {
		return "", err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return "", err
	}
	r, err := crypt.NewReader(in, fi.Size(), w.b.keys, tempAAD(tmp), tmp)
	if err != nil {
		return "", err
	}
	out, err := os.CreateTemp(filepath.Dir(tmp), ".tmp-*")
	if err != nil {
		return "", err
	}
	err = writeSealed(out, w.b.keys, sum, io.NewSectionReader(r, 0, r.Size()))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out.Name())
		return "", err
	}
	return out.Name(), nil
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

// BlobRewrapTargets lists the encrypted blobs of the data directory dir
// with the associated data their data keys are bound to (their names),
// for re-wrapping them by a new key generation (crypt.RewrapFiles).
// Blobs being written are left out: they are renamed or removed when
// their writer ends.
func BlobRewrapTargets(dir string) ([]crypt.RewrapTarget, error) {
	var out []crypt.RewrapTarget
	root := filepath.Join(dir, "blobs", "hmac")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == root {
			return filepath.SkipAll
		}
		if err != nil || !d.Type().IsRegular() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		out = append(out, crypt.RewrapTarget{Path: p, AAD: blobAAD(d.Name())})
		return nil
	})
	return out, err
}
