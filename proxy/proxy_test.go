package proxy

import (
	"compress/gzip"
	"encoding/base64"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/wal"
	"github.com/klauspost/compress/zstd"
)

// Synthetic provider streams; the shared recordings are replayed too when
// present (TestSharedStreams).
const (
	anthropicSSE = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-sonnet-4\",\"content\":[],\"usage\":{\"input_tokens\":25,\"cache_read_input_tokens\":7,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Let me read it.\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQBCgIYAhIM\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n" +
		"event: ping\ndata: {\"type\":\"ping\"}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"Read\",\"input\":{}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"file_path\\\": \\\"/tmp/a\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\".go\\\"}\"}}\n\n" +
		"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":42}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	openaiSSE = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"read\",\"arguments\":\"\"}}]}}]}\n\n" +
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}}]}}]}\n\n" +
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":9,\"total_tokens\":20}}\n\n" +
		"data: [DONE]\n\n"
	responsesSSE = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\"}}\n\n" +
		"event: response.function_call_arguments.delta\ndata: {\"type\":\"response.function_call_arguments.delta\",\"delta\":\"{\\\"cmd\\\":\"}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"usage\":{\"input_tokens\":5,\"output_tokens\":3,\"total_tokens\":8}}}\n\n"
	geminiSSE = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hel\"}],\"role\":\"model\"}}]}\r\n\r\n" +
		"data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"lo\"}],\"role\":\"model\"},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":4,\"candidatesTokenCount\":2,\"totalTokenCount\":6}}\r\n\r\n"
)

// upstream is a fake provider on loopback. Streams are written event by
// event with a flush after each.
type upstream struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*http.Request
	bodies   [][]byte
	stream   string // body for /v1/messages (default anthropicSSE)
}

// splitReply is the body of /v1/json-split/N.
const splitReply = `{"id":"msg_s","content":[{"type":"text","text":"the key is sk-ant-api03-SPLITSPLITSPLITSPLITSPLITSPLIT, keep it"}],"usage":{"input_tokens":7,"output_tokens":3}}`

func newUpstream(t *testing.T) *upstream {
	u := &upstream{stream: anthropicSSE}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.Close)
	return u
}

func sendEvents(w http.ResponseWriter, body, sep string) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(200)
	f := w.(http.Flusher)
	for _, ev := range strings.SplitAfter(body, sep) {
		if ev == "" {
			continue
		}
		io.WriteString(w, ev)
		f.Flush()
	}
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	u.requests = append(u.requests, r)
	u.bodies = append(u.bodies, body)
	stream := u.stream
	u.mu.Unlock()
	w.Header().Set("Request-Id", "up_123")
	switch {
	case r.URL.Path == "/v1/messages":
		sendEvents(w, stream, "\n\n")
	case r.URL.Path == "/v1/chat/completions", r.URL.Path == "/ollama-base/v1/chat/completions":
		sendEvents(w, openaiSSE, "\n\n")
	case r.URL.Path == "/v1/responses":
		sendEvents(w, responsesSSE, "\n\n")
	case strings.HasPrefix(r.URL.Path, "/v1beta/models/"):
		sendEvents(w, geminiSSE, "\r\n\r\n")
	case r.URL.Path == "/v1/messages/count_tokens":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"input_tokens":123}`)
	case r.URL.Path == "/gzip", r.URL.Path == "/gzip-secret":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		if r.URL.Path == "/gzip-secret" {
			io.WriteString(gz, `{"id":"msg_gz","content":[{"type":"text","text":"your key is sk-ant-api03-SECRETSECRETSECRETSECRET"}],"usage":{"input_tokens":1,"output_tokens":2}}`)
		} else {
			io.WriteString(gz, `{"id":"msg_gz","usage":{"input_tokens":1,"output_tokens":2}}`)
		}
		gz.Close()
	case r.URL.Path == "/big-secret-gzip", r.URL.Path == "/big-secret-zstd":
		w.Header().Set("Content-Type", "application/json")
		var zw io.WriteCloser
		if strings.HasSuffix(r.URL.Path, "gzip") {
			w.Header().Set("Content-Encoding", "gzip")
			zw = gzip.NewWriter(w)
		} else {
			w.Header().Set("Content-Encoding", "zstd")
			zw, _ = zstd.NewWriter(w)
		}
		zw.Write(bigSecretBody())
		zw.Close()
	case r.URL.Path == "/big-broken-gzip":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		var b strings.Builder
		zw := gzip.NewWriter(&b)
		zw.Write(bigSecretBody())
		zw.Close()
		broken := []byte(b.String())
		for i := len(broken) * 3 / 4; i < len(broken)*3/4+64; i++ {
			broken[i] ^= 0x55
		}
		w.Write(broken)
	case strings.HasPrefix(r.URL.Path, "/v1/json-split/"):
		// A sized reply holding a secret, written in pieces of the size
		// the path names, each flushed, so the secret straddles chunks.
		n, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/v1/json-split/"))
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(splitReply)))
		for i := 0; i < len(splitReply); i += n {
			io.WriteString(w, splitReply[i:min(i+n, len(splitReply))])
			w.(http.Flusher).Flush()
			time.Sleep(200 * time.Microsecond)
		}
	case r.URL.Path == "/v1/json-tool":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"content":[{"type":"tool_use","id":"t","name":"x","input":{"usage":{"input_tokens":999999,"output_tokens":888888}}}],"usage":{"input_tokens":10,"output_tokens":5}}`)
	case r.URL.Path == "/v1/die":
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, "event: message_start\ndata: {}\n\n")
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	case r.URL.Path == "/v1/slow":
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		for i := 0; i < 200; i++ {
			if _, err := fmt.Fprintf(w, "data: %d\n\n", i); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	case r.URL.Path == "/v1/slowhead":
		select {
		case <-r.Context().Done():
		case <-time.After(2 * time.Second):
		}
	case r.URL.Path == "/v1/error":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(429)
		io.WriteString(w, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`)
	default:
		http.NotFound(w, r)
	}
}

type rig struct {
	up    *upstream
	log   *wal.Log
	p     *Proxy
	srv   *httptest.Server
	dir   string
	mu    sync.Mutex
	lines []string
}

func newRig(t *testing.T, opts *Options) *rig {
	t.Helper()
	return newRigWith(t, newUpstream(t), opts)
}

func newRigWith(t *testing.T, up *upstream, opts *Options) *rig {
	t.Helper()
	dir := t.TempDir()
	log, err := wal.Open(dir, &wal.Options{Sync: wal.SyncNone, NoCompression: true})
	if err != nil {
		t.Fatal(err)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Upstreams == nil {
		o.Upstreams = map[string]string{}
	}
	for _, k := range []string{"anthropic", "openai", "gemini"} {
		if _, ok := o.Upstreams[k]; !ok {
			o.Upstreams[k] = up.URL
		}
	}
	rg := &rig{up: up, log: log, dir: dir}
	o.Logf = func(f string, a ...any) {
		rg.mu.Lock()
		rg.lines = append(rg.lines, fmt.Sprintf(f, a...))
		rg.mu.Unlock()
	}
	p, err := New(log, &o)
	if err != nil {
		t.Fatal(err)
	}
	rg.p = p
	rg.srv = httptest.NewServer(p)
	t.Cleanup(func() {
		rg.srv.Close()
		p.Close()
		log.Close()
	})
	return rg
}

var client = &http.Client{Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 16}}

func (rg *rig) post(t *testing.T, path, body string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", rg.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	return resp, b
}

// recorded is one exchange read back from the WAL.
type recorded = exchange.Exchange

// readWAL closes the proxy (flushing the recorder) and returns every
// exchange in the log.
func (rg *rig) readWAL(t *testing.T) map[uint64]*recorded {
	t.Helper()
	rg.srv.Close()
	if err := rg.p.Close(); err != nil {
		t.Fatalf("recorder: %v", err)
	}
	r := rg.log.NewReader()
	defer r.Close()
	var a exchange.Assembler
	for r.Next() {
		p, err := r.Payload()
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Add(r.Header(), p); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	out := map[uint64]*recorded{}
	for _, x := range a.Exchanges() {
		out[x.ID] = x
	}
	return out
}

func only(t *testing.T, m map[uint64]*recorded) *recorded {
	t.Helper()
	if len(m) != 1 {
		t.Fatalf("want 1 exchange, got %d", len(m))
	}
	for _, x := range m {
		return x
	}
	return nil
}

// TestStreamsPassThrough: every provider's stream reaches the client byte
// for byte, is recorded byte for byte, and ends complete with usage.
func TestStreamsPassThrough(t *testing.T) {
	tests := []struct {
		name, path, body, want string
		hdr                    map[string]string
		provider               string
		usage                  exchange.Usage
	}{
		{"anthropic", "/v1/messages", `{"model":"claude-sonnet-4","stream":true,"messages":[]}`, anthropicSSE,
			map[string]string{"Anthropic-Version": "2023-06-01"}, "anthropic", exchange.Usage{InputTokens: 25, OutputTokens: 42, CacheReadTokens: 7, TotalTokens: 74}},
		{"openai chat", "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true}}`, openaiSSE,
			nil, "openai", exchange.Usage{InputTokens: 11, OutputTokens: 9, TotalTokens: 20}},
		{"openai responses", "/v1/responses", `{"model":"gpt-5","stream":true}`, responsesSSE,
			nil, "openai", exchange.Usage{InputTokens: 5, OutputTokens: 3, TotalTokens: 8}},
		{"gemini", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse&key=AIzaSyA-secret-key-000000000000000000", `{"contents":[]}`, geminiSSE,
			nil, "gemini", exchange.Usage{InputTokens: 4, OutputTokens: 2, TotalTokens: 6}},
		{"prefix route", "/ollama/v1/chat/completions", `{"model":"llama3","stream":true}`, openaiSSE,
			nil, "ollama", exchange.Usage{InputTokens: 11, OutputTokens: 9, TotalTokens: 20}},
		{"non-streaming json", "/v1/messages/count_tokens", `{"model":"claude-sonnet-4"}`, `{"input_tokens":123}`,
			map[string]string{"Anthropic-Version": "2023-06-01"}, "anthropic", exchange.Usage{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t)
			rg := newRigWith(t, up, &Options{Upstreams: map[string]string{"ollama": up.URL + "/ollama-base"}})
			resp, got := rg.post(t, tt.path, tt.body, tt.hdr)
			if string(got) != tt.want {
				t.Fatalf("client got %q\nwant %q", got, tt.want)
			}
			if resp.Header.Get("X-Bb-Request-Id") == "" || resp.Header.Get("X-Bb-Exchange-Id") == "" || resp.Header.Get("Request-Id") != "up_123" {
				t.Errorf("response headers: %v", resp.Header)
			}
			x := only(t, rg.readWAL(t))
			if x.Start == nil || x.Start.Provider != tt.provider || x.Start.Method != "POST" || x.Start.RequestID != resp.Header.Get("X-Bb-Request-Id") {
				t.Fatalf("request start: %+v", x.Start)
			}
			if string(x.RequestBody) != tt.body {
				t.Errorf("recorded request body %q, want %q", x.RequestBody, tt.body)
			}
			if string(x.ResponseBody) != tt.want {
				t.Errorf("recorded response body differs:\n%q", x.ResponseBody)
			}
			if x.End == nil || !x.End.Complete || x.End.Status != 200 || x.End.ResponseBytes != int64(len(tt.want)) {
				t.Fatalf("end: %+v", x.End)
			}
			var u exchange.Usage
			if x.End.Usage != nil {
				u = *x.End.Usage
			}
			if u != tt.usage {
				t.Errorf("usage %+v, want %+v", u, tt.usage)
			}
			if strings.Contains(x.Start.Query, "AIza") {
				t.Errorf("query not redacted: %q", x.Start.Query)
			}
			if !x.ResponseLast {
				t.Errorf("last response body frame not flagged last")
			}
			if x.Kinds[0] != frame.KindRequestStart || x.Kinds[len(x.Kinds)-1] != frame.KindResponseEnd {
				t.Errorf("frame order: %v", x.Kinds)
			}
		})
	}
}

// bigSecretKeys are in bigSecretBody: at its start, 90% into it (past
// the compressed bytes the test lets the proxy hold), and at its end.
var bigSecretKeys = []string{"sk-ant-api03-BIGFIRSTSECRET0000000000", "sk-ant-api03-BIGMIDDLESECRET000000000", "sk-ant-api03-BIGLASTSECRET00000000000"}

// bigSecretBody is a JSON response of about 4 MB of base64 text (it
// compresses to about 3 MB) with bigSecretKeys in it.
func bigSecretBody() []byte {
	r := rand.New(rand.NewPCG(1, 2))
	raw := make([]byte, 3<<20)
	for i := range raw {
		raw[i] = byte(r.Uint32())
	}
	text := base64.StdEncoding.EncodeToString(raw)
	mid := len(text) * 9 / 10
	text = "key " + bigSecretKeys[0] + " then " + text[:mid] + " and " + bigSecretKeys[1] + " more " + text[mid:] + " last " + bigSecretKeys[2]
	return []byte(`{"id":"msg_big","content":[{"type":"text","text":"` + text + `"}],"usage":{"input_tokens":1,"output_tokens":2}}`)
}
