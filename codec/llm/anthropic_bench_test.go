package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// anthropicBenchStream returns a stream shaped like a live one: padded
// JSON, a ping, a text block of n text_delta events of a few words each,
// then a tool_use block whose input (an edit with n/2 lines) arrives in n
// input_json_delta fragments cut mid-token.
func anthropicBenchStream(n int) []byte {
	var b bytes.Buffer
	ev := func(typ, data string) {
		fmt.Fprintf(&b, "event: %s\ndata: %s     }\n\n", typ, strings.TrimSuffix(data, "}"))
	}
	ev("message_start", `{"type":"message_start","message":{"model":"claude-sonnet-4-5-20250929","id":"msg_01XFDUDYJgAACzvnptvVoYEL","type":"message","role":"assistant","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":2113,"cache_creation_input_tokens":1024,"cache_read_input_tokens":48211,"cache_creation":{"ephemeral_5m_input_tokens":1024,"ephemeral_1h_input_tokens":0},"output_tokens":4,"service_tier":"standard"}}}`)
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	ev("ping", `{"type": "ping"}`)
	words := []string{"Let me", " look at", " the failing", " test in", " `wal/segment_test.go`", " — it", " expects", " a torn", " tail\\n", " to be", " repaired."}
	for i := range n {
		ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%q}}`, words[i%len(words)]))
	}
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"Edit","input":{}}}`)
	var input strings.Builder
	input.WriteString(`{"file_path": "/repo/wal/segment.go", "old_string": "`)
	for i := range n / 2 {
		fmt.Fprintf(&input, "\\tif off+frameHeader > len(buf) { return %d, errTorn }\\n", i)
	}
	input.WriteString(`", "new_string": "return n, nil"}`)
	in := input.String()
	ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}`)
	step := max(1, len(in)/n)
	for i := 0; i < len(in); i += step {
		frag, _ := json.Marshal(in[i:min(len(in), i+step)])
		ev("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":%s}}`, frag))
	}
	ev("content_block_stop", `{"type":"content_block_stop","index":1}`)
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":1873}}`)
	ev("message_stop", `{"type":"message_stop"}`)
	return b.Bytes()
}

// BenchmarkDecodeAnthropicStream reports decode throughput and
// allocations for streams of deltas=n text and n tool input events.
func BenchmarkDecodeAnthropicStream(b *testing.B) {
	for _, n := range []int{100, 1000} {
		body := anthropicBenchStream(n)
		r, err := DecodeResponse(AnthropicMessages, body)
		if err != nil || !r.Complete || len(r.Parts) != 2 || len(r.Parts[1].Input) == 0 {
			b.Fatalf("bench stream does not decode whole: %v %s", err, mustJSON(r))
		}
		b.Run(fmt.Sprintf("deltas=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := DecodeResponse(AnthropicMessages, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecodeGeminiStream reports decode throughput and allocations
// for an alt=sse stream of chunks=n text chunks and a function call.
func BenchmarkDecodeGeminiStream(b *testing.B) {
	for _, n := range []int{100, 1000} {
		var body bytes.Buffer
		for i := range n {
			fmt.Fprintf(&body, `data: {"candidates": [{"content": {"parts": [{"text": "word %d of the answer, "}],"role": "model"},"index": 0}],"usageMetadata": {"promptTokenCount": 12751,"candidatesTokenCount": %d,"totalTokenCount": 12801,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 12751}],"thoughtsTokenCount": 50},"modelVersion": "gemini-2.5-pro","responseId": "abc"}`+"\r\n\r\n", i, i)
		}
		body.WriteString(`data: {"candidates": [{"content": {"parts": [{"functionCall": {"name": "run_shell_command","args": {"command": "go test ./...","description": "Run the tests"}},"thoughtSignature": "CiQBcsjafL1lDlnUGmt38n1/gjwecXzy9S3qEW5sYMEno5Mr7LEK"}],"role": "model"},"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 12751,"candidatesTokenCount": 28,"totalTokenCount": 12829,"thoughtsTokenCount": 50}}` + "\r\n\r\n")
		r, err := DecodeResponse(Gemini, body.Bytes())
		if err != nil || !r.Complete || len(r.Parts) != 2 {
			b.Fatalf("bench stream does not decode whole: %v %s", err, mustJSON(r))
		}
		b.Run(fmt.Sprintf("chunks=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(body.Len()))
			for b.Loop() {
				if _, err := DecodeResponse(Gemini, body.Bytes()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
