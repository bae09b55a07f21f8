// Package engine will own bbengine's domain types (ids, Event, Artifact),
// Open(dir, *Options), the Pebble key layout, the canonicalizer and
// derivation, and the small interfaces that index and pack implement
// (see shared/DESIGN.md). It holds no code yet: it arrives with the
// engine issue, and nothing in the repository depends on it.
package engine
