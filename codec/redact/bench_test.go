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

// benchRequest is a 16 KiB slice of an agent's request body: tool
// schemas, prose and code in JSON strings.
var benchRequest = []byte(`{"model":"claude-sonnet-4","max_tokens":32000,"stream":true,"tools":[` +
	strings.Repeat(`{"name":"Bash","description":"Executes a given bash command with an optional timeout. Use for git, npm, docker. Never print secrets: read them from the environment, e.g. TOKEN=$(cat ~/.token).","input_schema":{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"number"}},"required":["command"]}},`, 20) +
	`{}],"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"` +
	strings.Repeat(`func (c *Client) Do(ctx context.Context, req *Request) (*Response, error) {\n\ttoken := c.auth.Token()\n\treq.Header.Set(\"Authorization\", \"Bearer \"+token)\n\tresp, err := c.http.Do(req.WithContext(ctx))\n\tif err != nil {\n\t\treturn nil, fmt.Errorf(\"do %s: %w\", req.URL, err)\n\t}\n\treturn resp, nil\n}\n`, 30) +
	`"}]}]}`)[:16<<10]

func BenchmarkBytes(b *testing.B) {
	r, _ := New(nil)
	b.Run("chunk=request", func(b *testing.B) {
		b.SetBytes(int64(len(benchRequest)))
		b.ReportAllocs()
		for b.Loop() {
			r.Bytes(benchRequest)
		}
	})
	b.Run("chunk=sse", func(b *testing.B) {
		b.SetBytes(int64(len(benchChunk)))
		b.ReportAllocs()
		for b.Loop() {
			r.Bytes(benchChunk)
		}
	})
}

// BenchmarkMaybe compares Maybe's one pass with a strings.Contains per
// literal, on prose and code that holds none of them (the common case:
// every literal is looked for).
func BenchmarkMaybe(b *testing.B) {
	r, _ := New(nil)
	text := strings.Repeat("The build failed in package main: undefined symbol run, see line 12 of main.go.\n", 50)
	for _, impl := range []struct {
		name string
		fn   func(string) bool
	}{{"table", r.Maybe}, {"contains", func(s string) bool { return maybeContains(r, s) }}} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				if impl.fn(text) {
					b.Fatal("a literal in the text")
				}
			}
		})
	}
}
