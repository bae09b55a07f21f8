package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/server"
	"github.com/bbengine/bbengine/wal"
)

// syncBuffer is a bytes.Buffer safe for the proxy's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestProxyCommand runs the proxy as the command does, sends a streamed
// request through it, stops it like SIGINT would, and reads the exchange
// back with `bbengine replay`.
func TestProxyCommand(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(sseAnswer))
	defer up.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, &stdout, &stderr, server.Config{Dir: dir, Listen: "127.0.0.1:0", Sync: wal.SyncInterval,
			Proxy: proxy.Options{Upstreams: map[string]string{"anthropic": up.URL}}, Shutdown: 5 * time.Second}, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("proxy stopped: %v", err)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/messages",
		strings.NewReader(`{"model":"claude-sonnet-4","stream":true,"messages":[{"role":"user","content":"ping"}]}`))
	req.Header.Set("X-Bb-Session-Id", "cli-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	exchangeID := resp.Header.Get("X-Bb-Exchange-Id")
	if !strings.Contains(string(body), "message_stop") {
		t.Fatalf("stream: %q", body)
	}
	// replay works while the proxy is still running.
	out, errs, code := run(t, "--dir", dir, "replay", "--from", "0", "--format", "jsonl")
	if code != 0 {
		t.Fatalf("replay while running: %d %s", code, errs)
	}
	// sessions and show ask the running proxy, which owns the directory.
	out, errs, code = run(t, "--dir", dir, "sessions", "--json")
	if code != 0 || !strings.Contains(out, `"id": "cli-1"`) || !strings.Contains(out, `"requests": 1`) {
		t.Fatalf("sessions while running: %d %s %s", code, out, errs)
	}
	out, errs, code = run(t, "--dir", dir, "show", "cli-1")
	if code != 0 || !strings.Contains(out, "u: ping") || !strings.Contains(out, "a: pong") || !strings.Contains(out, "prompt_tokens=11 completion_tokens=3") {
		t.Fatalf("show while running: %d\n%s%s", code, out, errs)
	}
	// import sends its records to the running proxy.
	rollout := writeFile(t, t.TempDir(), "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl", codexRollout)
	_, errs, code = run(t, "--dir", dir, "import", "codex", rollout)
	if code != 0 || !strings.Contains(errs, "imported 6 records") {
		t.Fatalf("import while running: %d %s", code, errs)
	}
	out, errs, code = run(t, "--dir", dir, "show", "019e1625")
	if code != 0 || !strings.Contains(out, "u: list the files") || !strings.Contains(out, "a: two files") {
		t.Fatalf("show of an import while running: %d\n%s%s", code, out, errs)
	}
	if _, errs, code = run(t, "--dir", dir, "import", "codex", rollout); code != 0 || !strings.Contains(errs, "imported 0 records") {
		t.Fatalf("second import while running: %d %s", code, errs)
	}
	// Memory through the running proxy: the recorded exchange and the
	// import are searchable, and a correction goes to the proxy's WAL.
	out, errs, code = run(t, "--dir", dir, "mem", "search", "pong", "--json")
	if code != 0 || !strings.Contains(out, `"session": "cli-1"`) {
		t.Fatalf("mem search while running: %d\n%s%s", code, out, errs)
	}
	out, errs, code = run(t, "--dir", dir, "mem", "search", "list the files", "--type", "outcome", "--json")
	var cards []engine.Card
	if code != 0 || json.Unmarshal([]byte(out), &cards) != nil || len(cards) == 0 || cards[0].Session != "codex:019e1625-789d-76c0-80ab-3724b5ddb799" {
		t.Fatalf("mem search of an import while running: %d\n%s%s", code, out, errs)
	}
	if out, errs, code = run(t, "--dir", dir, "mem", "pin", cards[0].ID); code != 0 || !strings.Contains(out, "pinned artifact "+cards[0].ID) {
		t.Fatalf("mem pin while running: %d\n%s%s", code, out, errs)
	}
	if out, errs, code = run(t, "--dir", dir, "mem", "get", cards[0].ID); code != 0 || !strings.Contains(out, " pinned") {
		t.Fatalf("mem get while running: %d\n%s%s", code, out, errs)
	}
	// rebuild needs the directory to itself and names who has it.
	_, errs, code = run(t, "--dir", dir, "rebuild")
	if code != 1 || !strings.Contains(errs, fmt.Sprintf("process %d", os.Getpid())) {
		t.Fatalf("rebuild while running: %d %s", code, errs)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("proxy: %v", err)
	}
	// With the proxy gone the commands open the directory themselves.
	out, errs, code = run(t, "--dir", dir, "sessions")
	if code != 0 || !strings.Contains(out, "cli-1") || !strings.Contains(out, "claude-sonnet-4") {
		t.Fatalf("sessions after stop: %d %s %s", code, out, errs)
	}
	out, errs, code = run(t, "--dir", dir, "trace", exchangeID)
	if code != 0 || !strings.Contains(out, "response-end") || !strings.Contains(out, `"text":"pong"`) || !strings.Contains(out, "session cli-1 seq 1..") {
		t.Fatalf("trace: %d\n%s%s", code, out, errs)
	}
	out, errs, code = run(t, "--dir", dir, "sessions")
	if code != 0 || !strings.Contains(out, "codex:019e1625") {
		t.Fatalf("imported session after stop: %d %s %s", code, out, errs)
	}
	out, errs, code = run(t, "--dir", dir, "rebuild")
	if code != 0 || !strings.Contains(out, "1 exchanges") {
		t.Fatalf("rebuild: %d %s %s", code, out, errs)
	}
	for _, want := range []string{"export ANTHROPIC_BASE_URL=http://" + addr, "OPENAI_BASE_URL=http://" + addr + "/v1", "GOOGLE_GEMINI_BASE_URL", "WAL flushed and synced"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	out, errs, code = run(t, "--dir", dir, "replay", "--from", "0")
	if code != 0 {
		t.Fatalf("replay: %d %s", code, errs)
	}
	for _, kind := range []string{"request-start", "request-body", "response-start", "response-body", "response-end"} {
		if !strings.Contains(out, kind) {
			t.Errorf("replay lacks %s:\n%s", kind, out)
		}
	}
}

func TestProxyFlags(t *testing.T) {
	for _, args := range [][]string{
		{"proxy", "--mode", "fast"},
		{"proxy", "--sync", "sometimes"},
		{"proxy", "--upstream", "noequals"},
		{"proxy", "extra"},
		{"proxy", "--allow-origin", "*"},
		{"proxy", "--allow-origin", "localhost:5173"},
	} {
		if _, errs, code := run(t, append([]string{"--dir", t.TempDir()}, args...)...); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, errs)
		}
	}
	_, errs, code := run(t, "--dir", t.TempDir(), "proxy", "--upstream", "anthropic=ftp://x", "--listen", "127.0.0.1:0")
	if code != 1 || !strings.Contains(errs, `upstream anthropic="ftp://x"`) {
		t.Errorf("bad upstream URL: %d %q", code, errs)
	}
}

// codexRollout is a small Codex rollout: a prompt, an answer, usage.
const codexRollout = `{"timestamp":"2026-05-11T08:27:17.000Z","type":"session_meta","payload":{"id":"019e1625-789d-76c0-80ab-3724b5ddb799","timestamp":"2026-05-11T08:27:17.000Z","cwd":"/work","originator":"codex-tui","cli_version":"0.125.0","model_provider":"openai"}}
{"timestamp":"2026-05-11T08:27:18.000Z","type":"turn_context","payload":{"turn_id":"t1","cwd":"/work","model":"gpt-5.5"}}
{"timestamp":"2026-05-11T08:27:19.000Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"list the files"}]}}
{"timestamp":"2026-05-11T08:27:19.001Z","type":"event_msg","payload":{"type":"user_message","message":"list the files","images":[]}}
{"timestamp":"2026-05-11T08:27:21.000Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"two files"}]}}
{"timestamp":"2026-05-11T08:27:21.500Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":120,"cached_input_tokens":100,"output_tokens":7,"reasoning_output_tokens":0,"total_tokens":127},"last_token_usage":{"input_tokens":120,"cached_input_tokens":100,"output_tokens":7,"reasoning_output_tokens":0,"total_tokens":127}}}}
`

func TestParseByteSize(t *testing.T) {
	for in, want := range map[string]int64{"160MiB": 160 << 20, "1GiB": 1 << 30, "1.5 GiB": 3 << 29, "200MB": 200e6, "4096": 4096, "64kib": 64 << 10, "off": 0, "OFF": 0} {
		if got, err := parseByteSize(in); err != nil || got != want {
			t.Errorf("parseByteSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1MiB", "12XB", "1e99GiB", "ten"} {
		if got, err := parseByteSize(in); err == nil {
			t.Errorf("parseByteSize(%q) = %d, want an error", in, got)
		}
	}
}
