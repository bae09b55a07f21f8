package derive

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/llm"
)

// growingRequests returns the bodies of n Anthropic Messages requests of
// one conversation, each resending the one before it with a turn added
// (an assistant's text and tool call, the tool's result) and Claude
// Code's cache marker on its newest message: FuzzSplitResent's seeds.
// (The engine's tests seed it with their wild sessions.)
func growingRequests(n int) [][]byte {
	type obj = map[string]any
	msgs := []obj{{"role": "user", "content": "refactor the storage layer"}}
	var out [][]byte
	for i := range n {
		last := msgs[len(msgs)-1]
		marked := obj{"role": last["role"], "content": []obj{{"type": "text", "text": fmt.Sprint(last["content"]), "cache_control": obj{"type": "ephemeral"}}}}
		body, err := json.Marshal(obj{"model": "claude-sonnet-4-5", "system": "You are a coding agent.", "max_tokens": 1024,
			"messages": append(slices.Clone(msgs[:len(msgs)-1]), marked)})
		if err != nil {
			panic(err)
		}
		out = append(out, body)
		id := fmt.Sprintf("toolu_%d", i)
		msgs = append(msgs,
			obj{"role": "assistant", "content": []obj{{"type": "text", "text": fmt.Sprintf("Step %d: I read the module.", i)},
				{"type": "tool_use", "id": id, "name": "Bash", "input": obj{"command": fmt.Sprintf("go test ./pkg%d/...", i)}}}},
			obj{"role": "user", "content": []obj{{"type": "tool_result", "tool_use_id": id, "content": strings.Repeat("ok\n", i+1)}}})
	}
	return out
}

// memoOf is the memo splitResent reads, made from a body as a request
// placed on thread 1 leaves it.
func memoOf(api llm.API, body []byte) *sessState {
	st := &sessState{memo: map[int]*msgMemo{}}
	open, spans, ok := splitConversation(api, body)
	if !ok {
		return st
	}
	hashes, lens := hashMessages(body, spans)
	starts := make([]int, len(spans))
	for i, sp := range spans {
		starts[i] = sp[0]
	}
	st.memo[1] = &msgMemo{hashes: hashes, lens: lens, open: open, head: maphash.Bytes(msgSeed, body[:open+1]), starts: starts}
	return st
}

// FuzzSplitResent: whenever the hash-checked split of a body that
// follows another accepts it, it finds what scanning the whole body
// finds; it never panics.
func FuzzSplitResent(f *testing.F) {
	xs := growingRequests(6)
	for i := 1; i < len(xs); i++ {
		f.Add(xs[i-1], xs[i])
	}
	f.Add([]byte(`{"model":"m","messages":[{"role":"user","content":"a"}]}`), []byte(`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}],"messages":[]}`))
	f.Add([]byte(`{"model":"m","messages":[1,2]}`), []byte(`{"model":"m","messages":[1,23]}`))
	f.Fuzz(func(t *testing.T, prev, next []byte) {
		st := memoOf(llm.AnthropicMessages, prev)
		open, spans, l, ok := st.splitResent(llm.AnthropicMessages, next)
		if !ok {
			return
		}
		wOpen, wSpans, wOK := splitConversation(llm.AnthropicMessages, next)
		if !wOK || open != wOpen || !slices.Equal(spans, wSpans) {
			t.Fatalf("splitResent(%q after %q) = %d %v; scanning finds %d %v %v", next, prev, open, spans, wOpen, wSpans, wOK)
		}
		// The layout's hashes, some taken from the memo, are what
		// hashing the body finds.
		hashes, lens := hashMessages(next, spans)
		if !slices.Equal(l.Hashes, hashes) || !slices.Equal(l.Lens, lens) || l.Head != maphash.Bytes(msgSeed, next[:open+1]) || len(l.Starts) != len(spans) {
			t.Fatalf("splitResent(%q after %q): layout %+v; hashing finds %v %v", next, prev, l, hashes, lens)
		}
	})
}
