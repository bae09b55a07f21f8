package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/codec/httpbody"
	dto "github.com/prometheus/client_model/go"
)

func TestGzipPassesThroughCompressed(t *testing.T) {
	rg := newRig(t, nil)
	req, _ := http.NewRequest("POST", rg.srv.URL+"/anthropic/gzip", strings.NewReader(`{}`))
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" || len(raw) < 2 || raw[0] != 0x1f || raw[1] != 0x8b {
		t.Fatalf("client did not get the gzip bytes: %v %q", resp.Header, raw)
	}
	x := only(t, rg.readWAL(t))
	if string(x.ResponseBody) != string(raw) {
		t.Errorf("recorded body is not the compressed bytes")
	}
	if got := x.Response.Headers["Content-Encoding"]; len(got) != 1 || got[0] != "gzip" {
		t.Errorf("encoding not recorded: %v", x.Response.Headers)
	}
	if !x.End.Complete || x.End.Decoded || x.End.Unscanned != "" || x.End.Usage == nil || x.End.Usage.OutputTokens != 2 || !x.ResponseLast {
		t.Errorf("end: %+v", x.End)
	}
	rg.up.mu.Lock()
	ae := rg.up.requests[0].Header.Get("Accept-Encoding")
	rg.up.mu.Unlock()
	if ae != "gzip" {
		t.Errorf("upstream saw Accept-Encoding %q", ae)
	}
}

// TestGzipSecretIsDecodedAndRedacted: a compressed body holding a secret
// is recorded decoded and redacted (and says so); the client still gets
// the compressed bytes.
func TestGzipSecretIsDecodedAndRedacted(t *testing.T) {
	rg := newRig(t, nil)
	req, _ := http.NewRequest("POST", rg.srv.URL+"/anthropic/gzip-secret", strings.NewReader(`{}`))
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Content-Encoding") != "gzip" || raw[0] != 0x1f {
		t.Fatal("client did not get gzip bytes")
	}
	x := only(t, rg.readWAL(t))
	if !x.End.Decoded || strings.Contains(string(x.ResponseBody), "SECRETSECRET") || !strings.Contains(string(x.ResponseBody), "[redacted:anthropic_key]") {
		t.Errorf("decoded %v body %q", x.End.Decoded, x.ResponseBody)
	}
	if x.End.Usage == nil || x.End.Usage.InputTokens != 1 {
		t.Errorf("usage %+v", x.End.Usage)
	}
}

// TestSmallReplySplitSecret: a small sized reply is recorded with its
// end (its chunks held back by the handler and scanned once, whole), or,
// cut into more chunks than an exchange holds back, through the queue; a
// secret split across its chunks is redacted either way, the client gets
// the reply unchanged, and the frames keep their order.
func TestSmallReplySplitSecret(t *testing.T) {
	for _, mode := range []Mode{Lossless, Passthrough, Degrade} {
		for _, piece := range []int{60, 7, 1000} {
			t.Run(fmt.Sprintf("%v/%d", mode, piece), func(t *testing.T) {
				rg := newRig(t, &Options{Mode: mode})
				resp, got := rg.post(t, fmt.Sprintf("/v1/json-split/%d", piece), `{"model":"claude-sonnet-4"}`, nil)
				if resp.StatusCode != 200 || string(got) != splitReply {
					t.Fatalf("client got %d %q", resp.StatusCode, got)
				}
				x := only(t, rg.readWAL(t))
				if !x.End.Complete || x.End.Usage == nil || x.End.Usage.InputTokens != 7 || x.End.Usage.OutputTokens != 3 {
					t.Errorf("end: %+v", x.End)
				}
				want := []frame.Kind{frame.KindRequestStart, frame.KindRequestBody, frame.KindResponseStart}
				if mode == Passthrough {
					want = nil
				}
				if len(x.Kinds) < len(want)+1 || x.Kinds[len(x.Kinds)-1] != frame.KindResponseEnd {
					t.Fatalf("frames %v", x.Kinds)
				}
				for i, k := range want {
					if x.Kinds[i] != k {
						t.Fatalf("frames %v", x.Kinds)
					}
				}
				if mode != Passthrough {
					body := string(x.ResponseBody)
					if body != strings.Replace(splitReply, "sk-ant-api03-SPLITSPLITSPLITSPLITSPLITSPLIT", "[redacted:anthropic_key]", 1) {
						t.Errorf("recorded body %q", body)
					}
				}
				files, _ := filepath.Glob(filepath.Join(rg.dir, "*"))
				for _, f := range files {
					if b, _ := os.ReadFile(f); strings.Contains(string(b), "SPLITSPLIT") {
						t.Errorf("%s holds the secret", filepath.Base(f))
					}
				}
			})
		}
	}
}

// TestUsageNotFromModelOutput: a tool input that happens to hold a
// "usage" object does not count as the response's usage.
func TestUsageNotFromModelOutput(t *testing.T) {
	rg := newRig(t, nil)
	rg.post(t, "/v1/json-tool", `{}`, map[string]string{"Anthropic-Version": "2023-06-01"})
	x := only(t, rg.readWAL(t))
	if u := x.End.Usage; u == nil || u.InputTokens != 10 || u.OutputTokens != 5 || u.TotalTokens != 15 {
		t.Errorf("usage %+v", u)
	}
}

func TestUpstreamDiesMidStream(t *testing.T) {
	rg := newRig(t, nil)
	req, _ := http.NewRequest("POST", rg.srv.URL+"/v1/die", strings.NewReader(`{"stream":true}`))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Fatalf("client read the cut stream without an error: %q", got)
	}
	if string(got) != "event: message_start\ndata: {}\n\n" {
		t.Errorf("client got %q before the cut", got)
	}
	x := only(t, rg.readWAL(t))
	if x.End == nil || x.End.Complete || len(x.Errors) != 1 || x.Errors[0].Stage != "response" {
		t.Fatalf("end %+v errs %+v", x.End, x.Errors)
	}
	if string(x.ResponseBody) != string(got) || x.Errors[0].Received != int64(len(got)) {
		t.Errorf("recorded %q, received %d", x.ResponseBody, x.Errors[0].Received)
	}
}

func TestClientDisconnects(t *testing.T) {
	rg := newRig(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", rg.srv.URL+"/v1/slow", strings.NewReader(`{}`))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, err := io.ReadAtLeast(resp.Body, buf, 16); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(5 * time.Second)
	for rg.p.metrics.inflight != nil && time.Now().Before(deadline) {
		if h := rg.p.Health(); h.Recorded > 0 && inflight(rg) == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	x := only(t, rg.readWAL(t))
	if x.End == nil || x.End.Complete || len(x.Errors) == 0 || x.Errors[0].Stage != "client" {
		t.Fatalf("end %+v errs %+v", x.End, x.Errors)
	}
	if x.End.ResponseBytes == 0 || int64(len(x.ResponseBody)) != x.End.ResponseBytes {
		t.Errorf("recorded %d bytes, end says %d", len(x.ResponseBody), x.End.ResponseBytes)
	}
}

func inflight(rg *rig) int {
	var n int
	rg.p.rec.mu.Lock()
	rg.p.rec.mu.Unlock()
	resp, err := http.Get(rg.srv.URL + "/_bb/metrics")
	if err != nil {
		return -1
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "bbengine_proxy_inflight ") {
			fmt.Sscanf(strings.TrimPrefix(l, "bbengine_proxy_inflight "), "%d", &n)
		}
	}
	return n
}

func TestUpstreamUnreachable(t *testing.T) {
	for _, tt := range []struct{ path, want string }{
		{"/v1/messages", `{"error":{"message":"bbengine proxy: upstream 127.0.0.1:1 failed: dial tcp 127.0.0.1:1: connect: connection refused","type":"api_error"},"type":"error"}`},
		{"/v1/chat/completions", `{"error":{"code":"bad_gateway","message":"bbengine proxy: upstream 127.0.0.1:1 failed: dial tcp 127.0.0.1:1: connect: connection refused","type":"bbengine_proxy_error"}}`},
		{"/v1beta/models/g:generateContent", `{"error":{"code":502,"message":"bbengine proxy: upstream 127.0.0.1:1 failed: dial tcp 127.0.0.1:1: connect: connection refused","status":"UNAVAILABLE"}}`},
	} {
		rg := newRig(t, &Options{Upstreams: map[string]string{"anthropic": "http://127.0.0.1:1", "openai": "http://127.0.0.1:1", "gemini": "http://127.0.0.1:1"}})
		resp, body := rg.post(t, tt.path, `{}`, nil)
		if resp.StatusCode != 502 || string(body) != tt.want {
			t.Errorf("%s: %d %s", tt.path, resp.StatusCode, body)
		}
		x := only(t, rg.readWAL(t))
		if len(x.Errors) != 1 || x.Errors[0].Stage != "upstream" || x.End == nil || x.End.Status != 502 || x.End.Complete {
			t.Errorf("%s: errs %+v end %+v", tt.path, x.Errors, x.End)
		}
	}
}

func TestUpstreamHeaderTimeout(t *testing.T) {
	rg := newRig(t, &Options{HeaderTimeout: 50 * time.Millisecond})
	resp, body := rg.post(t, "/v1/slowhead", `{}`, map[string]string{"Anthropic-Version": "2023-06-01"})
	if resp.StatusCode != http.StatusGatewayTimeout || !strings.Contains(string(body), `"type":"error"`) || !strings.Contains(string(body), "no response headers within 50ms (--upstream-header-timeout)") {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	x := only(t, rg.readWAL(t))
	if len(x.Errors) != 1 || x.Errors[0].Stage != "upstream" || x.End.Status != 504 {
		t.Errorf("errs %+v end %+v", x.Errors, x.End)
	}
}

func TestUpstreamErrorStatusUnchanged(t *testing.T) {
	rg := newRig(t, nil)
	resp, body := rg.post(t, "/v1/error", `{}`, map[string]string{"Anthropic-Version": "2023-06-01"})
	if resp.StatusCode != 429 || string(body) != `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}` {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	x := only(t, rg.readWAL(t))
	if x.End.Status != 429 || !x.End.Complete || string(x.ResponseBody) != string(body) {
		t.Errorf("end %+v body %q", x.End, x.ResponseBody)
	}
}

func TestIdentity(t *testing.T) {
	tests := []struct {
		name       string
		hdr        map[string]string
		body       string
		wantID     string
		wantSource string
	}{
		{"own header wins", map[string]string{"X-Bb-Session-Id": "mine", "X-Claude-Code-Session-Id": "cc"}, `{}`, "mine", "x-bb-session-id"},
		{"claude code header", map[string]string{"X-Claude-Code-Session-Id": "3f0c2b8e-1111-2222-3333-444455556666"}, `{}`, "3f0c2b8e-1111-2222-3333-444455556666", "X-Claude-Code-Session-Id"},
		{"codex header", map[string]string{"Session-Id": "codex-thread-1"}, `{}`, "codex-thread-1", "Session-Id"},
		{"metadata json", nil, `{"model":"m","metadata":{"user_id":"{\"device_id\":\"d\",\"account_uuid\":\"a\",\"session_id\":\"aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee\"}"}}`, "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "body"},
		{"metadata legacy", nil, `{"metadata":{"user_id":"user_abc_account_11111111-2222-3333-4444-555555555555_session_99999999-8888-7777-6666-555555555555"}}`, "99999999-8888-7777-6666-555555555555", "body"},
		{"control characters refused", map[string]string{"X-Bb-Session-Id": "bad\tid"}, `{}`, "", "minted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rg := newRig(t, nil)
			hdr := map[string]string{"X-Bb-Task-Id": "task-7", "X-Bb-Run-Id": "run-3", "X-Bb-Session-Goal": "Ship%20the%20cache%20%E2%80%94%20fast", "Anthropic-Version": "2023-06-01"}
			for k, v := range tt.hdr {
				hdr[k] = v
			}
			rg.post(t, "/v1/messages", tt.body, hdr)
			x := only(t, rg.readWAL(t))
			if tt.wantID != "" && x.Start.SessionID != tt.wantID || x.Start.SessionSource != tt.wantSource {
				t.Errorf("session %q from %q, want %q from %q", x.Start.SessionID, x.Start.SessionSource, tt.wantID, tt.wantSource)
			}
			if tt.wantSource == "minted" && !strings.HasPrefix(x.Start.SessionID, "ses_") {
				t.Errorf("minted session %q", x.Start.SessionID)
			}
			if x.Start.Goal != "Ship the cache — fast" {
				t.Errorf("goal %q", x.Start.Goal)
			}
			if x.Start.TaskID != "task-7" || x.Start.RunID != "run-3" || x.End.SessionID != x.Start.SessionID {
				t.Errorf("task %q run %q end session %q", x.Start.TaskID, x.Start.RunID, x.End.SessionID)
			}
			for k := range x.Start.Headers {
				if strings.HasPrefix(k, "X-Bb-") {
					t.Errorf("recorded header %s", k)
				}
			}
			rg.up.mu.Lock()
			defer rg.up.mu.Unlock()
			for k := range rg.up.requests[0].Header {
				if strings.HasPrefix(k, "X-Bb-") {
					t.Errorf("forwarded header %s", k)
				}
			}
		})
	}
}

// TestSecretsNeverRecorded: credentials in headers, the query and the body
// (split across chunks) reach the upstream unchanged and appear nowhere in
// the WAL's files.
func TestSecretsNeverRecorded(t *testing.T) {
	secrets := []string{
		"sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"sk-proj-BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB",
		"ghp_CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC",
		"AKIAIOSFODNN7EXAMPLE",
		"MY-COMPANY-TOKEN-123456",
		"session=DDDDDDDDDDDD",
	}
	rg := newRig(t, &Options{RedactPatterns: []string{`company_token=MY-COMPANY-TOKEN-[0-9]+`}})
	body := `{"messages":[{"role":"user","content":"keys: ` + secrets[0] + " and " + secrets[1] + " and " + secrets[2] + " and " + secrets[3] + " and " + secrets[4] +
		` and -----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"}]}`
	// Send the body in 7-byte writes so secrets straddle chunk boundaries.
	pr, pw := io.Pipe()
	go func() {
		for i := 0; i < len(body); i += 7 {
			end := min(i+7, len(body))
			pw.Write([]byte(body[i:end]))
			time.Sleep(100 * time.Microsecond)
		}
		pw.Close()
	}()
	req, _ := http.NewRequest("POST", rg.srv.URL+"/v1/messages?key="+secrets[3], pr)
	req.Header.Set("X-Api-Key", secrets[0])
	req.Header.Set("Authorization", "Bearer "+secrets[1])
	req.Header.Set("Cookie", secrets[5])
	req.Header.Set("X-Custom", "token "+secrets[2])
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	rg.up.mu.Lock()
	got := rg.up.bodies[0]
	fwd := rg.up.requests[0]
	rg.up.mu.Unlock()
	if string(got) != body || fwd.Header.Get("X-Api-Key") != secrets[0] || fwd.URL.Query().Get("key") != secrets[3] {
		t.Fatalf("upstream did not get the request unchanged")
	}
	x := only(t, rg.readWAL(t))
	if len(x.Kinds) < 4 {
		t.Fatalf("frames: %v", x.Kinds)
	}
	if !strings.Contains(string(x.RequestBody), "[redacted:anthropic_key]") || !strings.Contains(string(x.RequestBody), "[redacted:private_key]") {
		t.Errorf("recorded body: %s", x.RequestBody)
	}
	files, _ := filepath.Glob(filepath.Join(rg.dir, "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range append(secrets, "MIIEowIBAAKCAQEA") {
			if strings.Contains(string(b), s) {
				t.Errorf("%s holds secret %q", filepath.Base(f), s)
			}
		}
	}
}

func TestModes(t *testing.T) {
	for _, mode := range []Mode{Privacy, Passthrough} {
		t.Run(mode.String(), func(t *testing.T) {
			rg := newRig(t, &Options{Mode: mode})
			_, got := rg.post(t, "/v1/messages", `{"model":"claude-sonnet-4"}`, nil)
			if string(got) != anthropicSSE {
				t.Fatal("stream changed")
			}
			x := only(t, rg.readWAL(t))
			for _, k := range x.Kinds {
				if k == frame.KindRequestBody || k == frame.KindResponseBody {
					t.Errorf("%v recorded a body frame", mode)
				}
			}
			if mode == Passthrough && (len(x.Kinds) != 1 || x.End.Usage == nil || x.End.Usage.OutputTokens != 42 || x.End.Model != "claude-sonnet-4") {
				t.Errorf("passthrough frames %v end %+v", x.Kinds, x.End)
			}
			if mode == Privacy && (x.Start == nil || x.Response == nil || x.End == nil) {
				t.Errorf("privacy lost metadata: %v", x.Kinds)
			}
		})
	}
	t.Run("degrade", func(t *testing.T) {
		rg := newRig(t, &Options{Mode: Degrade, QueueLen: 1})
		for i := 0; i < 20; i++ {
			_, got := rg.post(t, "/v1/messages", `{}`, nil)
			if string(got) != anthropicSSE {
				t.Fatal("stream changed")
			}
		}
		for _, x := range rg.readWAL(t) {
			if x.Start == nil || x.End == nil {
				t.Fatal("metadata dropped")
			}
			if int64(len(x.ResponseBody))+x.End.DroppedBytes != int64(len(anthropicSSE)) {
				t.Errorf("recorded %d + dropped %d != %d", len(x.ResponseBody), x.End.DroppedBytes, len(anthropicSSE))
			}
		}
	})
}

func TestRefusals(t *testing.T) {
	rg := newRig(t, &Options{MaxRequestBody: 10})
	resp, body := rg.post(t, "/nowhere", `{}`, nil)
	if resp.StatusCode != 404 || !strings.Contains(string(body), "no upstream for /nowhere") {
		t.Errorf("unknown path: %d %s", resp.StatusCode, body)
	}
	resp, body = rg.post(t, "/v1/messages", `{"too":"large body"}`, map[string]string{"Anthropic-Version": "x"})
	if resp.StatusCode != 413 || !strings.Contains(string(body), `"type":"request_too_large"`) {
		t.Errorf("too large: %d %s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest("GET", rg.srv.URL+"/v1/responses", nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	wresp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	wresp.Body.Close()
	if wresp.StatusCode != http.StatusUpgradeRequired {
		t.Errorf("websocket: %d", wresp.StatusCode)
	}
	ex := rg.readWAL(t)
	if len(ex) != 1 {
		t.Fatalf("exchanges %d", len(ex))
	}
	x := only(t, ex)
	if len(x.Errors) != 1 || x.Errors[0].Status != 413 || x.End.Status != 413 {
		t.Errorf("413 recorded as %+v %+v", x.Errors, x.End)
	}
}

func TestHealthAndMetrics(t *testing.T) {
	rg := newRig(t, nil)
	rg.post(t, "/v1/messages", `{"model":"claude-sonnet-4"}`, nil)
	resp, err := http.Get(rg.srv.URL + "/_bb/health")
	if err != nil {
		t.Fatal(err)
	}
	var h Health
	json.NewDecoder(resp.Body).Decode(&h)
	resp.Body.Close()
	if resp.StatusCode != 200 || h.Status != "ok" || h.Mode != "lossless" {
		t.Errorf("health %d %+v", resp.StatusCode, h)
	}
	deadline := time.Now().Add(5 * time.Second)
	var text string
	for time.Now().Before(deadline) {
		resp, err = http.Get(rg.srv.URL + "/_bb/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		text = string(b)
		if strings.Contains(text, `bbengine_proxy_tokens_total{direction="output",provider="anthropic"} 42`) &&
			strings.Contains(text, `bbengine_proxy_overhead_seconds_count{stage="total"} 1`) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, want := range []string{
		`bbengine_proxy_requests_total{provider="anthropic",status="200"} 1`,
		`bbengine_proxy_tokens_total{direction="output",provider="anthropic"} 42`,
		`bbengine_proxy_model_requests_total{model="claude-sonnet-4",provider="anthropic"} 1`,
		`bbengine_proxy_ttfb_seconds_count{provider="anthropic"} 1`,
		"bbengine_wal_bytes_total", "bbengine_recorder_queue_depth", "bbengine_proxy_forward_wait_seconds_bucket", `bbengine_proxy_overhead_seconds_count{stage="total"} 1`, `bbengine_proxy_overhead_seconds_count{stage="first_byte"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestNoTruncationUnderLoad is the regression test for the HTTP/1
// request-body race (golang/go#40747): concurrent clients posting bodies
// and reading streams must never see a truncated stream.
func TestNoTruncationUnderLoad(t *testing.T) {
	rg := newRig(t, nil)
	const clients, each = 8, 100
	body := `{"model":"claude-sonnet-4","stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("x", 4096) + `"}]}`
	var wg sync.WaitGroup
	errs := make(chan error, clients*each)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				req, _ := http.NewRequest("POST", rg.srv.URL+"/v1/messages", strings.NewReader(body))
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					continue
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(got) != anthropicSSE {
					errs <- fmt.Errorf("truncated: %d of %d bytes, %v", len(got), len(anthropicSSE), err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		if n < 3 {
			t.Error(err)
		}
		n++
	}
	if n > 0 {
		t.Fatalf("%d of %d streams failed", n, clients*each)
	}
	ex := rg.readWAL(t)
	complete := 0
	for _, x := range ex {
		if x.End != nil && x.End.Complete && string(x.ResponseBody) == anthropicSSE {
			complete++
		}
	}
	if complete != clients*each {
		t.Fatalf("%d of %d exchanges recorded complete", complete, clients*each)
	}
}

// TestSharedStreams replays the recorded provider streams in
// shared/provider-streams through the proxy.
func TestSharedStreams(t *testing.T) {
	root := filepath.Join("..", "..", "shared", "provider-streams")
	var files []string
	for _, pat := range []string{"anthropic/*/*.sse", "anthropic/*/*.txt", "openai/openai-python/*.bin"} {
		m, _ := filepath.Glob(filepath.Join(root, pat))
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Skipf("no shared provider streams under %s", root)
	}
	up := newUpstream(t)
	rg := newRigWith(t, up, nil)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		up.mu.Lock()
		up.stream = string(b)
		up.mu.Unlock()
		_, got := rg.post(t, "/v1/messages", `{"stream":true}`, map[string]string{"Anthropic-Version": "2023-06-01"})
		if string(got) != string(b) {
			t.Errorf("%s: client got different bytes", f)
		}
	}
	ex := rg.readWAL(t)
	if len(ex) != len(files) {
		t.Fatalf("%d exchanges for %d files", len(ex), len(files))
	}
	bodies := map[string]bool{}
	for _, x := range ex {
		if !x.End.Complete {
			t.Errorf("incomplete: %+v", x.End)
		}
		bodies[string(x.ResponseBody)] = true
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if !bodies[string(b)] {
			t.Errorf("%s: recorded body differs", f)
		}
	}
	t.Logf("%d recorded streams replayed byte for byte", len(files))
}

// TestRequestAfterClose: a handler still running after Close (a forced
// server shutdown) records nothing, without a panic: in lossless mode it
// refuses the request (nothing unrecorded is forwarded), in degrade mode
// it forwards it.
func TestRequestAfterClose(t *testing.T) {
	for _, mode := range []Mode{Lossless, Degrade} {
		rg := newRig(t, &Options{Mode: mode})
		if err := rg.p.Close(); err != nil {
			t.Fatal(err)
		}
		resp, body := rg.post(t, "/v1/messages", `{}`, nil)
		switch mode {
		case Lossless:
			if resp.StatusCode != 503 || !strings.Contains(string(body), "shutting down") {
				t.Fatalf("lossless: %d %q", resp.StatusCode, body)
			}
		default:
			if resp.StatusCode != 200 || string(body) != anthropicSSE {
				t.Fatalf("%v: %d %q", mode, resp.StatusCode, body)
			}
		}
		if h := rg.p.Health(); h.Recorded != 0 {
			t.Fatalf("%v: recorded %d frames after close", mode, h.Recorded)
		}
	}
}

func TestPathModel(t *testing.T) {
	for _, tt := range []struct {
		path, model string
		stream, ok  bool
	}{
		{"/v1beta/models/gemini-2.5-pro:streamGenerateContent", "gemini-2.5-pro", true, true},
		{"/v1beta/models/gemini-2.5-flash:generateContent", "gemini-2.5-flash", false, true},
		{"/v1beta/models/gemini-2.5-flash:countTokens", "", false, false},
		{"/v1/messages", "", false, false},
		{"/v1beta/models", "", false, false},
	} {
		m, s, ok := pathModel(tt.path)
		if m != tt.model || s != tt.stream || ok != tt.ok {
			t.Errorf("pathModel(%q) = %q %v %v, want %q %v %v", tt.path, m, s, ok, tt.model, tt.stream, tt.ok)
		}
	}
}

// TestBigCompressedSecretRedacted: a compressed response too large to
// hold (over maxHeld compressed, lowered here to 1 MiB) is decoded as it
// streams and recorded decoded and redacted, a secret past the held part
// included; the client still gets the compressed bytes as sent.
func TestBigCompressedSecretRedacted(t *testing.T) {
	defer func(n int) { maxHeld = n }(maxHeld)
	maxHeld = 1 << 20
	for _, enc := range []string{"gzip", "zstd"} {
		t.Run(enc, func(t *testing.T) {
			rg := newRig(t, nil)
			req, _ := http.NewRequest("POST", rg.srv.URL+"/anthropic/big-secret-"+enc, strings.NewReader(`{}`))
			req.Header.Set("Accept-Encoding", enc)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			plain, err := httpbody.Decode(enc, raw)
			if err != nil || resp.Header.Get("Content-Encoding") != enc || len(raw) <= maxHeld || string(plain) != string(bigSecretBody()) {
				t.Fatalf("client got %d %s bytes that decode to %d bytes (%v)", len(raw), resp.Header.Get("Content-Encoding"), len(plain), err)
			}
			x := only(t, rg.readWAL(t))
			if !x.End.Decoded || x.End.Unscanned != "" || !x.End.Complete {
				t.Fatalf("end: decoded %v unscanned %q complete %v", x.End.Decoded, x.End.Unscanned, x.End.Complete)
			}
			body := string(x.ResponseBody)
			for _, k := range bigSecretKeys {
				if strings.Contains(body, k) {
					t.Errorf("secret %s recorded", k)
				}
			}
			if n := strings.Count(body, "[redacted:anthropic_key]"); n != len(bigSecretKeys) {
				t.Errorf("%d keys redacted, want %d", n, len(bigSecretKeys))
			}
			want := string(bigSecretBody())
			for _, k := range bigSecretKeys {
				want = strings.Replace(want, k, "[redacted:anthropic_key]", 1)
			}
			if body != want {
				t.Errorf("recorded body (%d bytes) is not the decoded body redacted (%d bytes)", len(body), len(want))
			}
		})
	}
}

// TestBigCompressedBroken: a large compressed response damaged past the
// held part is recorded decoded and redacted up to the damage, and the
// end says where decoding stopped and what was not recorded; the client
// still gets every byte as sent.
func TestBigCompressedBroken(t *testing.T) {
	defer func(n int) { maxHeld = n }(maxHeld)
	maxHeld = 1 << 20
	rg := newRig(t, nil)
	req, _ := http.NewRequest("POST", rg.srv.URL+"/anthropic/big-broken-gzip", strings.NewReader(`{}`))
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	x := only(t, rg.readWAL(t))
	if !x.End.Decoded || !strings.Contains(x.End.Unscanned, "not recorded") || x.End.ResponseBytes != int64(len(raw)) {
		t.Fatalf("end: decoded %v unscanned %q, %d response bytes (client got %d)", x.End.Decoded, x.End.Unscanned, x.End.ResponseBytes, len(raw))
	}
	body := string(x.ResponseBody)
	if strings.Contains(body, bigSecretKeys[0]) || !strings.HasPrefix(body, `{"id":"msg_big","content":[{"type":"text","text":"key [redacted:anthropic_key] then `) {
		t.Errorf("recorded body starts %.120q", body)
	}
	t.Logf("unscanned: %s", x.End.Unscanned)
}

// TestSizedReplyFlushedAsItComes: a reply with a Content-Length whose
// upstream sends it in two parts reaches the client part by part; the
// first part is not held in a buffer until the rest arrives.
func TestSizedReplyFlushedAsItComes(t *testing.T) {
	first, rest := `{"id":"msg_1","content":[{"type":"text","text":"half`, ` and the other half"}]}`
	gate := make(chan struct{})
	var gateOnce sync.Once
	open := func() { gateOnce.Do(func() { close(gate) }) }
	t.Cleanup(open)
	up := &upstream{Server: httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(first)+len(rest)))
		io.WriteString(w, first)
		w.(http.Flusher).Flush()
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, rest)
	}))}
	t.Cleanup(up.Close)
	rg := newRigWith(t, up, nil)
	req, _ := http.NewRequest("POST", rg.srv.URL+"/v1/messages", strings.NewReader(`{"model":"m"}`))
	var resp *http.Response
	got := make(chan error, 1)
	buf := make([]byte, len(first))
	go func() {
		var err error
		if resp, err = client.Do(req); err == nil {
			_, err = io.ReadFull(resp.Body, buf)
		}
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil || string(buf) != first {
			t.Fatalf("first part: %q, %v", buf, err)
		}
	case <-time.After(10 * time.Second):
		open()
		<-got
		t.Fatal("the first part of a sized reply did not reach the client before the rest was sent")
	}
	defer resp.Body.Close()
	// The request was held back to be written with the end; once part of
	// the reply went on, it must be in the WAL already.
	if !walHolds(t, rg, frame.KindRequestStart) {
		t.Error("part of the reply reached the client before its request was recorded")
	}
	open()
	tail, err := io.ReadAll(resp.Body)
	if err != nil || string(tail) != rest {
		t.Fatalf("rest: %q, %v", tail, err)
	}
	x := only(t, rg.readWAL(t))
	if string(x.ResponseBody) != first+rest || x.End == nil || !x.End.Complete {
		t.Fatalf("recorded %q, end %+v", x.ResponseBody, x.End)
	}
}

// walHolds reports whether the WAL written so far holds a frame of kind k.
func walHolds(t *testing.T, rg *rig, k frame.Kind) bool {
	t.Helper()
	r := rg.log.NewReader()
	defer r.Close()
	for r.Next() {
		if r.Header().Kind == k {
			return true
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return false
}

// TestSmallExchangeOneWrite: a small request with a small sized reply is
// recorded in one WAL write, at its end, whatever the mode that waits for
// its frames; a streamed reply gets its request written before it starts.
func TestSmallExchangeOneWrite(t *testing.T) {
	appends := func(p *Proxy) uint64 {
		var m dto.Metric
		if err := p.metrics.appendSeconds.Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram().GetSampleCount()
	}
	for _, mode := range []Mode{Lossless, Privacy} {
		t.Run(mode.String(), func(t *testing.T) {
			rg := newRig(t, &Options{Mode: mode})
			const n = 5
			for i := range n {
				resp, got := rg.post(t, fmt.Sprintf("/v1/json-split/%d", 1000), fmt.Sprintf(`{"model":"claude-sonnet-4","n":%d}`, i), nil)
				if resp.StatusCode != 200 || string(got) != splitReply {
					t.Fatalf("client got %d %q", resp.StatusCode, got)
				}
			}
			if got := appends(rg.p); mode == Lossless && got != n {
				t.Errorf("%d small exchanges took %d WAL writes, want one each", n, got)
			}
			xs := rg.readWAL(t)
			if len(xs) != n {
				t.Fatalf("%d exchanges recorded, want %d", len(xs), n)
			}
			for _, x := range xs {
				if x.Start == nil || x.End == nil || !x.End.Complete || x.Kinds[0] != frame.KindRequestStart {
					t.Errorf("exchange %d: frames %v", x.ID, x.Kinds)
				}
			}
		})
	}
}
