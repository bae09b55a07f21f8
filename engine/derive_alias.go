package engine

// The derivation pipeline lives in package engine/derive; the engine
// runs it (follow.go) and keeps the names callers knew: the import
// registry and pipeline (RegisterImporter, ScanImport, AppendImport…),
// the client families, memory's pure derivation, and the pipeline's
// result types are the engine's here as they were.

import (
	"context"
	"github.com/bbengine/bbengine/codec/census"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/redact"
	"github.com/bbengine/bbengine/engine/derive"
	"github.com/bbengine/bbengine/wal"
)

type (
	Progress        = derive.Progress
	Family          = derive.Family
	ImportRecord    = derive.ImportRecord
	ImportFile      = derive.ImportFile
	Imported        = derive.Imported
	Importer        = derive.Importer
	LogFormat       = derive.LogFormat
	ImportFileState = derive.ImportFileState
	RowPrint        = derive.RowPrint
	FileImport      = derive.FileImport
	Problem         = derive.Problem
	MemoryProgress  = derive.MemoryProgress
	ProjectMemory   = derive.ProjectMemory
)

const (
	EvidenceNote = derive.EvidenceNote
	PackTag      = derive.PackTag
)

// OutcomeID is derive.OutcomeID.
func OutcomeID(session, task string) string { return derive.OutcomeID(session, task) }

// RegisterFamily is derive.RegisterFamily.
func RegisterFamily(f Family) { derive.RegisterFamily(f) }

// RegisterImporter is derive.RegisterImporter.
func RegisterImporter(source string, fn Importer) { derive.RegisterImporter(source, fn) }

// ImportSources is derive.ImportSources.
func ImportSources() []string { return derive.ImportSources() }

// DeriveImport is derive.DeriveImport.
func DeriveImport(source, session string, files []ImportFile) (*Imported, error) {
	return derive.DeriveImport(source, session, files)
}

// Census is derive.Census.
func Census(s *Session, events []Event) census.Counts { return derive.Census(s, events) }

// RegisterLogFormat is derive.RegisterLogFormat.
func RegisterLogFormat(source string, f LogFormat) { derive.RegisterLogFormat(source, f) }

// SourceCensus is derive.SourceCensus.
func SourceCensus(source string, files []ImportFile) census.Counts {
	return derive.SourceCensus(source, files)
}

// ImportKind is derive.ImportKind.
func ImportKind(source, path string) string { return derive.ImportKind(source, path) }

// CheckRecord is derive.CheckRecord.
func CheckRecord(source, kind string, data []byte) error {
	return derive.CheckRecord(source, kind, data)
}

// ReadImport is derive.ReadImport.
func ReadImport(source, path string, st *ImportFileState) (*FileImport, error) {
	return derive.ReadImport(source, path, st)
}

// IsRows is derive.IsRows.
func IsRows(source, path string) bool { return derive.IsRows(source, path) }

// ReadRows is derive.ReadRows.
func ReadRows(source, path string, state func(unit string) (*ImportFileState, error)) (*FileImport, error) {
	return derive.ReadRows(source, path, state)
}

// ScanRows is derive.ScanRows.
func ScanRows(ctx context.Context, source, path string, state func(unit string) (*ImportFileState, error), emit func([]exchange.Import) error) (*FileImport, error) {
	return derive.ScanRows(ctx, source, path, state, emit)
}

// ScanImport is derive.ScanImport.
func ScanImport(source, path string, st *ImportFileState, emit func([]exchange.Import) error) (*FileImport, error) {
	return derive.ScanImport(source, path, st, emit)
}

// EncodeImports is derive.EncodeImports.
func EncodeImports(recs []exchange.Import) ([]wal.Record, error) { return derive.EncodeImports(recs) }

// AppendImport is derive.AppendImport.
func AppendImport(log *wal.Log, recs []exchange.Import) error { return derive.AppendImport(log, recs) }

// StripPacks is derive.StripPacks.
func StripPacks(s string) string { return derive.StripPacks(s) }

// DeriveMemory is derive.DeriveMemory.
func DeriveMemory(s *Session, events []Event, red *redact.Redactor) ([]Artifact, int) {
	return derive.DeriveMemory(s, events, red)
}

// ProjectOf is derive.ProjectOf.
func ProjectOf(s *Session) string { return derive.ProjectOf(s) }

// ingestName is the event table's file while an import's pass writes it
// (derive.IngestName); Open removes one a killed pass left.
const ingestName = derive.IngestName

// RowWindow is derive.RowWindow.
const RowWindow = derive.RowWindow

// RowHash is derive.RowHash.
func RowHash(data []byte) string { return derive.RowHash(data) }
