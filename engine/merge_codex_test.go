package engine

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/wal"
)

// TestMergeCodex merges the recorded Codex CLI session of
// testdata/wire/openai-responses (session-id header) with a rollout of
// the same session, written in the golden corpus's shapes with the
// recording's ids: the tool-using response pairs by its call_id and its
// encrypted reasoning; the text-only answer has no exact key (a rollout
// keeps no response id), so it pairs by content: the next imported
// response of the thread after the tool-using one has the same reply.
func TestMergeCodex(t *testing.T) {
	const session = "0199a3b2-7c1d-7e4f-9a2b-3c4d5e6f7a8b"
	dir := t.TempDir()
	src, err := os.Open(filepath.Join("testdata", "wire", "openai-responses", "0000000000000000.wal"))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := os.MkdirAll(filepath.Join(dir, "wal"), 0o700); err != nil {
		t.Fatal(err)
	}
	dst, err := os.Create(filepath.Join(dir, "wal", "0000000000000000.wal"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	log, err := wal.Open(filepath.Join(dir, "wal"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	e := open(t, t.TempDir(), log, nil)
	catchUp(t, e)

	// The ids the recording holds, from its live timeline.
	live, err := e.Events(session, EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var call, enc, summary, args, answer string
	for _, ev := range live {
		switch {
		case ev.Kind == KindToolCall && ev.Prov.Side == "response":
			call, args = ev.Tool.ID, string(ev.Tool.Args)
		case ev.Kind == KindThinking && ev.Prov.Side == "response":
			enc, summary = ev.Data, ev.Text
		case ev.Kind == KindMessage && ev.Role == "assistant" && ev.Prov.Side == "response":
			answer = ev.Text
		}
	}
	if call == "" || enc == "" || answer == "" {
		t.Fatalf("the recording lacks a call (%q), encrypted reasoning (%q) or an answer (%q)", call, enc, answer)
	}
	env := "<environment_context>\n  <cwd>/home/dev/web</cwd>\n  <approval_policy>on-request</approval_policy>\n  <sandbox_mode>workspace-write</sandbox_mode>\n  <network_access>restricted</network_access>\n  <shell>bash</shell>\n</environment_context>"
	prompt := "Run the unit tests and tell me if anything fails."
	output := `{"output":"Tests  1 failed | 4 passed (5)\n","metadata":{"exit_code":1,"duration_seconds":2.4}}`
	line := func(ts, typ string, payload any) string {
		b, err := json.Marshal(map[string]any{"timestamp": ts, "type": typ, "payload": payload})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	user := func(s string) map[string]any {
		return map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": s}}}
	}
	tokens := func(in, cached, out, reasoning int) map[string]any {
		u := map[string]any{"input_tokens": in, "cached_input_tokens": cached, "output_tokens": out, "reasoning_output_tokens": reasoning, "total_tokens": in + out}
		return map[string]any{"type": "token_count", "info": map[string]any{"total_token_usage": u, "last_token_usage": u, "model_context_window": 272000}}
	}
	lines := []string{
		line("2025-11-22T00:01:40.000Z", "session_meta", map[string]any{"id": session, "timestamp": "2025-11-22T00:01:40.000Z", "cwd": "/home/dev/web",
			"originator": "codex_cli_rs", "cli_version": "0.50.0", "source": "cli", "model_provider": "openai"}),
		line("2025-11-22T00:01:40.001Z", "response_item", user(env)),
		line("2025-11-22T00:01:40.002Z", "event_msg", map[string]any{"type": "task_started", "turn_id": "turn-1", "model_context_window": 272000}),
		line("2025-11-22T00:01:40.003Z", "response_item", user(prompt)),
		line("2025-11-22T00:01:40.004Z", "event_msg", map[string]any{"type": "user_message", "message": prompt, "images": []any{}}),
		line("2025-11-22T00:01:40.005Z", "turn_context", map[string]any{"turn_id": "turn-1", "cwd": "/home/dev/web", "model": "gpt-5-codex"}),
		line("2025-11-22T00:01:41.000Z", "response_item", map[string]any{"type": "reasoning", "summary": []any{map[string]any{"type": "summary_text",
			"text": summary}}, "content": nil, "encrypted_content": enc}),
		line("2025-11-22T00:01:41.001Z", "response_item", map[string]any{"type": "function_call", "name": "shell",
			"arguments": args, "call_id": call}),
		line("2025-11-22T00:01:41.002Z", "event_msg", tokens(3200, 2944, 210, 128)),
		line("2025-11-22T00:01:43.000Z", "response_item", map[string]any{"type": "function_call_output", "call_id": call, "output": output}),
		line("2025-11-22T00:01:44.000Z", "response_item", map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text",
			"text": answer}}}),
		line("2025-11-22T00:01:44.001Z", "event_msg", tokens(3200+3520, 2944+3328, 210+48, 128)),
	}
	path := filepath.Join(t.TempDir(), "rollout-2025-11-22T00-01-40-"+session+".jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	importPath(t, e, "codex", path)

	s, err := e.Session("codex:" + session)
	if err != nil || s.ID != session || s.Merged == nil {
		t.Fatalf("Session(codex:%s) = %s (merged %+v), %v", session, s.ID, s.Merged, err)
	}
	t.Logf("merged: %+v", *s.Merged)
	evs, err := e.Events(session, EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, ev := range evs {
		k := string(ev.Kind)
		if ev.Tool != nil {
			k += " " + ev.Tool.ID
		}
		if len(ev.Also) > 0 {
			k += " paired"
		}
		counts[k]++
	}
	t.Logf("merged timeline: %d events %v", len(evs), counts)
	// Both responses pair whole: the tool-using one by its keys (its
	// call, thinking, tool call and usage), the text-only answer by its
	// reply (its call, text and usage); the result by its call_id; the
	// prompt.
	for k, want := range map[string]int{"model_call paired": 2, "usage paired": 2, "thinking paired": 1,
		"tool_call " + call + " paired": 1, "tool_result " + call + " paired": 1} {
		if counts[k] != want {
			t.Errorf("%q: %d, want %d", k, counts[k], want)
		}
	}
	for _, k := range []string{"model_call", "usage", "tool_call " + call, "tool_result " + call} {
		if counts[k] != 0 {
			t.Errorf("%q: %d unpaired, want none: %v", k, counts[k], counts)
		}
	}
	if s.Requests != 2 {
		t.Errorf("%d requests, want 2: each response counted once", s.Requests)
	}
	sameAfterRebuild(t, e, dump(t, e), "rebuild differs for a merged Codex session")
}

// TestClientHangupWhole: a client that goes away once the whole stream
// reached the proxy (Codex closes its connection on response.completed,
// at times before the upstream's end of stream) interrupted nothing; one
// that goes away mid-stream did.
func TestClientHangupWhole(t *testing.T) {
	dir, log := newData(t)
	e := open(t, dir, log, nil)
	whole, _ := claudePair(t, "hangup-whole", 2)
	whole[1].hangup = true
	cut, _ := claudePair(t, "hangup-cut", 2)
	cut[1].incomplete = true
	var c clock
	xid := writeWAL(t, log, &c, 0, whole)
	writeWAL(t, log, &c, xid, cut)
	catchUp(t, e)
	for id, want := range map[string]int{"hangup-whole": 0, "hangup-cut": 1} {
		evs, err := e.Events(id, EventFilter{})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, ev := range evs {
			if ev.Kind == KindInterruption {
				n++
				t.Logf("%s: interruption %q", id, ev.Text)
			}
		}
		if n != want {
			t.Errorf("%s: %d interruptions, want %d", id, n, want)
		}
	}
	sameAfterRebuild(t, e, dump(t, e), "rebuild differs with a client that hung up")
}
