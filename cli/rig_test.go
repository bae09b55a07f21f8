package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/server"
	"github.com/bbengine/bbengine/wal"
)

// sseUpstream answers every request with a short Anthropic stream.
func sseUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(sseAnswer))
	t.Cleanup(up.Close)
	return up
}

// sseAnswer answers a short Anthropic stream: "pong".
func sseAnswer(w http.ResponseWriter, r *http.Request) {
	{
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, ev := range []string{
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"claude-sonnet-4\",\"usage\":{\"input_tokens\":11,\"output_tokens\":1}}}\n\n",
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"pong\"}}\n\n",
			"event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":3}}\n\n",
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"} {
			io.WriteString(w, ev)
			w.(http.Flusher).Flush()
		}
	}
}

// startProxy runs the proxy as the command does on dir until stop is
// called or the test ends, and returns its address and the harness
// API's (with api).
func startProxy(t *testing.T, dir string, opts proxy.Options, api bool) (addr, apiAddr string, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	ready := make(chan string, 1)
	apiReady := make(chan string, 1)
	done := make(chan error, 1)
	cfg := server.Config{Dir: dir, Listen: "127.0.0.1:0", Sync: wal.SyncInterval, Proxy: opts, Shutdown: 5 * time.Second}
	if api {
		cfg.API, cfg.APIReady = "127.0.0.1:0", apiReady
	}
	go func() { done <- server.Run(ctx, &stdout, &stderr, cfg, ready) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("proxy: %v\n%s", err, stderr.String())
		}
	}
	t.Cleanup(stop)
	select {
	case addr = <-ready:
	case err := <-done:
		stopped = true
		t.Fatalf("proxy stopped: %v\n%s", err, stderr.String())
	}
	if api {
		apiAddr = <-apiReady
	}
	return addr, apiAddr, stop
}
