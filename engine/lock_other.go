//go:build !unix

package engine

import "os"

// tryLock always succeeds: advisory locking is not implemented here.
func tryLock(f *os.File) (bool, error) { return true, nil }

// isLocked reports false: advisory locking is not implemented here.
func isLocked(path string) (bool, error) { return false, nil }
