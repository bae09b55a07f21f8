// Package safefile replaces small files atomically: a reader sees the
// old content or the new, never a part. It holds configuration and state
// files (agents' settings, hook state), not the WAL or the store.
//
// It imports nothing of bbengine's. Its functions are safe for
// concurrent use on different paths.
package safefile
