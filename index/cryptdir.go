package index

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	blugeindex "github.com/blugelabs/bluge/index"
	"github.com/blugelabs/bluge/index/lock"
	segment "github.com/blugelabs/bluge_segment_api"

	"github.com/bbengine/bbengine/internal/crypt"
	"github.com/bbengine/bbengine/internal/private"
	"github.com/bbengine/bbengine/internal/safefile"
)

// cryptChunkLog is the log2 of the chunk size of an encrypted segment,
// snapshot or state file: each is read whole.
const cryptChunkLog = 16

// pidName is Bluge's lock file in its directory.
const pidName = "bluge.pid"

// tmpSuffix ends an item being persisted; List does not see it and
// Setup removes one a crash left.
const tmpSuffix = ".tmp"

// cryptDir is the Bluge index.Directory of an encrypted index, modelled
// on Bluge v0.2.2's FileSystemDirectory (index/directory_fs.go). Every
// item (a segment or a snapshot) is a file in internal/crypt's chunked
// shape, its data key bound to the item's file name, so a changed,
// cut, renamed or swapped item fails to load.
//
// Persist encrypts the item as Bluge writes it into <name>.tmp, syncs it
// and renames it to <name>: no plaintext reaches the disk, and a crash
// leaves either no item or a whole one (the clear directory writes the
// item in place). Persisting a snapshot syncs the directory, which makes
// it and the segments renamed before it durable: Bluge never calls Sync.
//
// Load authenticates and decrypts the whole item into memory and hands
// Bluge the plaintext (segment.NewDataBytes): segment.Data has no
// constructor for a decrypting io.ReaderAt, so ice reads from the Go
// heap where the clear index reads from an mmap of the file.
//
// Bluge loads every snapshot it finds at open and silently skips one
// that fails (writer.go loadSnapshots), then removes the items the
// snapshots it loaded do not name. The first failed Load is kept
// (loadErr): Remove refuses to delete anything after it, and openWriter
// reports it, so a damaged item is an error naming its file and not a
// silent return to an older snapshot.
//
// It is safe for concurrent use, as Bluge requires.
type cryptDir struct {
	path string
	keys *crypt.Keys
	pid  lock.LockedFile

	mu      sync.Mutex
	loadErr error
}

func newCryptDir(path string, keys *crypt.Keys) *cryptDir {
	return &cryptDir{path: path, keys: keys}
}

// itemAAD is the associated data an item's data key is bound to: its
// file name.
func itemAAD(name string) []byte { return []byte("bbengine index/1 " + name) }

func itemName(kind string, id uint64) string { return fmt.Sprintf("%012x", id) + kind }

// Setup creates the directory (owner-only) and removes the temporary
// files of items a crash cut short.
func (d *cryptDir) Setup(readOnly bool) error {
	if _, err := os.Stat(d.path); errors.Is(err, fs.ErrNotExist) {
		if readOnly {
			return fmt.Errorf("index: %s does not exist", d.path)
		}
		if err := private.MkdirAll(d.path); err != nil {
			return fmt.Errorf("index: create %s: %w", d.path, err)
		}
	} else if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	if readOnly {
		return nil
	}
	ents, err := os.ReadDir(d.path)
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), tmpSuffix) {
			if err := os.Remove(filepath.Join(d.path, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("index: remove %s: %w", e.Name(), err)
			}
		}
	}
	return nil
}

// List returns the ids of the items of kind, newest first.
func (d *cryptDir) List(kind string) ([]uint64, error) {
	ents, err := os.ReadDir(d.path)
	if err != nil {
		return nil, err
	}
	var ids []uint64
	for _, e := range ents {
		if filepath.Ext(e.Name()) != kind {
			continue
		}
		base := strings.TrimSuffix(e.Name(), kind)
		id, err := strconv.ParseUint(base, 16, 64)
		if err != nil {
			return nil, fmt.Errorf("index: %s: error parsing identifier %q: %w", d.path, base, err)
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	slices.Reverse(ids)
	return ids, nil
}

// Persist writes the item encrypted to a temporary file, syncs it and
// renames it into place.
func (d *cryptDir) Persist(kind string, id uint64, w blugeindex.WriterTo, closeCh chan struct{}) (err error) {
	name := itemName(kind, id)
	path := filepath.Join(d.path, name)
	tmp := path + tmpSuffix
	f, err := private.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	// Bluge writes its items in small pieces; crypt's Writer buffers a
	// chunk and writes it whole.
	cw, err := crypt.NewWriter(f, d.keys, cryptChunkLog, itemAAD(name))
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(cw, closeCh); err != nil {
		return err
	}
	if err := cw.Close(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	if kind == blugeindex.ItemKindSnapshot {
		return safefile.SyncDir(d.path)
	}
	return nil
}

// Load authenticates and decrypts the whole item.
func (d *cryptDir) Load(kind string, id uint64) (*segment.Data, io.Closer, error) {
	plain, err := d.read(itemName(kind, id))
	if err != nil {
		d.mu.Lock()
		if d.loadErr == nil {
			d.loadErr = err
		}
		d.mu.Unlock()
		return nil, nil, err
	}
	return segment.NewDataBytes(plain), nopCloser{}, nil
}

// read returns the plaintext of the item file name.
func (d *cryptDir) read(name string) ([]byte, error) {
	path := filepath.Join(d.path, name)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	r, err := crypt.NewReader(f, fi.Size(), d.keys, itemAAD(name), path)
	if err != nil {
		return nil, err
	}
	plain := make([]byte, r.Size())
	if _, err := r.ReadAt(plain, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return plain, nil
}

// failed returns the first error of a Load, if any.
func (d *cryptDir) failed() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.loadErr
}

// Remove removes an item, unless a Load failed: Bluge would then remove
// what the snapshot it could not load names.
func (d *cryptDir) Remove(kind string, id uint64) error {
	if err := d.failed(); err != nil {
		return fmt.Errorf("index: not removing %s after a damaged item: %w", itemName(kind, id), err)
	}
	return os.Remove(filepath.Join(d.path, itemName(kind, id)))
}

// Stats returns the number and size of the directory's files.
func (d *cryptDir) Stats() (n uint64, bytes uint64) {
	ents, err := os.ReadDir(d.path)
	if err != nil {
		return 0, 0
	}
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && !fi.IsDir() {
			n++
			bytes += uint64(fi.Size())
		}
	}
	return n, bytes
}

// Sync syncs the directory.
func (d *cryptDir) Sync() error { return safefile.SyncDir(d.path) }

// Lock takes the directory's lock file as Bluge's own directory does.
func (d *cryptDir) Lock() error {
	pid, err := lock.OpenExclusive(filepath.Join(d.path, pidName), os.O_CREATE|os.O_RDWR, private.FileMode)
	if err != nil {
		return fmt.Errorf("unable to obtain exclusive access: %w", err)
	}
	f := pid.File()
	if err := f.Truncate(0); err == nil {
		_, err = fmt.Fprintf(f, "%d\n", os.Getpid())
	}
	if err != nil {
		pid.Close()
		return fmt.Errorf("error writing pid: %w", err)
	}
	d.pid = pid
	return nil
}

// Unlock releases the lock file.
func (d *cryptDir) Unlock() error {
	if d.pid == nil {
		return nil
	}
	err := d.pid.Close()
	d.pid = nil
	if err != nil {
		return fmt.Errorf("error closing pid file: %w", err)
	}
	return os.RemoveAll(filepath.Join(d.path, pidName))
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// checkEncryption checks that the index in dir is encrypted exactly
// when keys are given: it looks at the state file and Bluge's items.
// An index with no files yet matches either way.
func checkEncryption(dir string, keys *crypt.Keys) error {
	files := []string{filepath.Join(dir, stateName)}
	if ents, err := os.ReadDir(filepath.Join(dir, blugeName)); err == nil {
		for _, e := range ents {
			if ext := filepath.Ext(e.Name()); ext == blugeindex.ItemKindSegment || ext == blugeindex.ItemKindSnapshot {
				files = append(files, filepath.Join(dir, blugeName, e.Name()))
			}
		}
	}
	for _, p := range files {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("index: %w", err)
		}
		var head [len(crypt.Magic)]byte
		n, _ := io.ReadFull(f, head[:])
		f.Close()
		enc := crypt.IsEncrypted(head[:n])
		switch {
		case enc && keys == nil:
			return fmt.Errorf("%w: %s is encrypted: open the index with the data directory's keys", ErrEncryption, p)
		case !enc && keys != nil:
			return fmt.Errorf("%w: %s is in the clear but the index was opened with keys: run `bbengine rebuild --index` to build it again encrypted", ErrEncryption, p)
		}
	}
	return nil
}

// RewrapTargets lists the encrypted files of the index in dir (the
// directory Open takes) with the associated data their data keys are
// bound to, for re-wrapping them by a new key generation
// (crypt.RewrapFiles). Files in the clear are in the list too; RewrapFiles
// leaves them alone. The index must not be open.
func RewrapTargets(dir string) ([]crypt.RewrapTarget, error) {
	var out []crypt.RewrapTarget
	for _, sub := range []string{dir, filepath.Join(dir, blugeName)} {
		ents, err := os.ReadDir(sub)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			// A temporary file (an item or state file a crash cut
			// short) is bound to its final name and never read: Open
			// removes it.
			if e.Type().IsRegular() && !strings.HasSuffix(e.Name(), tmpSuffix) {
				out = append(out, crypt.RewrapTarget{Path: filepath.Join(sub, e.Name()), AAD: itemAAD(e.Name())})
			}
		}
	}
	return out, nil
}
