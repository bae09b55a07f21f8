package proxy

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"hash/maphash"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/bbengine/bbengine/codec/exchange"

	"github.com/bbengine/bbengine/codec/jsonscan"
)

// sessionHeaders are the agents' own session headers the proxy knows by
// itself, in order of trust: those of the agents with a directory under
// agents/ (so a program that registers none still files their traffic
// under their sessions) and of agents without one yet. New adds the
// headers of the registered agents that are not here (agents.SessionHeaders).
var sessionHeaders = []string{
	"X-Claude-Code-Session-Id", // Claude Code 2.1.86+
	"Session-Id",               // Codex
	"Session_id",               // older Codex
	"X-Session-Affinity",       // opencode
	"X-Session-Id",             // opencode, others
	"X-Qwen-Code-Session-Id",
}

// sessionGoal returns the goal an X-Bb-Session-Goal header value
// states, fit for the log. Header values are ASCII, so a goal in another
// script comes percent-encoded as UTF-8: a value with escapes is decoded
// (one that does not decode, "raise coverage to 90%", is taken as it
// is). Invalid UTF-8 is replaced, control characters and runs of white
// space become one space, secrets are redacted, and the result is cut to
// exchange.MaxGoal bytes at a rune boundary.
func sessionGoal(red *Redactor, v string) string {
	if v == "" {
		return ""
	}
	if strings.Contains(v, "%") {
		if d, err := url.PathUnescape(v); err == nil {
			v = d
		}
	}
	v = strings.ToValidUTF8(v, "\uFFFD")
	v = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, v)
	v = red.String(strings.Join(strings.Fields(v), " "))
	if len(v) > exchange.MaxGoal {
		i := exchange.MaxGoal
		for i > 0 && !utf8.RuneStart(v[i]) {
			i--
		}
		v = v[:i]
	}
	return v
}

// headerSession returns the session id from the request headers and the
// header it came from; known are the agents' session headers, in order
// of trust.
func headerSession(h http.Header, known []string) (string, string) {
	if v := h.Get("X-Bb-Session-Id"); exchange.ValidID(v) {
		return v, "x-bb-session-id"
	}
	for _, k := range known {
		if v := h.Get(k); exchange.ValidID(v) {
			return v, http.CanonicalHeaderKey(k)
		}
	}
	return "", ""
}

// bodyInfo is what the recorder reads from a JSON request body.
type bodyInfo struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Metadata struct {
		UserID string `json:"user_id"`
	} `json:"metadata"`
}

var legacySession = regexp.MustCompile(`_session_([0-9a-fA-F-]{36})`)

// readBody extracts the model, stream flag and Claude Code's session id
// (metadata.user_id: a JSON string with session_id since 2.1.78, else
// user_…_account_…_session_<uuid>) from a request body. It runs off the
// request path, in the recorder.
func readBody(body []byte) (model string, stream bool, session string) {
	if len(body) == 0 || body[0] != '{' && !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		return "", false, ""
	}
	// The body resends the whole conversation: split it with jsonscan
	// (validating it as json.Unmarshal would) and decode only the three
	// members read here, matched as encoding/json matches field names.
	var bi bodyInfo
	good := true
	err := jsonscan.Fields(body, func(k, v []byte) bool {
		good = applyMember(&bi, k, v)
		return good
	})
	if err != nil || !good {
		return "", false, ""
	}
	return bi.Model, bi.Stream, userSession(bi.Metadata.UserID)
}

// userSession returns the session id a metadata.user_id states, or "".
func userSession(uid string) string {
	if uid == "" {
		return ""
	}
	var inner struct {
		SessionID string `json:"session_id"`
	}
	if json.Unmarshal([]byte(uid), &inner) == nil && exchange.ValidID(inner.SessionID) {
		return inner.SessionID
	}
	if m := legacySession.FindStringSubmatch(uid); m != nil {
		return m[1]
	}
	return ""
}

// newID returns a random id with a prefix, e.g. "req_3f9a…" (16 random
// bytes, hex).
func newID(prefix string) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return prefix + hex.EncodeToString(b[:])
}

// pathModel reads the model and streaming from a Gemini path
// (/v1beta/models/gemini-2.5-pro:streamGenerateContent), which puts both
// there rather than in the body.
func pathModel(path string) (model string, stream, ok bool) {
	i := strings.Index(path, "/models/")
	if i < 0 {
		return "", false, false
	}
	rest := path[i+len("/models/"):]
	m, method, found := strings.Cut(rest, ":")
	if !found || m == "" || strings.Contains(m, "/") {
		return "", false, false
	}
	switch method {
	case "streamGenerateContent":
		return m, true, true
	case "generateContent":
		return m, false, true
	}
	return "", false, false
}

// bodyMemo remembers the layout of the last few request bodies and what
// their members before the conversation say, so that read reads a body
// that resends one of them at memory speed: the resent history is
// checked by hash (jsonscan.ResplitLayout) and only the members after it
// are decoded. It is safe for concurrent use; the zero value is ready.
type bodyMemo struct {
	mu   sync.Mutex
	seed maphash.Seed
	last []*bodyLayout // most recent first, at most maxBodies
	// resent counts the bodies read with the memory.
	resent atomic.Int64
}

// maxBodies is the number of bodies remembered, across sessions.
const maxBodies = 16

// bodyLayout is what bodyMemo remembers of a body. It is not changed
// once made.
type bodyLayout struct {
	field  string
	layout *jsonscan.Layout
	// head is what the members before the conversation set, and bad is
	// set when one of them did not decode.
	head bodyInfo
	bad  bool
	// sys is the hash of the system prompt members (system,
	// systemInstruction) before the conversation, 0 for none.
	sys uint64
}

// systemMember reports whether k names a member holding a system prompt
// (Anthropic's system, Gemini's systemInstruction).
func systemMember(k []byte) bool {
	return bytes.EqualFold(k, []byte("system")) || bytes.EqualFold(k, []byte("systemInstruction")) ||
		bytes.EqualFold(k, []byte("system_instruction"))
}

// mixHash folds h into the running hash c (a splitmix64 round), for
// chains of hashes kept in memory only.
func mixHash(c, h uint64) uint64 {
	c ^= h + 0x9e3779b97f4a7c15 + c<<6 + c>>2
	c ^= c >> 30
	c *= 0xbf58476d1ce4e5b9
	c ^= c >> 27
	c *= 0x94d049bb133111eb
	return c ^ c>>31
}

// conversationFields are the names of the member that holds the
// conversation, by protocol.
var conversationFields = []string{"messages", "input", "contents"}

// bodyMember is a member of a body readBody decodes.
type bodyMember struct {
	at    int
	name  []byte
	value []byte
}

// applyMember decodes a member into bi as readBody does; it reports
// false when it does not decode.
func applyMember(bi *bodyInfo, k, v []byte) bool {
	var bad error
	switch {
	case bytes.EqualFold(k, []byte("model")):
		bad = json.Unmarshal(v, &bi.Model)
	case bytes.EqualFold(k, []byte("stream")):
		bad = json.Unmarshal(v, &bi.Stream)
	case bytes.EqualFold(k, []byte("metadata")):
		bad = json.Unmarshal(v, &bi.Metadata)
	}
	return bad == nil
}

func readsMember(k []byte) bool {
	return bytes.EqualFold(k, []byte("model")) || bytes.EqualFold(k, []byte("stream")) || bytes.EqualFold(k, []byte("metadata"))
}

// read is readBody, with the memory of earlier bodies: the result is the
// same.
func (m *bodyMemo) read(body []byte) (model string, stream bool, session string) {
	model, stream, session, _ = m.readConversation(body)
	return model, stream, session
}

// bodyConversation is what readConversation found of a body's
// conversation: the layout of its array (the hash of each element, as
// raw bytes) and the hash of its system prompt members, 0 for none. It
// is not changed once made.
type bodyConversation struct {
	layout *jsonscan.Layout
	sys    uint64
}

// readConversation is read, also returning the conversation it found,
// or a zero one when the body has none.
func (m *bodyMemo) readConversation(body []byte) (model string, stream bool, session string, conv bodyConversation) {
	if len(body) == 0 || body[0] != '{' && !bytes.HasPrefix(bytes.TrimSpace(body), []byte("{")) {
		return "", false, "", conv
	}
	m.mu.Lock()
	if m.last == nil {
		m.seed = maphash.MakeSeed()
	}
	seed, last := m.seed, m.last
	m.mu.Unlock()
	var after []bodyMember
	var sys uint64 // the system members after the conversation
	collect := func(k, v []byte) {
		if systemMember(k) {
			sys = mixHash(sys, maphash.Bytes(seed, v))
		}
		if readsMember(k) {
			after = append(after, bodyMember{at: cap(body) - cap(v), name: k, value: v})
		}
	}
	var (
		next, before *bodyLayout
		bi           bodyInfo
		bad          bool
	)
	for i := 0; i < len(last) && before == nil; i++ {
		field := last[i].field
		if i > 0 && slices.ContainsFunc(last[:i], func(b *bodyLayout) bool { return b.field == field }) {
			continue // tried
		}
		layouts := make([]*jsonscan.Layout, len(last))
		for j, b := range last {
			if b.field == field {
				layouts[j] = b.layout
			}
		}
		after, sys = after[:0], 0
		if l, from, ok := jsonscan.ResplitLayout(seed, body, field, collect, layouts...); ok {
			before = last[from]
			bi, bad = before.head, before.bad
			m.resent.Add(1)
			next = &bodyLayout{field: field, layout: l, head: before.head, bad: before.bad, sys: before.sys}
		}
	}
	if next == nil {
		// A full scan, on the conversation member that comes first.
		field, first := "", -1
		for _, f := range conversationFields {
			if i := bytes.Index(body, []byte(`"`+f+`"`)); i >= 0 && (first < 0 || i < first) {
				field, first = f, i
			}
		}
		if field == "" {
			model, stream, session = readBody(body)
			return model, stream, session, conv
		}
		after, sys = after[:0], 0
		// The system members, told apart by offset once the array's
		// is known.
		var systems []bodyMember
		open, spans, ok := jsonscan.Split(body, field, func(k, v []byte) {
			if systemMember(k) {
				systems = append(systems, bodyMember{at: cap(body) - cap(v), value: v})
			}
			if readsMember(k) {
				// Keep the name: Split may have unescaped it.
				after = append(after, bodyMember{at: cap(body) - cap(v), name: append([]byte(nil), k...), value: v})
			}
		})
		if !ok {
			model, stream, session = readBody(body)
			return model, stream, session, conv
		}
		for len(after) > 0 && after[0].at < open {
			if !bad && !applyMember(&bi, after[0].name, after[0].value) {
				bad = true
			}
			after = after[1:]
		}
		var headSys uint64
		for _, m := range systems {
			if m.at < open {
				headSys = mixHash(headSys, maphash.Bytes(seed, m.value))
			} else {
				sys = mixHash(sys, maphash.Bytes(seed, m.value))
			}
		}
		next = &bodyLayout{field: field, layout: jsonscan.NewLayout(seed, body, open, spans), head: bi, bad: bad, sys: headSys}
	}
	for _, a := range after {
		if !bad && !applyMember(&bi, a.name, a.value) {
			bad = true
		}
	}
	m.remember(next, before)
	conv = bodyConversation{layout: next.layout, sys: mixHash(next.sys, sys)}
	if bad {
		return "", false, "", conv
	}
	return bi.Model, bi.Stream, userSession(bi.Metadata.UserID), conv
}

// remember keeps next, in place of the body it resends (before, or nil).
func (m *bodyMemo) remember(next, before *bodyLayout) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := make([]*bodyLayout, 0, maxBodies)
	l = append(l, next)
	for _, b := range m.last {
		if b != before && len(l) < maxBodies {
			l = append(l, b)
		}
	}
	m.last = l
}
