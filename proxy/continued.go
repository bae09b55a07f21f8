package proxy

import (
	"bytes"
	"container/list"
	"encoding/json"
	"hash/maphash"
	"strings"
	"sync/atomic"

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
	// judge, when not nil, decides failed and out from the reply's
	// bytes; settle takes them from it.
	judge *judgement
}

// judgement decides how a request was answered from its reply's bytes:
// whether the reply failed (an error event, cut before its end, or
// holding nothing) and its fingerprint. Decoding a reply costs more than
// everything else the recorder does for an exchange, and most replies
// are never asked about, so it is lazy: a reply that quickGood can
// vouch for is not failed, and only a later request that needs its
// fingerprint (a continuation, find) or its judgement (an exact resend
// of a reply quickGood could not vouch for, or a Responses reply's id)
// decodes it, once. The kept replies are bounded (tips.keep).
type judgement struct {
	path  string
	api   llm.API
	reply []byte // nil once decided or dropped
	// vouched is quickGood's word on the reply: unasked, vouchedGood
	// or notVouched (not sure). The handler asks once its client has the reply
	// (Proxy.vouch), off the exchange's path; whoever needs it first
	// asks it then (good). Atomic: the handler holds no lock of tips.
	vouched atomic.Int32
	decided bool
	failed  bool
	out     uint64
	id      string // an OpenAI Responses reply's id
}

// get returns the judgement, deciding it first if no one has yet.
func (j *judgement) get(ts *tips) (failed bool, out uint64, id string) {
	if j.decided {
		return j.failed, j.out, j.id
	}
	j.decided = true
	ts.keptBytes -= len(j.reply)
	// A reply of a protocol there is no decoder for is not judged: not
	// failed, its fingerprint not known.
	if dec := llm.DecoderFor(j.path, "", nil); dec != nil {
		dec.Write(j.reply)
		resp, err := dec.Close()
		switch {
		case err != nil || resp.Error != nil || !resp.Complete:
			j.failed = true
		default:
			if j.out = ts.outFingerprint(resp.Parts); j.out == 0 {
				j.failed = true
			} else if resp.API == llm.OpenAIResponses {
				j.id = resp.ID
			}
		}
	}
	j.reply = nil
	return j.failed, j.out, j.id
}

// quickGood's word on a reply, as judgement.vouched holds it.
const (
	unasked int32 = iota
	vouchedGood
	notVouched
)

// vouch asks quickGood about reply, the judgement's reply, unless that
// was done.
func (j *judgement) vouch(reply []byte) bool {
	if v := j.vouched.Load(); v != unasked {
		return v == vouchedGood
	}
	good := quickGood(j.api, reply)
	v := notVouched
	if good {
		v = vouchedGood
	}
	j.vouched.Store(v)
	return good
}

// good reports whether quickGood vouched for the reply, which must not
// be decided yet.
func (j *judgement) good() bool { return j.vouch(j.reply) }

// isFailed reports whether the reply failed, decoding it only when
// quickGood did not vouch for it.
func (j *judgement) isFailed(ts *tips) bool {
	if !j.decided && j.good() {
		return false
	}
	failed, _, _ := j.get(ts)
	return failed
}

// settleFailed takes failed from s's judgement.
func (s *tipSession) settleFailed(ts *tips) {
	if s.judge != nil {
		s.failed = s.judge.isFailed(ts)
	}
}

// settle takes failed and out from s's judgement, if it has one.
func (s *tipSession) settle(ts *tips) {
	if s.judge != nil {
		s.failed, s.out, _ = s.judge.get(ts)
		s.judge = nil
	}
}

// maxKeptReplies bounds the bytes of the replies tips keeps undecided; past it
// the oldest are decided (a reply quickGood vouched for is dropped, its
// fingerprint not known).
const maxKeptReplies = 32 << 20

// keep remembers j among the undecided replies.
func (ts *tips) keep(j *judgement) {
	ts.kept = append(ts.kept, j)
	ts.keptBytes += len(j.reply)
	for ts.keptBytes > maxKeptReplies && len(ts.kept) > 0 {
		old := ts.kept[0]
		ts.kept = ts.kept[1:]
		switch {
		case old.decided:
		case old.good():
			ts.keptBytes -= len(old.reply)
			old.reply, old.decided = nil, true
		default:
			old.get(ts)
		}
	}
	if len(ts.kept) > max(2*maxTips, 2*ts.keptLive) {
		// Forget the decided ones (their bytes are already off keptBytes).
		ts.keptSwept += len(ts.kept)
		n := 0
		for _, k := range ts.kept {
			if !k.decided {
				ts.kept[n] = k
				n++
			}
		}
		clear(ts.kept[n:])
		ts.kept = ts.kept[:n]
		ts.keptLive = n
	}
}

// quickGood reports whether reply, a whole response body of protocol
// api with a 2xx status, certainly did not fail: it ends as its
// protocol ends (the end event's line whole and valid JSON; a single
// document valid JSON of the protocol's kind), holds some text that is
// not white space or a tool call, and does not say "error" (nor
// "Error") anywhere. It looks for a few byte patterns and validates at
// most one line or one document, at memory speed and without
// allocating; false means not sure, and the reply is decoded when that
// matters (judgement).
func quickGood(api llm.API, reply []byte) bool {
	// encoding/json reads an "Error" or "ERROR" member as "error" (a
	// name mixing cases otherwise, which no provider sends, is left).
	if bytes.Contains(reply, []byte("rror")) || bytes.Contains(reply, []byte("RROR")) {
		return false
	}
	t := bytes.TrimLeft(reply, " \t\r\n")
	doc := len(t) > 0 && (t[0] == '{' || t[0] == '[')
	var end, kind string
	var content []string
	switch api {
	case llm.AnthropicMessages:
		end, kind = `"type":"message_stop"`, `"type":"message"`
		content = []string{`"type":"text_delta","text":"`, `"type":"text","text":"`, `"type":"tool_use"`}
	case llm.OpenAIChat:
		end, kind = "data: [DONE]", `"object":"chat.completion"`
		content = []string{`"content":"`, `"tool_calls":[{`}
	case llm.OpenAIResponses:
		if doc || bytes.Contains(reply, []byte("reasoning")) {
			return false
		}
		end = `"type":"response.completed"`
		content = []string{`"delta":"`, `"type":"function_call"`}
	case llm.Gemini:
		if bytes.Contains(reply, []byte(`"thought"`)) {
			return false
		}
		end, kind = `"finishReason":"STOP"`, `"candidates":[`
		content = []string{`"text":"`, `"functionCall":{`}
	default:
		return false
	}
	// Decoding judges a reply by its first choice (candidate) alone: a
	// reply with others may hold its text in them.
	if (api == llm.OpenAIChat || api == llm.Gemini) && !onlyIndexZero(reply) {
		return false
	}
	if !containsAny(reply, content, true) {
		return false
	}
	if doc {
		return bytes.Contains(reply, []byte(kind)) && jsonscan.Valid(reply)
	}
	if !bytes.HasPrefix(t, []byte("event:")) && !bytes.HasPrefix(t, []byte("data:")) {
		return false
	}
	// The end event's line, whole.
	i := bytes.LastIndex(reply, []byte(end))
	if i < 0 {
		return false
	}
	line := reply[bytes.LastIndexByte(reply[:i], '\n')+1:]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:"))
	if !ok {
		return false
	}
	data = bytes.TrimSpace(data)
	if api == llm.OpenAIChat {
		// "data: [DONE]" has no quotes to be escaped: a text may hold
		// it too, on a line of valid JSON.
		return string(data) == "[DONE]"
	}
	return jsonscan.Valid(data)
}

// onlyIndexZero reports whether every "index" key in b has the value 0:
// an OpenAI chat reply or a Gemini one has a single choice (candidate).
// Chat's tool calls have indexes too, so a chat reply with two tool
// calls is not sure either.
func onlyIndexZero(b []byte) bool {
	const key = `"index":`
	for {
		i := bytes.Index(b, []byte(key))
		if i < 0 {
			return true
		}
		b = bytes.TrimLeft(b[i+len(key):], " \t\r\n")
		if len(b) == 0 || b[0] != '0' || len(b) > 1 && (b[1] >= '0' && b[1] <= '9' || b[1] == '.' || b[1] == 'e' || b[1] == 'E') {
			return false
		}
	}
}

// containsAny reports whether b holds one of pats; with text set, a
// pattern that ends in a quote counts only when the string it opens
// holds a character that is not white space (nonBlank).
func containsAny(b []byte, pats []string, text bool) bool {
	for _, p := range pats {
		rest := b
		for {
			i := bytes.Index(rest, []byte(p))
			if i < 0 {
				break
			}
			rest = rest[i+len(p):]
			if !text || p[len(p)-1] != '"' || nonBlank(rest) {
				return true
			}
		}
	}
	return false
}

// nonBlank reports whether the JSON string whose body begins s holds a
// printable ASCII character other than a space: strings.TrimSpace would
// leave something of it. Bytes past ASCII and \u escapes (which may be
// white space) do not count.
func nonBlank(s []byte) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return false
		case c == '\\':
			if i+1 >= len(s) {
				return false
			}
			i++
			switch s[i] {
			case '"', '\\', '/':
				return true
			case 'u':
				i += 4
			}
		case c > ' ' && c < 0x7f:
			return true
		}
	}
	return false
}

// unjudged is an OpenAI Responses reply whose judgement (and so whose
// id) tips has not taken yet.
type unjudged struct {
	j       *judgement
	session string
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
	// unjudged are the Responses replies not yet in byReply because
	// their judgement was not taken yet, oldest first.
	unjudged []unjudged
	// kept are the replies kept undecided, oldest first, and their
	// bytes (judgement).
	kept      []*judgement
	keptBytes int
	// keptLive is how many of kept the last sweep of the decided ones
	// left: the next sweeps when kept holds twice as many, so that
	// sweeping costs O(1) a reply however many are kept. keptSwept
	// counts the entries sweeps looked at.
	keptLive, keptSwept int
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
	if e, ok := ts.byReply[id]; !ok {
		ts.takeJudged()
	} else {
		ts.replyLRU.MoveToFront(e)
		return e.Value.(*replyTip).session
	}
	if e, ok := ts.byReply[id]; ok {
		ts.replyLRU.MoveToFront(e)
		return e.Value.(*replyTip).session
	}
	return ""
}

// maxUnjudged bounds tips.unjudged: past it the oldest are judged on
// the spot.
const maxUnjudged = 256

// judgeLater remembers an OpenAI Responses reply of session whose id j
// will tell.
func (ts *tips) judgeLater(j *judgement, session string) {
	ts.unjudged = append(ts.unjudged, unjudged{j, session})
	for len(ts.unjudged) > maxUnjudged {
		ts.take(ts.unjudged[0])
		ts.unjudged = append(ts.unjudged[:0], ts.unjudged[1:]...)
	}
}

// takeJudged judges the Responses replies not judged yet and moves
// their ids into byReply, oldest first.
func (ts *tips) takeJudged() {
	for _, u := range ts.unjudged {
		ts.take(u)
	}
	clear(ts.unjudged)
	ts.unjudged = ts.unjudged[:0]
}

func (ts *tips) take(u unjudged) {
	if failed, _, id := u.j.get(ts); !failed && id != "" {
		ts.replied(id, u.session)
	}
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
		if i+1 == len(hashes) && !t.retried(ts) {
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
	for i := range best.sessions {
		s := &best.sessions[i]
		if whole {
			if s.settleFailed(ts); !s.failed {
				continue
			}
		}
		if out != 0 {
			s.settle(ts)
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
func (t *tip) retried(ts *tips) bool {
	for i := range t.sessions {
		s := &t.sessions[i]
		if s.settleFailed(ts); s.failed {
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
	ts.set(key, session, tipSession{failed: failed, out: out})
}

// answeredLater notes that j will tell how the request of session that
// sent key whole was answered.
func (ts *tips) answeredLater(key tipKey, session string, j *judgement) {
	ts.set(key, session, tipSession{judge: j})
}

func (ts *tips) set(key tipKey, session string, a tipSession) {
	e, ok := ts.byKey[key]
	if !ok {
		return
	}
	t := e.Value.(*tip)
	for i := range t.sessions {
		if s := &t.sessions[i]; s.session == session {
			s.failed, s.out, s.judge = a.failed, a.out, a.judge
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
