package engine

import (
	"encoding/json"
	"fmt"

	"github.com/bbengine/bbengine/engine/schema"
)

// Breakers returns the breaker records of a session, oldest first; none
// when the breaker never wrote about it. An empty session (no session id
// is empty) returns every session's records, session by session.
func (e *Engine) Breakers(session string) ([]BreakerRecord, error) {
	var out []BreakerRecord
	prefix := schema.BreakerPrefix(session)
	if session == "" {
		prefix = []byte{schema.PrefixBreaker}
	}
	err := e.scan(prefix, func(k, v []byte) error {
		var r BreakerRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("engine: decode breaker record %x: %w", k, err)
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// BreakerLatest returns, for every session the breaker wrote about, its
// latest records (at most keep of them, oldest first), session by
// session: what a proxy needs to restore its breaker.
func (e *Engine) BreakerLatest(keep int) ([]BreakerRecord, error) {
	var out, cur []BreakerRecord
	flush := func() {
		if len(cur) > keep {
			cur = cur[len(cur)-keep:]
		}
		out = append(out, cur...)
		cur = cur[:0]
	}
	err := e.scan([]byte{schema.PrefixBreaker}, func(k, v []byte) error {
		var r BreakerRecord
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("engine: decode breaker record %x: %w", k, err)
		}
		if len(cur) > 0 && cur[0].Session != r.Session {
			flush()
		}
		cur = append(cur, r)
		return nil
	})
	flush()
	return out, err
}
