package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

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

// Get returns the blob with hex digest sum.
func (b *Blobs) Get(sum string) ([]byte, error) {
	data, err := os.ReadFile(b.Path(sum))
	if err != nil {
		return nil, fmt.Errorf("engine: blob %s: %w", sum, err)
	}
	return data, nil
}
