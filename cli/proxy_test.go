package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbengine/bbengine/proxy"
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
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{"event: message_start\ndata: {\"type\":\"message_start\"}\n\n", "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"} {
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
	}))
	defer up.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- runProxy(ctx, &stdout, &stderr, proxyConfig{dir: dir, listen: "127.0.0.1:0", sync: wal.SyncInterval,
			opts: proxy.Options{Upstreams: map[string]string{"anthropic": up.URL}}, shutdown: 5 * time.Second}, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("proxy stopped: %v", err)
	}
	resp, err := http.Post("http://"+addr+"/v1/messages", "application/json", strings.NewReader(`{"model":"claude-sonnet-4","stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "message_stop") {
		t.Fatalf("stream: %q", body)
	}
	// replay works while the proxy is still running.
	out, errs, code := run(t, "--dir", dir, "replay", "--from", "0", "--format", "jsonl")
	if code != 0 {
		t.Fatalf("replay while running: %d %s", code, errs)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("proxy: %v", err)
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
