package llm

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// anthropicAllBlocks is a request with every block type, cache_control
// here and there, and keys of every kind.
const anthropicAllBlocks = `{
  "model": "claude-opus-4-1",
  "max_tokens": 1024,
  "temperature": 0.5,
  "stop_sequences": ["\n\nHuman:"],
  "thinking": {"type": "enabled", "budget_tokens": 2048},
  "tool_choice": {"type": "auto"},
  "service_tier": "auto",
  "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
  "x_future_knob": [1, 2],
  "metadata": {"user_id": "u-1"},
  "stream": true,
  "system": [
    {"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}},
    {"type": "text", "text": "Answer in English."}
  ],
  "tools": [
    {"name": "get_weather", "description": "Weather", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}},
    {"type": "web_search_20250305", "name": "web_search", "max_uses": 3},
    {"type": "bash_20250124", "name": "bash"},
    {"type": "mystery_tool"}
  ],
  "messages": [
    {"role": "user", "content": "Hello"},
    {"role": "user", "content": [
      {"type": "text", "text": "Look:", "cache_control": {"type": "ephemeral"}},
      {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "aGVsbG8="}},
      {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
      {"type": "image", "source": {"type": "file", "file_id": "file_011"}},
      {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQK"}, "title": "Spec"},
      {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "plain words"}},
      {"type": "document", "source": {"type": "content", "content": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]}},
      {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}}
    ]},
    {"role": "assistant", "content": [
      {"type": "thinking", "thinking": "Let me think.", "signature": "sig-1"},
      {"type": "redacted_thinking", "data": "opaque=="},
      {"type": "text", "text": "Checking.", "citations": [{"type": "char_location", "cited_text": "x"}]},
      {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": { "city" : "Paris",  "days": [1, 2] }},
      {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "paris <weather>"}},
      {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [{"type": "web_search_result", "url": "https://example.com", "title": "Ex & co", "encrypted_content": "enc"}], "cache_control": {"type": "ephemeral"}},
      {"type": "compaction", "content": "Summary so far.", "encrypted_content": "Ep0B"}
    ]},
    {"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C and sunny"},
      {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true, "content": [
        {"type": "text", "text": "line one"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": "/9j/"}},
        {"type": "text", "text": "line two"}
      ]},
      {"type": "tool_result", "tool_use_id": "toolu_3", "cache_control": {"type": "ephemeral"}},
      {"type": "search_result", "source": "https://example.com/doc", "title": "Doc", "content": [{"type": "text", "text": "found"}], "cache_control": {"type": "ephemeral"}},
      {"type": "text", "text": 42}
    ]}
  ]
}`

func TestAnthropicRequestBlocks(t *testing.T) {
	r, err := DecodeRequest(AnthropicMessages, []byte(anthropicAllBlocks))
	if err != nil {
		t.Fatal(err)
	}
	if r.API != AnthropicMessages || r.Model != "claude-opus-4-1" || !r.Stream {
		t.Errorf("API %q Model %q Stream %v", r.API, r.Model, r.Stream)
	}
	if want := "You are terse.\n\nAnswer in English."; r.System != want {
		t.Errorf("System = %q, want %q", r.System, want)
	}
	if want := []string{"get_weather", "web_search", "bash", "mystery_tool"}; !reflect.DeepEqual(r.Tools, want) {
		t.Errorf("Tools = %q, want %q", r.Tools, want)
	}
	wantParams := []Param{
		{"context_management", json.RawMessage(`{"edits":[{"type":"clear_tool_uses_20250919"}]}`)},
		{"max_tokens", json.RawMessage(`1024`)},
		{"service_tier", json.RawMessage(`"auto"`)},
		{"stop_sequences", json.RawMessage(`["\n\nHuman:"]`)},
		{"temperature", json.RawMessage(`0.5`)},
		{"thinking", json.RawMessage(`{"type":"enabled","budget_tokens":2048}`)},
		{"tool_choice", json.RawMessage(`{"type":"auto"}`)},
		{"x_future_knob", json.RawMessage(`[1,2]`)},
	}
	if !reflect.DeepEqual(r.Params, wantParams) {
		t.Errorf("Params =\n%s\nwant\n%s", mustJSON(r.Params), mustJSON(wantParams))
	}
	want := []struct {
		role  string
		parts []wantPart
	}{
		{"user", []wantPart{{Type: PartText, Text: "Hello"}}},
		{"user", []wantPart{
			{Type: PartText, Text: "Look:"},
			{Type: PartImage, MediaType: "image/png", Size: 5, SHA256: sha("hello")},
			{Type: PartImage, URL: "https://example.com/a.png"},
			{Type: PartImage, ID: "file_011"},
			{Type: PartDocument, MediaType: "application/pdf", Size: 9, SHA256: sha("%PDF-1.4\n")},
			{Type: PartDocument, MediaType: "text/plain", Text: "plain words"},
			{Type: PartDocument, Text: "one\ntwo"},
			{Type: PartDocument, URL: "https://example.com/a.pdf"},
		}},
		{"assistant", []wantPart{
			{Type: PartThinking, Text: "Let me think.", Signature: "sig-1"},
			{Type: PartRedactedThinking, Data: "opaque=="},
			{Type: PartText, Text: "Checking."},
			{Type: PartToolCall, ID: "toolu_1", Name: "get_weather", Input: `{"city":"Paris","days":[1,2]}`},
			{Type: PartServerToolCall, ID: "srvtoolu_1", Name: "web_search", Input: `{"query":"paris <weather>"}`},
			{
				Type: PartServerToolResult, ID: "srvtoolu_1",
				Raw: `{"content":[{"type":"web_search_result","url":"https://example.com","title":"Ex & co","encrypted_content":"enc"}],"tool_use_id":"srvtoolu_1","type":"web_search_tool_result"}`,
			},
			{Type: PartCompaction, Text: "Summary so far.", Data: "Ep0B"},
		}},
		{"user", []wantPart{
			{Type: PartToolResult, ID: "toolu_1", Text: "18C and sunny"},
			{Type: PartToolResult, ID: "toolu_2", IsError: true, Text: "line one\nline two", Content: []wantPart{
				{Type: PartImage, MediaType: "image/jpeg", Size: 3, SHA256: sha("\xff\xd8\xff")},
			}},
			{Type: PartToolResult, ID: "toolu_3"},
			{Type: PartOther, Raw: `{"content":[{"type":"text","text":"found"}],"source":"https://example.com/doc","title":"Doc","type":"search_result"}`},
			{Type: PartOther, Raw: `{"type":"text","text":42}`},
		}},
	}
	if len(r.Messages) != len(want) {
		t.Fatalf("%d messages, want %d", len(r.Messages), len(want))
	}
	for i, w := range want {
		if r.Messages[i].Role != w.role {
			t.Errorf("message %d: role %q, want %q", i, r.Messages[i].Role, w.role)
		}
		checkParts(t, "message "+string(rune('0'+i)), r.Messages[i].Parts, w.parts)
	}
}

// TestAnthropicRequestWhitespace: the same request compact, indented or as
// sent decodes to the same Request.
func TestAnthropicRequestWhitespace(t *testing.T) {
	want, err := DecodeRequest(AnthropicMessages, []byte(anthropicAllBlocks))
	if err != nil {
		t.Fatal(err)
	}
	var compact, indented bytes.Buffer
	if err := json.Compact(&compact, []byte(anthropicAllBlocks)); err != nil {
		t.Fatal(err)
	}
	if err := json.Indent(&indented, []byte(anthropicAllBlocks), "\t", "      "); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string][]byte{"compact": compact.Bytes(), "indented": indented.Bytes()} {
		got, err := DecodeRequest(AnthropicMessages, body)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got\n%s\nwant\n%s", name, mustJSON(got), mustJSON(want))
		}
	}
}

func TestAnthropicRequestEmpty(t *testing.T) {
	for _, body := range []string{`{}`, `{"messages": null, "system": null, "model": null}`, `{"messages": []}`} {
		r, err := DecodeRequest(AnthropicMessages, []byte(body))
		if err != nil {
			t.Errorf("%s: %v", body, err)
			continue
		}
		if len(r.Messages) != 0 || r.System != "" || r.Model != "" || len(r.Params) != 0 {
			t.Errorf("%s: %s", body, mustJSON(r))
		}
	}
	r, err := DecodeRequest(AnthropicMessages, []byte(`{"messages":[{"role":"user","content":""},{"role":"assistant","content":[]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	checkParts(t, "empty string", r.Messages[0].Parts, []wantPart{{Type: PartText}})
	checkParts(t, "empty array", r.Messages[1].Parts, nil)
}

func TestAnthropicRequestErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{``, "at byte 0: unexpected end of JSON input"},
		{`{"model": "x",}`, "at byte 15: invalid character '}' looking for beginning of object key string"},
		{`{"model": "x"} {}`, "at byte 16: invalid character '{' after top-level value"},
		{`{"messages": [{"role": "user", "content": "hi"}`, "at byte 47: unexpected end of JSON input"},
		{`[1, 2]`, "at byte 1: want object, got array"},
		{`"hello"`, "at byte 7: want object, got string"},
		{`null`, "at byte 0: want object, got null"},
		{`{"model": 7}`, "model: want string, got number"},
		{`{"stream": "yes"}`, "stream: want boolean, got string"},
		{`{"system": 5}`, "system: want string or array, got number"},
		{`{"system": [{"type": "text", "text": 5}]}`, "system.text: want string, got number"},
		{`{"messages": "hi"}`, "messages: want array, got string"},
		{`{"messages": ["hi"]}`, "messages[0]: want object, got string"},
		{`{"messages": [{"role": "user", "content": "a"}, {"role": 1, "content": "x"}]}`, "messages[1].role: want string, got number"},
		{`{"messages": [{"role": "user", "content": 5}]}`, "messages[0].content: want string or array, got number"},
		{`{"messages": [{"role": "user", "content": {"type": "text"}}]}`, "messages[0].content: want string or array, got object"},
		{`{"tools": {"name": "x"}}`, "tools: want array, got object"},
		{`{"tools": [{"name": "a"}, 7]}`, "tools[1]: want object, got number"},
		{`{"tools": [{"name": 5}]}`, "tools[0].name: want string, got number"},
	} {
		_, err := DecodeRequest(AnthropicMessages, []byte(tc.body))
		want := "anthropic-messages request: " + tc.want
		if err == nil || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s", tc.body, err, want)
		}
	}
}

func TestAnthropicResponseJSON(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want wantResponse
	}{
		{
			name: "message",
			body: `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x",
				"content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"Hi"},
				{"type":"tool_use","id":"toolu_9","name":"f","input":{ "a" : 1 }},
				{"type":"server_tool_use","id":"srvtoolu_2","name":"web_fetch","input":{}},
				{"type":"web_fetch_tool_result","tool_use_id":"srvtoolu_2","content":{"type":"web_fetch_result"}}],
				"stop_reason":"tool_use","stop_sequence":null,"stop_details":null,
				"usage":{"input_tokens":10,"cache_creation_input_tokens":20,"cache_read_input_tokens":30,
				"cache_creation":{"ephemeral_5m_input_tokens":15,"ephemeral_1h_input_tokens":5},
				"output_tokens":7,"output_tokens_details":{"thinking_tokens":3}}}`,
			want: wantResponse{
				ID: "msg_1", Model: "claude-x",
				Parts: []wantPart{
					{Type: PartThinking, Text: "hm", Signature: "s"},
					{Type: PartText, Text: "Hi"},
					{Type: PartToolCall, ID: "toolu_9", Name: "f", Input: `{"a":1}`},
					{Type: PartServerToolCall, ID: "srvtoolu_2", Name: "web_fetch", Input: `{}`},
					{Type: PartServerToolResult, ID: "srvtoolu_2", Raw: `{"type":"web_fetch_tool_result","tool_use_id":"srvtoolu_2","content":{"type":"web_fetch_result"}}`},
				},
				StopReason: "tool_use",
				Usage:      Usage{Input: 60, Output: 7, CacheRead: 30, CacheCreation: 20, CacheCreation5m: 15, CacheCreation1h: 5, Reasoning: 3},
				Complete:   true,
			},
		},
		{
			name: "cache creation reported only by its parts",
			body: `{"type":"message","content":[],"usage":{"input_tokens":1,"cache_creation":{"ephemeral_5m_input_tokens":2,"ephemeral_1h_input_tokens":4},"output_tokens":1}}`,
			want: wantResponse{
				Usage:    Usage{Input: 7, Output: 1, CacheCreation: 6, CacheCreation5m: 2, CacheCreation1h: 4},
				Complete: true,
			},
		},
		{
			name: "error",
			body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`,
			want: wantResponse{Error: &APIError{Type: "overloaded_error", Message: "Overloaded"}, Complete: true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeResponse(AnthropicMessages, []byte(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if r.Stream {
				t.Error("Stream set for a JSON body")
			}
			checkResponse(t, tc.name, r, tc.want)
		})
	}
	_, err := DecodeResponse(AnthropicMessages, []byte(`{"id":"msg_1","type":"mess`))
	if want := "anthropic-messages response: at byte 26: unexpected end of JSON input"; err == nil || err.Error() != want {
		t.Errorf("cut body: got %v, want %s", err, want)
	}
	_, err = DecodeResponse(AnthropicMessages, []byte(` [{"type":"message"}]`))
	if want := "anthropic-messages response: at byte 2: want object, got array"; err == nil || err.Error() != want {
		t.Errorf("array body: got %v, want %s", err, want)
	}
}

// sse builds an SSE body of events given as type, data pairs.
func sse(pairs ...string) []byte {
	var b bytes.Buffer
	for i := 0; i+1 < len(pairs); i += 2 {
		if pairs[i] != "" {
			b.WriteString("event: " + pairs[i] + "\n")
		}
		b.WriteString("data: " + pairs[i+1] + "\n\n")
	}
	return b.Bytes()
}

const (
	anthStart = `{"type":"message_start","message":{"id":"msg_e","model":"m","usage":{"input_tokens":100,"cache_read_input_tokens":50,"output_tokens":1}}}`
	anthStop  = `{"type":"message_stop"}`
)

func TestAnthropicStreamEdges(t *testing.T) {
	for _, tc := range []struct {
		name string
		body []byte
		want wantResponse
	}{
		{
			name: "error event mid-stream",
			body: sse("message_start", anthStart,
				"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
				"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}`,
				"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
			want: wantResponse{
				ID: "msg_e", Model: "m", Parts: []wantPart{{Type: PartText, Text: "Hel", Partial: true}},
				Usage: Usage{Input: 150, Output: 1, CacheRead: 50}, Events: 4,
				Error: &APIError{Type: "overloaded_error", Message: "Overloaded"},
			},
		},
		{
			name: "delta to an index never started, unknown event, mismatched and unknown deltas",
			body: sse("message_start", anthStart,
				"content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"orphan"}}`,
				"message_annotation", `{"type":"message_annotation","note":1}`,
				"content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{"}}`,
				"content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"citations_delta","citation":{}}}`,
				"content_block_delta", `{"type":"content_block_delta","index":3,"delta":{"type":"sparkle_delta"}}`,
				"content_block_stop", `{"type":"content_block_stop","index":3}`,
				"content_block_stop", `{"type":"content_block_stop","index":9}`,
				"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":20}}`,
				"message_stop", anthStop),
			want: wantResponse{
				ID: "msg_e", Model: "m",
				Parts: []wantPart{
					{Type: PartText, Text: "orphan"},
					{Type: PartOther, Raw: `{"type":"message_annotation","note":1}`},
					{Type: PartOther, Raw: `{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{"}}`},
					{Type: PartOther, Raw: `{"type":"content_block_delta","index":3,"delta":{"type":"sparkle_delta"}}`},
				},
				StopReason: "end_turn", Usage: Usage{Input: 150, Output: 20, CacheRead: 50}, Complete: true, Events: 10,
			},
		},
		{
			name: "data-only events, CRLF, comments, a bad event in the middle, an event of the wrong shape",
			body: bytes.ReplaceAll(sse("", anthStart,
				"", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"noargs","input":{}}}`,
				"", `{"type":"content_block_stop","index":0}`,
				"content_block_delta", `{not json`,
				"", `{"type":"content_block_start","index":"one","content_block":{}}`,
				"", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t2","name":"given","input":{"a": [1]}}}`,
				"", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`,
				"", `{"type":"content_block_stop","index":1}`,
				"", anthStop), []byte("\n"), []byte("\r\n:keepalive\r\n")),
			want: wantResponse{
				ID: "msg_e", Model: "m",
				Parts: []wantPart{
					{Type: PartToolCall, ID: "t1", Name: "noargs", Input: `{}`},
					{Type: PartOther, Raw: `{"type":"content_block_start","index":"one","content_block":{}}`},
					{Type: PartToolCall, ID: "t2", Name: "given", Input: `{"a":[1]}`},
				},
				Usage: Usage{Input: 150, Output: 1, CacheRead: 50}, Complete: true, Events: 9,
			},
		},
		{
			name: "tool input that never parses, stopped",
			body: sse("message_start", anthStart,
				"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"f","input":{}}}`,
				"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\": tru"}}`,
				"content_block_stop", `{"type":"content_block_stop","index":0}`),
			want: wantResponse{
				ID: "msg_e", Model: "m",
				Parts: []wantPart{{Type: PartToolCall, ID: "t1", Name: "f", Text: `{"a": tru`, Partial: true}},
				Usage: Usage{Input: 150, Output: 1, CacheRead: 50}, Events: 4,
			},
		},
		{
			name: "thinking, redacted thinking and a signature in pieces",
			body: sse("message_start", anthStart,
				"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"a","signature":""}}`,
				"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"b"}}`,
				"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"S1"}}`,
				"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"S2"}}`,
				"content_block_stop", `{"type":"content_block_stop","index":0}`,
				"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"xyz"}}`,
				"content_block_stop", `{"type":"content_block_stop","index":1}`,
				"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_details":{"a" : 1}},"usage":{"output_tokens":9,"input_tokens":5,"output_tokens_details":{"thinking_tokens":4}}}`,
				"message_stop", anthStop),
			want: wantResponse{
				ID: "msg_e", Model: "m",
				Parts: []wantPart{
					{Type: PartThinking, Text: "ab", Signature: "S1S2"},
					{Type: PartRedactedThinking, Data: "xyz"},
				},
				StopReason: "end_turn", StopDetails: `{"a":1}`,
				Usage:    Usage{Input: 55, Output: 9, CacheRead: 50, Reasoning: 4},
				Complete: true, Events: 10,
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeResponse(AnthropicMessages, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			checkResponse(t, tc.name, r, tc.want)
		})
	}
}

func TestAnthropicStreamErrors(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{``, "at byte 0: no events in 0 bytes"},
		{"<html>Bad gateway</html>\n", "at byte 0: no events in 25 bytes"},
		{": comment\n\nevent: ping\n\n", "at byte 0: no events in 24 bytes"},
		{"event: ping\ndata: {\"type\": \"ping\"}\n\n", ""},
		{"event: message_start\ndata: {oops\n\n", "event 1 at byte 0: message_start: invalid character 'o' looking for beginning of object key string"},
		{": hi\n\ndata: [DONE]\n\nevent: message_start\ndata: {\"type\":\"mess", "event 1 at byte 6: invalid character 'D' looking for beginning of value"},
	} {
		_, err := DecodeResponse(AnthropicMessages, []byte(tc.body))
		want := "anthropic-messages response: " + tc.want
		if tc.want == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.body, err)
			}
			continue
		}
		if err == nil || err.Error() != want {
			t.Errorf("%q:\n got %v\nwant %s", tc.body, err, want)
		}
	}
}

// TestRequestErrorStable decodes bodies with several bad fields many times:
// the error names the same field every time (fields are checked in name
// order, not in a map's random order).
func TestRequestErrorStable(t *testing.T) {
	cases := []struct {
		api  API
		body string
		want string
	}{
		{AnthropicMessages, `{"tools":"x","model":[],"stream":"no","system":5}`, "anthropic-messages request: model: want string, got array"},
		{Gemini, `{"tools":"x","contents":5,"systemInstruction":[1]}`, "gemini request: contents: "},
	}
	for _, c := range cases {
		for i := range 50 {
			_, err := DecodeRequest(c.api, []byte(c.body))
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("%s, decode %d: err %v, want prefix %q", c.api, i, err, c.want)
			}
		}
	}
}
