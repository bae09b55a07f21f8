package proxy

import (
	"bytes"
	"container/list"
	"encoding/json"
	"hash/maphash"
	"strings"

	"github.com/bbengine/bbengine/codec/jsonscan"
	"github.com/bbengine/bbengine/codec/llm"
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
// more) joins it only when that one was answered with an error (an
// error status, or an exchange cut short): it is the client's retry. One
// still unanswered, or answered well, was sent by another terminal that
// began the same way. Two requests that go on from the
// same prefix in different ways both join its session, where the
// engine records the second as a fork (engine/derive: Rewrite "fork").
// When a prefix was sent whole by requests of several sessions (two
// terminals that began the same way), the previous response settles it:
// the element that follows the prefix is the client's copy of the reply
// it was given, and the session whose reply it is (the same parts: text
// without surrounding white space, tool calls by name and canonical
// arguments; not ids, signatures or thinking, which clients rewrite or
// drop) is taken. Failing that, the one with the same model and system
// prompt; when that leaves more than one, or none, the request starts a
// new session rather than guess.
//
// An OpenAI Responses request may carry only its new input and name the
// stored reply it goes on from (previous_response_id): that id, exact,
// names the session whose reply it was. tips remembers the ids of the
// Responses replies of such sessions for that, as many as prefixes.
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
	// failed is set when the last request of this session that sent
	// the prefix had an error answer (see answered).
	failed bool
	// out is the fingerprint of the reply that request was given
	// (outFingerprint), 0 when not known.
	out uint64
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
	// byReply maps a Responses reply id to its session (replyLRU: of
	// *replyTip, most recent at the front), at most max of them.
	byReply  map[string]*list.Element
	replyLRU *list.List
}

type replyTip struct{ id, session string }

func newTips() *tips {
	return &tips{seed: maphash.MakeSeed(), byKey: map[tipKey]*list.Element{}, lru: list.New(), max: maxTips,
		byReply: map[string]*list.Element{}, replyLRU: list.New()}
}

// replied remembers that the reply named id was given to session.
func (ts *tips) replied(id, session string) {
	if e, ok := ts.byReply[id]; ok {
		e.Value.(*replyTip).session = session
		ts.replyLRU.MoveToFront(e)
		return
	}
	ts.byReply[id] = ts.replyLRU.PushFront(&replyTip{id: id, session: session})
	for ts.replyLRU.Len() > ts.max {
		old := ts.replyLRU.Back()
		ts.replyLRU.Remove(old)
		delete(ts.byReply, old.Value.(*replyTip).id)
	}
}

// replySession returns the session the reply named id was given to, or
// "".
func (ts *tips) replySession(id string) string {
	if e, ok := ts.byReply[id]; ok {
		ts.replyLRU.MoveToFront(e)
		return e.Value.(*replyTip).session
	}
	return ""
}

// previousResponse returns the previous_response_id of a Responses
// request body, or "".
func previousResponse(body []byte) string {
	if !bytes.Contains(body, []byte(`"previous_response_id"`)) {
		return ""
	}
	var id string
	jsonscan.Fields(body, func(k, v []byte) bool {
		if string(k) == "previous_response_id" {
			if json.Unmarshal(v, &id) != nil {
				id = ""
			}
			return false
		}
		return true
	})
	return id
}

// maxReplyKept is the longest reply of a request found by its
// conversation that the recorder keeps to fingerprint.
const maxReplyKept = 1 << 20

// fingerprint hashes a request's model and system prompt hash.
func (ts *tips) fingerprint(model string, sys uint64) uint64 {
	return mixHash(maphash.String(ts.seed, model), sys)
}

// find returns the session the conversation whose element hashes are
// hashes continues, and the key of the conversation itself; session is
// "" when it continues none (or it is not clear which). elem returns the
// fingerprint of element i as outFingerprint makes it (0 when not
// known): a session whose reply to the prefix is known and is not the
// element after the prefix is not continued (a canned history that
// begins as another conversation did).
func (ts *tips) find(hashes []uint64, fp uint64, elem func(i int) uint64) (session string, key tipKey) {
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
			if t.sent(fp) {
				// The same request again (model and system prompt
				// too), and it was answered: not a retry but another
				// conversation that began the same way (a script run
				// twice). A shorter prefix must not claim it.
				return "", tipKey{chain, len(hashes)}
			}
			continue // the same turns under another model or system prompt
		}
		best = t
	}
	key = tipKey{chain, len(hashes)}
	if best == nil {
		return "", key
	}
	whole := best.key.n == len(hashes)
	var out uint64
	if !whole && elem != nil {
		out = elem(best.key.n)
	}
	var match, same, replied string
	matches, sames, replies := 0, 0, 0
	for _, s := range best.sessions {
		if whole && !s.failed {
			continue
		}
		if out != 0 && s.out != 0 && s.out != out {
			continue // its reply was another: not its conversation
		}
		if s.session != match {
			match = s.session
			matches++
		}
		if s.fp == fp && s.session != same {
			same = s.session
			sames++
		}
		if out != 0 && s.out == out && s.session != replied {
			replied = s.session
			replies++
		}
	}
	switch {
	case matches == 1:
		return match, key
	case replies == 1:
		return replied, key
	case sames == 1:
		return same, key
	}
	return "", key
}

// sent reports whether a session sent t whole with fingerprint fp.
func (t *tip) sent(fp uint64) bool {
	for _, s := range t.sessions {
		if s.fp == fp {
			return true
		}
	}
	return false
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
// answered: failed for an error status or a broken exchange, and the
// fingerprint of its reply (0: not known).
func (ts *tips) answered(key tipKey, session string, failed bool, out uint64) {
	e, ok := ts.byKey[key]
	if !ok {
		return
	}
	t := e.Value.(*tip)
	for i := range t.sessions {
		if t.sessions[i].session == session {
			t.sessions[i].failed, t.sessions[i].out = failed, out
		}
	}
}

// outFingerprint hashes the assistant output parts as a client sends
// them back in its next request: consecutive texts joined, white space
// around a text ignored, tool calls by name and canonical arguments.
// Thinking, signatures and ids are left out: clients drop or rewrite
// them. It returns 0 for an output with nothing to compare.
func (ts *tips) outFingerprint(parts []llm.Part) uint64 {
	var h maphash.Hash
	h.SetSeed(ts.seed)
	var text strings.Builder
	n := 0
	flush := func() {
		if t := strings.TrimSpace(text.String()); t != "" {
			h.WriteString("text\x00")
			h.WriteString(t)
			h.WriteByte(0)
			n++
		}
		text.Reset()
	}
	for _, p := range parts {
		switch p.Type {
		case llm.PartThinking, llm.PartRedactedThinking:
		case llm.PartText:
			text.WriteString(p.Text)
		case llm.PartToolCall, llm.PartServerToolCall:
			flush()
			h.WriteString(string(p.Type) + "\x00" + p.Name + "\x00")
			h.Write(llm.CanonicalJSON(p.Input))
			h.WriteByte(0)
			n++
		default:
			flush()
			h.WriteString(string(p.Type) + "\x00" + p.Name + "\x00")
			n++
		}
	}
	flush()
	if n == 0 {
		return 0
	}
	return h.Sum64() | 1
}

// elementFingerprint returns outFingerprint of element i of body's
// conversation (an assistant turn), or 0 when it is not one or does not
// decode.
func (ts *tips) elementFingerprint(api llm.API, body []byte, l *jsonscan.Layout, i int) uint64 {
	field := llm.ConversationField(api)
	if field == "" || i >= len(l.Starts) {
		return 0
	}
	raw := body[l.Starts[i] : l.Starts[i]+l.Lens[i]]
	doc := make([]byte, 0, len(raw)+len(field)+8)
	doc = append(append(append(append(doc, `{"`...), field...), `":[`...), raw...)
	doc = append(doc, "]}"...)
	req, err := llm.DecodeRequest(api, doc)
	if err != nil || len(req.Messages) != 1 || req.Messages[0].Role != "assistant" {
		return 0
	}
	return ts.outFingerprint(req.Messages[0].Parts)
}
