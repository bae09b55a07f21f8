package api

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/internal/crypt"
)

// TestCopyBlobsChecked: restore's blob copy checks clear blobs by
// SHA-256 and encrypted ones by HMAC and AEAD (which needs the keys),
// and names a swapped encrypted blob.
func TestCopyBlobsChecked(t *testing.T) {
	keys := crypt.Ephemeral()
	dir := t.TempDir()
	var sums []string
	for _, bs := range []*engine.Blobs{engine.NewBlobs(dir), engine.NewBlobsKeyed(dir, keys)} {
		for _, s := range []string{"one", strings.Repeat("two ", 50000)} {
			sum, err := bs.Put([]byte(s))
			if err != nil {
				t.Fatal(err)
			}
			sums = append(sums, sum)
		}
	}
	src := filepath.Join(dir, "blobs")
	n, err := copyBlobs(src, filepath.Join(t.TempDir(), "blobs"), true, keys)
	if err != nil {
		t.Fatal(err)
	}
	if n.N != 4 {
		t.Fatalf("copied %d blobs, want 4", n.N)
	}
	if _, err := copyBlobs(src, filepath.Join(t.TempDir(), "blobs"), true, nil); err == nil || !strings.Contains(err.Error(), "keys") {
		t.Fatalf("checking encrypted blobs without keys: %v, want an error asking for the keys", err)
	}
	// Swap the two encrypted blobs.
	enc := engine.NewBlobsKeyed(dir, keys)
	a, b := enc.Path(sums[2]), enc.Path(sums[3])
	da, _ := os.ReadFile(a)
	db, _ := os.ReadFile(b)
	os.WriteFile(a, db, 0o600)
	os.WriteFile(b, da, 0o600)
	_, err = copyBlobs(src, filepath.Join(t.TempDir(), "blobs"), true, keys)
	var re *RestoreError
	if !errors.As(err, &re) || (re.File != a && re.File != b) {
		t.Fatalf("swapped blobs: %v, want a *RestoreError naming one of them", err)
	}
}
