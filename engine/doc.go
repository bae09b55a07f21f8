// Package engine owns bbengine's derived state: the Pebble database that
// holds it and its key layout, the queries over it (sessions, events,
// exchanges, memory, breaker records), and the life of a data directory
// (its lock, Open, Close, Rebuild). The domain types it serves (Event,
// Session, Exchange, Artifact…) are defined in engine/schema and are the
// engine's here by alias; the derivation pipeline that builds the state
// from the WAL, canonicalizer and memory alike, is engine/derive, which
// the engine runs (CatchUp, CatchUpTo, Follow, Rebuild, RebuildMemory)
// and which reads the store back through the engine. Everything here is
// derived: Rebuild drops it and replays the WAL, and the result is
// byte-identical to what the incremental pipeline wrote.
//
// # Ownership and concurrency
//
// One process at a time owns a data directory: Open takes an flock(2) on
// <dir>/engine.lock and writes the holder's pid (and, for a running proxy,
// the loopback address of its query endpoint) into it; a second Open gets
// a *LockedError naming them. An Engine is safe for concurrent use: one
// pass of the pipeline at a time writes, any number of queries read.
//
// # Layout
//
//	<dir>/
//	  engine.lock        flock; "pid=… addr=… token=…"
//	  wal/               the WAL (package wal): the only truth
//	  db/                Pebble: everything below, derived
//	  blobs/sha256/ab/abcdef…   content-addressed large outputs (bbox @blob)
//
// # Pebble key layout
//
// One prefix byte per family ("column family by prefix"), then fixed-width
// big-endian integers so byte order is numeric order. Values are JSON
// objects (deterministic: struct fields in order) unless noted.
//
//	prefix  key                                   value                        family
//	'm'     'm' name                              see below                    meta
//	'x'     'x' exchange u64                      Exchange                     exchange index
//	's'     's' session id (bytes)                Session                      sessions
//	'n'     'n' ordinal u64                       session id (bytes)           sessions by first appearance
//	'e'     'e' ordinal u64 seq u64               Event                        canonical events
//	'c'     'c' ordinal u64                       conversation state           canonicalizer state
//	        'c' ordinal u64 thread u64 chunk u64  ["key", …] (256 a chunk)     a thread's known item keys
//	'o'     'o' exchange u64                      first frame offset u64 BE    exchanges still open
//	'f'     'f' file path (bytes)                 ImportFileState              imported files
//	'p'     'p' session id (bytes)                empty                        imports to derive
//	'a'     'a' …                                 Artifact                     memory
//	'i'     'i' …                                 states, briefs, reports,     memory
//	                                              project index
//	'k'     'k' session id 0x00 offset u64        BreakerRecord                circuit breaker
//	'j'     'j' 'a' import id 0x00 ordinal u64    empty                        join by session id
//	        'j' 'l' ordinal u64 import id         empty                        the same, by live session
//	'g'     'g' 'l' session id                    canonical id (bytes)         merge links
//	        'g' 'h' ordinal u64                   MergeHead                    merge record
//	        'g' 'o' ordinal u64                   order (binary)               merged order
//	        'g' 'p' import id                     empty                        merges to derive
//
// The 'j' and 'g' families join a proxied session and the imported log
// of the same agent session into one merged session (engine/schema's
// keys.go; engine/derive's merge.go; docs/design/merge.md).
//
//	meta names
//	  applied   u64 BE  WAL offset of the next frame to read
//	  builder   text    BuilderVersion of the code that wrote this state
//	  schema    u32 BE  SchemaVersion of the key layout
//	  sessions  u64 BE  number of session ordinals assigned
//
// The keys are built by engine/schema (keys.go), for the pipeline that
// writes them and the queries that read them.
//
// Every batch the pipeline commits carries the entries of the frames
// it read and the new applied offset, so after a crash the engine resumes
// from the WAL exactly once. An exchange whose frames started before the
// applied offset but has not ended is kept in the 'o' family; on resume
// the canonicalizer reads from the smallest such offset and skips the
// frames of exchanges it has already finished. Pebble writes are NoSync:
// the WAL is the truth, and if a crash leaves the applied offset beyond
// the WAL's end (the WAL lost an unsynced tail that Pebble had seen), Open
// rebuilds.
//
// Checkpoint copies the store for a backup (Pebble's DB.Checkpoint)
// while no commit of the canonical state is under way, so the copy holds
// whole commits and its applied offset says which WAL prefix it covers.
//
// # Sizes and compaction
//
// StoreUsage and FrameUsage measure the store by key family and the
// WAL's frames by session (bbengine du). A pass that drops a key range
// whole (RebuildMemory, an imported session derived again) records it,
// and a goroutine of the engine compacts the recorded ranges with
// Pebble's manual compaction Options.CompactDelay later, never on a
// caller's path; Close stops it. GCBlobs removes the blobs no derived
// value names, reading every name before it removes anything.
//
// # Canonical timeline
//
// Each provider request re-sends the conversation. The canonicalizer
// (engine/derive) keeps each session's known messages per thread and
// emits only what is new (see Event for the kinds). Thread 1 is the first conversation of a
// session; a request that shares no prefix with any thread (a side
// request, a subagent) starts a new thread; one that diverges inside a
// thread's history (an edit, a fork) starts a new thread and records a
// rewrite event; one that re-sends a thread's history without its last
// output is a retry; one that starts over with a summary of the
// conversation's earlier output is a compaction of that thread.
//
// # Importers
//
// An imported session is derived again from all its records by the
// Importer of its source. The engine holds none: each agent's package
// (agents/claude, agents/codex) registers the importer of its logs with
// RegisterImporter and their LogFormat with RegisterLogFormat, and
// package export those of the session formats (bbox/1, ATIF, trajectory
// JSON). The engine never imports them, so a program that opens an
// engine holding such imports links agents/all and export (the CLI
// does); an imported session whose source has no importer derives no
// events. The events of a session derived for the first time are
// written into a table Pebble ingests (the event table,
// engine/derive/ingest.go), not through a batch; the keys and values
// are the same.
//
// # Client families
//
// Derivation names each session's client family (Session.Agent:
// claude-code, codex, gemini-cli, …) from its requests' User-Agent, and
// memory leaves a coding agent's own system prompt alone. The engine
// knows no family by name: agents/all registers every agent's (and
// those of the clients bbengine knows without a directory) with
// RegisterFamily, in the order they are matched.
//
// # Imports
//
// It may import engine/derive, engine/schema, wal, codec/* and
// internal/*, and nothing above it: the agents registry, export, index,
// pack, proxy, api and cli all import the engine, never the other way
// (internal/layers checks it). engine/derive and engine/schema never
// import the engine; the names callers know (engine.Event,
// engine.RegisterImporter, engine.ScanImport…) are aliases of theirs.
package engine
