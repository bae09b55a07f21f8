//go:build !linux

package wal

import "os"

// fdatasync flushes f to stable storage (a full fsync where fdatasync is
// not available).
func fdatasync(f *os.File) error { return f.Sync() }
