package derive

// The switches and helpers of this file are for the engine's tests: they
// derive through an Engine and compare the pipeline's fast paths with
// its plain ones, byte for byte. Nothing else sets them, and they must
// not change while a pass runs.

// PrefixSkip turns on finding the part of a request its session has
// already seen by the hashes of its messages (prefix.go), so that only
// the new messages are decoded; off, every request is decoded whole.
// The default is true.
var PrefixSkip = true

// DeferRequestBodies is the largest request body the canonicalizer
// gathers while its exchange is open; a larger one is read from the WAL
// again when the exchange ends (requestBody), so that the proxy's copy,
// held while the response streams, and the canonicalizer's are not in
// memory at once. Real requests (a long session resends about 700 KB)
// stay well below it.
var DeferRequestBodies int64 = 1 << 20

// CutText returns the first n bytes of s, less an incomplete character:
// what an event keeps of a text longer than Options.TextLimit.
func CutText(s string, n int) string { return cutText(s, n) }
