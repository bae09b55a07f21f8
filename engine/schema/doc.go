// Package schema holds bbengine's domain types and where they sit in the
// store: the records of the derived state that the derivation pipeline
// (engine/derive) writes and the engine stores and queries, the Pebble
// key layout both use (keys.go; package engine's comment has the table),
// and the content-addressed blob store of long texts (blob.go). A
// session's canonical timeline is a list of Event; a Session and an
// Exchange sum up what was recorded; memory is a set of Artifact, each
// with its Card. Their JSON encodings are the values of the store, so a
// change to a field's name or order changes what Rebuild writes: it must
// change BuilderVersion or MemoryVersion.
//
// Package engine re-exports the types, their constants and the blob
// store's functions under the same names (engine.Event is schema.Event),
// so callers above the engine name them through the engine; the key
// layout is named as schema's (schema.EventKey, schema.PrefixMeta) by the
// engine and engine/derive, and only those two import schema.
//
// The types are plain values, safe for concurrent use when not modified.
//
// # Imports
//
// It may import codec/* and internal/*, nothing else of bbengine's.
package schema
