//go:build unix

package wal

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOwnerOnly: with umask 0 the log's directory is 0700 and its
// segments and LOCK 0600; a directory an older version left 0755 with
// 0644 segments is tightened when the log is opened for writing.
func TestOwnerOnly(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "wal")
	check := func(when string) {
		t.Helper()
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: %s is %v, want 0700", when, dir, fi.Mode())
		}
		for _, d := range ents {
			fi, _ := d.Info()
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: %s is %v, want 0600", when, d.Name(), fi.Mode())
			}
		}
		if len(ents) < 2 {
			t.Errorf("%s: %d files, want a segment and LOCK", when, len(ents))
		}
	}
	l, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	check("new log")
	os.Chmod(dir, 0o755)
	ents, _ := os.ReadDir(dir)
	for _, d := range ents {
		os.Chmod(filepath.Join(dir, d.Name()), 0o644)
	}
	l, err = Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	l.Close()
	check("reopened")
}
