package proxy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/jsonscan"
	"github.com/bbengine/bbengine/codec/llm"
)

// convUpstream answers every model call with a streamed text reply in
// the protocol of its path (the next of replies, else "ok", in two
// chunks), or with the next status of fail when one is queued.
type convUpstream struct {
	*httptest.Server
	mu      sync.Mutex
	fail    []int
	replies []string
}

// convEmpty, as a step's reply, makes the upstream answer 200 with an
// empty text: a reply that holds nothing.
const convEmpty = "\x00empty"

// convReply writes text as a stream of path's protocol, cut in two.
func convReply(w http.ResponseWriter, path, text string) {
	a, b := text[:len(text)/2], text[len(text)/2:]
	var events []string
	switch {
	case strings.HasSuffix(path, "/responses"):
		// The reply's id is its text: tests name the reply they go on
		// from.
		id := strconv.Quote("resp_" + text)
		events = []string{
			`event: response.created` + "\n" + `data: {"type":"response.created","response":{"id":` + id + `,"status":"in_progress"}}` + "\n\n",
			`event: response.output_text.delta` + "\n" + `data: {"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":` + strconv.Quote(text) + `}` + "\n\n",
			`event: response.completed` + "\n" + `data: {"type":"response.completed","response":{"id":` + id + `,"status":"completed","output":[{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":` + strconv.Quote(text) + `}]}],"usage":{"input_tokens":3,"output_tokens":1}}}` + "\n\n",
		}
	case strings.Contains(path, ":streamGenerateContent"):
		events = []string{
			`data: {"candidates":[{"content":{"role":"model","parts":[{"text":` + strconv.Quote(a) + `}]}}]}` + "\r\n\r\n",
			`data: {"candidates":[{"content":{"role":"model","parts":[{"text":` + strconv.Quote(b) + `}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":2,"totalTokenCount":5}}` + "\r\n\r\n",
		}
	case strings.HasSuffix(path, "/chat/completions"):
		events = []string{
			`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":` + strconv.Quote(a) + `}}]}` + "\n\n",
			`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":` + strconv.Quote(b) + `},"finish_reason":"stop"}]}` + "\n\n",
			"data: [DONE]\n\n",
		}
	default:
		events = []string{
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n",
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":" + strconv.Quote(a) + "}}\n\n",
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":" + strconv.Quote(b) + "}}\n\n",
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n",
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
		}
	}
	sendEvents(w, strings.Join(events, ""), "\n\n")
}

func newConvUpstream(t *testing.T) *convUpstream {
	u := &convUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		u.mu.Lock()
		status := 200
		if len(u.fail) > 0 {
			status, u.fail = u.fail[0], u.fail[1:]
		}
		reply := "ok"
		if status == 200 && len(u.replies) > 0 {
			reply, u.replies = u.replies[0], u.replies[1:]
		}
		if reply == convEmpty {
			reply = ""
		}
		u.mu.Unlock()
		if status != 200 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, `{"error":{"code":`+fmt.Sprint(status)+`,"message":"try again"}}`)
			return
		}
		convReply(w, r.URL.Path, reply)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *convUpstream) failNext(status ...int) {
	u.mu.Lock()
	u.fail = append(u.fail, status...)
	u.mu.Unlock()
}

// convShape writes request bodies of one protocol: path, and a body
// holding the conversation turns (user and assistant alternating, user
// first) with the given model and system prompt.
type convShape struct {
	name string
	path func(model string) string
	body func(model, system string, turns []string) string
}

var convShapes = []convShape{
	{
		name: "gemini",
		path: func(model string) string { return "/v1beta/models/" + model + ":streamGenerateContent?alt=sse" },
		body: func(model, system string, turns []string) string {
			var b strings.Builder
			b.WriteString(`{"contents":[`)
			for i, t := range turns {
				role := "user"
				if i%2 == 1 {
					role = "model"
				}
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `{"role":%q,"parts":[{"text":%q}]}`, role, t)
			}
			fmt.Fprintf(&b, `],"systemInstruction":{"parts":[{"text":%q}]},"generationConfig":{"temperature":0}}`, system)
			return b.String()
		},
	},
	{
		name: "openai",
		path: func(string) string { return "/v1/chat/completions" },
		body: func(model, system string, turns []string) string {
			var b strings.Builder
			fmt.Fprintf(&b, `{"model":%q,"stream":true,"messages":[{"role":"system","content":%q}`, model, system)
			for i, t := range turns {
				role := "user"
				if i%2 == 1 {
					role = "assistant"
				}
				fmt.Fprintf(&b, `,{"role":%q,"content":%q}`, role, t)
			}
			b.WriteString(`]}`)
			return b.String()
		},
	},
	{
		name: "anthropic",
		path: func(string) string { return "/v1/messages" },
		body: func(model, system string, turns []string) string {
			var b strings.Builder
			fmt.Fprintf(&b, `{"model":%q,"max_tokens":1024,"system":%q,"messages":[`, model, system)
			for i, t := range turns {
				role := "user"
				if i%2 == 1 {
					role = "assistant"
				}
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `{"role":%q,"content":[{"type":"text","text":%q}]}`, role, t)
			}
			b.WriteString(`],"stream":true}`)
			return b.String()
		},
	},
}

// convRig is a proxy whose every provider is a convUpstream.
func convRig(t *testing.T) (*rig, *convUpstream) {
	u := newConvUpstream(t)
	rg := newRigWith(t, newUpstream(t), &Options{Upstreams: map[string]string{"anthropic": u.URL, "openai": u.URL, "gemini": u.URL}})
	return rg, u
}

// convStep is one request of a conversation test: the turns it sends,
// the model, extra headers, and the status the upstream answers.
type convStep struct {
	turns  []string
	model  string
	system string
	hdr    map[string]string
	status int
	// reply is the upstream's answer. When empty, it is the reply a
	// later step resends after this step's turns (the conversation goes
	// on with what the model said), else "ok".
	reply string
}

// nextReply returns what a later step resends right after the turns of
// step i: the reply step i was given, as the client keeps it.
func nextReply(steps []convStep, i int) string {
	for _, s := range steps[i+1:] {
		if len(s.turns) > len(steps[i].turns) && slices.Equal(s.turns[:len(steps[i].turns)], steps[i].turns) {
			return s.turns[len(steps[i].turns)]
		}
	}
	return ""
}

// sessionsOf sends steps in order and returns the session id and source
// each was recorded with.
func sessionsOf(t *testing.T, sh convShape, steps []convStep) (ids, sources []string) {
	t.Helper()
	rg, u := convRig(t)
	for i, s := range steps {
		if s.model == "" {
			s.model = "gemini-2.5-pro"
		}
		if s.reply == "" && s.status == 0 {
			s.reply = nextReply(steps, i)
		}
		if s.system == "" {
			s.system = "You are a coding agent."
		}
		if s.status != 0 {
			u.failNext(s.status)
		}
		if s.reply != "" {
			u.mu.Lock()
			u.replies = append(u.replies, s.reply)
			u.mu.Unlock()
		}
		resp, _ := rg.post(t, sh.path(s.model), sh.body(s.model, s.system, s.turns), s.hdr)
		want := 200
		if s.status != 0 {
			want = s.status
		}
		if resp.StatusCode != want {
			t.Fatalf("status %d, want %d", resp.StatusCode, want)
		}
	}
	xs := rg.readWAL(t)
	keys := make([]uint64, 0, len(xs))
	for k := range xs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		ids = append(ids, xs[k].Start.SessionID)
		sources = append(sources, xs[k].Start.SessionSource)
	}
	if len(ids) != len(steps) {
		t.Fatalf("%d exchanges recorded, want %d", len(ids), len(steps))
	}
	return ids, sources
}

// groups names each session by the index of the first request in it:
// [0 0 2] says requests 0 and 1 share a session, request 2 has its own.
func groups(ids []string) []int {
	first := map[string]int{}
	out := make([]int, len(ids))
	for i, id := range ids {
		if _, ok := first[id]; !ok {
			first[id] = i
		}
		out[i] = first[id]
	}
	return out
}

func turns(s ...string) []string { return s }

// TestContinuedSessions: a request with no session id joins the session
// whose conversation it continues, by exact hashes of the resent
// elements, in each protocol's shape.
func TestContinuedSessions(t *testing.T) {
	cases := []struct {
		name        string
		steps       []convStep
		wantGroups  []int
		wantSources []string
	}{
		{
			name: "continuation",
			steps: []convStep{
				{turns: turns("list the files")},
				{turns: turns("list the files", "call ls", "a.go b.go")},
				{turns: turns("list the files", "call ls", "a.go b.go", "call read a.go", "package a")},
			},
			wantGroups:  []int{0, 0, 0},
			wantSources: []string{"minted", "continued", "continued"},
		},
		{
			name: "interleaved",
			steps: []convStep{
				{turns: turns("task one")},
				{turns: turns("task two")},
				{turns: turns("task one", "call ls", "x")},
				{turns: turns("task two", "call ls", "x")},
				{turns: turns("task two", "call ls", "x", "call cat", "y")},
				{turns: turns("task one", "call ls", "x", "call cat", "y")},
			},
			wantGroups:  []int{0, 1, 0, 1, 1, 0},
			wantSources: []string{"minted", "minted", "continued", "continued", "continued", "continued"},
		},
		{
			name: "retry after 503 and 429",
			steps: []convStep{
				{turns: turns("hello")},
				{turns: turns("hello", "hi", "read a.go"), status: 503},
				{turns: turns("hello", "hi", "read a.go"), status: 429},
				{turns: turns("hello", "hi", "read a.go")},
				{turns: turns("hello", "hi", "read a.go", "call read", "package a")},
			},
			wantGroups:  []int{0, 0, 0, 0, 0},
			wantSources: []string{"minted", "continued", "continued", "continued", "continued"},
		},
		{
			// A 200 whose reply holds nothing: the client resends the
			// same body (Gemini CLI's retry on an invalid stream).
			name: "retry after an empty reply",
			steps: []convStep{
				{turns: turns("hello"), reply: convEmpty},
				{turns: turns("hello")},
				{turns: turns("hello", "ok", "read a.go")},
			},
			wantGroups:  []int{0, 0, 0},
			wantSources: []string{"minted", "continued", "continued"},
		},
		{
			name: "first request retried",
			steps: []convStep{
				{turns: turns("hello"), status: 500},
				{turns: turns("hello")},
				{turns: turns("hello", "hi", "bye")},
			},
			wantGroups:  []int{0, 0, 0},
			wantSources: []string{"minted", "continued", "continued"},
		},
		{
			// Two requests going on from the same prefix join its
			// session: the engine records the second as a fork.
			name: "fork",
			steps: []convStep{
				{turns: turns("hello")},
				{turns: turns("hello", "hi", "read a.go")},
				{turns: turns("hello", "hi", "read b.go")},
				{turns: turns("hello", "hi", "read b.go", "call read", "package b")},
			},
			wantGroups:  []int{0, 0, 0, 0},
			wantSources: []string{"minted", "continued", "continued", "continued"},
		},
		{
			// The same request answered, sent again: another terminal
			// that began the same way, not a retry.
			name: "same start answered",
			steps: []convStep{
				{turns: turns("hello")},
				{turns: turns("hello")},
			},
			wantGroups:  []int{0, 1},
			wantSources: []string{"minted", "minted"},
		},
		{
			// Both sessions sent the prefix, with the same model and
			// system prompt: which one goes on is not known, so a new
			// session starts rather than a guess.
			name: "ambiguous",
			steps: []convStep{
				{turns: turns("hello")},
				{turns: turns("hello")},
				{turns: turns("hello", "hi", "bye")},
			},
			wantGroups:  []int{0, 1, 2},
			wantSources: []string{"minted", "minted", "minted"},
		},
		{
			// Two terminals began the same way and were given different
			// replies: each goes on with its own, and the reply it
			// resends says which session it is.
			name: "same start, replies differ",
			steps: []convStep{
				{turns: turns("hello"), reply: "hi from A"},
				{turns: turns("hello"), reply: "  hi from B"},
				{turns: turns("hello", "hi from B", "go on")},
				{turns: turns("hello", "hi from A", "go on")},
				{turns: turns("hello", "hi from A", "go on", "ok", "and?")},
			},
			wantGroups:  []int{0, 1, 1, 0, 0},
			wantSources: []string{"minted", "minted", "continued", "continued", "continued"},
		},
		{
			// The same replies: nothing tells them apart.
			name: "same start, same replies",
			steps: []convStep{
				{turns: turns("hello"), reply: "hi"},
				{turns: turns("hello"), reply: "hi"},
				{turns: turns("hello", "hi", "go on")},
			},
			wantGroups:  []int{0, 1, 2},
			wantSources: []string{"minted", "minted", "minted"},
		},
		{
			// The model and the system prompt break the tie.
			name: "ambiguous, system prompt differs",
			steps: []convStep{
				{turns: turns("hello"), system: "agent A"},
				{turns: turns("hello"), system: "agent B"},
				{turns: turns("hello", "hi", "bye"), system: "agent B"},
				{turns: turns("hello", "hi", "bye"), system: "agent A"},
			},
			wantGroups:  []int{0, 1, 1, 0},
			wantSources: []string{"minted", "minted", "continued", "continued"},
		},
		{
			name: "model breaks the tie",
			steps: []convStep{
				{turns: turns("hello"), model: "gemini-2.5-flash"},
				{turns: turns("hello"), model: "gemini-2.5-pro"},
				{turns: turns("hello", "hi", "bye"), model: "gemini-2.5-flash"},
			},
			wantGroups:  []int{0, 1, 0},
			wantSources: []string{"minted", "minted", "continued"},
		},
		{
			name: "explicit session untouched",
			steps: []convStep{
				{turns: turns("hello")},
				{turns: turns("hello", "hi", "bye"), hdr: map[string]string{"X-Bb-Session-Id": "ses-explicit"}},
				{turns: turns("hello", "hi", "bye", "ok", "go")},
			},
			wantGroups:  []int{0, 1, 0},
			wantSources: []string{"minted", "x-bb-session-id", "continued"},
		},
		{
			// A shorter conversation is not a continuation.
			name: "not a prefix",
			steps: []convStep{
				{turns: turns("hello", "hi", "bye")},
				{turns: turns("hello")},
				{turns: turns("hello", "hi", "other")},
			},
			wantGroups:  []int{0, 1, 1},
			wantSources: []string{"minted", "minted", "continued"},
		},
	}
	for _, sh := range convShapes {
		for _, c := range cases {
			t.Run(sh.name+"/"+c.name, func(t *testing.T) {
				ids, sources := sessionsOf(t, sh, c.steps)
				if got := groups(ids); !slices.Equal(got, c.wantGroups) {
					t.Errorf("sessions %v, want %v (%v)", got, c.wantGroups, ids)
				}
				if !slices.Equal(sources, c.wantSources) {
					t.Errorf("sources %v, want %v", sources, c.wantSources)
				}
				if slices.Contains(ids, "ses-explicit") && ids[1] != "ses-explicit" {
					t.Errorf("explicit session id changed: %v", ids)
				}
			})
		}
	}
}

// TestTipsBounded: tips forgets the least recently used conversation
// past its bound.
func TestTipsBounded(t *testing.T) {
	ts := newTips()
	ts.max = 8
	for i := range 100 {
		h := []uint64{uint64(i) + 1}
		_, key := ts.find(h, 0, nil)
		ts.add(key, fmt.Sprint("s", i), 0)
		ts.answered(key, fmt.Sprint("s", i), false, 0)
	}
	if ts.lru.Len() != 8 || len(ts.byKey) != 8 {
		t.Fatalf("%d tips (%d keys), want 8", ts.lru.Len(), len(ts.byKey))
	}
	if s, _ := ts.find([]uint64{100, 7}, 0, nil); s != "s99" {
		t.Errorf("recent conversation continued by %q, want s99", s)
	}
	if s, _ := ts.find([]uint64{1, 7}, 0, nil); s != "" {
		t.Errorf("forgotten conversation continued by %q, want none", s)
	}
}

// TestOutFingerprint: a reply and the client's copy of it in its next
// request fingerprint the same, whatever the client rewrites (ids,
// signatures, thinking, key order, how the text was cut); a different
// reply does not.
func TestOutFingerprint(t *testing.T) {
	ts := newTips()
	reply := func(api llm.API, body string) uint64 {
		t.Helper()
		resp, err := llm.DecodeResponse(api, []byte(body))
		if err != nil {
			t.Fatal(err)
		}
		return ts.outFingerprint(resp.Parts)
	}
	elem := func(api llm.API, body string) uint64 {
		t.Helper()
		field := llm.ConversationField(api)
		open, spans, ok := jsonscan.Split([]byte(body), field, nil)
		if !ok {
			t.Fatalf("no %s in %s", field, body)
		}
		l := jsonscan.NewLayout(ts.seed, []byte(body), open, spans)
		return ts.elementFingerprint(api, []byte(body), l, len(spans)-1)
	}
	gemReply := "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"I will \",\"thought\":false},{\"text\":\"plan\",\"thought\":true}]}}]}\r\n\r\n" +
		"data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"look.\"},{\"functionCall\":{\"name\":\"ls\",\"args\":{\"dir\":\"/w\",\"all\":true}},\"thoughtSignature\":\"c2ln\"}]},\"finishReason\":\"STOP\"}]}\r\n\r\n"
	for _, c := range []struct {
		name     string
		api      llm.API
		reply    string
		elem     string
		wantSame bool
	}{
		{"gemini copy", llm.Gemini, gemReply,
			`{"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[{"text":"I will look. "},{"functionCall":{"id":"ls_1","args":{"all":true,"dir":"/w"},"name":"ls"}}]}]}`, true},
		{"gemini other args", llm.Gemini, gemReply,
			`{"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[{"text":"I will look."},{"functionCall":{"name":"ls","args":{"dir":"/x","all":true}}}]}]}`, false},
		{"gemini other text", llm.Gemini, gemReply,
			`{"contents":[{"role":"user","parts":[{"text":"go"}]},{"role":"model","parts":[{"text":"I will not look."},{"functionCall":{"name":"ls","args":{"dir":"/w","all":true}}}]}]}`, false},
		{"gemini user turn", llm.Gemini, gemReply,
			`{"contents":[{"role":"user","parts":[{"text":"I will look."}]}]}`, false},
		{"openai copy", llm.OpenAIChat,
			`{"choices":[{"index":0,"message":{"role":"assistant","content":"Listing.","tool_calls":[{"id":"call_1","type":"function","function":{"name":"ls","arguments":"{\"dir\": \"/w\"}"}}]},"finish_reason":"tool_calls"}]}`,
			`{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":"Listing.","tool_calls":[{"id":"call_9","type":"function","function":{"name":"ls","arguments":"{\"dir\":\"/w\"}"}}]}]}`, true},
		{"anthropic copy", llm.AnthropicMessages,
			`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"Listing."},{"type":"tool_use","id":"toolu_1","name":"ls","input":{"dir":"/w"}}],"stop_reason":"tool_use"}`,
			`{"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[{"type":"text","text":"Listing."},{"type":"tool_use","id":"toolu_1","name":"ls","input":{"dir":"/w"}}]}]}`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, e := reply(c.api, c.reply), elem(c.api, c.elem)
			if r == 0 {
				t.Fatalf("reply fingerprint 0")
			}
			if (r == e) != c.wantSame {
				t.Errorf("reply %x, element %x: same %v, want %v", r, e, r == e, c.wantSame)
			}
		})
	}
}

// conversationHashes returns the element hashes of a conversation of n
// elements, the first k of which are those of conversation seed 0.
func conversationHashes(n, k int, seed uint64) []uint64 {
	h := make([]uint64, n)
	for i := range h {
		if i < k {
			h[i] = uint64(i)*0x9e3779b97f4a7c15 + 1
		} else {
			h[i] = uint64(i)*0x9e3779b97f4a7c15 + seed<<32 + 1
		}
	}
	return h
}

// TestTipsFindAllocs: finding the session a request continues allocates
// nothing (a pass over its element hashes with map lookups).
func TestTipsFindAllocs(t *testing.T) {
	ts := newTips()
	prev := conversationHashes(300, 300, 0)
	_, key := ts.find(prev, 1, nil)
	ts.add(key, "ses_a", 1)
	ts.answered(key, "ses_a", false, 0)
	next := conversationHashes(302, 300, 1)
	if s, _ := ts.find(next, 1, nil); s != "ses_a" {
		t.Fatalf("found %q, want ses_a", s)
	}
	if n := testing.AllocsPerRun(100, func() { ts.find(next, 1, nil) }); n != 0 {
		t.Errorf("find allocates %v times, want 0", n)
	}
}

// BenchmarkTipsFind measures the lookup of a request that continues one
// of the remembered conversations, by its number of elements.
func BenchmarkTipsFind(b *testing.B) {
	for _, n := range []int{10, 300, 3000} {
		b.Run(fmt.Sprintf("elements=%d", n), func(b *testing.B) {
			ts := newTips()
			for s := range 1000 {
				h := conversationHashes(n, 0, uint64(s+2))
				_, key := ts.find(h, 1, nil)
				ts.add(key, fmt.Sprint("ses_", s), 1)
			}
			prev := conversationHashes(n, n, 0)
			_, key := ts.find(prev, 1, nil)
			ts.add(key, "ses_a", 1)
			next := conversationHashes(n+2, n, 1)
			b.ReportAllocs()
			for b.Loop() {
				ts.find(next, 1, nil)
			}
		})
	}
}

// TestContinuedResponses: an OpenAI Responses request that carries only
// its new input joins the session whose stored reply it names
// (previous_response_id), exactly; an unknown or failed reply names
// none.
func TestContinuedResponses(t *testing.T) {
	rg, u := convRig(t)
	send := func(input, prev, reply string, status int) {
		t.Helper()
		body := `{"model":"gpt-5","stream":true,"input":` + strconv.Quote(input)
		if prev != "" {
			body += `,"previous_response_id":` + strconv.Quote(prev)
		}
		body += "}"
		if status != 0 {
			u.failNext(status)
		} else {
			u.mu.Lock()
			u.replies = append(u.replies, reply)
			u.mu.Unlock()
		}
		rg.post(t, "/v1/responses", body, nil)
	}
	send("task one", "", "a1", 0)
	send("task two", "", "b1", 0)
	send("go on", "resp_a1", "a2", 0)
	send("go on", "resp_b1", "b2", 0)
	send("and then", "resp_a2", "", 503)
	send("and then", "resp_a2", "a3", 0)
	send("other", "resp_unknown", "c1", 0)
	xs := rg.readWAL(t)
	keys := make([]uint64, 0, len(xs))
	for k := range xs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var ids, sources []string
	for _, k := range keys {
		ids = append(ids, xs[k].Start.SessionID)
		sources = append(sources, xs[k].Start.SessionSource)
	}
	if got, want := groups(ids), []int{0, 1, 0, 1, 0, 0, 6}; !slices.Equal(got, want) {
		t.Errorf("sessions %v, want %v", got, want)
	}
	if want := []string{"minted", "minted", "continued", "continued", "continued", "continued", "minted"}; !slices.Equal(sources, want) {
		t.Errorf("sources %v, want %v", sources, want)
	}
}

// TestJudgedOnDemand: a request that needs the judgement of an earlier
// reply before the goroutine that decodes it has run decides it itself:
// an exact resend after an empty reply is its retry, after a good reply
// another conversation, and a Responses reply's id names its session
// as soon as a request goes on from it.
func TestJudgedOnDemand(t *testing.T) {
	const path = "/v1/messages"
	reply := func(text string) []byte {
		rec := httptest.NewRecorder()
		convReply(rec, path, text)
		return rec.Body.Bytes()
	}
	for _, c := range []struct {
		text string
		want string // the session of the resend
	}{{"", "ses_a"}, {"a reply", ""}} {
		ts := newTips()
		h := conversationHashes(3, 0, 7)
		_, key := ts.find(h, 1, nil)
		ts.add(key, "ses_a", 1)
		ts.answeredLater(key, "ses_a", &judgement{path: path, reply: reply(c.text)})
		if s, _ := ts.find(h, 1, nil); s != c.want {
			t.Errorf("reply %q: the resend joined %q, want %q", c.text, s, c.want)
		}
	}

	ts := newTips()
	rec := httptest.NewRecorder()
	convReply(rec, "/v1/responses", "r1")
	ts.judgeLater(&judgement{path: "/v1/responses", reply: rec.Body.Bytes()}, "ses_r")
	if s := ts.replySession("resp_r1"); s != "ses_r" {
		t.Errorf("previous_response_id resp_r1 names %q, want ses_r", s)
	}
	if len(ts.unjudged) != 0 {
		t.Errorf("%d replies left unjudged", len(ts.unjudged))
	}
}

// TestQuickGood: quickGood never vouches for a reply that decoding
// judges failed, on every shared provider stream fixture and on
// replies of each protocol that are good, empty, cut short or errors;
// and it vouches for the plain good ones, so they are not decoded.
func TestQuickGood(t *testing.T) {
	paths := map[llm.API]string{
		llm.AnthropicMessages: "/v1/messages",
		llm.OpenAIChat:        "/v1/chat/completions",
		llm.OpenAIResponses:   "/v1/responses",
		llm.Gemini:            "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
	}
	check := func(name string, api llm.API, reply []byte) bool {
		t.Helper()
		ts := newTips()
		j := &judgement{path: paths[api], reply: bytes.Clone(reply)}
		failed, _, _ := j.get(ts)
		good := quickGood(api, reply)
		if good && failed {
			t.Errorf("%s (%s): quickGood vouches for a reply that failed:\n%.400s", name, api, reply)
		}
		return good
	}
	vouched := 0
	for api, path := range paths {
		for _, text := range []string{"a reply", "  padded  ", " leading", "   ", "\n\t \n", ""} {
			rec := httptest.NewRecorder()
			convReply(rec, path, text)
			b := rec.Body.Bytes()
			good := check(fmt.Sprintf("%q", text), api, b)
			if want := strings.TrimSpace(text) != ""; good != want {
				t.Errorf("%s %q: quickGood %v, want %v", api, text, good, want)
			}
			for cut := 1; cut < len(b); cut += 7 {
				check(fmt.Sprintf("%q cut at %d", text, cut), api, b[:cut])
			}
			for _, bad := range [][]byte{
				append(bytes.Clone(b), []byte("event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n")...),
				func() []byte {
					rec := httptest.NewRecorder()
					convReply(rec, path, "an error, not a reply")
					return rec.Body.Bytes()
				}(),
			} {
				if quickGood(api, bad) {
					t.Errorf("%s: quickGood vouches for a reply that says error:\n%s", api, bad)
				}
			}
		}
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "shared", "provider-streams", "*", "*", "*"))
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for api := range paths {
			if check(path, api, b) {
				vouched++
			}
		}
	}
	t.Logf("%d of %d fixture readings vouched for", vouched, 4*len(files))
}

func TestNonBlank(t *testing.T) {
	for s, want := range map[string]bool{
		`"`: false, ` "`: false, `\n\t \r"`: false, `\u00a0"`: false, "\u00a0\"": false,
		` x"`: true, `\""`: true, `\\"`: true, ` \u0041b"`: true, `  `: false, `\`: false,
	} {
		if got := nonBlank([]byte(s)); got != want {
			t.Errorf("nonBlank(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestKeptRepliesBounded: the replies kept undecided stay under
// maxKeptReplies bytes; the oldest are decided (or, vouched for,
// dropped) to make room.
func TestKeptRepliesBounded(t *testing.T) {
	ts := newTips()
	rec := httptest.NewRecorder()
	convReply(rec, "/v1/messages", strings.Repeat("x", 1<<20))
	reply := rec.Body.Bytes()
	var js []*judgement
	for i := range 100 {
		j := &judgement{path: "/v1/messages", api: llm.AnthropicMessages, reply: reply}
		if i%2 == 0 {
			j.vouched.Store(vouchedGood)
		} else {
			j.vouched.Store(notVouched)
		}
		js = append(js, j)
		ts.keep(j)
		if ts.keptBytes > maxKeptReplies {
			t.Fatalf("after %d replies %d bytes kept, over %d", i+1, ts.keptBytes, maxKeptReplies)
		}
	}
	if !js[0].decided || js[0].reply != nil || js[1].failed || js[1].out == 0 {
		t.Errorf("the oldest replies: %+v, %+v; want the first dropped and the second decoded", js[0], js[1])
	}
	if js[99].decided {
		t.Error("the newest reply was decided")
	}
}

// TestQuickGoodFailed: replies that decoding judges failed, shaped so
// that quickGood's byte patterns are all present, are not vouched for.
func TestQuickGoodFailed(t *testing.T) {
	for _, c := range []struct {
		name, path string
		reply      string
	}{
		{
			// The text names the end line; the stream is cut before
			// its real end.
			"chat text holding data: [DONE], cut", "/v1/chat/completions",
			`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"A stream ends with data: [DONE] and"}}]}` + "\n\n",
		},
		{
			"chat, first of two choices blank", "/v1/chat/completions",
			`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":" "},"finish_reason":"stop"},{"index":1,"delta":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}]}` + "\n\n" +
				"data: [DONE]\n\n",
		},
		{
			"chat JSON, first of two choices blank", "/v1/chat/completions",
			`{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":""},"finish_reason":"content_filter"},{"index":1,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}]}`,
		},
		{
			// encoding/json matches member names ignoring case.
			"chat with an Error member", "/v1/chat/completions",
			`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}]}` + "\n\n" +
				`data: {"Error":{"message":"overloaded","code":529}}` + "\n\n" +
				"data: [DONE]\n\n",
		},
		{
			"gemini, first of two candidates blocked", "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
			`data: {"candidates":[{"index":0,"finishReason":"SAFETY"},{"content":{"role":"model","parts":[{"text":"Hi"}]},"index":1,"finishReason":"STOP"}]}` + "\r\n\r\n",
		},
		{
			"gemini, second of two candidates unfinished", "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
			`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]},"index":1}]}` + "\r\n\r\n" +
				`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hi"}]},"index":0,"finishReason":"STOP"}]}` + "\r\n\r\n",
		},
		{
			"gemini JSON, first of two candidates blocked", "/v1beta/models/gemini-2.5-pro:generateContent",
			`{"candidates":[{"index":0,"finishReason":"SAFETY"},{"content":{"role":"model","parts":[{"text":"Hi"}]},"index":1,"finishReason":"STOP"}]}`,
		},
	} {
		j := &judgement{path: c.path, reply: []byte(c.reply)}
		failed, _, _ := j.get(newTips())
		if !failed {
			t.Errorf("%s: decoding does not judge it failed; the case tests nothing", c.name)
		}
		if quickGood(llm.Detect(c.path), []byte(c.reply)) {
			t.Errorf("%s: quickGood vouches for a reply that failed:\n%s", c.name, c.reply)
		}
	}
}

// TestKeptSweptRarely: with many small replies kept undecided (all
// under maxKeptReplies), sweeping the decided ones out of tips.kept
// looks at O(1) entries a reply, not at every kept one each time.
func TestKeptSweptRarely(t *testing.T) {
	ts := newTips()
	reply := make([]byte, 1024)
	const n = 30000
	for range n {
		j := &judgement{path: "/v1/messages", reply: reply}
		j.vouched.Store(vouchedGood)
		ts.keep(j)
	}
	if ts.keptBytes != n*len(reply) || len(ts.kept) != n {
		t.Fatalf("kept %d replies, %d bytes; want %d, %d", len(ts.kept), ts.keptBytes, n, n*len(reply))
	}
	if ts.keptSwept > 4*n {
		t.Errorf("sweeps looked at %d entries for %d replies kept", ts.keptSwept, n)
	}
}

// TestVouchedOffPath: the reply of a request with no session id is
// vouched for (quickGood) by its handler once the client has it, not
// while the client waits, and is not decoded for that.
func TestVouchedOffPath(t *testing.T) {
	reply := `{"id":"msg_v","type":"message","role":"assistant","model":"claude-sonnet-4","content":[{"type":"text","text":"All done."}],"stop_reason":"end_turn","usage":{"input_tokens":9,"output_tokens":3}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, reply)
	}))
	defer srv.Close()
	// When the client has the reply, it is not vouched for yet.
	atRelease := make(chan int32, 1)
	testReleased = func(x *exch) { atRelease <- x.vouch.vouched.Load() }
	t.Cleanup(func() { testReleased = nil }) // after the rig's cleanup
	rg := newRigWith(t, &upstream{Server: srv}, nil)
	resp, body := rg.post(t, "/v1/messages", `{"model":"claude-sonnet-4","messages":[{"role":"user","content":"hi"}]}`, map[string]string{"Anthropic-Version": "2023-06-01"})
	if resp.StatusCode != http.StatusOK || string(body) != reply {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	var vouched int32
	var decided bool
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		rg.p.rec.rmu.Lock()
		if n := len(rg.p.rec.tips.kept); n == 1 {
			j := rg.p.rec.tips.kept[0]
			vouched, decided = j.vouched.Load(), j.decided
		}
		rg.p.rec.rmu.Unlock()
		if vouched != 0 {
			break
		}
	}
	if vouched != vouchedGood || decided {
		t.Errorf("the reply's judgement: vouched %d, decided %v; want vouched for (1) by the handler, not decoded", vouched, decided)
	}
	if v := <-atRelease; v != unasked {
		t.Errorf("vouched %d when the client had its reply; want 0 (not asked yet)", v)
	}
}
