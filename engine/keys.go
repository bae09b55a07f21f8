package engine

import "encoding/binary"

// Key family prefixes (see the package comment).
const (
	prefixMeta     = 'm'
	prefixExchange = 'x'
	prefixSession  = 's'
	prefixOrdinal  = 'n'
	prefixEvent    = 'e'
	prefixConvo    = 'c'
	prefixOpen     = 'o'
	prefixArtifact = 'a'
	prefixIndex    = 'i'
)

// derivedPrefixes lists every family Rebuild drops.
var derivedPrefixes = []byte{prefixMeta, prefixExchange, prefixSession, prefixOrdinal,
	prefixEvent, prefixConvo, prefixOpen, prefixArtifact, prefixIndex, prefixImportFile, prefixImportPending, prefixBreaker}

// Meta key names.
var (
	keyApplied  = []byte("mapplied")
	keyBuilder  = []byte("mbuilder")
	keySchema   = []byte("mschema")
	keySessions = []byte("msessions")
)

// appendU64Key appends prefix and the big-endian integers to dst.
func appendU64Key(dst []byte, prefix byte, ns ...uint64) []byte {
	dst = append(dst, prefix)
	for _, n := range ns {
		dst = binary.BigEndian.AppendUint64(dst, n)
	}
	return dst
}

// exchangeKey returns the key of exchange id in the exchange index.
func exchangeKey(dst []byte, id uint64) []byte { return appendU64Key(dst, prefixExchange, id) }

// openKey returns the key of open exchange id.
func openKey(dst []byte, id uint64) []byte { return appendU64Key(dst, prefixOpen, id) }

// eventKey returns the key of event seq of the session with ordinal ord.
func eventKey(dst []byte, ord, seq uint64) []byte { return appendU64Key(dst, prefixEvent, ord, seq) }

// convoKey returns the key of the conversation state of session ord.
func convoKey(dst []byte, ord uint64) []byte { return appendU64Key(dst, prefixConvo, ord) }

// ordinalKey returns the key mapping ordinal ord to its session id.
func ordinalKey(dst []byte, ord uint64) []byte { return appendU64Key(dst, prefixOrdinal, ord) }

// sessionKey returns the key of session id.
func sessionKey(dst []byte, id string) []byte {
	dst = append(dst, prefixSession)
	return append(dst, id...)
}

// upperBound returns the smallest key greater than every key starting
// with p, or nil when there is none (p is all 0xff).
func upperBound(p []byte) []byte {
	b := append([]byte(nil), p...)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] != 0xff {
			b[i]++
			return b[:i+1]
		}
	}
	return nil
}

func u64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}
