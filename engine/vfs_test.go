//go:build unix

package engine

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// loosePaths lists what under dir has group or other permission bits.
func loosePaths(t *testing.T, dir string) (loose []string, n int) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, err := d.Info()
		if err != nil {
			t.Fatal(err)
		}
		n++
		if fi.Mode().Perm()&0o077 != 0 {
			loose = append(loose, p+" "+fi.Mode().String())
		}
		return nil
	})
	return loose, n
}

// TestOwnerOnlyFiles opens an engine with umask 0 and finds every file
// Pebble, the WAL, the lock and the blob store created owner-only; then
// it loosens the whole directory, as an older version left it, and
// opening the engine again tightens it all.
func TestOwnerOnlyFiles(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "data")
	e, err := Open(dir, suite(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewBlobs(dir).Put([]byte("a tool output")); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	loose, n := loosePaths(t, dir)
	if len(loose) > 0 {
		t.Fatalf("%d of %d paths readable by others after Open:\n%s", len(loose), n, strings.Join(loose, "\n"))
	}
	var pebbleFiles int
	filepath.WalkDir(filepath.Join(dir, "db"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			pebbleFiles++
		}
		return nil
	})
	if pebbleFiles < 3 {
		t.Fatalf("only %d Pebble files", pebbleFiles)
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if d.IsDir() {
			return os.Chmod(p, 0o755)
		}
		return os.Chmod(p, 0o644)
	})
	e, err = Open(dir, suite(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	if loose, n := loosePaths(t, dir); len(loose) > 0 {
		t.Fatalf("%d of %d paths still readable by others after a second Open:\n%s", len(loose), n, strings.Join(loose, "\n"))
	}
}
