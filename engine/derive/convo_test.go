package derive

import (
	"encoding/json"
	"testing"

	"github.com/bbengine/bbengine/engine/schema"

	"github.com/bbengine/bbengine/codec/llm"
)

func text(role, s string) llm.Message {
	return llm.Message{Role: role, Parts: []llm.Part{{Type: llm.PartText, Text: s}}}
}

func toolCall(id, name, args string) llm.Part {
	return llm.Part{Type: llm.PartToolCall, ID: id, Name: name, Input: json.RawMessage(args)}
}

func toolResult(id, out string) llm.Part {
	return llm.Part{Type: llm.PartToolResult, ID: id, Text: out}
}

// turn is one model call for the conversation tests: the request's
// messages and the response's parts.
type turn struct {
	msgs []llm.Message
	out  []llm.Part
}

func TestPlace(t *testing.T) {
	u1 := text("user", "list the files")
	a1 := llm.Message{Role: "assistant", Parts: []llm.Part{
		{Type: llm.PartThinking, Text: "ls will do", Signature: "sig"},
		{Type: llm.PartText, Text: "I'll list them."},
		toolCall("toolu_1", "Bash", `{"command":"ls"}`),
	}}
	r1 := llm.Message{Role: "user", Parts: []llm.Part{toolResult("toolu_1", "a.go\nb.go")}}
	a2 := text("assistant", "There are two files.")
	u2 := text("user", "and the tests?")
	type want struct {
		thread, from int
		rewrite      string
		isNew        bool
	}
	tests := []struct {
		name  string
		turns []turn
		want  []want
	}{
		{
			name: "tool loop",
			turns: []turn{
				{[]llm.Message{u1}, a1.Parts},
				{[]llm.Message{u1, a1, r1}, a2.Parts},
				{[]llm.Message{u1, a1, r1, a2, u2}, nil},
			},
			want: []want{{1, 0, "", true}, {1, 4, "", false}, {1, 6, "", false}},
		},
		{
			name: "client drops thinking and splits the assistant message",
			turns: []turn{
				{[]llm.Message{u1}, a1.Parts},
				{[]llm.Message{u1, {Role: "assistant", Parts: a1.Parts[1:2]}, {Role: "assistant", Parts: a1.Parts[2:]}, r1}, nil},
			},
			want: []want{{1, 0, "", true}, {1, 3, "", false}},
		},
		{
			name: "key order and whitespace of arguments do not matter",
			turns: []turn{
				{[]llm.Message{u1}, []llm.Part{toolCall("c1", "Read", `{"path":"a","limit":5}`)}},
				{[]llm.Message{u1, {Role: "assistant", Parts: []llm.Part{toolCall("c1", "Read", `{ "limit": 5, "path": "a" }`)}}, r1}, nil},
			},
			want: []want{{1, 0, "", true}, {1, 2, "", false}},
		},
		{
			name: "retry without the last output",
			turns: []turn{
				{[]llm.Message{u1}, a1.Parts},
				{[]llm.Message{u1}, a1.Parts},
			},
			want: []want{{1, 0, "", true}, {1, 1, "retry", false}},
		},
		{
			name: "interrupted output left out, the user goes on in a merged message",
			turns: []turn{
				{[]llm.Message{u1}, a1.Parts},
				{[]llm.Message{{Role: "user", Parts: append(append([]llm.Part{}, u1.Parts...), u2.Parts...)}}, nil},
			},
			want: []want{{1, 0, "", true}, {1, 1, "drop", false}},
		},
		{
			name: "failed call retried",
			turns: []turn{
				{[]llm.Message{u1}, nil},
				{[]llm.Message{u1}, a1.Parts},
			},
			want: []want{{1, 0, "", true}, {1, 1, "", false}},
		},
		{
			name: "edit forks a new thread and the old one can continue",
			turns: []turn{
				{[]llm.Message{u1}, a1.Parts},
				{[]llm.Message{u1, a1, r1}, a2.Parts},
				{[]llm.Message{u1, a1, text("user", "stop, use find instead")}, nil},
				{[]llm.Message{u1, a1, r1, a2, u2}, nil},
			},
			want: []want{{1, 0, "", true}, {1, 4, "", false}, {2, 4, "fork", true}, {1, 6, "", false}},
		},
		{
			name: "side request is a thread of its own",
			turns: []turn{
				{[]llm.Message{u1}, a1.Parts},
				{[]llm.Message{text("user", "write a 5 word title for: list the files")}, []llm.Part{{Type: llm.PartText, Text: "Listing files"}}},
				{[]llm.Message{u1, a1, r1}, nil},
			},
			want: []want{{1, 0, "", true}, {2, 0, "", true}, {1, 4, "", false}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cv convo
			for i, tu := range tt.turns {
				items := flatten(tu.msgs)
				m := cv.placeItems(items, false, "sys")
				out := appendItems(nil, "assistant", tu.out)
				for j := range out {
					out[j].key = itemKey(&out[j])
				}
				cv.settle(m.thread, out)
				w := tt.want[i]
				got := want{thread: m.thread.ID, from: m.from, isNew: m.isNew}
				if m.rewrite != nil {
					got.rewrite = m.rewrite.Kind
				}
				if got != w {
					t.Errorf("turn %d: got %+v, want %+v", i+1, got, w)
				}
			}
		})
	}
}

func TestCompaction(t *testing.T) {
	summary := "The user asked to list the files of the repository. We ran ls and found a.go and b.go; " +
		"then we looked for tests and found none. Next step: write a test for a.go."
	var cv convo
	u1 := text("user", "list the files")
	m := cv.placeItems(flatten([]llm.Message{u1}), false, "main")
	cv.settle(m.thread, appendItems(nil, "assistant", []llm.Part{{Type: llm.PartText, Text: "a.go b.go"}}))
	sum := []llm.Message{u1, text("assistant", "a.go b.go"), text("user", "Summarize the conversation so far.")}
	m = cv.placeItems(flatten(sum), false, "summarizer")
	if m.thread.ID != 1 || m.rewrite != nil {
		t.Fatalf("summary request: thread %d rewrite %v", m.thread.ID, m.rewrite)
	}
	out := appendItems(nil, "assistant", []llm.Part{{Type: llm.PartText, Text: summary}})
	for j := range out {
		out[j].key = itemKey(&out[j])
	}
	cv.settle(m.thread, out)
	restart := []llm.Message{text("user", "This session continues an earlier conversation. Summary:\n"+summary), text("user", "now write the test")}
	// A side request quoting the summary, with its own system prompt, is
	// not a compaction.
	side := []llm.Message{text("user", "Write a title for this: "+summary)}
	if m := cv.placeItems(flatten(side), false, "title"); m.rewrite != nil || m.thread.ID != 2 {
		t.Fatalf("side request: thread %d rewrite %+v", m.thread.ID, m.rewrite)
	}
	m = cv.placeItems(flatten(restart), false, "main")
	if m.rewrite == nil || m.rewrite.Kind != "compaction" || m.rewrite.From != 1 || m.thread.ID != 1 || m.from != 0 {
		t.Fatalf("restart: thread %d from %d rewrite %+v", m.thread.ID, m.from, m.rewrite)
	}
	if m.rewrite.Dropped != 4 {
		t.Errorf("dropped %d, want 4", m.rewrite.Dropped)
	}
}

func TestToolResultPairing(t *testing.T) {
	var th thread
	th.call("read_file#7.1", "read_file", true)
	th.call("write_file#7.2", "write_file", true)
	th.call("read_file#7.3", "read_file", true)
	for _, c := range []struct{ id, name, wantID string }{
		{"", "read_file", "read_file#7.1"},
		{"", "read_file", "read_file#7.3"},
		{"write_file#7.2", "", "write_file#7.2"},
		{"", "read_file", ""},
	} {
		id, _, ok := th.result(c.id, c.name)
		if c.wantID == "" {
			if ok {
				t.Errorf("result(%q, %q) matched %q, want none", c.id, c.name, id)
			}
			continue
		}
		if !ok || id != c.wantID {
			t.Errorf("result(%q, %q) = %q %v, want %q", c.id, c.name, id, ok, c.wantID)
		}
	}
}

func TestKeysAllocate(t *testing.T) {
	buf := make([]byte, 0, 32)
	n := testing.AllocsPerRun(100, func() {
		buf = schema.EventKey(buf[:0], 7, 99)
		buf = schema.ExchangeKey(buf[:0], 12345)
	})
	if n != 0 {
		t.Fatalf("key encoding allocates %v times", n)
	}
	k := schema.EventKey(nil, 1, 2)
	if len(k) != 17 || k[0] != schema.PrefixEvent || schema.U64(k[1:9]) != 1 || schema.U64(k[9:]) != 2 {
		t.Fatalf("eventKey = %x", k)
	}
	if got := schema.UpperBound([]byte{schema.PrefixEvent, 0xff}); string(got) != string([]byte{schema.PrefixEvent + 1}) {
		t.Fatalf("upperBound = %x", got)
	}
}
