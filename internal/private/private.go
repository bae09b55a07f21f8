package private

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Modes of what the package creates.
const (
	DirMode  fs.FileMode = 0o700
	FileMode fs.FileMode = 0o600
)

// loose are the permission bits an owner-only file must not have.
const loose fs.FileMode = 0o077

// MkdirAll creates dir and its missing parents with mode 0700 and
// tightens dir itself (not its parents, which may be shared, nor its
// contents) when it already existed with group or other bits.
func MkdirAll(dir string) error {
	if err := os.MkdirAll(dir, DirMode); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&loose != 0 {
		if err := os.Chmod(dir, fi.Mode().Perm()&^loose); err != nil {
			return fmt.Errorf("make %s owner-only: %w", dir, err)
		}
	}
	return nil
}

// Secure creates dir (0700) when it is missing; when it exists with
// group or other bits it tightens dir and everything under it, since a
// loose directory means an older version or a copy wrote it. It returns
// whether it tightened anything.
func Secure(dir string) (bool, error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, MkdirAll(dir)
	case err != nil:
		return false, err
	case !fi.IsDir():
		return false, fmt.Errorf("%s is not a directory", dir)
	case fi.Mode().Perm()&loose == 0:
		return false, nil
	}
	return true, Tighten(dir)
}

// Tighten removes the group and other permission bits of path and,
// when it is a directory, of everything under it. Symbolic links are
// not followed. Only what has such bits is changed. Files that vanish
// while it walks (a compaction, a rename) are skipped.
func Tighten(path string) error {
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != path {
				return nil
			}
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if m := fi.Mode().Perm(); m&loose != 0 {
			if err := os.Chmod(p, m&^loose); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("make %s owner-only: %w", path, err)
	}
	return nil
}

// OpenFile is os.OpenFile creating with mode 0600; a file that existed
// with group or other bits is tightened through the open descriptor.
func OpenFile(name string, flag int) (*os.File, error) {
	f, err := os.OpenFile(name, flag, FileMode)
	if err != nil {
		return nil, err
	}
	if err := tightenFile(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// WriteFile is os.WriteFile with mode 0600; an existing file with group
// or other bits is tightened before data is written.
func WriteFile(name string, data []byte) error {
	f, err := OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func tightenFile(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if m := fi.Mode().Perm(); m&loose != 0 {
		if err := f.Chmod(m &^ loose); err != nil {
			return fmt.Errorf("make %s owner-only: %w", f.Name(), err)
		}
	}
	return nil
}
