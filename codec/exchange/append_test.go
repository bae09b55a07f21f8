package exchange

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzAppend: the hand-written payload encoders write what encoding/json
// writes, byte for byte, for any field values (invalid UTF-8, HTML,
// control characters, U+2028, empty and nil header values included).
func FuzzAppend(f *testing.F) {
	f.Add("req_1", "POST", "/v1/messages", "a=b&key=[redacted:api_key]", "Content-Type\x00application/json\x01X-Api-Key\x00[redacted:api_key]", "claude-sonnet-4", int64(1406), int64(1732000000000000000), true, 200)
	f.Add("<&>\u2028\u2029\"\\\n\t\x01", "\xff\xfe", "", "", "\x00\x01\x00", "", int64(-1), int64(0), false, 0)
	f.Fuzz(func(t *testing.T, s1, s2, s3, s4, hdr, s5 string, n1, n2 int64, flag bool, status int) {
		h := Headers{}
		for _, kv := range strings.Split(hdr, "\x01") {
			k, v, ok := strings.Cut(kv, "\x00")
			if !ok {
				h[k] = nil
				continue
			}
			h[k] = append(h[k], strings.Split(v, "\x00")...)
		}
		if hdr == "" {
			h = nil
		}
		req := &RequestStart{V: Version, RequestID: s1, Method: s2, Path: s3, Query: s4, Proto: s5, Headers: h, Client: s4,
			Provider: s2, Upstream: s3, SessionID: s1, SessionSource: s5, TaskID: s4, RunID: s5, Goal: s3, Model: s5,
			Stream: flag, BodyBytes: n1, Decoded: !flag, Unscanned: s4, Mode: s2, Redaction: s1, Time: n2}
		resp := &ResponseStart{V: Version, Status: status, Proto: s5, Headers: h, TTFB: n1}
		var u *Usage
		if flag {
			u = &Usage{InputTokens: n1, OutputTokens: n2, CacheReadTokens: n1 / 3, CacheCreationTokens: int64(status), TotalTokens: n1 + n2}
		}
		end := &ResponseEnd{V: Version, Status: status, TTFB: n2, Duration: n1, RequestBytes: n2, ResponseBytes: n1, Chunks: int64(status),
			DroppedChunks: n1 % 7, DroppedBytes: n2 % 5, Decoded: flag, Unscanned: s5, Complete: !flag, Error: s4, Usage: u, Model: s2, SessionID: s1}
		er := &Error{V: Version, Stage: s2, Error: s3, Received: n1, Status: status}
		for _, v := range []any{req, resp, end, er} {
			want, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			got, err := AppendPayload([]byte("prefix"), v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got[len("prefix"):], want) {
				t.Fatalf("%T:\n got %s\nwant %s", v, got[len("prefix"):], want)
			}
		}
	})
}

// TestAppendAllocs: encoding a request start into a buffer with room
// allocates nothing.
func TestAppendAllocs(t *testing.T) {
	r := &RequestStart{RequestID: "req_1", Method: "POST", Path: "/v1/messages", Headers: Headers{
		"Content-Type": {"application/json"}, "Anthropic-Version": {"2023-06-01"}, "User-Agent": {"claude-cli/2.1"}},
		Provider: "anthropic", Upstream: "https://api.anthropic.com", SessionID: "s", SessionSource: "minted", Mode: "lossless", Redaction: RedactionVersion}
	buf := make([]byte, 0, 4096)
	if n := testing.AllocsPerRun(100, func() { buf = AppendRequestStart(buf[:0], r) }); n != 0 {
		t.Errorf("AppendRequestStart allocates %v times", n)
	}
}

// BenchmarkEncode compares the hand-written encoder with encoding/json
// on a request start with a client's usual headers.
func BenchmarkEncode(b *testing.B) {
	r := &RequestStart{RequestID: "req_01HZX3", Method: "POST", Path: "/v1/messages", Proto: "HTTP/1.1", Headers: Headers{
		"Accept": {"application/json"}, "Anthropic-Beta": {"claude-code-20250219,interleaved-thinking-2025-05-14"},
		"Anthropic-Version": {"2023-06-01"}, "Content-Length": {"1406"}, "Content-Type": {"application/json"},
		"User-Agent": {"claude-cli/2.1.39 (external, cli)"}, "X-Api-Key": {"[redacted:api_key]"}, "X-App": {"cli"},
		"X-Stainless-Arch": {"x64"}, "X-Stainless-Lang": {"js"}, "X-Stainless-Os": {"Linux"}, "X-Stainless-Package-Version": {"0.60.0"},
		"X-Stainless-Retry-Count": {"0"}, "X-Stainless-Runtime": {"node"}, "X-Stainless-Runtime-Version": {"v22.12.0"}, "X-Stainless-Timeout": {"600"}},
		Client: "127.0.0.1:53412", Provider: "anthropic", Upstream: "https://api.anthropic.com/v1/messages", SessionID: "claude:4d5611e5",
		SessionSource: "body", Model: "claude-sonnet-4", Stream: true, BodyBytes: 1406, Mode: "lossless", Redaction: RedactionVersion, Time: 1732000000000000000}
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("append", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 4096)
		for b.Loop() {
			buf = AppendRequestStart(buf[:0], r)
		}
	})
}
