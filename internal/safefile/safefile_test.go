package safefile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteFile replaces a file and checks its content, its mode and
// that no temporary file is left; a write into a missing directory
// fails naming the path.
func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	for _, body := range []string{"first\n", "second, longer\n", ""} {
		if err := WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil || string(b) != body {
			t.Fatalf("read %q, %v; want %q", b, err, body)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("mode %v, %v; want 0600", fi.Mode(), err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries in the directory, want the file alone", len(ents))
	}
	if err := WriteFile(filepath.Join(dir, "none", "f"), []byte("x"), 0o600); err == nil {
		t.Error("a write into a missing directory did not fail")
	}
}

func TestWriteFileSynced(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	if err := WriteFileSynced(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Fatalf("content %q", b)
	}
	if err := SyncDir(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("SyncDir of a missing directory: %v", err)
	}
}
