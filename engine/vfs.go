package engine

import (
	"errors"
	"io"
	"io/fs"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/bbengine/bbengine/internal/private"
)

// ownerFS is the file system Pebble writes the derived state through:
// vfs.Default, except that every file it creates is 0600 and every
// directory 0700 whatever the umask (vfs.Default creates 0666 and
// leaves the rest to the umask). A file is first created empty with
// mode 0600 and then opened by vfs.Default, so it never exists with
// another mode; a file that exists with group or other bits (written by
// an older version) is tightened when Pebble opens it for writing.
type ownerFS struct{ vfs.FS }

// newOwnerFS returns the owner-only wrapper of fs.
func newOwnerFS(fs vfs.FS) vfs.FS { return ownerFS{fs} }

// precreate creates name empty with mode 0600 unless it exists, and
// tightens it when it exists with group or other bits.
func precreate(name string) error {
	f, err := private.OpenFile(name, os.O_RDONLY|os.O_CREATE)
	if err != nil {
		return err
	}
	return f.Close()
}

// Create removes an existing file, as vfs.Default does, so the new one is
// a new inode, and creates it 0600 before vfs.Default opens it.
func (o ownerFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	for {
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, private.FileMode)
		if err == nil {
			f.Close()
			break
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, err
		}
		if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	}
	return o.FS.OpenReadWrite(name, category)
}

func (o ownerFS) OpenReadWrite(name string, category vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	if err := precreate(name); err != nil {
		return nil, err
	}
	return o.FS.OpenReadWrite(name, category, opts...)
}

func (o ownerFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if err := o.FS.Rename(oldname, newname); err != nil {
		return nil, err
	}
	return o.OpenReadWrite(newname, category)
}

func (o ownerFS) MkdirAll(dir string, _ os.FileMode) error { return private.MkdirAll(dir) }

func (o ownerFS) Lock(name string) (io.Closer, error) {
	if err := precreate(name); err != nil {
		return nil, err
	}
	return o.FS.Lock(name)
}

func (o ownerFS) Unwrap() vfs.FS { return o.FS }
