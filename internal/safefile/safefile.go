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
