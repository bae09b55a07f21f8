package engine

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/engine/derive"
)

// markedRequest is cv.request() with Claude Code's cache marker on the
// newest message's last block (the marker moves every turn, so the
// message that had it last turn is resent changed).
func markedRequest(cv *conversation) []byte {
	msgs := make([]any, len(cv.msgs))
	copy(msgs, cv.msgs)
	last := msgs[len(msgs)-1].(obj)
	content := last["content"]
	if blocks, ok := content.([]any); ok && len(blocks) > 0 {
		nb := make([]any, len(blocks))
		copy(nb, blocks)
		b := obj{}
		for k, v := range nb[len(nb)-1].(obj) {
			b[k] = v
		}
		b["cache_control"] = obj{"type": "ephemeral"}
		nb[len(nb)-1] = b
		msgs[len(msgs)-1] = obj{"role": last["role"], "content": nb}
	}
	b, _ := json.Marshal(obj{"model": cv.model, "max_tokens": 4096, "stream": true, "system": cv.system,
		"tools": []any{obj{"name": "Bash", "input_schema": obj{"type": "object"}}}, "messages": msgs})
	return b
}

// wildSession is a long session with what clients do to a resent
// history: moving cache markers, retries, dropped thinking, assistant
// turns split in two messages (whose texts merge), forks, side requests
// with their own system prompt, long texts spilled to blobs, and a
// restart from a summary.
func wildSession(session string, turns int, seed uint64) []fx {
	r := rand.New(rand.NewPCG(seed, 7))
	cv := &conversation{session: session, system: "You are a coding agent.", model: "claude-sonnet-4-5"}
	cv.user("fix the failing test in " + session)
	var out []fx
	send := func(req []byte, reply anthropicReply) {
		out = append(out, fx{session: session, req: req, resp: reply.stream(cv.model)})
	}
	for i := 0; i < turns; i++ {
		id := fmt.Sprintf("toolu_%s_%d", session, i)
		reply := anthropicReply{thinking: fmt.Sprintf("step %d: look again", i), text: fmt.Sprintf("Step %d: running the tests.", i),
			tools: []obj{{"id": id, "name": "Bash", "input": obj{"command": fmt.Sprintf("go test -run Test%d", i)}}},
			in:    100 + i, out: 20, cache: 1000}
		req := markedRequest(cv)
		switch k := r.IntN(20); {
		case k == 0: // a retry of the same request
			send(req, anthropicReply{text: "overloaded", in: 1, out: 1})
		case k == 1 && len(cv.msgs) > 4: // a fork from an earlier point
			at := 1 + 2*r.IntN((len(cv.msgs)-1)/2)
			fork := &conversation{session: session, system: cv.system, model: cv.model, msgs: append([]any{}, cv.msgs[:at]...)}
			fork.user(fmt.Sprintf("try another way, %d", i))
			send(markedRequest(fork), anthropicReply{text: "Another way.", in: 5, out: 5})
		case k == 2: // a side request with its own system prompt
			side := &conversation{session: session, system: "Write a title.", model: "claude-haiku-4-5"}
			side.user(fmt.Sprintf("Title for: step %d", i))
			send(side.request(), anthropicReply{text: "A title", in: 3, out: 2})
		case k == 3 && i > 3: // a restart from a summary of a recent long answer
		}
		send(req, reply)
		content := reply.content()
		switch r.IntN(4) {
		case 0: // the client drops thinking from history
			content = content[1:]
		case 1: // the client splits the turn: text, then text and tool
			cv.msgs = append(cv.msgs, obj{"role": "assistant", "content": content[:2]})
			content = append([]any{obj{"type": "text", "text": "and then"}}, content[2:]...)
		}
		cv.msgs = append(cv.msgs, obj{"role": "assistant", "content": content})
		result := fmt.Sprintf("ok  \tpkg\t0.%03ds", i)
		if r.IntN(8) == 0 {
			result = strings.Repeat(fmt.Sprintf("line %d of a long output\n", i), 40) // spilled
		}
		cv.user([]any{obj{"type": "tool_result", "tool_use_id": id, "content": result}})
		if r.IntN(6) == 0 {
			// A text reply, and the user goes on in words.
			long := strings.Repeat(fmt.Sprintf("Summary of the work so far, part %d. ", i), 8)
			send(markedRequest(cv), anthropicReply{text: long, in: 9, out: 90})
			cv.msgs = append(cv.msgs, obj{"role": "assistant", "content": []any{obj{"type": "text", "text": long}}})
			cv.user(fmt.Sprintf("go on with step %d", i+1))
			if r.IntN(3) == 0 {
				// A restart from that summary (compaction).
				cv.msgs = []any{obj{"role": "user", "content": []any{obj{"type": "text", "text": "This session continues from earlier. " + long}}}}
			}
		}
	}
	return out
}

// TestPrefixSkipMatchesFullDecode derives long sessions turn by turn with
// the resent prefix skipped, and again from scratch decoding every request
// whole: the derived state must be the same bytes.
func TestPrefixSkipMatchesFullDecode(t *testing.T) {
	dir, log := newData(t)
	var c clock
	e := open(t, dir, log, &Options{TextLimit: 400})
	id := uint64(0)
	a, b := wildSession("wa", 80, 1), wildSession("wb", 60, 2)
	skipped, resent := 0, 0
	for i := 0; i < len(a) || i < len(b); i++ {
		var round [][]fx
		if i < len(a) {
			round = append(round, a[i:i+1])
		}
		if i < len(b) {
			round = append(round, b[i:i+1])
		}
		id = interleaveWAL(t, log, &c, id, round...)
		p := catchUp(t, e)
		skipped += p.Skipped
		resent += p.Resent
	}
	if skipped == 0 || resent == 0 {
		t.Fatalf("%d resent messages skipped, %d requests split by hash", skipped, resent)
	}
	incremental := dump(t, e)
	derive.PrefixSkip = false
	defer func() { derive.PrefixSkip = true }()
	sameAfterRebuild(t, e, incremental, "decoding whole requests differs from skipping resent prefixes")
	ss, err := e.Sessions(SessionFilter{})
	if err != nil || len(ss) != 2 {
		t.Fatalf("sessions %d %v", len(ss), err)
	}
	t.Logf("%d resent messages skipped; threads %d and %d", skipped, ss[0].Threads, ss[1].Threads)
}

// chatSession is a long OpenAI Chat session: leading system and developer
// messages (lifted into the system prompt), tool calls and results, now
// and then a system message in the middle, a null element, a retry.
func chatSession(session string, turns int, seed uint64) []fx {
	r := rand.New(rand.NewPCG(seed, 11))
	msgs := []any{obj{"role": "system", "content": "You are a coding agent."}, obj{"role": "developer", "content": "Keep changes small."},
		obj{"role": "user", "content": "fix the build in " + session}}
	var out []fx
	for i := 0; i < turns; i++ {
		id := fmt.Sprintf("call_%s_%d", session, i)
		req, _ := json.Marshal(obj{"model": "gpt-5", "stream": false, "messages": msgs})
		resp, _ := json.Marshal(obj{"id": fmt.Sprintf("chatcmpl-%d", i), "object": "chat.completion", "model": "gpt-5",
			"choices": []any{obj{"index": 0, "finish_reason": "tool_calls", "message": obj{"role": "assistant", "content": fmt.Sprintf("Step %d.", i),
				"tool_calls": []any{obj{"id": id, "type": "function", "function": obj{"name": "shell", "arguments": fmt.Sprintf(`{"cmd":"make %d"}`, i)}}}}}},
			"usage": obj{"prompt_tokens": 100 + i, "completion_tokens": 10, "total_tokens": 110 + i}})
		x := fx{session: session, path: "/v1/chat/completions", ua: "codex_cli_rs/0.50.0", req: req, resp: resp, chunks: 1}
		if r.IntN(10) == 0 {
			out = append(out, x) // a retry
		}
		out = append(out, x)
		msgs = append(msgs, obj{"role": "assistant", "content": fmt.Sprintf("Step %d.", i),
			"tool_calls": []any{obj{"id": id, "type": "function", "function": obj{"name": "shell", "arguments": fmt.Sprintf(`{"cmd":"make %d"}`, i)}}}},
			obj{"role": "tool", "tool_call_id": id, "content": fmt.Sprintf("built %d", i)})
		switch r.IntN(12) {
		case 0:
			msgs = append(msgs, obj{"role": "system", "content": fmt.Sprintf("Reminder %d: run the tests.", i)})
		case 1:
			msgs = append(msgs, nil)
		}
	}
	return out
}

// responsesSession is a long OpenAI Responses session: instructions, a
// leading developer item, assistant message and function call items that
// group into one message, function call outputs.
func responsesSession(session string, turns int, seed uint64) []fx {
	r := rand.New(rand.NewPCG(seed, 13))
	input := []any{obj{"type": "message", "role": "developer", "content": []any{obj{"type": "input_text", "text": "Sandbox: workspace-write."}}},
		obj{"type": "message", "role": "user", "content": []any{obj{"type": "input_text", "text": "fix the build in " + session}}}}
	var out []fx
	for i := 0; i < turns; i++ {
		id := fmt.Sprintf("call_%s_%d", session, i)
		req, _ := json.Marshal(obj{"model": "gpt-5-codex", "instructions": "You are Codex.", "stream": false, "store": false, "input": input})
		items := []any{obj{"type": "message", "role": "assistant", "content": []any{obj{"type": "output_text", "text": fmt.Sprintf("Step %d.", i)}}},
			obj{"type": "function_call", "call_id": id, "name": "shell", "arguments": fmt.Sprintf(`{"command":["make","%d"]}`, i)}}
		resp, _ := json.Marshal(obj{"id": fmt.Sprintf("resp_%d", i), "object": "response", "status": "completed", "model": "gpt-5-codex",
			"output": items, "usage": obj{"input_tokens": 100 + i, "output_tokens": 10, "total_tokens": 110 + i}})
		out = append(out, fx{session: session, path: "/v1/responses", ua: "codex_cli_rs/0.50.0", req: req, resp: resp, chunks: 1})
		if r.IntN(3) == 0 {
			// The client resends only the function call, not the text.
			items = items[1:]
		}
		input = append(input, items...)
		input = append(input, obj{"type": "function_call_output", "call_id": id, "output": fmt.Sprintf("built %d", i)})
		if r.IntN(8) == 0 {
			input = append(input, obj{"type": "message", "role": "user", "content": []any{obj{"type": "input_text", "text": fmt.Sprintf("now step %d", i+1)}}})
		}
	}
	return out
}

// TestPrefixSkipOpenAI is TestPrefixSkipMatchesFullDecode for OpenAI
// Chat and Responses sessions.
func TestPrefixSkipOpenAI(t *testing.T) {
	dir, log := newData(t)
	var c clock
	e := open(t, dir, log, nil)
	id := uint64(0)
	a, b := chatSession("oc", 50, 3), responsesSession("or", 50, 4)
	skipped, resent := 0, 0
	for i := 0; i < len(a) || i < len(b); i++ {
		var round [][]fx
		if i < len(a) {
			round = append(round, a[i:i+1])
		}
		if i < len(b) {
			round = append(round, b[i:i+1])
		}
		id = interleaveWAL(t, log, &c, id, round...)
		p := catchUp(t, e)
		skipped += p.Skipped
		resent += p.Resent
	}
	if skipped == 0 || resent == 0 {
		t.Fatalf("%d resent messages skipped, %d requests split by hash", skipped, resent)
	}
	incremental := dump(t, e)
	derive.PrefixSkip = false
	defer func() { derive.PrefixSkip = true }()
	sameAfterRebuild(t, e, incremental, "decoding whole requests differs from skipping resent prefixes")
	ss, err := e.Sessions(SessionFilter{})
	if err != nil || len(ss) != 2 {
		t.Fatalf("sessions %d %v", len(ss), err)
	}
	for _, s := range ss {
		if s.Requests < 50 {
			t.Errorf("session %s: %d requests derived", s.ID, s.Requests)
		}
	}
	t.Logf("%d resent messages skipped", skipped)
}
