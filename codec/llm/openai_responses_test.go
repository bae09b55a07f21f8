package llm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// TestResponsesFixtures decodes the two Responses streams of the
// openai-node snapshots.
func TestResponsesFixtures(t *testing.T) {
	oaiShared(t)
	fixtures := oaiResponsesFixtures(t)
	tests := []struct {
		name string
		want *Response
	}{
		{
			name: ".stream() standard text works",
			want: &Response{ID: "resp_test_1", Model: "gpt-4o-2024-08-06", Parts: oaiText1("Hello world"),
				StopReason: "completed", Usage: Usage{Input: 10, Output: 2}, Events: 9},
		},
		{
			// No output_item.done here: the final output of response.completed
			// gives the reasoning item, with reasoning_text content and no
			// summary.
			name: ".stream() reasoning works",
			want: &Response{ID: "resp_reason_1", Model: "o3",
				Parts:      []Part{{Type: PartThinking, Text: "Chain: Step 1. Step 2."}, {Type: PartText, Text: "The answer is 42"}},
				StopReason: "completed", Usage: Usage{Output: 6, Reasoning: 2}, Events: 12},
		},
	}
	if len(tests) != len(fixtures) {
		t.Errorf("%d fixtures, %d expectations", len(fixtures), len(tests))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, ok := fixtures[tt.name]
			if !ok {
				t.Fatalf("no fixture %q", tt.name)
			}
			r, err := DecodeResponse(OpenAIResponses, body)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.API, tt.want.Complete, tt.want.Stream = OpenAIResponses, true, true
			oaiCheckEqual(t, "response", r, tt.want)
		})
	}
}

// TestResponsesFixturesWithoutTerminal drops response.completed from the
// fixtures, so that the parts come from the streamed events alone.
func TestResponsesFixturesWithoutTerminal(t *testing.T) {
	oaiShared(t)
	fixtures := oaiResponsesFixtures(t)
	// The terminal event is the last that starts with a response object.
	cut := func(b []byte) []byte { return b[:bytes.LastIndex(b, []byte(`data: {"response"`))] }
	tests := []struct {
		name  string
		parts []Part
	}{
		// output_item.done arrived: the text is final.
		{".stream() standard text works", oaiText1("Hello world")},
		// The reasoning item never got output_item.done: Partial. The
		// message's text got output_text.done: not Partial.
		{".stream() reasoning works", []Part{
			{Type: PartThinking, Text: "Chain: Step 1. Step 2.", Partial: true},
			{Type: PartText, Text: "The answer is 42"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := DecodeResponse(OpenAIResponses, cut(fixtures[tt.name]))
			if err != nil {
				t.Fatal(err)
			}
			if r.Complete || r.StopReason != "" {
				t.Errorf("Complete %v, StopReason %q; want false, empty", r.Complete, r.StopReason)
			}
			oaiCheckEqual(t, "parts", r.Parts, tt.parts)
		})
	}
}

// Items of a Codex-style turn, as response.output_item.done sends them.
const (
	oaiCodexReasoning = `{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"**Plan**\n\nList files."},{"type":"summary_text","text":"Then read."}],"encrypted_content":"gAAAAB-enc"}`
	oaiCodexCall      = `{"type":"function_call","id":"fc_1","call_id":"call_1","name":"shell","arguments":"{\"command\": [\"ls\"]}","status":"completed"}`
	oaiCodexPatch     = `{"type":"custom_tool_call","id":"ctc_1","call_id":"call_2","name":"apply_patch","input":"*** Begin Patch\n*** End Patch","status":"completed"}`
	oaiCodexMessage   = `{"type":"message","id":"msg_1","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Running.","annotations":[]}]}`
)

// oaiCodexStream builds a Codex-style Responses stream with event: lines:
// reasoning with two summary parts, a function call, a custom tool call
// and a message. output is the output array of response.completed.
func oaiCodexStream(output string) []byte {
	return oaiSSE(true,
		`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","model":"gpt-5-codex","status":"in_progress","output":[],"usage":null,"error":null,"incomplete_details":null}}`,
		`{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1","object":"response","model":"gpt-5-codex","status":"in_progress","output":[],"usage":null}}`,
		`{"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[]}}`,
		`{"type":"response.reasoning_summary_part.added","sequence_number":3,"output_index":0,"item_id":"rs_1","summary_index":0,"part":{"type":"summary_text","text":""}}`,
		`{"type":"response.reasoning_summary_text.delta","sequence_number":4,"output_index":0,"item_id":"rs_1","summary_index":0,"delta":"**Plan**"}`,
		`{"type":"response.reasoning_summary_text.delta","sequence_number":5,"output_index":0,"item_id":"rs_1","summary_index":0,"delta":"\n\nList files."}`,
		`{"type":"response.reasoning_summary_text.done","sequence_number":6,"output_index":0,"item_id":"rs_1","summary_index":0,"text":"**Plan**\n\nList files."}`,
		`{"type":"response.reasoning_summary_part.done","sequence_number":7,"output_index":0,"item_id":"rs_1","summary_index":0,"part":{"type":"summary_text","text":"**Plan**\n\nList files."}}`,
		`{"type":"response.reasoning_summary_part.added","sequence_number":8,"output_index":0,"item_id":"rs_1","summary_index":1,"part":{"type":"summary_text","text":""}}`,
		`{"type":"response.reasoning_summary_text.delta","sequence_number":9,"output_index":0,"item_id":"rs_1","summary_index":1,"delta":"Then read."}`,
		`{"type":"response.reasoning_summary_text.done","sequence_number":10,"output_index":0,"item_id":"rs_1","summary_index":1,"text":"Then read."}`,
		`{"type":"response.output_item.done","sequence_number":11,"output_index":0,"item":`+oaiCodexReasoning+`}`,
		`{"type":"response.output_item.added","sequence_number":12,"output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_1","name":"shell","arguments":"","status":"in_progress"}}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":13,"output_index":1,"item_id":"fc_1","delta":"{\"command\":"}`,
		`{"type":"response.function_call_arguments.delta","sequence_number":14,"output_index":1,"item_id":"fc_1","delta":" [\"ls\"]}"}`,
		`{"type":"response.function_call_arguments.done","sequence_number":15,"output_index":1,"item_id":"fc_1","arguments":"{\"command\": [\"ls\"]}"}`,
		`{"type":"response.output_item.done","sequence_number":16,"output_index":1,"item":`+oaiCodexCall+`}`,
		`{"type":"response.output_item.added","sequence_number":17,"output_index":2,"item":{"type":"custom_tool_call","id":"ctc_1","call_id":"call_2","name":"apply_patch","input":"","status":"in_progress"}}`,
		`{"type":"response.custom_tool_call_input.delta","sequence_number":18,"output_index":2,"item_id":"ctc_1","delta":"*** Begin Patch\n"}`,
		`{"type":"response.custom_tool_call_input.delta","sequence_number":19,"output_index":2,"item_id":"ctc_1","delta":"*** End Patch"}`,
		`{"type":"response.custom_tool_call_input.done","sequence_number":20,"output_index":2,"item_id":"ctc_1","input":"*** Begin Patch\n*** End Patch"}`,
		`{"type":"response.output_item.done","sequence_number":21,"output_index":2,"item":`+oaiCodexPatch+`}`,
		`{"type":"response.output_item.added","sequence_number":22,"output_index":3,"item":{"type":"message","id":"msg_1","role":"assistant","status":"in_progress","content":[]}}`,
		`{"type":"response.content_part.added","sequence_number":23,"output_index":3,"item_id":"msg_1","content_index":0,"part":{"type":"output_text","text":"","annotations":[]}}`,
		`{"type":"response.output_text.delta","sequence_number":24,"output_index":3,"item_id":"msg_1","content_index":0,"delta":"Run","logprobs":[]}`,
		`{"type":"response.output_text.delta","sequence_number":25,"output_index":3,"item_id":"msg_1","content_index":0,"delta":"ning.","logprobs":[]}`,
		`{"type":"response.output_text.done","sequence_number":26,"output_index":3,"item_id":"msg_1","content_index":0,"text":"Running.","logprobs":[]}`,
		`{"type":"response.content_part.done","sequence_number":27,"output_index":3,"item_id":"msg_1","content_index":0,"part":{"type":"output_text","text":"Running.","annotations":[]}}`,
		`{"type":"response.output_item.done","sequence_number":28,"output_index":3,"item":`+oaiCodexMessage+`}`,
		`{"type":"response.completed","sequence_number":29,"response":{"id":"resp_1","object":"response","model":"gpt-5-codex","status":"completed","output":`+output+`,"usage":{"input_tokens":5000,"input_tokens_details":{"cached_tokens":4096},"output_tokens":300,"output_tokens_details":{"reasoning_tokens":128},"total_tokens":5300},"error":null,"incomplete_details":null}}`,
	)
}

var oaiCodexParts = []Part{
	{Type: PartThinking, Text: "**Plan**\n\nList files.\n\nThen read.", Data: "gAAAAB-enc"},
	{Type: PartToolCall, ID: "call_1", Name: "shell", Input: oaiRaw(`{"command":["ls"]}`)},
	{Type: PartToolCall, ID: "call_2", Name: "apply_patch", Text: "*** Begin Patch\n*** End Patch"},
	{Type: PartText, Text: "Running."},
}

func TestResponsesStream(t *testing.T) {
	full := "[" + strings.Join([]string{oaiCodexReasoning, oaiCodexCall, oaiCodexPatch, oaiCodexMessage}, ",") + "]"
	codex := &Response{ID: "resp_1", Model: "gpt-5-codex", Parts: oaiCodexParts, StopReason: "completed",
		Usage: Usage{Input: 5000, Output: 300, CacheRead: 4096, Reasoning: 128}, Complete: true, Events: 30}
	created := `{"type":"response.created","response":{"id":"resp_9","model":"gpt-5","status":"in_progress","output":[]}}`
	msgAdded := `{"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"m1","role":"assistant","content":[]}}`
	completed := func(output string) string {
		return `{"type":"response.completed","response":{"id":"resp_9","model":"gpt-5","status":"completed","output":` + output + `}}`
	}
	tests := []struct {
		name string
		body []byte
		want *Response
	}{
		{"codex, empty final output", oaiCodexStream("[]"), codex},
		{"codex, full final output", oaiCodexStream(full), codex},
		{
			name: "refusal",
			body: oaiSSE(false, created, msgAdded,
				`{"type":"response.content_part.added","output_index":0,"content_index":0,"part":{"type":"refusal","refusal":""}}`,
				`{"type":"response.refusal.delta","output_index":0,"content_index":0,"delta":"No"}`,
				`{"type":"response.refusal.delta","output_index":0,"content_index":0,"delta":" way"}`,
				`{"type":"response.refusal.done","output_index":0,"content_index":0,"refusal":"No way."}`,
				completed("[]")),
			want: &Response{ID: "resp_9", Model: "gpt-5", Parts: oaiRefusal1("No way."), StopReason: "completed", Complete: true, Events: 7},
		},
		{
			name: "item done preferred over deltas",
			body: oaiSSE(false, created, msgAdded,
				`{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"Hel"}`,
				`{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"lo"}`,
				`{"type":"response.output_item.done","output_index":0,"item":{"type":"message","id":"m1","role":"assistant","content":[{"type":"output_text","text":"Hello!"}]}}`,
				completed("[]")),
			want: &Response{ID: "resp_9", Model: "gpt-5", Parts: oaiText1("Hello!"), StopReason: "completed", Complete: true, Events: 6},
		},
		{
			name: "final output preferred over items",
			body: oaiSSE(false, created, msgAdded,
				`{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"draft"}`,
				completed(`[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"final"}]}]`)),
			want: &Response{ID: "resp_9", Model: "gpt-5", Parts: oaiText1("final"), StopReason: "completed", Complete: true, Events: 4},
		},
		{
			// Without output_index an event finds its item by item_id;
			// without a type field the event: line names it.
			name: "item_id and event lines",
			body: []byte("event: response.output_item.added\ndata: " + msgAdded + "\n\n" +
				"event: response.output_text.delta\ndata: {\"item_id\":\"m1\",\"content_index\":0,\"delta\":\"by id\"}\n\n" +
				"event: response.output_text.delta\ndata: {\"item_id\":\"nope\",\"content_index\":0,\"delta\":\"lost\"}\n\n"),
			want: &Response{Parts: []Part{{Type: PartText, Text: "by id", Partial: true}}, Events: 3},
		},
		{
			name: "incomplete",
			body: oaiSSE(true, created,
				`{"type":"response.incomplete","response":{"id":"resp_9","model":"gpt-5","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Partial answ"}]}],"usage":{"input_tokens":10,"output_tokens":16}}}`),
			want: &Response{ID: "resp_9", Model: "gpt-5", Parts: oaiText1("Partial answ"), StopReason: "incomplete",
				StopDetails: oaiRaw(`{"reason":"max_output_tokens"}`), Usage: Usage{Input: 10, Output: 16}, Complete: true, Events: 2},
		},
		{
			name: "failed",
			body: oaiSSE(true, created,
				`{"type":"response.failed","response":{"id":"resp_9","model":"gpt-5","status":"failed","error":{"code":"server_error","message":"The model failed."},"output":[]}}`),
			want: &Response{ID: "resp_9", Model: "gpt-5", StopReason: "failed", Error: &APIError{Code: "server_error", Message: "The model failed."}, Complete: true, Events: 2},
		},
		{
			name: "error event",
			body: oaiSSE(true, created, `{"type":"error","code":"rate_limit_exceeded","message":"Slow down.","param":null,"sequence_number":1}`),
			want: &Response{ID: "resp_9", Model: "gpt-5", Error: &APIError{Code: "rate_limit_exceeded", Message: "Slow down."}, Events: 2},
		},
		{
			name: "nested error event",
			body: oaiSSE(true, `{"type":"error","error":{"type":"invalid_request_error","code":"context_length_exceeded","message":"Too long."}}`),
			want: &Response{Error: &APIError{Type: "invalid_request_error", Code: "context_length_exceeded", Message: "Too long."}, Events: 1},
		},
		{
			name: "web search",
			body: oaiSSE(true, created,
				`{"type":"response.output_item.added","output_index":0,"item":{"type":"web_search_call","id":"ws_1","status":"in_progress"}}`,
				`{"type":"response.web_search_call.searching","output_index":0,"item_id":"ws_1"}`,
				`{"type":"response.output_item.done","output_index":0,"item":{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"bbengine"}}}`,
				`{"type":"response.output_item.added","output_index":1,"item":{"type":"image_generation_call","id":"ig_1","status":"in_progress"}}`),
			want: &Response{ID: "resp_9", Model: "gpt-5", Parts: []Part{
				{Type: PartServerToolCall, ID: "ws_1", Name: "web_search", Input: oaiRaw(`{"type":"search","query":"bbengine"}`)},
				{Type: PartOther, Raw: oaiRaw(`{"type":"image_generation_call","id":"ig_1","status":"in_progress"}`), Partial: true},
			}, Events: 5},
		},
		{
			name: "cut in custom tool input",
			body: oaiSSE(false, created,
				`{"type":"response.output_item.added","output_index":0,"item":{"type":"custom_tool_call","call_id":"c","name":"apply_patch","input":""}}`,
				`{"type":"response.custom_tool_call_input.delta","output_index":0,"delta":"*** Begin"}`),
			want: &Response{ID: "resp_9", Model: "gpt-5", Parts: []Part{{Type: PartToolCall, ID: "c", Name: "apply_patch", Text: "*** Begin", Partial: true}}, Events: 3},
		},
		{
			// The arguments are whole (arguments.done) but the item is not:
			// the call is finished.
			name: "arguments done, item not",
			body: oaiSSE(false, created,
				`{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"c","name":"f","arguments":""}}`,
				`{"type":"response.function_call_arguments.done","output_index":0,"arguments":"{\"a\": 1}"}`,
				"[DONE]"),
			want: &Response{ID: "resp_9", Model: "gpt-5", Parts: []Part{{Type: PartToolCall, ID: "c", Name: "f", Input: oaiRaw(`{"a":1}`)}}, Events: 4},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := DecodeResponse(OpenAIResponses, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.API, tt.want.Stream = OpenAIResponses, true
			oaiCheckEqual(t, "response", r, tt.want)
			oaiCheckValid(t, r)
		})
	}
}

// TestResponsesTruncated cuts the Responses streams at many points: no
// panic, no error once one event is whole, Complete exactly when the
// terminal event is whole, nothing Partial in a complete response, and
// every part a prefix of the whole stream's.
func TestResponsesTruncated(t *testing.T) {
	streams := map[string][]byte{"codex": oaiCodexStream("[]")}
	for name, b := range oaiResponsesFixtures(t) {
		streams[name] = b
	}
	for name, body := range streams {
		t.Run(name, func(t *testing.T) {
			full, err := DecodeResponse(OpenAIResponses, body)
			if err != nil {
				t.Fatal(err)
			}
			// One event is whole once its data line is.
			first := bytes.Index(body, []byte("data: "))
			first += bytes.IndexByte(body[first:], '\n')
			term := bytes.Index(body, []byte(`"response.completed"`))
			term += bytes.IndexByte(body[term:], '\n')
			partialCalls := 0
			rawArgs := map[string]string{"call_1": `{"command": ["ls"]}`, "call_2": "*** Begin Patch\n*** End Patch"}
			for _, n := range oaiCutPoints(body) {
				r, err := DecodeResponse(OpenAIResponses, body[:n])
				if n < first {
					continue
				}
				if err != nil {
					t.Fatalf("cut at %d: %v", n, err)
				}
				oaiCheckValid(t, r)
				if want := n >= term; r.Complete != want {
					t.Fatalf("cut at %d: Complete %v, want %v", n, r.Complete, want)
				}
				if len(r.Parts) > len(full.Parts) {
					t.Fatalf("cut at %d: %d parts, whole stream has %d", n, len(r.Parts), len(full.Parts))
				}
				for i, p := range r.Parts {
					w := full.Parts[i]
					if p.Type != w.Type || p.ID != w.ID || p.Name != w.Name {
						t.Fatalf("cut at %d: part %d is %s %q, whole stream has %s %q", n, i, p.Type, p.ID, w.Type, w.ID)
					}
					if p.Partial && r.Complete {
						t.Fatalf("cut at %d: part %d Partial in a complete response", n, i)
					}
					switch {
					case p.Type == PartToolCall && p.Partial:
						partialCalls++
						if p.Input != nil || !strings.HasPrefix(rawArgs[p.ID], p.Text) {
							t.Fatalf("cut at %d: partial call %s: Input %s, Text %q", n, p.ID, p.Input, p.Text)
						}
					case p.Type == PartToolCall:
						if !bytes.Equal(p.Input, w.Input) || p.Text != w.Text {
							t.Fatalf("cut at %d: finished call %s: Input %s Text %q", n, p.ID, p.Input, p.Text)
						}
					case !strings.HasPrefix(w.Text, p.Text):
						t.Fatalf("cut at %d: part %d text %q is not a prefix of %q", n, i, p.Text, w.Text)
					}
				}
			}
			if name == "codex" && partialCalls == 0 {
				t.Error("no cut produced a partial tool call")
			}
		})
	}
}

func TestResponsesJSONResponse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want *Response
	}{
		{
			name: "response object",
			body: `{"id":"resp_2","object":"response","created_at":1,"model":"o4-mini","status":"completed","error":null,"incomplete_details":null,
				"output":[
					{"type":"reasoning","id":"rs_2","summary":[],"encrypted_content":"enc"},
					{"type":"message","id":"msg_2","role":"assistant","status":"completed","content":[{"type":"output_text","text":"Hi","annotations":[]},{"type":"refusal","refusal":"Not that."}]},
					{"type":"function_call","id":"fc_2","call_id":"call_9","name":"lookup","arguments":"{\"q\":\"x\"}","status":"completed"},
					{"type":"local_shell_call","id":"lsh_1","call_id":"call_10","status":"completed","action":{"type":"exec","command":["ls"]}},
					{"type":"mcp_call","id":"mcp_1","name":"search","server_label":"docs","arguments":"{}","output":"ok"}],
				"usage":{"input_tokens":30,"input_tokens_details":{"cached_tokens":0},"output_tokens":12,"output_tokens_details":{"reasoning_tokens":5},"total_tokens":42}}`,
			want: &Response{ID: "resp_2", Model: "o4-mini", Parts: []Part{
				{Type: PartThinking, Data: "enc"},
				{Type: PartText, Text: "Hi"},
				{Type: PartRefusal, Text: "Not that."},
				{Type: PartToolCall, ID: "call_9", Name: "lookup", Input: oaiRaw(`{"q":"x"}`)},
				{Type: PartToolCall, ID: "call_10", Name: "local_shell", Input: oaiRaw(`{"type":"exec","command":["ls"]}`)},
				{Type: PartOther, Raw: oaiRaw(`{"type":"mcp_call","id":"mcp_1","name":"search","server_label":"docs","arguments":"{}","output":"ok"}`)},
			}, StopReason: "completed", Usage: Usage{Input: 30, Output: 12, Reasoning: 5}, Complete: true},
		},
		{
			name: "incomplete",
			body: `{"id":"resp_3","model":"gpt-5","status":"incomplete","incomplete_details":{"reason":"content_filter"},"output":[]}`,
			want: &Response{ID: "resp_3", Model: "gpt-5", StopReason: "incomplete", StopDetails: oaiRaw(`{"reason":"content_filter"}`), Complete: true},
		},
		{
			name: "error body",
			body: `{"error":{"message":"The model 'gpt-9' does not exist.","type":"invalid_request_error","param":"model","code":"model_not_found"}}`,
			want: &Response{Error: &APIError{Type: "invalid_request_error", Code: "model_not_found", Message: "The model 'gpt-9' does not exist."}, Complete: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := DecodeResponse(OpenAIResponses, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			tt.want.API = OpenAIResponses
			oaiCheckEqual(t, "response", r, tt.want)
			oaiCheckValid(t, r)
		})
	}
}

// TestResponsesRequestCodex decodes a request shaped like the ones Codex
// sends: instructions, a developer message, user messages, reasoning with
// encrypted content, function calls and their outputs, a local shell
// call, a custom tool call and a web search, and built-in tools.
func TestResponsesRequestCodex(t *testing.T) {
	body := `{
	  "model": "gpt-5-codex",
	  "instructions": "You are Codex, a coding agent.",
	  "input": [
	    {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "<permissions>workspace-write</permissions>"}]},
	    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<environment_context>cwd=/repo</environment_context>"}]},
	    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List the files."}, {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}]},
	    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "**Listing**"}, {"type": "summary_text", "text": "Use ls."}], "content": null, "encrypted_content": "gAAAAABenc"},
	    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "shell", "arguments": "{\"command\": [\"ls\", \"-la\"], \"workdir\": \"/repo\"}"},
	    {"type": "function_call_output", "call_id": "call_1", "output": "total 8\nREADME.md"},
	    {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gAAAAABenc2"},
	    {"type": "local_shell_call", "id": "lsh_1", "call_id": "call_2", "status": "completed", "action": {"type": "exec", "command": ["cat", "README.md"], "timeout_ms": 1000}},
	    {"type": "local_shell_call_output", "call_id": "call_2", "output": "{\"output\":\"# Repo\",\"metadata\":{\"exit_code\":0}}"},
	    {"type": "custom_tool_call", "call_id": "call_3", "name": "apply_patch", "input": "*** Begin Patch\n*** End Patch"},
	    {"type": "custom_tool_call_output", "call_id": "call_3", "output": "Done!"},
	    {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "go 1.26"}},
	    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "The repo has a README."}]},
	    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Thanks"}]}
	  ],
	  "tools": [
	    {"type": "function", "name": "shell", "description": "Runs a command.", "strict": false, "parameters": {"type": "object", "properties": {"command": {"type": "array"}}}},
	    {"type": "local_shell"},
	    {"type": "web_search"},
	    {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}}
	  ],
	  "tool_choice": "auto",
	  "parallel_tool_calls": false,
	  "reasoning": {"effort": "medium", "summary": "auto"},
	  "store": false,
	  "stream": true,
	  "include": ["reasoning.encrypted_content"],
	  "prompt_cache_key": "0199a1b2",
	  "text": {"verbosity": "low"}
	}`
	r, err := DecodeRequest(OpenAIResponses, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	png := sha256.Sum256([]byte("\x89PNG\r\n\x1a\n"))
	want := &Request{
		API:    OpenAIResponses,
		Model:  "gpt-5-codex",
		System: "You are Codex, a coding agent.\n\n<permissions>workspace-write</permissions>",
		Messages: []Message{
			{Role: "user", Parts: oaiText1("<environment_context>cwd=/repo</environment_context>")},
			{Role: "user", Parts: []Part{
				{Type: PartText, Text: "List the files."},
				{Type: PartImage, MediaType: "image/png", Size: 8, SHA256: hex.EncodeToString(png[:])},
			}},
			{Role: "assistant", Parts: []Part{
				{Type: PartThinking, Text: "**Listing**\n\nUse ls.", Data: "gAAAAABenc"},
				{Type: PartToolCall, ID: "call_1", Name: "shell", Input: oaiRaw(`{"command":["ls","-la"],"workdir":"/repo"}`)},
			}},
			{Role: "tool", Parts: []Part{{Type: PartToolResult, ID: "call_1", Text: "total 8\nREADME.md"}}},
			{Role: "assistant", Parts: []Part{
				{Type: PartThinking, Data: "gAAAAABenc2"},
				{Type: PartToolCall, ID: "call_2", Name: "local_shell", Input: oaiRaw(`{"type":"exec","command":["cat","README.md"],"timeout_ms":1000}`)},
			}},
			{Role: "tool", Parts: []Part{{Type: PartToolResult, ID: "call_2", Text: `{"output":"# Repo","metadata":{"exit_code":0}}`}}},
			{Role: "assistant", Parts: []Part{{Type: PartToolCall, ID: "call_3", Name: "apply_patch", Text: "*** Begin Patch\n*** End Patch"}}},
			{Role: "tool", Parts: []Part{{Type: PartToolResult, ID: "call_3", Text: "Done!"}}},
			{Role: "assistant", Parts: []Part{
				{Type: PartServerToolCall, ID: "ws_1", Name: "web_search", Input: oaiRaw(`{"type":"search","query":"go 1.26"}`)},
				{Type: PartText, Text: "The repo has a README."},
			}},
			{Role: "user", Parts: oaiText1("Thanks")},
		},
		Tools: []string{"shell", "local_shell", "web_search", "apply_patch"},
		Params: []Param{
			{"include", oaiRaw(`["reasoning.encrypted_content"]`)},
			{"parallel_tool_calls", oaiRaw(`false`)},
			{"prompt_cache_key", oaiRaw(`"0199a1b2"`)},
			{"reasoning", oaiRaw(`{"effort":"medium","summary":"auto"}`)},
			{"store", oaiRaw(`false`)},
			{"text", oaiRaw(`{"verbosity":"low"}`)},
			{"tool_choice", oaiRaw(`"auto"`)},
		},
		Stream: true,
	}
	oaiCheckEqual(t, "request", r, want)
	oaiCheckValid(t, r)
}

// TestResponsesRequestItems covers the other input shapes: string input,
// items without a type, tool outputs as lists and objects, files, system
// messages later in the conversation and unknown items.
func TestResponsesRequestItems(t *testing.T) {
	pdf := sha256.Sum256([]byte("%PDF-1.4"))
	tests := []struct {
		name string
		body string
		want *Request
	}{
		{
			name: "string input",
			body: `{"model":"gpt-5","input":"Hello","previous_response_id":"resp_0","max_output_tokens":100,"metadata":{"k":"v"},"user":"u"}`,
			want: &Request{Model: "gpt-5", Messages: []Message{{Role: "user", Parts: oaiText1("Hello")}},
				PreviousResponseID: "resp_0", Params: []Param{{"max_output_tokens", oaiRaw(`100`)}}},
		},
		{
			name: "items",
			body: `{"model":"gpt-5","instructions":null,"input":[
				{"role":"system","content":"Be brief."},
				{"role":"developer","content":"Really."},
				{"role":"user","content":[{"type":"input_text","text":"Read these."},
					{"type":"input_file","filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERi0xLjQ="},
					{"type":"input_file","file_url":"https://example.com/b.pdf"},
					{"type":"input_image","file_id":"file-1"},
					{"type":"input_image","image_url":"https://example.com/c.png","detail":"auto"}]},
				{"type":"function_call","call_id":"c1","name":"f","arguments":"{bad"},
				{"type":"function_call","call_id":"c2","name":"g","arguments":""},
				{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"line 1"},{"type":"input_text","text":"line 2"},{"type":"input_image","image_url":"https://example.com/d.png"}]},
				{"type":"function_call_output","call_id":"c2","output":{"content":"boom","success":false}},
				{"role":"system","content":"Mid-conversation."},
				{"type":"item_reference","id":"msg_0"},
				{"type":"mcp_approval_request","id":"apr_1","name":"t","server_label":"s","arguments":"{}"},
				{"type":"compaction","encrypted_content":"cmp"},
				{"type":"shell_call_output","call_id":"c3","output":[{"stdout":"hi","stderr":"","outcome":{"type":"exit","exit_code":0}}]},
				{"type":"computer_call_output","call_id":"c4","output":{"type":"computer_screenshot","image_url":"https://example.com/s.png"}},
				{"type":"message","role":"assistant","content":"plain"},
				42]}`,
			want: &Request{Model: "gpt-5", System: "Be brief.\n\nReally.", Messages: []Message{
				{Role: "user", Parts: []Part{
					{Type: PartText, Text: "Read these."},
					{Type: PartDocument, Name: "a.pdf", MediaType: "application/pdf", Size: 8, SHA256: hex.EncodeToString(pdf[:])},
					{Type: PartDocument, URL: "https://example.com/b.pdf"},
					{Type: PartImage, Raw: oaiRaw(`{"type":"input_image","file_id":"file-1"}`)},
					{Type: PartImage, URL: "https://example.com/c.png"},
				}},
				{Role: "assistant", Parts: []Part{
					{Type: PartToolCall, ID: "c1", Name: "f", Text: "{bad"},
					{Type: PartToolCall, ID: "c2", Name: "g"},
				}},
				{Role: "tool", Parts: []Part{{Type: PartToolResult, ID: "c1", Text: "line 1\nline 2",
					Content: []Part{{Type: PartImage, URL: "https://example.com/d.png"}}}}},
				{Role: "tool", Parts: []Part{{Type: PartToolResult, ID: "c2", Text: "boom", IsError: true}}},
				{Role: "system", Parts: oaiText1("Mid-conversation.")},
				{Role: "user", Parts: []Part{{Type: PartOther, Raw: oaiRaw(`{"type":"item_reference","id":"msg_0"}`)}}},
				{Role: "assistant", Parts: []Part{
					{Type: PartOther, Raw: oaiRaw(`{"type":"mcp_approval_request","id":"apr_1","name":"t","server_label":"s","arguments":"{}"}`)},
					{Type: PartCompaction, Data: "cmp"},
				}},
				{Role: "tool", Parts: []Part{{Type: PartToolResult, ID: "c3",
					Content: []Part{{Type: PartOther, Raw: oaiRaw(`{"stdout":"hi","stderr":"","outcome":{"type":"exit","exit_code":0}}`)}}}}},
				{Role: "tool", Parts: []Part{{Type: PartToolResult, ID: "c4",
					Content: []Part{{Type: PartImage, URL: "https://example.com/s.png"}}}}},
				{Role: "assistant", Parts: oaiText1("plain")},
				{Role: "user", Parts: []Part{{Type: PartOther, Raw: oaiRaw(`42`)}}},
			}},
		},
		{
			name: "no input",
			body: `{"model":"gpt-5","previous_response_id":"resp_1","input":[],"instructions":"Sys"}`,
			want: &Request{Model: "gpt-5", System: "Sys", PreviousResponseID: "resp_1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := DecodeRequest(OpenAIResponses, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			tt.want.API = OpenAIResponses
			oaiCheckEqual(t, "request", r, tt.want)
			oaiCheckValid(t, r)
		})
	}
}
