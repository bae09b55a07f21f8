package derive

// The key layout is engine/schema's (keys.go); these are its names here.

import "github.com/bbengine/bbengine/engine/schema"

const (
	prefixMeta          = schema.PrefixMeta
	prefixExchange      = schema.PrefixExchange
	prefixSession       = schema.PrefixSession
	prefixOrdinal       = schema.PrefixOrdinal
	prefixEvent         = schema.PrefixEvent
	prefixConvo         = schema.PrefixConvo
	prefixOpen          = schema.PrefixOpen
	prefixArtifact      = schema.PrefixArtifact
	prefixIndex         = schema.PrefixIndex
	memState            = schema.MemState
	memPending          = schema.MemPending
	memCorrection       = schema.MemCorrection
	memBrief            = schema.MemBrief
	memReport           = schema.MemReport
	prefixImportFile    = schema.PrefixImportFile
	prefixImportPending = schema.PrefixImportPending
	prefixBreaker       = schema.PrefixBreaker
	memProject          = schema.MemProject
)

var (
	derivedPrefixes = schema.DerivedPrefixes
	keyApplied      = schema.KeyApplied
	keyBuilder      = schema.KeyBuilder
	keySchema       = schema.KeySchema
	keySessions     = schema.KeySessions
	keyMemory       = schema.KeyMemory
)

func appendU64Key(dst []byte, prefix byte, ns ...uint64) []byte {
	return schema.AppendU64Key(dst, prefix, ns...)
}

func exchangeKey(dst []byte, id uint64) []byte { return schema.ExchangeKey(dst, id) }

func openKey(dst []byte, id uint64) []byte { return schema.OpenKey(dst, id) }

func eventKey(dst []byte, ord, seq uint64) []byte { return schema.EventKey(dst, ord, seq) }

func convoKey(dst []byte, ord uint64) []byte { return schema.ConvoKey(dst, ord) }

func ordinalKey(dst []byte, ord uint64) []byte { return schema.OrdinalKey(dst, ord) }

func sessionKey(dst []byte, id string) []byte { return schema.SessionKey(dst, id) }

func upperBound(p []byte) []byte { return schema.UpperBound(p) }

func u64(b []byte) uint64 { return schema.U64(b) }

func artifactKey(id string) []byte { return schema.ArtifactKey(id) }

func memStateKey(ord uint64) []byte { return schema.MemStateKey(ord) }

func memPendingKey(session string) []byte { return schema.MemPendingKey(session) }

func correctionKey(target, id string) []byte { return schema.CorrectionKey(target, id) }

func briefKey(session string) []byte { return schema.BriefKey(session) }

func reportPrefix(session string) []byte { return schema.ReportPrefix(session) }

func reportKey(session, task string) []byte { return schema.ReportKey(session, task) }

func importFileKey(path string) []byte { return schema.ImportFileKey(path) }

func importPendingKey(id string) []byte { return schema.ImportPendingKey(id) }

func breakerPrefix(session string) []byte { return schema.BreakerPrefix(session) }

func breakerKey(session string, off uint64) []byte { return schema.BreakerKey(session, off) }

func projectPrefix(project string, kind byte, term string) []byte {
	return schema.ProjectPrefix(project, kind, term)
}
