//go:build unix

package crypt

import (
	"os"
	"syscall"
)

// links returns how many names the file fi describes has.
func links(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 2 // unknown: treat as shared
}
