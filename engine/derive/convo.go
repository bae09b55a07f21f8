package derive

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/bbengine/bbengine/codec/llm"
)

// convo is a session's conversation state: what the canonicalizer knows
// of each thread, so that it emits only what a request adds.
type convo struct {
	Threads []thread `json:"threads,omitempty"`
	// Next is the last thread id assigned.
	Next int `json:"next"`
	// Tick counts model calls; thread.Used orders threads by recency.
	Tick uint64 `json:"tick"`
	// Systems are the hashes of the system prompts already emitted.
	Systems []string `json:"systems,omitempty"`
	// Recent holds the openings of recent long assistant texts, to
	// recognize a conversation restarted from a summary (compaction).
	Recent []recent `json:"recent,omitempty"`
}

// thread is one conversation within a session.
type thread struct {
	ID int `json:"id"`
	// Known are the keys (item hashes) of the conversation as the
	// canonicalizer knows it, including the last response's output;
	// Output is how many of the trailing keys are that output.
	Known []string `json:"known,omitempty"`
	// Stored is len(Known) in the stored state, which keeps Known apart,
	// in chunks (convostore.go).
	Stored int    `json:"stored,omitempty"`
	Output int    `json:"output,omitempty"`
	Used   uint64 `json:"used"`
	// Systems are the hashes of the system prompts sent on the thread
	// (the last few).
	Systems []string `json:"systems,omitempty"`
	// Calls are the tool calls still waiting for a result.
	Calls []callRef `json:"calls,omitempty"`
}

type callRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Synthetic marks an id the deriver made up, the response having
	// sent none (Gemini may not).
	Synthetic bool `json:"synthetic,omitempty"`
}

type recent struct {
	Thread int    `json:"thread"`
	Text   string `json:"text"`
}

const (
	maxThreads     = 32
	maxCalls       = 64
	maxSystems     = 64
	maxRecent      = 8
	recentMinLen   = 120
	recentSnippet  = 300
	keyHashBytes   = 10
	systemHashSize = 16
)

// item is one part of the flattened conversation: the conversation's
// messages are flattened into parts so that clients that split or merge
// messages differently (one assistant message per content block, or one
// per turn) still match.
type item struct {
	role string // user, assistant, system (tool messages count as user)
	part llm.Part
	// key is the item's hash; thinking has none: clients may drop it
	// from history, so it never decides a match.
	key string
}

// roleClass maps a message role to the side of the conversation it is on.
func roleClass(role string) string {
	switch role {
	case "assistant", "model":
		return "assistant"
	case "system", "developer":
		return "system"
	}
	return "user"
}

// flatten turns messages into items.
func flatten(msgs []llm.Message) []item {
	items, _ := flattenEach(msgs)
	return items
}

// appendItems appends the parts of one role to items. Every part is an
// item of its own: clients merge consecutive messages of one role into one
// message of several blocks (and split them again), so message boundaries
// never decide a match. User text blocks stay apart (a client that merges
// two user messages keeps their blocks); adjacent assistant text is joined,
// because a streamed answer may come back as one block or as one per chunk.
func appendItems(items []item, role string, parts []llm.Part) []item {
	for _, p := range parts {
		if p.Type == llm.PartText {
			if strings.TrimSpace(p.Text) == "" && p.Signature == "" && p.TextBytes == 0 {
				continue
			}
			// A text spilled to a blob (see llm.DecoderOptions) is never
			// merged: it is held only in part.
			if n := len(items); role == "assistant" && n > 0 && items[n-1].role == role &&
				items[n-1].part.Type == llm.PartText && !items[n-1].part.Partial &&
				p.TextSHA256 == "" && items[n-1].part.TextSHA256 == "" {
				merged := items[n-1].part
				merged.Text += p.Text
				merged.Partial = p.Partial
				if p.Signature != "" {
					merged.Signature = p.Signature
				}
				items[n-1].part = merged
				continue
			}
		}
		items = append(items, item{role: role, part: p})
	}
	return items
}

func isThinking(t llm.PartType) bool {
	return t == llm.PartThinking || t == llm.PartRedactedThinking
}

// itemKey hashes what identifies an item across requests: its role, type,
// trimmed text, ids, name and canonical arguments; not signatures, cache
// markers or whitespace.
func itemKey(it *item) string {
	p := &it.part
	if isThinking(p.Type) {
		return ""
	}
	h := sha256.New()
	w := func(s string) { h.Write([]byte(s)); h.Write([]byte{0}) }
	w(it.role)
	w(string(p.Type))
	switch p.Type {
	case llm.PartText, llm.PartRefusal, llm.PartCompaction:
		w(textKey(p))
	case llm.PartToolCall, llm.PartServerToolCall:
		// Not the id: a client may give a call the provider sent
		// without one an id of its own when it sends it back (Gemini
		// CLI does), and the call is still the one it was.
		w(p.Name)
		w(string(llm.CanonicalJSON(p.Input)))
		if len(p.Input) == 0 {
			w(textKey(p))
		}
	case llm.PartToolResult, llm.PartServerToolResult:
		w(p.ID)
		w(strings.TrimSpace(p.Text))
		if p.IsError {
			w("error")
		}
		for _, c := range p.Content {
			w(string(c.Type))
			w(c.SHA256 + c.URL)
		}
	case llm.PartImage, llm.PartDocument:
		w(p.SHA256 + p.URL)
		w(strings.TrimSpace(p.Text))
	default:
		w(p.ID)
		w(p.Name)
	}
	sum := h.Sum(nil)
	return hex.EncodeToString(sum[:keyHashBytes])
}

// textKey identifies a part's text, whole or spilled to a blob alike:
// the digest of the text without its leading and trailing white space.
func textKey(p *llm.Part) string {
	if p.TrimSHA256 != "" {
		return p.TrimSHA256
	}
	return llm.TrimKey(p.Text)
}

func hashText(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:systemHashSize])
}

// keysOf returns the keys of items, skipping thinking, and for each key
// the index of its item.
func keysOf(items []item) (keys []string, at []int) {
	for i := range items {
		if items[i].key != "" {
			keys = append(keys, items[i].key)
			at = append(at, i)
		}
	}
	return keys, at
}

func commonPrefix(a, b []string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// match is where a request falls in a session's conversation.
type match struct {
	thread  *thread
	from    int // index of the first new item
	rewrite *Rewrite
	isNew   bool // the thread starts with this request
}

// place finds the thread a request's items continue and what is new. It
// updates the thread's known keys to the request's (the output is added
// by settle).
//
// keys and at are those of items (keysOf), or of the whole request when
// items are only its part after a resent prefix (see decodeRequest).
func (cv *convo) place(items []item, keys []string, at []int, continuation bool, system string) match {
	m := cv.place1(items, keys, at, continuation, system)
	m.thread.sent(system)
	return m
}

// sent records that a request on t carried the system prompt with hash h.
func (t *thread) sent(h string) {
	for _, s := range t.Systems {
		if s == h {
			return
		}
	}
	t.Systems = append(t.Systems, h)
	if len(t.Systems) > 4 {
		t.Systems = t.Systems[len(t.Systems)-4:]
	}
}

func (cv *convo) place1(items []item, keys []string, at []int, continuation bool, system string) match {
	cv.Tick++
	newFrom := func(l int) int {
		if l == 0 {
			return 0
		}
		return at[l-1] + 1
	}
	if continuation && len(cv.Threads) > 0 {
		// A Responses request continuing a stored response: its input is
		// all new, on the most recent thread.
		t := cv.recentThread()
		t.Known = append(t.Known, keys...)
		t.Output, t.Used = 0, cv.Tick
		return match{thread: t, from: 0}
	}
	best, bestL := -1, -1
	for i := range cv.Threads {
		l := commonPrefix(cv.Threads[i].Known, keys)
		if l > bestL || (l == bestL && l > 0 && cv.Threads[i].Used > cv.Threads[best].Used) {
			best, bestL = i, l
		}
	}
	if best >= 0 && bestL > 0 {
		t := &cv.Threads[best]
		switch {
		case bestL == len(t.Known):
			t.Known = keys
			t.Output, t.Used = 0, cv.Tick
			return match{thread: t, from: newFrom(bestL)}
		case t.Output > 0 && bestL == len(t.Known)-t.Output:
			// The client left out the last response's output: it re-sent
			// the same request (a retry), or went on without the output
			// (interrupted or failed) on the same thread.
			kind := "retry"
			if len(keys) > bestL {
				kind = "drop"
			}
			rw := &Rewrite{Kind: kind, From: t.ID, Kept: bestL, Dropped: t.Output}
			t.Known = keys
			t.Output, t.Used = 0, cv.Tick
			return match{thread: t, from: newFrom(bestL), rewrite: rw}
		}
		rw := &Rewrite{Kind: "fork", From: t.ID, Kept: bestL, Dropped: len(t.Known) - bestL}
		nt := cv.newThread(keys)
		return match{thread: nt, from: newFrom(bestL), rewrite: rw, isNew: true}
	}
	if from := cv.compactedFrom(items, system); from != nil {
		rw := &Rewrite{Kind: "compaction", From: from.ID, Kept: 0, Dropped: len(from.Known)}
		from.Known = keys
		from.Output, from.Used = 0, cv.Tick
		from.Calls = nil
		return match{thread: from, from: 0, rewrite: rw}
	}
	return match{thread: cv.newThread(keys), from: 0, isNew: true}
}

func (cv *convo) recentThread() *thread {
	best := 0
	for i := range cv.Threads {
		if cv.Threads[i].Used > cv.Threads[best].Used {
			best = i
		}
	}
	return &cv.Threads[best]
}

// newThread adds a thread, evicting the least recently used one when
// there are too many.
func (cv *convo) newThread(keys []string) *thread {
	if len(cv.Threads) >= maxThreads {
		lru := 0
		for i := range cv.Threads {
			if cv.Threads[i].Used < cv.Threads[lru].Used {
				lru = i
			}
		}
		cv.Threads = append(cv.Threads[:lru], cv.Threads[lru+1:]...)
	}
	cv.Next++
	cv.Threads = append(cv.Threads, thread{ID: cv.Next, Known: keys, Used: cv.Tick})
	return &cv.Threads[len(cv.Threads)-1]
}

// compactedFrom returns the thread whose earlier output a request starts
// over from: the request opens with user text (no earlier turns), one of
// its first two text blocks holds the opening of a recent long answer of
// the session (the summary a client restarts from), and it carries a
// system prompt that thread was sent (a side request that quotes the
// answer, such as a title helper, has its own). Otherwise nil.
func (cv *convo) compactedFrom(items []item, system string) *thread {
	var texts []string
	for i := range items {
		it := &items[i]
		if it.role != "user" {
			break // earlier turns: not a restart from a summary
		}
		if it.part.Type == llm.PartText {
			texts = append(texts, it.part.Text)
			if len(texts) == 2 {
				break
			}
		}
	}
	for _, r := range cv.Recent {
		for _, t := range texts {
			if !strings.Contains(t, r.Text) {
				continue
			}
			for j := range cv.Threads {
				if t := &cv.Threads[j]; t.ID == r.Thread && slices.Contains(t.Systems, system) {
					return t
				}
			}
		}
	}
	return nil
}

// settle adds a response's output items to the thread's known keys and
// remembers long assistant texts.
func (cv *convo) settle(t *thread, out []item) {
	keys, _ := keysOf(out)
	t.Known = append(t.Known, keys...)
	t.Output = len(keys)
	for i := range out {
		p := &out[i].part
		if p.Type != llm.PartText || p.Partial {
			continue
		}
		s := strings.TrimSpace(p.Text)
		if len(s) < recentMinLen {
			continue
		}
		if len(s) > recentSnippet {
			s = s[:recentSnippet]
		}
		cv.Recent = append(cv.Recent, recent{Thread: t.ID, Text: s})
		if len(cv.Recent) > maxRecent {
			cv.Recent = cv.Recent[len(cv.Recent)-maxRecent:]
		}
	}
}

// seenSystem reports whether the system prompt with hash h was emitted,
// and records it.
func (cv *convo) seenSystem(h string) bool {
	for _, s := range cv.Systems {
		if s == h {
			return true
		}
	}
	cv.Systems = append(cv.Systems, h)
	if len(cv.Systems) > maxSystems {
		cv.Systems = cv.Systems[len(cv.Systems)-maxSystems:]
	}
	return false
}

// call records a tool call waiting for its result.
func (t *thread) call(id, name string, synthetic bool) {
	t.Calls = append(t.Calls, callRef{ID: id, Name: name, Synthetic: synthetic})
	if len(t.Calls) > maxCalls {
		t.Calls = t.Calls[len(t.Calls)-maxCalls:]
	}
}

// result resolves a tool result to its call: by id, or (for providers
// that send none) the oldest waiting call of the same name. A result
// whose id no call has goes to the oldest waiting call of its name whose
// id the deriver made up: Gemini CLI answers a functionCall the model
// sent without an id under an id of its own (synth_…). It returns the
// call's id and name.
func (t *thread) result(id, name string) (string, string, bool) {
	for i, c := range t.Calls {
		if (id != "" && c.ID == id) || (id == "" && name != "" && c.Name == name) {
			t.Calls = append(t.Calls[:i], t.Calls[i+1:]...)
			return c.ID, c.Name, true
		}
	}
	if id != "" && name != "" {
		for i, c := range t.Calls {
			if c.Synthetic && c.Name == name {
				t.Calls = append(t.Calls[:i], t.Calls[i+1:]...)
				return c.ID, c.Name, true
			}
		}
	}
	return id, name, false
}

// placeItems is place for a request decoded whole.
func (cv *convo) placeItems(items []item, continuation bool, system string) match {
	keys, at := keysOf(items)
	return cv.place(items, keys, at, continuation, system)
}
