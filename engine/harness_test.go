package engine

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/wal"
)

// fx is one scripted exchange for writeExchange.
type fx struct {
	session, task string
	goal          string // X-Bb-Session-Goal
	path          string // default /v1/messages
	ua            string
	reqHeaders    exchange.Headers // more request headers
	respHeaders   exchange.Headers // more response headers
	req           []byte
	status        int // default 200
	resp          []byte
	chunks        int  // response body frames; default 4
	incomplete    bool // the client went away mid-stream
	hangup        bool // the client went away once the whole stream came
}

// clock is a fake WAL clock.
type clock struct{ ns int64 }

func (c *clock) tick(d int64) int64 { c.ns += d; return c.ns }

// frames returns the WAL records of one exchange.
func (x fx) frames(t testing.TB, id uint64, c *clock) []wal.Record {
	t.Helper()
	path := x.path
	if path == "" {
		path = "/v1/messages"
	}
	status := x.status
	if status == 0 {
		status = 200
	}
	ua := x.ua
	if ua == "" {
		ua = "claude-cli/2.1.330 (external, cli)"
	}
	enc := func(v any) []byte {
		b, err := exchange.Encode(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var recs []wal.Record
	add := func(k frame.Kind, p []byte, last bool) {
		recs = append(recs, wal.Record{Kind: k, Exchange: id, Time: c.tick(1e6), Payload: p, Last: last})
	}
	start := c.ns
	qh := exchange.Headers{"User-Agent": {ua}}
	for k, v := range x.reqHeaders {
		qh[k] = v
	}
	add(frame.KindRequestStart, enc(&exchange.RequestStart{RequestID: fmt.Sprintf("req_%d", id), Method: "POST", Path: path,
		Headers: qh, Provider: "anthropic", Upstream: "http://127.0.0.1:1",
		SessionID: x.session, SessionSource: "x-claude-code-session-id", TaskID: x.task, Goal: x.goal, Stream: true,
		BodyBytes: int64(len(x.req)), Mode: "lossless", Redaction: exchange.RedactionVersion, Time: start}), false)
	for rest := x.req; ; {
		// A WAL frame holds at most 16 MiB: a large body is chunked.
		n := min(len(rest), 1<<20)
		add(frame.KindRequestBody, rest[:n], n == len(rest))
		if rest = rest[n:]; len(rest) == 0 {
			break
		}
	}
	rh := exchange.Headers{"Content-Type": {"text/event-stream"}}
	for k, v := range x.respHeaders {
		rh[k] = v
	}
	add(frame.KindResponseStart, enc(&exchange.ResponseStart{Status: status, Headers: rh, TTFB: 2e6}), false)
	n := x.chunks
	if n <= 0 {
		n = 4
	}
	body := x.resp
	if x.incomplete {
		body = body[:len(body)/2]
	}
	for i := 0; i < n; i++ {
		a, b := len(body)*i/n, len(body)*(i+1)/n
		add(frame.KindResponseBody, body[a:b], i == n-1 && !x.incomplete)
	}
	if x.incomplete {
		add(frame.KindError, enc(&exchange.Error{Stage: "client", Error: "context canceled", Received: int64(len(body))}), false)
	}
	end := ""
	if x.hangup {
		add(frame.KindError, enc(&exchange.Error{Stage: "client", Error: fmt.Sprintf("client went away after %d response bytes: context canceled", len(body)),
			Received: int64(len(body)), Status: status}), false)
		end = "client disconnected"
	}
	add(frame.KindResponseEnd, enc(&exchange.ResponseEnd{Status: status, TTFB: 2e6, Duration: c.ns - start, RequestBytes: int64(len(x.req)),
		ResponseBytes: int64(len(body)), Chunks: int64(n), Complete: !x.incomplete && !x.hangup, Error: end, SessionID: x.session}), false)
	return recs
}

// sse builds an Anthropic Messages stream.
type sse struct{ b strings.Builder }

func (s *sse) ev(name string, v any) {
	b, _ := json.Marshal(v)
	fmt.Fprintf(&s.b, "event: %s\ndata: %s\n\n", name, b)
}

type obj = map[string]any

// anthropicReply is one scripted model reply.
type anthropicReply struct {
	id             string // message id; default msg_1
	thinking, text string
	tools          []obj // {"id","name","input"}
	stop           string
	in, out, cache int
}

func (r anthropicReply) stream(model string) []byte {
	var s sse
	s.ev("message_start", obj{"type": "message_start", "message": obj{"id": cmp.Or(r.id, "msg_1"), "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "usage": obj{"input_tokens": r.in, "cache_read_input_tokens": r.cache, "output_tokens": 1}}})
	i := 0
	if r.thinking != "" {
		s.ev("content_block_start", obj{"type": "content_block_start", "index": i, "content_block": obj{"type": "thinking", "thinking": ""}})
		s.ev("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": obj{"type": "thinking_delta", "thinking": r.thinking}})
		s.ev("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": obj{"type": "signature_delta", "signature": "sig-" + fmt.Sprint(len(r.thinking))}})
		s.ev("content_block_stop", obj{"type": "content_block_stop", "index": i})
		i++
	}
	if r.text != "" {
		s.ev("content_block_start", obj{"type": "content_block_start", "index": i, "content_block": obj{"type": "text", "text": ""}})
		half := len(r.text) / 2
		s.ev("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": obj{"type": "text_delta", "text": r.text[:half]}})
		s.ev("ping", obj{"type": "ping"})
		s.ev("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": obj{"type": "text_delta", "text": r.text[half:]}})
		s.ev("content_block_stop", obj{"type": "content_block_stop", "index": i})
		i++
	}
	for _, tl := range r.tools {
		s.ev("content_block_start", obj{"type": "content_block_start", "index": i, "content_block": obj{"type": "tool_use", "id": tl["id"], "name": tl["name"], "input": obj{}}})
		in, _ := json.Marshal(tl["input"])
		half := len(in) / 2
		s.ev("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": obj{"type": "input_json_delta", "partial_json": ""}})
		s.ev("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": obj{"type": "input_json_delta", "partial_json": string(in[:half])}})
		s.ev("content_block_delta", obj{"type": "content_block_delta", "index": i, "delta": obj{"type": "input_json_delta", "partial_json": string(in[half:])}})
		s.ev("content_block_stop", obj{"type": "content_block_stop", "index": i})
		i++
	}
	stop := r.stop
	if stop == "" {
		stop = "end_turn"
		if len(r.tools) > 0 {
			stop = "tool_use"
		}
	}
	s.ev("message_delta", obj{"type": "message_delta", "delta": obj{"stop_reason": stop}, "usage": obj{"output_tokens": r.out}})
	s.ev("message_stop", obj{"type": "message_stop"})
	return []byte(s.b.String())
}

// content is the assistant message a client re-sends for r.
func (r anthropicReply) content() []any {
	var c []any
	if r.thinking != "" {
		c = append(c, obj{"type": "thinking", "thinking": r.thinking, "signature": "sig-" + fmt.Sprint(len(r.thinking))})
	}
	if r.text != "" {
		c = append(c, obj{"type": "text", "text": r.text})
	}
	for _, tl := range r.tools {
		c = append(c, obj{"type": "tool_use", "id": tl["id"], "name": tl["name"], "input": tl["input"]})
	}
	return c
}

// conversation scripts an Anthropic tool loop the way clients send it:
// every request re-sends the whole history.
type conversation struct {
	session, system, model string
	msgs                   []any
}

func (cv *conversation) request() []byte {
	b, _ := json.Marshal(obj{"model": cv.model, "max_tokens": 4096, "stream": true, "system": cv.system,
		"tools": []any{obj{"name": "Bash", "input_schema": obj{"type": "object"}}}, "messages": cv.msgs})
	return b
}

func (cv *conversation) user(content any) {
	cv.msgs = append(cv.msgs, obj{"role": "user", "content": content})
}
func (cv *conversation) assistant(r anthropicReply) {
	cv.msgs = append(cv.msgs, obj{"role": "assistant", "content": r.content()})
}

// toolLoop returns the exchanges of a session of n tool-using turns.
func toolLoop(session string, n int) []fx {
	cv := &conversation{session: session, system: "You are a coding agent.", model: "claude-sonnet-4-5"}
	cv.user("fix the failing test in " + session)
	var out []fx
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("toolu_%s_%d", session, i)
		r := anthropicReply{thinking: fmt.Sprintf("step %d: run the tests", i), text: fmt.Sprintf("Running step %d.", i),
			tools: []obj{{"id": id, "name": "Bash", "input": obj{"command": fmt.Sprintf("go test ./... -run Test%d", i)}}},
			in:    100 + i, out: 20 + i, cache: 1000}
		if i == n-1 {
			r.tools, r.text = nil, "All tests pass now."
		}
		out = append(out, fx{session: session, req: cv.request(), resp: r.stream(cv.model)})
		cv.assistant(r)
		if len(r.tools) > 0 {
			cv.user([]any{obj{"type": "tool_result", "tool_use_id": id, "content": fmt.Sprintf("ok  \tpkg\t0.%03ds", i)}})
		}
	}
	return out
}

// writeWAL appends exchanges (interleaving the frames of consecutive
// groups when interleave is set) and returns the next exchange id.
func writeWAL(t testing.TB, log *wal.Log, c *clock, id uint64, xs []fx) uint64 {
	t.Helper()
	for _, x := range xs {
		id++
		if _, err := log.AppendBatch(x.frames(t, id, c)); err != nil {
			t.Fatal(err)
		}
	}
	return id
}

// interleave merges the exchanges of several sessions round-robin and
// interleaves the frames of each round.
func interleaveWAL(t testing.TB, log *wal.Log, c *clock, id uint64, sessions ...[]fx) uint64 {
	t.Helper()
	for round := 0; ; round++ {
		var groups [][]wal.Record
		for _, s := range sessions {
			if round < len(s) {
				id++
				groups = append(groups, s[round].frames(t, id, c))
			}
		}
		if len(groups) == 0 {
			return id
		}
		for i := 0; ; i++ {
			any := false
			for _, g := range groups {
				if i < len(g) {
					any = true
					if _, err := log.Append(g[i]); err != nil {
						t.Fatal(err)
					}
				}
			}
			if !any {
				break
			}
		}
	}
}
