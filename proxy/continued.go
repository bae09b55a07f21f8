package proxy

import (
	"container/list"
	"hash/maphash"
)

// Some agents (Gemini CLI, plain SDK scripts) send no session id. Their
// requests still resend the whole conversation, so a request continues
// an earlier one exactly when its conversation array begins with all of
// that request's elements, byte for byte, and goes on past them (with
// the reply the client was given, then its own new turn). tips
// remembers, for the recent requests of such sessions, the hash chain
// of their conversation elements (the element hashes jsonscan's layout
// already computed for bodyMemo, so no byte is hashed twice), and finds
// the session a new request continues with one pass over its elements:
// the chain of each prefix is looked up, and the longest one some
// earlier request sent whole wins. No text is compared loosely: only
// the hashes of whole elements as raw bytes.
//
// A request that resends exactly an earlier one (the same elements, no
// more) joins it only when that one was answered with an error or not
// at all: it is the client's retry. Two requests that go on from the
// same prefix in different ways both join its session, where the
// engine records the second as a fork (engine/derive: Rewrite "fork").
// When a prefix was sent whole by requests of several sessions (two
// terminals that began the same way), the one with the same model and
// system prompt is taken; when that leaves more than one, or none, the
// request starts a new session rather than guess.
//
// tips is owned by the recorder: it is used only while rmu is held.

// maxTips is the number of conversation prefixes tips remembers (one a
// request), least recently used forgotten first; with maxTipSessions
// sessions at most a prefix, it holds at most about 4096 × 4 small
// entries (under 1 MiB).
const (
	maxTips        = 4096
	maxTipSessions = 4
)

// tipKey identifies a conversation prefix: the chain of its element
// hashes and its length.
type tipKey struct {
	chain uint64
	n     int
}

// tipSession is a session that sent a prefix whole.
type tipSession struct {
	session string
	// fp is the hash of the request's model and system prompt.
	fp uint64
	// failed is set while the last request of this session that sent
	// the prefix has had no answer, or an error answer (see answered).
	failed bool
}

type tip struct {
	key      tipKey
	sessions []tipSession // most recent last
}

type tips struct {
	seed  maphash.Seed
	byKey map[tipKey]*list.Element // of *tip
	lru   *list.List               // most recent at the front
	max   int
}

func newTips() *tips {
	return &tips{seed: maphash.MakeSeed(), byKey: map[tipKey]*list.Element{}, lru: list.New(), max: maxTips}
}

// fingerprint hashes a request's model and system prompt hash.
func (ts *tips) fingerprint(model string, sys uint64) uint64 {
	return mixHash(maphash.String(ts.seed, model), sys)
}

// find returns the session the conversation whose element hashes are
// hashes continues, and the key of the conversation itself; session is
// "" when it continues none (or it is not clear which).
func (ts *tips) find(hashes []uint64, fp uint64) (session string, key tipKey) {
	var (
		chain uint64
		best  *tip
	)
	for i, h := range hashes {
		chain = mixHash(chain, h)
		e, ok := ts.byKey[tipKey{chain, i + 1}]
		if !ok {
			continue
		}
		t := e.Value.(*tip)
		if i+1 == len(hashes) && !t.retried() {
			continue // the same request again, answered: not a retry
		}
		best = t
	}
	key = tipKey{chain, len(hashes)}
	if best == nil {
		return "", key
	}
	whole := best.key.n == len(hashes)
	var match, same string
	matches, sames := 0, 0
	for _, s := range best.sessions {
		if whole && !s.failed {
			continue
		}
		if s.session != match {
			match = s.session
			matches++
		}
		if s.fp == fp && s.session != same {
			same = s.session
			sames++
		}
	}
	switch {
	case matches == 1:
		return match, key
	case sames == 1:
		return same, key
	}
	return "", key
}

// retried reports whether a request resending exactly t may be a retry:
// some session's last request of it failed.
func (t *tip) retried() bool {
	for _, s := range t.sessions {
		if s.failed {
			return true
		}
	}
	return false
}

// add remembers that session sent the conversation key whole. Until it
// is answered it is not failed: a second request of the same bytes sent
// meanwhile is another conversation that began the same way, not a
// retry (a client retries once it has its answer, or has given up).
func (ts *tips) add(key tipKey, session string, fp uint64) {
	if key.n == 0 {
		return
	}
	e, ok := ts.byKey[key]
	if ok {
		ts.lru.MoveToFront(e)
	} else {
		e = ts.lru.PushFront(&tip{key: key})
		ts.byKey[key] = e
		for ts.lru.Len() > ts.max {
			old := ts.lru.Back()
			ts.lru.Remove(old)
			delete(ts.byKey, old.Value.(*tip).key)
		}
	}
	t := e.Value.(*tip)
	for i, s := range t.sessions {
		if s.session == session {
			t.sessions = append(t.sessions[:i], t.sessions[i+1:]...)
			break
		}
	}
	if len(t.sessions) >= maxTipSessions {
		t.sessions = append(t.sessions[:0], t.sessions[1:]...)
	}
	t.sessions = append(t.sessions, tipSession{session: session, fp: fp})
}

// answered notes how the request of session that sent key whole was
// answered: failed for an error status or a broken exchange.
func (ts *tips) answered(key tipKey, session string, failed bool) {
	e, ok := ts.byKey[key]
	if !ok {
		return
	}
	t := e.Value.(*tip)
	for i := range t.sessions {
		if t.sessions[i].session == session {
			t.sessions[i].failed = failed
		}
	}
}
