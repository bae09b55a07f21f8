// Package index owns the Bluge full-text index of memory artifacts
// (engine.Artifact): how an artifact becomes a document, the BM25
// similarity and code-aware analyzer it is scored with, the state file
// that records what the index holds, and retrieval (Find, Search,
// Related), which returns engine.Card values built from stored fields
// alone, with each result's project and, on request, an explanation of
// its score.
//
// # Invariants
//
//   - The index is derived: everything in it can be rebuilt from the
//     engine's store (Options.Rebuild or Reset, then Sync).
//   - For every session in the state file, the index holds exactly the
//     artifacts last applied for it (Apply deletes the ones that are
//     gone), and the state file records their ids, the content sum of
//     each one's document, and the digest of the engine.MemoryState they
//     came from. The state file is written after the Bluge batch returns
//     (at most every Options.StateEvery, and by Close), so it never
//     claims more than Bluge holds, but it may claim less: documents a
//     crash left unrecorded are found through the session field and
//     deleted by the next Apply or Remove of that session.
//   - An Apply sends Bluge only the documents whose sum changed, for a
//     session this process applied before or read from a state file
//     that Close wrote (its header says clean; Open rewrites it without
//     before anything changes). After a crash, the first Apply of a
//     session sends it whole: its sums on disk may be older than Bluge's
//     documents.
//   - The state file's header names the document version (docVersion)
//     of what the index holds; Open starts an index of another version
//     empty, and Sync fills it again.
//   - Scores are BM25 with the correct idf, ln(1 + (N − n + 0.5)/(n +
//     0.5)), not Bluge v0.2.2's (see BM25). Search computes them itself
//     over Bluge's postings (topText) rather than through Bluge's
//     searchers and collector, and ranks as they would
//     (TestScoreEquivalence).
//   - A batch holds at most Options.MaxBatch documents and a document at
//     most Options.MaxDocBytes of analyzed text, because Bluge's memory
//     grows with both (blugelabs/bluge#89, #146).
//   - A panic inside Bluge becomes an error wrapping ErrPanic. Panics in
//     Bluge's own background goroutines (merging, persisting) cannot be
//     caught by a caller; the only code of ours that runs there, the
//     analyzer, recovers its own panics and the batch reports them.
//
// # Concurrency
//
// An Index is safe for concurrent use: Find, Search, Related and Stats
// run concurrently with each other and with one writing method (Apply,
// Remove, Sync); writing methods run one at a time. Reset and Close wait
// for running searches.
//
// # Layout
//
//	<dir>/
//	  bluge/            Bluge index (ice v1 segments, snapshots), written by Bluge
//	    00000000000a.seg
//	    ...
//	  state.jsonl       what the index holds, one JSON line per session
//	  state.jsonl.tmp   a state file being written (renamed over state.jsonl)
//
//	state.jsonl
//	{"format":"bbengine-index-state","version":1,"sessions":2,"doc":"doc/2","clean":true}
//	{"session":"s1","digest":"9f86…","project":"/src/app","tasks":4,"ids":["a1","a7",…],"sums":["3c1f…","0a9e…",…]}
//	{"session":"s2","digest":"60303…","tasks":1,"ids":["b2"],"sums":["77d0…"]}
//
// Sessions are sorted by name, ids within a session sorted; the header's
// session count detects a truncated file.
//
// With Options.Keys (an encrypted data directory) every segment, snapshot
// and the state file are internal/crypt chunked files instead, each data
// key bound to the file's name (cryptdir.go); a segment being persisted
// is <name>.tmp until it is renamed. Open refuses keys that do not match
// what the directory holds (ErrEncryption). docs/format/index.md lists the
// document fields.
//
// It may import engine (its types), codec/* and internal/*; it never
// imports pack, export or proxy, its peers. api and cli import it.
package index
