//go:build !unix

package wal

import "os"

// lockDir creates dir/LOCK; advisory locking is not implemented here.
func lockDir(dir string) (*os.File, error) {
	return os.OpenFile(dir+string(os.PathSeparator)+"LOCK", os.O_RDWR|os.O_CREATE, 0o644)
}
