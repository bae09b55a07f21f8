package redact

import (
	"strings"
	"testing"
)

// benchChunk is a realistic proxy chunk: a few Anthropic SSE events
// (content deltas with code and prose, a usage event) and a slice of
// a request body.
var benchChunk = []byte(strings.Repeat(`event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"func main() {\n\ttoken := os.Getenv(\"TOKEN\")\n\tif err := run(token); err != nil {\n\t\tlog.Fatal(err)\n\t}\n}\nThe password field is read from the environment, see https://example.com/docs."}}

`, 6) + `event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":1234,"output_tokens":567,"cache_read_input_tokens":0}}

`)

func BenchmarkBytes(b *testing.B) {
	r, _ := New(nil)
	b.Run("chunk=sse", func(b *testing.B) {
		b.SetBytes(int64(len(benchChunk)))
		b.ReportAllocs()
		for b.Loop() {
			r.Bytes(benchChunk)
		}
	})
}
