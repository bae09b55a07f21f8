package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/bbengine/bbengine/engine/derive"
	"github.com/bbengine/bbengine/engine/schema"

	"github.com/cockroachdb/pebble/v2"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// Reader answers questions about the derived state. An Engine is one; a
// client of a running proxy's query endpoint is another.
type Reader interface {
	Sessions(f SessionFilter) ([]Session, error)
	Session(id string) (Session, error)
	Events(session string, f EventFilter) ([]Event, error)
	Exchange(id uint64) (Exchange, error)
	// Breakers returns a session's circuit breaker records.
	Breakers(session string) ([]BreakerRecord, error)
}

// SessionFilter selects sessions. Zero fields select everything.
type SessionFilter struct {
	// Since keeps sessions active at or after this time (unix ns).
	Since int64 `json:"since,omitempty"`
	// Agent keeps sessions of this client family (claude-code, codex…).
	Agent string `json:"agent,omitempty"`
	// Unmerged lists the members of a merged session each as derived,
	// not the merged session once.
	Unmerged bool `json:"unmerged,omitempty"`
}

var _ Reader = (*Engine)(nil)

// Sessions returns the sessions f selects, oldest first.
func (e *Engine) Sessions(f SessionFilter) ([]Session, error) {
	var out []Session
	var (
		links map[string]string
		heads map[uint64]Session
	)
	if !f.Unmerged {
		var err error
		if links, heads, err = e.mergeLinks(); err != nil {
			return nil, err
		}
	}
	err := e.scan([]byte{schema.PrefixSession}, func(k, v []byte) error {
		var s Session
		if err := json.Unmarshal(v, &s); err != nil {
			return fmt.Errorf("engine: decode session %q: %w", k[1:], err)
		}
		if canon, ok := links[s.ID]; ok {
			if canon != s.ID {
				return nil // listed as its merged session
			}
			if h, ok := heads[s.Ordinal]; ok {
				s = h
			}
		}
		if f.Since != 0 && s.Last < f.Since {
			return nil
		}
		if f.Agent != "" && s.Agent != f.Agent {
			return nil
		}
		out = append(out, s)
		return nil
	})
	slices.SortStableFunc(out, func(a, b Session) int {
		if a.First != b.First {
			return compareI64(a.First, b.First)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, err
}

func compareI64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Session returns the session with id, or the only session whose id
// starts with it (an imported session's id also without its "source:").
// A member of a merged session gives the merged session's summary. An
// unknown or ambiguous id is an error wrapping ErrNotFound.
func (e *Engine) Session(id string) (Session, error) {
	s, err := e.rawSession(id)
	if err != nil {
		return s, err
	}
	h, err := e.mergeHead(&s)
	if err != nil || h == nil {
		return s, err
	}
	return h.Summary, nil
}

// rawSession is Session without merged sessions: the summary of the
// session id names as it was derived.
func (e *Engine) rawSession(id string) (Session, error) {
	var s Session
	if id == "" {
		return s, fmt.Errorf("%w: empty session id", ErrNotFound)
	}
	ok, err := e.getJSON(schema.SessionKey(nil, id), &s)
	if err != nil || ok {
		return s, err
	}
	var found []Session
	err = e.scan(schema.SessionKey(nil, id), func(k, v []byte) error {
		var c Session
		if err := json.Unmarshal(v, &c); err != nil {
			return fmt.Errorf("engine: decode session %q: %w", k[1:], err)
		}
		found = append(found, c)
		return nil
	})
	if err == nil && len(found) == 0 && !strings.Contains(id, ":") {
		// An imported session ("claude:<id>") by its agent's own id.
		err = e.scan([]byte{schema.PrefixSession}, func(k, v []byte) error {
			if i := strings.IndexByte(string(k[1:]), ':'); i < 0 || !strings.HasPrefix(string(k[2+i:]), id) {
				return nil
			}
			var c Session
			if err := json.Unmarshal(v, &c); err != nil {
				return fmt.Errorf("engine: decode session %q: %w", k[1:], err)
			}
			found = append(found, c)
			return nil
		})
	}
	switch {
	case err != nil:
		return s, err
	case len(found) == 1:
		return found[0], nil
	case len(found) > 1:
		return s, fmt.Errorf("%w: session id %q is ambiguous (%d sessions start with it)", ErrNotFound, id, len(found))
	}
	return s, fmt.Errorf("%w: no session %q (bbengine sessions lists them)", ErrNotFound, id)
}

// Events returns the events of a session that f selects, in order.
func (e *Engine) Events(session string, f EventFilter) ([]Event, error) {
	s, err := e.rawSession(session)
	if err != nil {
		return nil, err
	}
	if !f.Raw {
		h, err := e.mergeHead(&s)
		if err != nil {
			return nil, err
		}
		if h != nil {
			view, _, err := e.mergedEvents(h)
			if err != nil {
				return nil, err
			}
			out := view[:0]
			for _, ev := range view {
				if ev.Seq > f.After && (f.Task == "" || ev.Task == f.Task) && (f.Thread == 0 || ev.Thread == f.Thread) {
					out = append(out, ev)
				}
			}
			return out, nil
		}
	}
	var out []Event
	lo := schema.EventKey(nil, s.Ordinal, f.After+1)
	hi := schema.AppendU64Key(nil, schema.PrefixEvent, s.Ordinal+1)
	err = e.scanRange(lo, hi, func(k, v []byte) error {
		var ev Event
		// The v1 semantics of go-json-experiment decode the same values
		// as encoding/json in half the time: a session's events are
		// read whole for every derivation of its memory.
		if err := jsonv1.Unmarshal(v, &ev); err != nil {
			return fmt.Errorf("engine: decode event %d of session %s: %w", schema.U64(k[9:]), s.ID, err)
		}
		if f.Task != "" && ev.Task != f.Task {
			return nil
		}
		if f.Thread != 0 && ev.Thread != f.Thread {
			return nil
		}
		out = append(out, ev)
		return nil
	})
	return out, err
}

// Exchange returns the index entry of exchange id.
func (e *Engine) Exchange(id uint64) (Exchange, error) {
	var x Exchange
	ok, err := e.getJSON(schema.ExchangeKey(nil, id), &x)
	if err == nil && !ok {
		err = fmt.Errorf("%w: no exchange %d in the index (bbengine replay --exchange %d reads the WAL)", ErrNotFound, id, id)
	}
	if err != nil || x.Session == "" || x.LastSeq == 0 {
		return x, err
	}
	// The events of an exchange of a merged session, as the view
	// numbers them.
	var s Session
	if ok, err := e.getJSON(schema.SessionKey(nil, x.Session), &s); err != nil || !ok {
		return x, err
	}
	h, err := e.mergeHead(&s)
	if err != nil || h == nil || h.Live != s.ID {
		return x, err
	}
	_, order, err := e.mergedEvents(h)
	if err != nil {
		return x, err
	}
	seqs := derive.LiveSeqs(order)
	if r, ok := seqs[x.FirstSeq]; ok {
		x.FirstSeq = r[0]
	}
	if r, ok := seqs[x.LastSeq]; ok {
		x.LastSeq = r[1]
	}
	return x, nil
}

// scan calls fn for every key with prefix p.
func (e *Engine) scan(p []byte, fn func(k, v []byte) error) error {
	return e.scanRange(p, schema.UpperBound(p), fn)
}

func (e *Engine) scanRange(lo, hi []byte, fn func(k, v []byte) error) error {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed || e.db == nil {
		return ErrClosed
	}
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			return err
		}
	}
	return it.Error()
}

// Dump calls fn for every key and value of the derived state, in key
// order (for tests and debugging: two stores are equal when their dumps
// are).
func (e *Engine) Dump(fn func(k, v []byte) error) error {
	return e.scanRange([]byte{0}, []byte{0xff}, fn)
}

// ImportState returns the state of the imported file path.
func (e *Engine) ImportState(path string) (ImportFileState, bool, error) {
	var st ImportFileState
	ok, err := e.getJSON(schema.ImportFileKey(path), &st)
	return st, ok, err
}
