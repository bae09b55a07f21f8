//go:build !linux

package walbench

import "os"

// fdatasync is the sync the WAL makes under wal.SyncAlways.
func fdatasync(f *os.File) error { return f.Sync() }
