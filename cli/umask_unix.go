//go:build unix

package cli

import "syscall"

// restrictUmask makes what the process creates without an explicit mode
// owner-only. The data directory's files get their modes at creation
// (package internal/private) whatever the umask; this is defense in
// depth for the long-running proxy, whose dependencies may create files.
// restore puts the previous umask back (the command line runs in tests'
// processes too).
func restrictUmask() (restore func()) {
	old := syscall.Umask(0o077)
	return func() { syscall.Umask(old) }
}
