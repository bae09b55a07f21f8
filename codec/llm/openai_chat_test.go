package llm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// oaiForecast is the content of the response_format json_object stream
// (d6155801…), 177 deltas long.
const oaiForecast = `
  {
    "location": "San Francisco, CA",
    "weather": {
      "temperature": "18°C",
      "condition": "Partly Cloudy",
      "humidity": "72%",
      "windSpeed": "15 km/h",
      "windDirection": "NW"
    },
    "forecast": [
      {
        "day": "Monday",
        "high": "20°C",
        "low": "14°C",
        "condition": "Sunny"
      },
      {
        "day": "Tuesday",
        "high": "19°C",
        "low": "15°C",
        "condition": "Mostly Cloudy"
      },
      {
        "day": "Wednesday",
        "high": "18°C",
        "low": "14°C",
        "condition": "Cloudy"
      }
    ]
  }
`

func oaiText1(s string) []Part    { return []Part{{Type: PartText, Text: s}} }
func oaiRefusal1(s string) []Part { return []Part{{Type: PartRefusal, Text: s}} }

// TestChatFixtures decodes every recorded Chat Completions stream and
// checks what it says, part by part. The expected values were read off
// the files by hand and by a separate script.
func TestChatFixtures(t *testing.T) {
	oaiShared(t)
	fixtures := oaiChatFixtures(t)
	const model = "gpt-4o-2024-08-06"
	tests := []struct {
		name    string
		id      string
		events  int
		stop    string
		parts   []Part
		choices [][]Part
		usage   Usage
	}{
		{
			name: "e2aad469", id: "chatcmpl-ABfw031mOJeYCSHe4yI2ZjOA6kMJL", events: 34, stop: "stop",
			parts: oaiText1("I'm unable to provide real-time weather updates. To get the current weather in San Francisco, I recommend checking a reliable weather website or a weather app."),
			usage: Usage{Input: 14, Output: 30},
		},
		{
			name: "7e5ea4d1", id: "chatcmpl-ABfw1e5abtU8OwGr15vOreYVb2MiF", events: 18, stop: "stop",
			parts: oaiText1(`{"city":"San Francisco","temperature":61,"units":"f"}`),
			usage: Usage{Input: 79, Output: 14},
		},
		{
			name: "a491adda", id: "chatcmpl-ABfw2KKFuVXmEJgVwYfBvejMAdWtq", events: 50, stop: "stop",
			parts: oaiText1(`{"city":"San Francisco","temperature":65,"units":"f"}`),
			choices: [][]Part{
				oaiText1(`{"city":"San Francisco","temperature":61,"units":"f"}`),
				oaiText1(`{"city":"San Francisco","temperature":59,"units":"f"}`),
			},
			usage: Usage{Input: 79, Output: 42},
		},
		{
			name: "4cc50a61", id: "chatcmpl-ABfw3Oqj8RD0z6aJiiX37oTjV2HFh", events: 5, stop: "length",
			parts: oaiText1(`{"`),
			usage: Usage{Input: 79, Output: 1},
		},
		{
			name: "173417d5", id: "chatcmpl-ABfw4IfQfCCrcuybFm41wJyxjbkz7", events: 14, stop: "stop",
			parts: oaiRefusal1("I'm sorry, I can't assist with that request."),
			usage: Usage{Input: 79, Output: 11},
		},
		{
			name: "83b060ba", id: "chatcmpl-ABfw5EzoqmfXjnnsXY7Yd8OC6tb3c", events: 6, stop: "stop",
			parts: oaiText1("Foo!"),
			usage: Usage{Input: 9, Output: 2},
		},
		{
			name: "569c877e", id: "chatcmpl-ABfw5GEVqPbLY576l46FZDQoNJ2KC", events: 15, stop: "stop",
			parts: oaiRefusal1("I'm very sorry, but I can't assist with that."),
			usage: Usage{Input: 79, Output: 12},
		},
		{
			name: "c6aa7e39", id: "chatcmpl-ABfw8AOXnoa2kzy11vVTSjuQhHCQr", events: 18, stop: "tool_calls",
			parts: []Part{{Type: PartToolCall, ID: "call_c91SqDXlYFuETYv8mUHzz6pp", Name: "GetWeatherArgs",
				Input: oaiRaw(`{"city":"Edinburgh","country":"UK","units":"c"}`)}},
			usage: Usage{Input: 76, Output: 24},
		},
		{
			name: "f82268f2", id: "chatcmpl-ABfwAwrNePHUgBBezonVC6MX3zd63", events: 26, stop: "tool_calls",
			parts: []Part{
				// The arguments arrive with spaces ({"city": "Edinburgh", …}); Input is compact.
				{Type: PartToolCall, ID: "call_JMW1whyEaYG438VE1OIflxA2", Name: "GetWeatherArgs",
					Input: oaiRaw(`{"city":"Edinburgh","country":"GB","units":"c"}`)},
				{Type: PartToolCall, ID: "call_DNYTawLBoN8fj3KN6qU9N1Ou", Name: "get_stock_price",
					Input: oaiRaw(`{"ticker":"AAPL","exchange":"NASDAQ"}`)},
			},
			usage: Usage{Input: 149, Output: 60},
		},
		{
			name: "a247c49c", id: "chatcmpl-ABfwCgi41eStOcARjZq97ohCEGBPO", events: 14, stop: "tool_calls",
			parts: []Part{{Type: PartToolCall, ID: "call_CTf1nWJLqSeRgDqaCG27xZ74", Name: "get_weather",
				Input: oaiRaw(`{"city":"San Francisco","state":"CA"}`)}},
			usage: Usage{Input: 48, Output: 19},
		},
		{
			name: "d6155801", id: "chatcmpl-ABfwCjPMi0ubw56UyMIIeNfJzyogq", events: 181, stop: "stop",
			parts: oaiText1(oaiForecast),
			usage: Usage{Input: 19, Output: 177},
		},
		{
			name: "2018feb6", id: "chatcmpl-ABfwERreu9s99xXsVuOWtIB2UOx62", events: 11, stop: "tool_calls",
			parts: []Part{{Type: PartToolCall, ID: "call_4XzlGBLtUe9dy3GVNV4jhq7h", Name: "get_weather",
				Input: oaiRaw(`{"city":"New York City"}`)}},
			usage: Usage{Input: 44, Output: 16},
		},
		{
			name: ".stream() works", id: "chatcmpl-9tZXEmwtoDf6vqCqEWSvDP8jx9OXe", events: 14, stop: "stop",
			parts: oaiText1(`{"city":"San Francisco","units":"c"}`),
			usage: Usage{Input: 17, Output: 10},
		},
		{
			name: ".stream() is robust against leading newline chunks", id: "chatcmpl-9tZXEmwtoDf6vqCqEWSvDP8jx9OXe", events: 15, stop: "stop",
			parts: oaiText1("\n\n" + `{"city":"San Francisco","units":"c"}`),
			usage: Usage{Input: 17, Output: 10},
		},
		{
			name: ".stream() emits content logprobs events", id: "chatcmpl-9tZXFsqeQOozn5YU8I6SbjkmDnN76", events: 14, stop: "stop",
			parts: oaiText1(`{"city":"San Francisco","units":"f"}`),
			usage: Usage{Input: 17, Output: 10},
		},
		{
			name: ".stream() emits refusal logprobs events", id: "chatcmpl-9tZXGacdbmJYO8K50haE4OauaJmPn", events: 16, stop: "stop",
			parts: oaiRefusal1("I'm very sorry, but I can't assist with that request."),
			usage: Usage{Input: 17, Output: 13},
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
			r, err := DecodeResponse(OpenAIChat, body)
			if err != nil {
				t.Fatal(err)
			}
			want := &Response{
				API: OpenAIChat, ID: tt.id, Model: model, Parts: tt.parts, Choices: tt.choices,
				StopReason: tt.stop, Usage: tt.usage, Complete: true, Stream: true, Events: tt.events,
			}
			oaiCheckEqual(t, "response", r, want)
		})
	}
}

// oaiFixtureLimits returns, for a Chat fixture, the end of its first line
// (from there on one event is whole), the end of its usage chunk line and
// the end of its data: [DONE] line.
func oaiFixtureLimits(t *testing.T, body []byte) (first, usage, done int) {
	t.Helper()
	first = bytes.IndexByte(body, '\n')
	u := bytes.Index(body, []byte(`"usage":{`))
	d := bytes.Index(body, []byte("data: [DONE]"))
	if first < 0 || u < 0 || d < 0 {
		t.Fatal("fixture lacks a line end, a usage chunk or [DONE]")
	}
	usage = u + bytes.IndexByte(body[u:], '\n')
	return first, usage, d + len("data: [DONE]")
}

// oaiCutPoints returns the lengths to cut a body at: every offset for a
// short body, else every step-th plus the bytes around each line end.
func oaiCutPoints(body []byte) []int {
	step := max(1, len(body)/800)
	var ns []int
	for n := 0; n <= len(body); n++ {
		near := n > 0 && (body[n-1] == '\n' || (n < len(body) && body[n] == '\n') || (n+1 < len(body) && body[n+1] == '\n'))
		if n%step == 0 || near || n == len(body) {
			ns = append(ns, n)
		}
	}
	return ns
}

// TestChatTruncated cuts every Chat fixture at many points. A cut body
// must decode without panic and without error once it holds one whole
// event, be incomplete until [DONE] or the usage chunk (the fallback
// rule), and decode to a prefix of the whole: texts are prefixes, a
// finished call has its whole Input, and the last part of an unfinished
// first choice is Partial (a tool call then has no Input and the
// arguments so far as Text).
func TestChatTruncated(t *testing.T) {
	oaiShared(t)
	for name, body := range oaiChatFixtures(t) {
		t.Run(name, func(t *testing.T) {
			full, err := DecodeResponse(OpenAIChat, body)
			if err != nil {
				t.Fatal(err)
			}
			fullArgs := oaiStreamArgs(t, body)
			first, usage, done := oaiFixtureLimits(t, body)
			// The first choice is finished once its first non-null
			// finish_reason chunk is whole.
			finish := bytes.Index(body, []byte(`"finish_reason":"`))
			finish += bytes.IndexByte(body[finish:], '\n')
			partials := 0
			for _, n := range oaiCutPoints(body) {
				r, err := DecodeResponse(OpenAIChat, body[:n])
				if n < first {
					continue // no whole event yet: an error is allowed
				}
				if err != nil {
					t.Fatalf("cut at %d: %v", n, err)
				}
				oaiCheckValid(t, r)
				if want := n >= usage || n >= done; r.Complete != want {
					t.Fatalf("cut at %d: Complete %v, want %v", n, r.Complete, want)
				}
				if len(r.Parts) > len(full.Parts) || len(r.Choices) > len(full.Choices) {
					t.Fatalf("cut at %d: more parts than the whole stream", n)
				}
				unfinished := n < finish
				for i, p := range r.Parts {
					w := full.Parts[i]
					if p.Type != w.Type || p.ID != w.ID || p.Name != w.Name {
						t.Fatalf("cut at %d: part %d is %s %q, whole stream has %s %q", n, i, p.Type, p.ID, w.Type, w.ID)
					}
					if want := unfinished && i == len(r.Parts)-1; p.Partial != want {
						t.Fatalf("cut at %d: part %d Partial %v, want %v", n, i, p.Partial, want)
					}
					switch {
					case p.Type == PartToolCall && p.Partial:
						partials++
						if p.Input != nil || !strings.HasPrefix(fullArgs[p.ID], p.Text) {
							t.Fatalf("cut at %d: partial call %s: Input %s, Text %q not a prefix of %q", n, p.ID, p.Input, p.Text, fullArgs[p.ID])
						}
					case p.Type == PartToolCall:
						if !bytes.Equal(p.Input, w.Input) || p.Text != "" {
							t.Fatalf("cut at %d: finished call %s has Input %s Text %q, want Input %s", n, p.ID, p.Input, p.Text, w.Input)
						}
					case !strings.HasPrefix(w.Text, p.Text):
						t.Fatalf("cut at %d: part %d text %q is not a prefix of %q", n, i, p.Text, w.Text)
					}
				}
			}
			if len(fullArgs) > 0 && partials == 0 {
				t.Error("no cut produced a partial tool call")
			}
		})
	}
}

// oaiStreamArgs returns the argument text of each tool call of a Chat
// stream's first choice by id, assembled apart from the decoder.
func oaiStreamArgs(t *testing.T, body []byte) map[string]string {
	t.Helper()
	ids, args := map[int]string{}, map[string]string{}
	for _, line := range strings.Split(string(body), "\n") {
		d, ok := strings.CutPrefix(line, "data: ")
		if !ok || d == "[DONE]" {
			continue
		}
		var c struct {
			Choices []struct {
				Delta struct {
					ToolCalls []struct {
						Index    int
						ID       string
						Function struct{ Arguments string }
					} `json:"tool_calls"`
				}
			}
		}
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatal(err)
		}
		for _, ch := range c.Choices {
			for _, tc := range ch.Delta.ToolCalls {
				if tc.ID != "" {
					ids[tc.Index] = tc.ID
				}
				args[ids[tc.Index]] += tc.Function.Arguments
			}
		}
	}
	return args
}

func TestChatStream(t *testing.T) {
	chunk := func(s string) string {
		return `{"id":"c1","object":"chat.completion.chunk","model":"m","choices":[` + s + `]}`
	}
	const usage = `{"id":"c1","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":40,"total_tokens":140,"prompt_tokens_details":{"cached_tokens":64},"completion_tokens_details":{"reasoning_tokens":25}}}`
	tests := []struct {
		name string
		body []byte
		want *Response
	}{
		{
			// A DeepSeek-style reasoning stream without [DONE]: finish reason
			// and usage make it complete.
			name: "reasoning content, no DONE",
			body: oaiSSE(false,
				chunk(`{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":""}}`),
				chunk(`{"index":0,"delta":{"reasoning_content":"Think "}}`),
				chunk(`{"index":0,"delta":{"reasoning_content":"hard."}}`),
				chunk(`{"index":0,"delta":{"content":"Answer","reasoning_content":null}}`),
				chunk(`{"index":0,"delta":{},"finish_reason":"stop"}`),
				usage),
			want: &Response{ID: "c1", Model: "m", Parts: []Part{{Type: PartThinking, Text: "Think hard."}, {Type: PartText, Text: "Answer"}},
				StopReason: "stop", Usage: Usage{Input: 100, Output: 40, CacheRead: 64, Reasoning: 25}, Complete: true, Events: 6},
		},
		{
			// vLLM sends the reasoning both as reasoning and reasoning_content.
			name: "reasoning twice",
			body: oaiSSE(false,
				chunk(`{"index":0,"delta":{"reasoning":"R","reasoning_content":"R"}}`),
				chunk(`{"index":0,"delta":{"reasoning":"S"}}`),
				chunk(`{"index":0,"delta":{},"finish_reason":"stop"}`), "[DONE]"),
			want: &Response{ID: "c1", Model: "m", Parts: []Part{{Type: PartThinking, Text: "RS"}}, StopReason: "stop", Complete: true, Events: 4},
		},
		{
			name: "finish but no usage and no DONE",
			body: oaiSSE(false,
				chunk(`{"index":0,"delta":{"content":"Hi"}}`),
				chunk(`{"index":0,"delta":{},"finish_reason":"stop"}`)),
			want: &Response{ID: "c1", Model: "m", Parts: oaiText1("Hi"), StopReason: "stop", Events: 2},
		},
		{
			name: "cut text is partial",
			body: oaiSSE(false, chunk(`{"index":0,"delta":{"content":"Hel"}}`)),
			want: &Response{ID: "c1", Model: "m", Parts: []Part{{Type: PartText, Text: "Hel", Partial: true}}, Events: 1},
		},
		{
			// Servers that omit the index: a new id starts a call, a
			// fragment without id continues the last one.
			name: "tool calls without index",
			body: oaiSSE(false,
				chunk(`{"index":0,"delta":{"content":"Let me look."}}`),
				chunk(`{"index":0,"delta":{"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":"}}]}}`),
				chunk(`{"index":0,"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}`),
				chunk(`{"index":0,"delta":{"tool_calls":[{"id":"b","type":"function","function":{"name":"g","arguments":{"y":2}}}]}}`),
				chunk(`{"index":0,"delta":{},"finish_reason":"tool_calls"}`), "[DONE]"),
			want: &Response{ID: "c1", Model: "m", Parts: []Part{
				{Type: PartText, Text: "Let me look."},
				{Type: PartToolCall, ID: "a", Name: "f", Input: oaiRaw(`{"x":1}`)},
				{Type: PartToolCall, ID: "b", Name: "g", Input: oaiRaw(`{"y":2}`)},
			}, StopReason: "tool_calls", Complete: true, Events: 6},
		},
		{
			// Servers that give every call index 0: a new id is a new call,
			// and a fragment without id continues the latest.
			name: "tool calls all at index 0",
			body: oaiSSE(false,
				chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}]}}`),
				chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"g","arguments":"{\"y\""}}]}}`),
				chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":2}"}}]}}`),
				chunk(`{"index":0,"delta":{},"finish_reason":"tool_calls"}`), "[DONE]"),
			want: &Response{ID: "c1", Model: "m", Parts: []Part{
				{Type: PartToolCall, ID: "a", Name: "f", Input: oaiRaw(`{}`)},
				{Type: PartToolCall, ID: "b", Name: "g", Input: oaiRaw(`{"y":2}`)},
			}, StopReason: "tool_calls", Complete: true, Events: 5},
		},
		{
			// Parallel calls cut in the second call's arguments: the first
			// is finished (the second began), the second is Partial.
			name: "parallel calls cut",
			body: oaiSSE(false,
				chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":""}}]}}`),
				chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"x\": 1}"}}]}}`),
				chunk(`{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"g","arguments":"{\"q\":"}}]}}`)),
			want: &Response{ID: "c1", Model: "m", Parts: []Part{
				{Type: PartToolCall, ID: "a", Name: "f", Input: oaiRaw(`{"x":1}`)},
				{Type: PartToolCall, ID: "b", Name: "g", Text: `{"q":`, Partial: true},
			}, Events: 3},
		},
		{
			// Arguments that are not JSON are kept as text, not Partial.
			name: "invalid arguments",
			body: oaiSSE(false,
				chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"not json"}}]},"finish_reason":"tool_calls"}`),
				"[DONE]"),
			want: &Response{ID: "c1", Model: "m", Parts: []Part{{Type: PartToolCall, ID: "a", Name: "f", Text: "not json"}},
				StopReason: "tool_calls", Complete: true, Events: 2},
		},
		{
			name: "custom tool and legacy function call",
			body: oaiSSE(false,
				chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"custom","custom":{"name":"patch","input":"*** Begin"}}]}}`),
				chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"type":"custom","custom":{"input":" Patch"}}]}}`),
				chunk(`{"index":1,"delta":{"function_call":{"name":"old","arguments":"{}"}},"finish_reason":"function_call"}`),
				chunk(`{"index":0,"delta":{},"finish_reason":"tool_calls"}`), "[DONE]"),
			want: &Response{ID: "c1", Model: "m",
				Parts:      []Part{{Type: PartToolCall, ID: "a", Name: "patch", Text: "*** Begin Patch"}},
				Choices:    [][]Part{{{Type: PartToolCall, Name: "old", Input: oaiRaw(`{}`)}}},
				StopReason: "tool_calls", Complete: true, Events: 5},
		},
		{
			// Choices are ordered by index whatever order their chunks came in.
			name: "choices out of order",
			body: oaiSSE(false,
				chunk(`{"index":2,"delta":{"content":"two"},"finish_reason":"stop"},{"index":0,"delta":{"content":"zero"},"finish_reason":"length"}`),
				chunk(`{"index":1,"delta":{"refusal":"no"},"finish_reason":"stop"}`), "[DONE]"),
			want: &Response{ID: "c1", Model: "m", Parts: oaiText1("zero"),
				Choices: [][]Part{oaiRefusal1("no"), oaiText1("two")}, StopReason: "length", Complete: true, Events: 3},
		},
		{
			name: "audio transcript",
			body: oaiSSE(false,
				chunk(`{"index":0,"delta":{"audio":{"id":"au_1","transcript":"Hel","data":"AAAA"}}}`),
				chunk(`{"index":0,"delta":{"audio":{"transcript":"lo","data":"AAAA"}},"finish_reason":"stop"}`), "[DONE]"),
			want: &Response{ID: "c1", Model: "m", Parts: []Part{{Type: PartOther, Raw: oaiRaw(`{"type":"audio","id":"au_1","transcript":"Hello"}`)}},
				StopReason: "stop", Complete: true, Events: 3},
		},
		{
			name: "error event",
			body: []byte("data: " + chunk(`{"index":0,"delta":{"content":"Hi"}}`) + "\n\n" +
				`data: {"error":{"message":"The server had an error","type":"server_error","param":null,"code":null}}` + "\n\n"),
			want: &Response{ID: "c1", Model: "m", Parts: []Part{{Type: PartText, Text: "Hi", Partial: true}},
				Error: &APIError{Type: "server_error", Message: "The server had an error"}, Events: 2},
		},
		{
			// Comments, CRLF, an event: line, a bad event in the middle and
			// Azure's first chunk with no model and no choices.
			name: "tolerated noise",
			body: []byte(": keep-alive\r\n\r\n" +
				`data: {"id":"","model":"","choices":[],"prompt_filter_results":[]}` + "\r\n\r\n" +
				"event: message\r\ndata: " + chunk(`{"index":0,"delta":{"content":"A"}}`) + "\r\n\r\n" +
				"data: {not json}\r\n\r\n" +
				"data: " + chunk(`{"index":0,"delta":{"content":"B"},"finish_reason":"stop"}`) + "\r\n\r\n" +
				"data: [DONE]"),
			want: &Response{ID: "c1", Model: "m", Parts: oaiText1("AB"), StopReason: "stop", Complete: true, Events: 5},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := DecodeResponse(OpenAIChat, tt.body)
			if err != nil {
				t.Fatal(err)
			}
			tt.want.API, tt.want.Stream = OpenAIChat, true
			oaiCheckEqual(t, "response", r, tt.want)
			oaiCheckValid(t, r)
		})
	}
}

func TestChatJSONResponse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want *Response
	}{
		{
			name: "completion",
			body: `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o","choices":[
				{"index":1,"message":{"role":"assistant","content":"second"},"finish_reason":"stop"},
				{"index":0,"message":{"role":"assistant","content":"Checking.","refusal":null,"reasoning_content":"Hmm.",
					"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\": \"Paris\"}"}},
					              {"id":"call_2","type":"function","function":{"name":"noop","arguments":"{}"}}]},
				 "logprobs":null,"finish_reason":"tool_calls"}],
				"usage":{"prompt_tokens":50,"completion_tokens":20,"total_tokens":70,
					"prompt_tokens_details":{"cached_tokens":32,"audio_tokens":0},
					"completion_tokens_details":{"reasoning_tokens":8}}}`,
			want: &Response{ID: "chatcmpl-1", Model: "gpt-4o",
				Parts: []Part{
					{Type: PartThinking, Text: "Hmm."},
					{Type: PartText, Text: "Checking."},
					{Type: PartToolCall, ID: "call_1", Name: "get_weather", Input: oaiRaw(`{"city":"Paris"}`)},
					{Type: PartToolCall, ID: "call_2", Name: "noop", Input: oaiRaw(`{}`)},
				},
				Choices:    [][]Part{oaiText1("second")},
				StopReason: "tool_calls", Usage: Usage{Input: 50, Output: 20, CacheRead: 32, Reasoning: 8}, Complete: true},
		},
		{
			name: "refusal",
			body: `{"id":"c","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't."},"finish_reason":"stop"}]}`,
			want: &Response{ID: "c", Model: "m", Parts: oaiRefusal1("I can't."), StopReason: "stop", Complete: true},
		},
		{
			name: "error body",
			body: `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`,
			want: &Response{Error: &APIError{Type: "invalid_request_error", Code: "invalid_api_key", Message: "Incorrect API key provided."}, Complete: true},
		},
		{
			name: "error with numeric code",
			body: ` {"error":{"message":"Rate limited","code":429}}`,
			want: &Response{Error: &APIError{Code: "429", Message: "Rate limited"}, Complete: true},
		},
		{
			name: "error as a string",
			body: `{"error":"upstream timed out"}`,
			want: &Response{Error: &APIError{Message: "upstream timed out"}, Complete: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := DecodeResponse(OpenAIChat, []byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			tt.want.API = OpenAIChat
			oaiCheckEqual(t, "response", r, tt.want)
		})
	}
}

// TestOpenAIResponseErrors checks that a body with nothing readable is an
// error naming the event number or the byte offset.
func TestOpenAIResponseErrors(t *testing.T) {
	tests := []struct {
		api  API
		body string
		want string
	}{
		{OpenAIChat, "", "openai-chat response: no SSE data event found (0 events)"},
		{OpenAIChat, "<html>502 Bad Gateway</html>", "no SSE data event found"},
		{OpenAIChat, "data: {\"id\":\n\n", "event 1 at byte offset 0: invalid JSON at byte offset 12"},
		{OpenAIChat, ": ping\n\ndata: [DO", "event 1 at byte offset 8: invalid JSON at byte offset 15"},
		{OpenAIChat, "data: {\ndata: bad\n\n", "event 1 at byte offset 0: in its data: invalid JSON at byte offset 2"},
		{OpenAIChat, `{"id":"x","choices":[{]}`, "openai-chat response: invalid JSON at byte offset 22"},
		{OpenAIChat, `["a"]`, "unexpected JSON array near byte offset 1"},
		{OpenAIResponses, "event: response.created\ndata: {\"type\":\n\n", "event 1 at byte offset 0: invalid JSON at byte offset 38"},
		{OpenAIResponses, `{"id":"resp_1","output":5}`, "unexpected JSON number near byte offset 25"},
	}
	for _, tt := range tests {
		_, err := DecodeResponse(tt.api, []byte(tt.body))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %q: error %v, want it to contain %q", tt.api, tt.body, err, tt.want)
		}
	}
}

func TestChatRequest(t *testing.T) {
	png := "\x89PNG\r\n\x1a\n"
	pngSum := sha256.Sum256([]byte(png))
	pdfSum := sha256.Sum256([]byte("%PDF-1.4"))
	wavSum := sha256.Sum256([]byte("RIFF"))
	body := `{
	  "model": "gpt-4.1",
	  "messages": [
	    {"role": "system", "content": "You are terse."},
	    {"role": "developer", "content": [{"type": "text", "text": "Use tools."}, {"type": "text", "text": "Be safe."}]},
	    {"role": "user", "content": [
	      {"type": "text", "text": "What is in these?"},
	      {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}},
	      {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
	      {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
	      {"type": "file", "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERi0xLjQ="}},
	      {"type": "file", "file": {"file_id": "file-abc"}},
	      {"type": "video", "video": {"url": "x"}}
	    ]},
	    {"role": "assistant", "content": null, "reasoning_content": "Two calls.",
	     "tool_calls": [
	      {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}},
	      {"id": "call_b", "type": "function", "function": {"name": "get_time", "arguments": "{\"tz\":"}}
	    ]},
	    {"role": "tool", "tool_call_id": "call_a", "content": "18C"},
	    {"role": "tool", "tool_call_id": "call_b", "content": [{"type": "text", "text": "12:00"}, {"type": "text", "text": "CET"}]},
	    {"role": "system", "content": "Now summarize."},
	    {"role": "assistant", "content": [{"type": "text", "text": "Paris: 18C"}, {"type": "refusal", "refusal": "No more."}]},
	    {"role": "assistant", "refusal": "I won't.", "content": ""},
	    {"role": "function", "name": "legacy", "content": "old"},
	    {"role": "user", "content": 42},
	    null,
	    {"role": "user", "content": "thanks"}
	  ],
	  "tools": [
	    {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}},
	    {"type": "function", "function": {"name": "get_time"}},
	    {"type": "custom", "custom": {"name": "apply_patch"}}
	  ],
	  "stream": true,
	  "stream_options": {"include_usage": true},
	  "metadata": {"a": "b"},
	  "user": "u-1",
	  "temperature": 0.2,
	  "max_tokens": null,
	  "max_completion_tokens": 1024,
	  "top_p": 1,
	  "n": 2,
	  "stop": ["\n\n", "END"],
	  "response_format": {"type": "json_object"},
	  "tool_choice": {"type": "function", "function": {"name": "get_weather"}},
	  "parallel_tool_calls": true,
	  "reasoning_effort": "low",
	  "seed": 7,
	  "logprobs": false
	}`
	r, err := DecodeRequest(OpenAIChat, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := &Request{
		API:    OpenAIChat,
		Model:  "gpt-4.1",
		System: "You are terse.\n\nUse tools.\n\nBe safe.",
		Messages: []Message{
			{Role: "user", Parts: []Part{
				{Type: PartText, Text: "What is in these?"},
				{Type: PartImage, MediaType: "image/png", Size: int64(len(png)), SHA256: hex.EncodeToString(pngSum[:])},
				{Type: PartImage, URL: "https://example.com/cat.jpg"},
				{Type: PartOther, MediaType: "audio/wav", Size: 4, SHA256: hex.EncodeToString(wavSum[:]), Raw: oaiRaw(`{"type":"input_audio"}`)},
				{Type: PartDocument, Name: "a.pdf", MediaType: "application/pdf", Size: 8, SHA256: hex.EncodeToString(pdfSum[:])},
				{Type: PartDocument, Raw: oaiRaw(`{"type":"file","file":{"file_id":"file-abc"}}`)},
				{Type: PartOther, Raw: oaiRaw(`{"type":"video","video":{"url":"x"}}`)},
			}},
			{Role: "assistant", Parts: []Part{
				{Type: PartThinking, Text: "Two calls."},
				{Type: PartToolCall, ID: "call_a", Name: "get_weather", Input: oaiRaw(`{"city":"Paris"}`)},
				{Type: PartToolCall, ID: "call_b", Name: "get_time", Text: `{"tz":`},
			}},
			{Role: "tool", Parts: []Part{{Type: PartToolResult, ID: "call_a", Text: "18C"}}},
			{Role: "tool", Parts: []Part{{Type: PartToolResult, ID: "call_b", Text: "12:00\nCET"}}},
			{Role: "system", Parts: oaiText1("Now summarize.")},
			{Role: "assistant", Parts: []Part{{Type: PartText, Text: "Paris: 18C"}, {Type: PartRefusal, Text: "No more."}}},
			{Role: "assistant", Parts: oaiRefusal1("I won't.")},
			{Role: "tool", Parts: []Part{{Type: PartToolResult, Name: "legacy", Text: "old"}}},
			{Role: "user", Parts: []Part{{Type: PartOther, Raw: oaiRaw(`42`)}}},
			{Role: "user", Parts: oaiText1("thanks")},
		},
		Tools: []string{"get_weather", "get_time", "apply_patch"},
		Params: []Param{
			{"logprobs", oaiRaw(`false`)},
			{"max_completion_tokens", oaiRaw(`1024`)},
			{"max_tokens", oaiRaw(`null`)},
			{"n", oaiRaw(`2`)},
			{"parallel_tool_calls", oaiRaw(`true`)},
			{"reasoning_effort", oaiRaw(`"low"`)},
			{"response_format", oaiRaw(`{"type":"json_object"}`)},
			{"seed", oaiRaw(`7`)},
			{"stop", oaiRaw(`["\n\n","END"]`)},
			{"temperature", oaiRaw(`0.2`)},
			{"tool_choice", oaiRaw(`{"type":"function","function":{"name":"get_weather"}}`)},
			{"top_p", oaiRaw(`1`)},
		},
		Stream: true,
	}
	oaiCheckEqual(t, "request", r, want)
	oaiCheckValid(t, r)
}

// TestChatRequestOddMessages checks that a message of the wrong shape is
// kept whole, with its role when it has one, and does not fail the
// request.
func TestChatRequestOddMessages(t *testing.T) {
	r, err := DecodeRequest(OpenAIChat, []byte(`{"model":"m","messages":[
		{"role":"assistant","tool_calls":"nope"},
		{"content":"no role"},
		"just a string"]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Message{
		{Role: "assistant", Parts: []Part{{Type: PartOther, Raw: oaiRaw(`{"role":"assistant","tool_calls":"nope"}`)}}},
		{Role: "user", Parts: oaiText1("no role")},
		{Role: "user", Parts: []Part{{Type: PartOther, Raw: oaiRaw(`"just a string"`)}}},
	}
	oaiCheckEqual(t, "messages", r.Messages, want)
}

func TestOpenAIRequestErrors(t *testing.T) {
	tests := []struct {
		api  API
		body string
		want string
	}{
		{OpenAIChat, `{"model":"m","messages":[}`, "openai-chat request: invalid JSON at byte offset 25"},
		{OpenAIChat, `{"model":"m",` + "\n" + `"messages":[{"role":"user","content":"hi"}],,}`, "invalid JSON at byte offset 58"},
		{OpenAIChat, ``, "invalid JSON at byte offset 0"},
		{OpenAIChat, `{"model":"m","messages":"hi"}`, "unexpected JSON string near byte offset 28"},
		{OpenAIChat, `  [1,2]`, "unexpected JSON array near byte offset 3"},
		{OpenAIChat, `null`, "body is not a JSON object (byte offset 0)"},
		{OpenAIResponses, `{"model":"m","input":"x","tools":{}}`, "openai-responses request: unexpected JSON object near byte offset 34"},
		{OpenAIResponses, `{"model":"m","stream":"yes"}`, "unexpected JSON string near byte offset 27"},
		{OpenAIResponses, `{"input":[{"type":"message"}]`, "invalid JSON at byte offset 29"},
	}
	for _, tt := range tests {
		_, err := DecodeRequest(tt.api, []byte(tt.body))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s %q: error %v, want it to contain %q", tt.api, tt.body, err, tt.want)
		}
	}
}

// oaiChatBenchStream builds a realistic streamed reply: a role chunk, 400
// content deltas, one tool call whose arguments come in 100 fragments, a
// finish chunk, a usage chunk and [DONE].
func oaiChatBenchStream() []byte {
	const head = `{"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1727346168,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_5050236cbd","choices":[`
	var b bytes.Buffer
	ev := func(choice string) { b.WriteString("data: " + head + choice + "]}\n\n") }
	ev(`{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}`)
	for i := range 400 {
		ev(fmt.Sprintf(`{"index":0,"delta":{"content":" word%d"},"logprobs":null,"finish_reason":null}`, i))
	}
	ev(`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"write_file","arguments":""}}]},"logprobs":null,"finish_reason":null}`)
	ev(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"text\":\""}}]},"logprobs":null,"finish_reason":null}`)
	for i := range 100 {
		ev(fmt.Sprintf(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"line %d\\n"}}]},"logprobs":null,"finish_reason":null}`, i))
	}
	ev(`{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"}"}}]},"logprobs":null,"finish_reason":null}`)
	ev(`{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}`)
	b.WriteString(`data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","model":"gpt-4o-2024-08-06","choices":[],"usage":{"prompt_tokens":1000,"completion_tokens":600,"total_tokens":1600}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return b.Bytes()
}

func BenchmarkDecodeChatStream(b *testing.B) {
	body := oaiChatBenchStream()
	r, err := DecodeResponse(OpenAIChat, body)
	if err != nil || !r.Complete || len(r.Parts) != 2 || r.Parts[1].Input == nil {
		b.Fatalf("bench stream decodes wrong: %v %+v", err, r)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := DecodeResponse(OpenAIChat, body); err != nil {
			b.Fatal(err)
		}
	}
}
