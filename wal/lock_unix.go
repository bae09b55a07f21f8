//go:build unix

package wal

import (
	"fmt"
	"os"
	"syscall"

	"github.com/bbengine/bbengine/internal/private"
)

// lockDir takes an exclusive advisory lock on dir/LOCK so that two writers
// never append to the same log.
func lockDir(dir string) (*os.File, error) {
	name := dir + string(os.PathSeparator) + "LOCK"
	f, err := private.OpenFile(name, os.O_RDWR|os.O_CREATE)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if err == syscall.EWOULDBLOCK {
			return nil, fmt.Errorf("%w: %s (close the other bbengine process, or open read-only)", ErrLocked, name)
		}
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	return f, nil
}
