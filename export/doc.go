// Package export owns bbengine's session formats: how a session of the
// engine (engine.Session and its []engine.Event) is written as a file
// another tool or a person reads, and how such a file is read back into a
// session.
//
//	format               out                  back in
//	bbox/1 (and JSONL)   BBox                 DecodeBBox, ReadBBox; importer "bbox"
//	ATIF-v1.7            ATIF                 importer "atif"
//	trajectory JSON      Trajectory           ReadTrajectory; importer "trajectory"
//	rlog/1               RLog                 (a report: not read back)
//
// The package is named for its first use, bbengine export and show; it
// reads back too because every lossless format here must: export --check
// and convert --check read their output back and count it, and bbengine
// import and convert take bbox and ATIF files (another tool's or ours).
// Writer and reader of one format live side by side so that the
// round trip events → file → events is one package's invariant, tested
// here. The name "format" was not taken: it would be shadowed by every
// printf-style format parameter of its callers, and package codec already
// owns the formats as pure syntax.
//
// # What it owns, what it may import
//
// The pure codecs stay in codec/: codec/bbox parses, writes and validates
// bbox/1 text, codec/atif holds the ATIF types, its strict decoder and
// Harbor's validation rules. This package maps between those documents
// and engine events, so it imports engine and codec/*, and nothing else of
// bbengine. The engine never imports it: its importers of the formats
// ("atif", "bbox", "trajectory") are registered with
// engine.RegisterImporter from this package's init, and every program
// that opens an engine holding such imports links this package (cli does).
// Only cli, bench and tests import it.
//
// # Guarantees
//
// Every writer is a pure function of its arguments (and, for BBox, the
// blob store it puts large values into): the same session and events give
// the same bytes. Every reader is a pure function of its input, as an
// engine.Importer must be, so a rebuild derives the same state. Readers
// never panic on arbitrary input (FuzzReadBBox, FuzzATIFImport,
// FuzzReadTrajectory). The package keeps no state but the importers it
// registers, and its functions are safe for concurrent use.
//
// Formats are documented as tables in docs/format/bbox.md,
// docs/format/atif.md and docs/format/trajectory.md.
package export
