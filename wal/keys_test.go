package wal

import (
	"testing"

	"github.com/bbengine/bbengine/internal/crypt"
)

// seededKeys returns a key set derived from seed alone, holding
// generations gens (1 when none are given) of which active is the active
// one, so that two processes (the crash test's parent and child) hold
// the same keys and fuzz seeds are the same bytes on every run.
func seededKeys(tb testing.TB, seed string, active uint32, gens ...uint32) *crypt.Keys {
	tb.Helper()
	return crypt.Derive(seed, active, gens...)
}

// setActive makes gen, which k must hold, its active generation, as
// rotating the directory's keys does.
func setActive(tb testing.TB, k *crypt.Keys, gen uint32) {
	tb.Helper()
	if err := k.UseGeneration(gen); err != nil {
		tb.Fatal(err)
	}
}
