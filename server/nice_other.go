//go:build !linux

package server

// lowPriority is a no-op where threads have no priority of their own
// that an unprivileged process can set.
func lowPriority() {}
