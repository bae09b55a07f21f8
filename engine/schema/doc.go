// Package schema holds bbengine's domain types: the records of the
// derived state that the derivation pipeline (engine/derive) writes and
// the engine stores and queries. A session's canonical timeline is a
// list of Event; a Session and an Exchange sum up what was recorded;
// memory is a set of Artifact, each with its Card. Their JSON encodings
// are the values of the Pebble store (see package engine for the key
// layout), so a change to a field's name or order changes what Rebuild
// writes: it must change BuilderVersion or MemoryVersion.
//
// Package engine re-exports every type and constant here under the same
// name (engine.Event is schema.Event), so callers above the engine name
// them through the engine; only the packages below it (engine/derive)
// import schema directly.
//
// The types are plain values, safe for concurrent use when not modified.
//
// # Imports
//
// It may import codec/* and internal/*, nothing else of bbengine's.
package schema
