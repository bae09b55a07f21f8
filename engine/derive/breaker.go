package derive

import (
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine/schema"
)

// breakerFrame keeps a breaker frame. One that does not decode is logged
// with its offset and skipped: it never stops derivation.
func (c *canonicalizer) breakerFrame(off uint64, p []byte) error {
	if off < c.replayEnd {
		return nil // applied before the last commit
	}
	b, err := exchange.DecodeBreaker(p)
	if err != nil {
		c.e.opts.Logf("engine: breaker frame at WAL offset %d skipped: %v", off, err)
		return nil
	}
	c.ensureBatch()
	return c.setJSON(schema.BreakerKey(b.Session, off), &BreakerRecord{Breaker: b, Offset: off})
}
