// Package derive is bbengine's derivation pipeline: WAL frames in,
// canonical events, sessions, exchanges and memory artifacts out. Its
// one entry point is Pipeline.Apply, which reads the WAL from where the
// derived state stops and commits what the frames derive; the engine
// (package engine) opens the store, runs Apply under its lock
// (CatchUp, CatchUpTo, Follow, Rebuild) and answers the queries.
//
//	WAL frames ─▶ Apply ─┬─ exchange frames ─▶ canonicalizer (canon.go,
//	                     │    derive.go, prefix.go, convo.go) ─▶ events,
//	                     │    sessions, exchanges, conversation state
//	                     ├─ import frames ─▶ imported files' states; at the
//	                     │    end of a pass each changed session derived
//	                     │    again by its Importer (importcanon.go,
//	                     │    importhand.go, ingest.go)
//	                     ├─ memory and breaker frames ─▶ corrections,
//	                     │    briefs, reports, breaker records
//	                     ├─ after the pass's commit: the merge groups of a
//	                     │    proxied session and its imported log marked
//	                     │    pending, computed again (merge.go,
//	                     │    mergeorder.go) ─▶ merge records
//	                     └─ end of a pass: memory of the changed sessions
//	                          (memory.go, memory_fold.go, memory_derive.go,
//	                          memory_findings.go) ─▶ artifacts, memory
//	                          states, the project index (project.go)
//
// # What it owns
//
// The Pipeline owns the state that carries across frames and passes:
// the sessions in flight and their conversations (threads, known
// messages, the memo of each thread's last request that lets a resent
// prefix be found by hash), the exchanges still open, the imported
// files' states and the sessions to derive again, the corrections and
// briefs of the batch, and the memory folds of recent sessions. It
// loads that state from the store on the first Apply and again after a
// failed commit or Reset; everything it holds can be rebuilt from the
// WAL, byte for byte (engine.Rebuild). It also owns the memory rules
// applied when reading (project_resolve.go: which later session took an
// artifact out of force), the importer and log-format registries
// (import.go, importfile.go), and the client families (family.go).
//
// # Concurrency
//
// Apply, RebuildMemory and Reset must not run concurrently with each
// other: the engine serializes them. Resolve, ProjectState and
// ProjectMemory only read, through the Store's locked reads, and are
// safe for concurrent use. Within a pass, imported sessions and memory
// are derived on GOMAXPROCS workers (worker.go) and applied in order,
// so the result does not depend on the number of workers.
//
// # The store
//
// The Pipeline writes the engine's Pebble database in batches (and
// imports' events through ingested tables) with the key layout of
// engine/schema, and reads back through a Store: the engine's locked
// gets and scans and its queries of events, reports, briefs, memory
// states and artifacts, and the pinning of WAL ranges for retention.
// The domain types are engine/schema's (schema_alias.go names them here
// as the engine does).
//
// # Imports
//
// It may import engine/schema, wal, codec/* and internal/*, never
// engine or anything above it (internal/layers checks it). Callers
// outside the engine use the engine's names for what lives here
// (engine.RegisterImporter, engine.ScanImport, engine.Progress…).
package derive
