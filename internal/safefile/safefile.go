package safefile

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile writes b to path through a temporary file in the same
// directory, synced and renamed over it, so a reader sees the old
// content or the new, never a part. The file gets perm whatever the
// umask. It does not sync the directory.
func WriteFile(path string, b []byte, perm os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteFileSynced is WriteFile followed by SyncDir of path's directory:
// once it returns, the new content survives a power loss.
func WriteFileSynced(path string, b []byte, perm os.FileMode) error {
	if err := WriteFile(path, b, perm); err != nil {
		return err
	}
	if err := SyncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// SyncDir fsyncs the directory dir, so that the names created, renamed
// or removed in it last.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}
