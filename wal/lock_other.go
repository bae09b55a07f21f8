//go:build !unix

package wal

import (
	"os"

	"github.com/bbengine/bbengine/internal/private"
)

// lockDir creates dir/LOCK; advisory locking is not implemented here.
func lockDir(dir string) (*os.File, error) {
	return private.OpenFile(dir+string(os.PathSeparator)+"LOCK", os.O_RDWR|os.O_CREATE)
}
