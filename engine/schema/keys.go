package schema

import "encoding/binary"

// The key layout of the Pebble store (package engine's comment has the
// whole table): one prefix byte per family, then fixed-width big-endian
// integers, so byte order is numeric order. The derivation pipeline
// (engine/derive) writes these keys and the engine's queries read them;
// both name them only through this file.

// Key family prefixes (see package engine's comment).
const (
	PrefixMeta     = 'm'
	PrefixExchange = 'x'
	PrefixSession  = 's'
	PrefixOrdinal  = 'n'
	PrefixEvent    = 'e'
	PrefixConvo    = 'c'
	PrefixOpen     = 'o'
	PrefixArtifact = 'a'
	PrefixIndex    = 'i'
)

// DerivedPrefixes lists every family Rebuild drops.
var DerivedPrefixes = []byte{PrefixMeta, PrefixExchange, PrefixSession, PrefixOrdinal,
	PrefixEvent, PrefixConvo, PrefixOpen, PrefixArtifact, PrefixIndex, PrefixImportFile, PrefixImportPending, PrefixBreaker,
	PrefixMerge, PrefixJoin}

// Meta key names.
var (
	KeyApplied  = []byte("mapplied")
	KeyBuilder  = []byte("mbuilder")
	KeySchema   = []byte("mschema")
	KeySessions = []byte("msessions")
)

// AppendU64Key appends prefix and the big-endian integers to dst.
func AppendU64Key(dst []byte, prefix byte, ns ...uint64) []byte {
	dst = append(dst, prefix)
	for _, n := range ns {
		dst = binary.BigEndian.AppendUint64(dst, n)
	}
	return dst
}

// ExchangeKey returns the key of exchange id in the exchange index.
func ExchangeKey(dst []byte, id uint64) []byte { return AppendU64Key(dst, PrefixExchange, id) }

// OpenKey returns the key of open exchange id.
func OpenKey(dst []byte, id uint64) []byte { return AppendU64Key(dst, PrefixOpen, id) }

// EventKey returns the key of event seq of the session with ordinal ord.
func EventKey(dst []byte, ord, seq uint64) []byte { return AppendU64Key(dst, PrefixEvent, ord, seq) }

// ConvoKey returns the key of the conversation state of session ord.
func ConvoKey(dst []byte, ord uint64) []byte { return AppendU64Key(dst, PrefixConvo, ord) }

// ConvoKnownKey returns the key of chunk n of the known item keys of
// thread of session ord's conversation; the chunks of a session sort
// right after its ConvoKey.
func ConvoKnownKey(dst []byte, ord, thread, n uint64) []byte {
	return AppendU64Key(dst, PrefixConvo, ord, thread, n)
}

// OrdinalKey returns the key mapping ordinal ord to its session id.
func OrdinalKey(dst []byte, ord uint64) []byte { return AppendU64Key(dst, PrefixOrdinal, ord) }

// SessionKey returns the key of session id.
func SessionKey(dst []byte, id string) []byte {
	dst = append(dst, PrefixSession)
	return append(dst, id...)
}

// UpperBound returns the smallest key greater than every key starting
// with p, or nil when there is none (p is all 0xff).
func UpperBound(p []byte) []byte {
	b := append([]byte(nil), p...)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] != 0xff {
			b[i]++
			return b[:i+1]
		}
	}
	return nil
}

// U64 decodes a big-endian u64 value; 0 unless b has 8 bytes.
func U64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

// Memory keys live in the 'a' (artifacts) and 'i' (memory indexes)
// families:
//
//	'a' artifact id                 Artifact (without corrections)
//	'i' 's' ordinal u64             MemoryState of the session
//	'i' 'q' session id              empty: the session's memory must be derived again
//	'i' 'u' 'a' artifact id         CorrectionState of an artifact
//	'i' 'u' 's' session id          CorrectionState of a session
//	'i' 'b' session id              Brief of the session (below)
//	'i' 'r' session id 0x00 task    Report of a task's outcome (below)
//	'i' 'p' project 0x00 …          project index (below)
//	'm' "memory"                    MemoryVersion of the stored artifacts
const (
	MemState      = 's'
	MemPending    = 'q'
	MemCorrection = 'u'
)

// KeyMemory is the meta key of the MemoryVersion the stored artifacts
// were derived with.
var KeyMemory = []byte("mmemory")

// ArtifactKey returns the key of artifact id.
func ArtifactKey(id string) []byte { return append([]byte{PrefixArtifact}, id...) }

// MemStateKey returns the key of the MemoryState of session ord.
func MemStateKey(ord uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{PrefixIndex, MemState}, ord)
}

// MemPendingKey returns the key that marks a session's memory to be
// derived again.
func MemPendingKey(session string) []byte {
	return append([]byte{PrefixIndex, MemPending}, session...)
}

// CorrectionKey returns the key of the CorrectionState of an artifact
// or a session (target) id.
func CorrectionKey(target, id string) []byte {
	return append([]byte{PrefixIndex, MemCorrection, target[0]}, id...)
}

// What harnesses say about a session, as notes (memory frames in the
// WAL, codec/exchange.Note) and X-Bb-Session-Goal request headers, lives
// in two 'i' families:
//
//	'i' 'b' session id              Brief: goal and latest checkpoint
//	'i' 'r' session id 0x00 task    Report: the latest outcome note of a task
//
// Both come from WAL frames alone, so Rebuild gives them again, and
// RebuildMemory keeps them as it keeps corrections.
const (
	MemBrief  = 'b'
	MemReport = 'r'
)

// BriefKey returns the key of a session's Brief.
func BriefKey(session string) []byte {
	return append([]byte{PrefixIndex, MemBrief}, session...)
}

// ReportPrefix returns the prefix of a session's reports' keys.
func ReportPrefix(session string) []byte {
	return append(append([]byte{PrefixIndex, MemReport}, session...), 0)
}

// ReportKey returns the key of the Report of a session's task.
func ReportKey(session, task string) []byte {
	return append(ReportPrefix(session), task...)
}

// Key families of imports.
const (
	PrefixImportFile    = 'f' // 'f' path → ImportFileState
	PrefixImportPending = 'p' // 'p' session id → "" (derive again)
)

// ImportFileKey returns the key of an imported file's state;
// ImportPendingKey the key that marks a session to derive again.
func ImportFileKey(path string) []byte  { return append([]byte{PrefixImportFile}, path...) }
func ImportPendingKey(id string) []byte { return append([]byte{PrefixImportPending}, id...) }

// PrefixBreaker is the family of the circuit breaker's records (breaker
// frames, codec/exchange.Breaker), kept per session in WAL order:
//
//	'k' session id 0x00 offset u64    BreakerRecord
//
// They come from WAL frames alone, so Rebuild gives them again. A running
// proxy restores its breaker from them after a restart, and `bbengine
// breaker status` and `show` read them.
const PrefixBreaker = 'k'

// BreakerPrefix returns the prefix of a session's breaker records' keys.
func BreakerPrefix(session string) []byte {
	return append(append([]byte{PrefixBreaker}, session...), 0)
}

// BreakerKey returns the key of the breaker record at WAL offset off.
func BreakerKey(session string, off uint64) []byte {
	return binary.BigEndian.AppendUint64(BreakerPrefix(session), off)
}

// The project index lists, per project, the memory that a session of the
// same project may replace or close: active decisions and constraints,
// and open threads, keyed by what makes one replace or close another.
// It lives in the 'i' family:
//
//	'i' 'p' project 0x00 'S' subject 0x00 artifact id     active decision, by subject
//	'i' 'p' project 0x00 'T' term 0x00 artifact id        active decision, by chosen option and statement term
//	'i' 'p' project 0x00 'K' term 0x00 artifact id        active constraint, by core term
//	'i' 'p' project 0x00 'X' command 0x00 artifact id     open failing test, by the command's first two words
//	'i' 'p' project 0x00 'F' path 0x00 artifact id        open TODO or FIXME, by file
//	'i' 'p' project 0x00 'W' term 0x00 artifact id        open prose thread (TODO, blocker said), by term
//	'i' 'p' project 0x00 'R' option 0x00 artifact id      active decision, by an option it replaces
//	'i' 'p' project 0x00 'P' command 0x00 artifact id     outcome with a passing test run, by the command's first two words
//	'i' 'p' project 0x00 'Q' term 0x00 artifact id        open question, by term
//	'i' 'p' project 0x00 'U' unit 0x00 artifact id        active decision, by the unit of a value it states
//	'i' 'p' project 0x00 'A' term 0x00 artifact id        outcome, by a term of its task's prompt (answers)
//	'i' 'p' project 0x00 'O' tool 0x00 artifact id        outcome with a command that succeeded, by its tool (toolWord)
//	'i' 'p' project 0x00 'N' term 0x00 artifact id        active decision, by a term of a "don't …" clause it states
//
// Each value is the session's ordinal and the artifact's latest time
// (unix ns), 8 bytes each, big-endian (an entry written before memory/5
// has the ordinal alone). The entries
// of an artifact change only when the artifact does, so keeping the index
// costs what the changed artifacts cost: a session of a project with
// hundreds of earlier sessions reads and writes only its own entries,
// and finding what a new decision may supersede is one prefix scan per
// subject or term, not a pass over the project.
//
// The project of a session is its working directory (ProjectOf); a
// session without one has no entries. Whether and how a session's
// memory replaces another session's is the memory rules' to say: the
// index only finds the candidates.
// MemProject is the project index family (after PrefixIndex).
const MemProject = 'p'

// Project index kinds.
const (
	ProjectSubject    = 'S'
	ProjectTerm       = 'T'
	ProjectConstraint = 'K'
	ProjectTest       = 'X'
	ProjectFile       = 'F'
	ProjectProse      = 'W'
	ProjectReplaced   = 'R'
	ProjectPassed     = 'P'
	ProjectQuestion   = 'Q'
	ProjectUnit       = 'U'
	ProjectPrompt     = 'A'
	ProjectSucceeded  = 'O'
	ProjectNegated    = 'N'
	ProjectFixed      = 'E'
)

// ProjectPrefix returns the prefix of a project index kind's entries
// for term.
func ProjectPrefix(project string, kind byte, term string) []byte {
	k := append([]byte{PrefixIndex, MemProject}, project...)
	k = append(k, 0, kind)
	return append(append(k, term...), 0)
}

// A proxied session and the imported log of the same agent session are
// read as one timeline (docs/design/merge.md). Two families hold what
// joins them; the sides' own keys do not change:
//
//	'j' 'a' import id 0x00 ordinal u64   empty        join by id: a live session (ordinal) sent the agent id the import session is named by
//	'j' 'l' ordinal u64 import id        empty        the same join, by the live session
//	'j' 'r' reply key [32] side ordinal  empty        join by content: a reply of a live session's first 16 calls (side 'L') or of an import's (side 'I')
//	'j' 'k' ordinal u64                  reply keys   the reply keys an import session wrote, 32 bytes each, so the next derivation of it deletes them
//	'j' 'c' ordinal u64                  import id    a live session merged by content, and its import
//	'g' 'l' session id                   canonical id merge link, for every member (the canonical one too)
//	'g' 'h' ordinal u64                  MergeHead    the merge of the group whose canonical member has the ordinal
//	'g' 'o' ordinal u64                  order        the merged order (binary, see engine/derive's merge.go)
//	'g' 'p' import id                    empty        the group of the import session must be merged again
//	'g' 'v' import id                    empty        the group (merged by content) must be composed again, not decided again
//
// Derivation writes the 'j' keys as it derives live exchanges, marks the
// group pending in the same batch, and recomputes the merge ('g' 'l',
// 'h', 'o') at the end of the pass from the two stored timelines alone,
// so Rebuild gives the same bytes.
const (
	PrefixMerge = 'g'
	PrefixJoin  = 'j'

	MergeLink    = 'l'
	MergeHeadKey = 'h'
	MergeOrder   = 'o'
	MergePending = 'p'
	MergeView    = 'v'

	JoinByImport = 'a'
	JoinByLive   = 'l'
	JoinReply    = 'r'
	JoinKeys     = 'k'
	JoinContent  = 'c'

	// The sides of a JoinReplyKey.
	ReplyLive   = 'L'
	ReplyImport = 'I'

	// ReplyKeyLen is the length of a reply key (a SHA-256).
	ReplyKeyLen = 32
)

// JoinReplyPrefix returns the prefix of the join keys by content of
// reply key key on side ('L' or 'I'); JoinReplyKey the key of the
// session with ordinal ord.
func JoinReplyPrefix(key []byte, side byte) []byte {
	return append(append([]byte{PrefixJoin, JoinReply}, key...), side)
}
func JoinReplyKey(key []byte, side byte, ord uint64) []byte {
	return binary.BigEndian.AppendUint64(JoinReplyPrefix(key, side), ord)
}

// JoinKeysKey returns the key of the reply keys import session ord
// wrote; JoinContentKey the key of the import a live session ord is
// merged with by content.
func JoinKeysKey(ord uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{PrefixJoin, JoinKeys}, ord)
}
func JoinContentKey(ord uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{PrefixJoin, JoinContent}, ord)
}

// JoinPrefix returns the prefix of the join keys of import session id;
// JoinKey the key joining it to the live session with ordinal ord.
func JoinPrefix(id string) []byte {
	return append(append([]byte{PrefixJoin, JoinByImport}, id...), 0)
}
func JoinKey(id string, ord uint64) []byte {
	return binary.BigEndian.AppendUint64(JoinPrefix(id), ord)
}

// JoinLivePrefix returns the prefix of the join keys of live session
// ord; JoinLiveKey the key joining it to import session id.
func JoinLivePrefix(ord uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{PrefixJoin, JoinByLive}, ord)
}
func JoinLiveKey(ord uint64, id string) []byte { return append(JoinLivePrefix(ord), id...) }

// MergeLinkKey returns the key of the merge link of session id.
func MergeLinkKey(id string) []byte { return append([]byte{PrefixMerge, MergeLink}, id...) }

// MergeHeadKeyOf and MergeOrderKey return the keys of the head and the
// order of the merge whose canonical member has ordinal ord.
func MergeHeadKeyOf(ord uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{PrefixMerge, MergeHeadKey}, ord)
}
func MergeOrderKey(ord uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{PrefixMerge, MergeOrder}, ord)
}

// MergePendingKey returns the key marking the group of import session
// id to merge again.
func MergePendingKey(id string) []byte { return append([]byte{PrefixMerge, MergePending}, id...) }

// MergeViewKey returns the key marking the group of import session id,
// merged by content, to be composed again from its sides without being
// decided again: its live session grew past the calls that decide.
func MergeViewKey(id string) []byte { return append([]byte{PrefixMerge, MergeView}, id...) }
