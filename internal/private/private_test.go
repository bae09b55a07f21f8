//go:build unix

package private

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func perm(t *testing.T, p string) fs.FileMode {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestCreateModes: whatever the umask lets through, what the package
// creates is 0700 or 0600.
func TestCreateModes(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "a", "b")
	if err := MkdirAll(dir); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(dir, "f")
	if err := WriteFile(f, []byte("x")); err != nil {
		t.Fatal(err)
	}
	g, err := OpenFile(filepath.Join(dir, "g"), os.O_RDWR|os.O_CREATE)
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	for p, want := range map[string]fs.FileMode{filepath.Dir(dir): 0o700, dir: 0o700, f: 0o600, filepath.Join(dir, "g"): 0o600} {
		if got := perm(t, p); got != want {
			t.Errorf("%s: %v, want %v", p, got, want)
		}
	}
}

// TestSecure: a loose tree is tightened all the way down, bits only
// removed (a read-only file stays read-only), symbolic links not
// followed; a tight directory is left alone.
func TestSecure(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	root := t.TempDir()
	outside := filepath.Join(root, "outside")
	os.WriteFile(outside, []byte("x"), 0o644)
	dir := filepath.Join(root, "data")
	os.MkdirAll(filepath.Join(dir, "wal", "sub"), 0o755)
	os.WriteFile(filepath.Join(dir, "wal", "seg"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(dir, "wal", "sub", "ro"), []byte("x"), 0o444)
	os.Symlink(outside, filepath.Join(dir, "link"))
	os.Chmod(dir, 0o755)
	changed, err := Secure(dir)
	if err != nil || !changed {
		t.Fatalf("Secure = %v, %v", changed, err)
	}
	for p, want := range map[string]fs.FileMode{
		dir: 0o700, filepath.Join(dir, "wal"): 0o700, filepath.Join(dir, "wal", "sub"): 0o700,
		filepath.Join(dir, "wal", "seg"): 0o600, filepath.Join(dir, "wal", "sub", "ro"): 0o400, outside: 0o644,
	} {
		if got := perm(t, p); got != want {
			t.Errorf("%s: %v, want %v", p, got, want)
		}
	}
	if changed, err := Secure(dir); err != nil || changed {
		t.Errorf("Secure of a tight directory = %v, %v", changed, err)
	}
	missing := filepath.Join(root, "new")
	if _, err := Secure(missing); err != nil || perm(t, missing) != 0o700 {
		t.Errorf("Secure of a missing directory: %v %v", perm(t, missing), err)
	}
	if _, err := Secure(outside); err == nil {
		t.Error("Secure of a file: no error")
	}
}

// TestWriteFileTightens: an existing loose file is tightened before the
// new content is written.
func TestWriteFileTightens(t *testing.T) {
	f := filepath.Join(t.TempDir(), "token")
	os.WriteFile(f, []byte("old"), 0o644)
	os.Chmod(f, 0o644)
	if err := WriteFile(f, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if got := perm(t, f); got != 0o600 {
		t.Errorf("mode %v, want 0600", got)
	}
}
