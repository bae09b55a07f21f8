package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/server"
	"github.com/bbengine/bbengine/wal"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
)

// TestDerivationDiskFull: Pebble's writes fail with ENOSPC under the
// running proxy. Pebble panics; derivation stops with a clear status on
// /_bb/health and in the log, and the proxy never goes down and keeps
// recording every exchange.
func TestDerivationDiskFull(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"pong"},"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":3}}`)
	}))
	defer up.Close()
	dir := t.TempDir()
	var full atomic.Bool
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if full.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite && strings.HasPrefix(op.Path, filepath.Join(dir, "db")) {
			return syscall.ENOSPC
		}
		return nil
	}))
	start := func(fs vfs.FS) (addr string, stop func() error, stderr *syncBuffer) {
		ctx, cancel := context.WithCancel(context.Background())
		var stdout syncBuffer
		stderr = &syncBuffer{}
		ready := make(chan string, 1)
		done := make(chan error, 1)
		go func() {
			done <- server.Run(ctx, &stdout, stderr, server.Config{Dir: dir, Listen: "127.0.0.1:0", Sync: wal.SyncInterval,
				Proxy: proxy.Options{Upstreams: map[string]string{"openai": up.URL}}, Shutdown: 5 * time.Second, FS: fs}, ready)
		}()
		select {
		case addr = <-ready:
		case err := <-done:
			t.Fatalf("proxy stopped: %v", err)
		}
		return addr, func() error { cancel(); return <-done }, stderr
	}
	health := func(addr string) proxy.Health {
		resp, err := http.Get("http://" + addr + "/_bb/health")
		if err != nil {
			t.Fatalf("health: %v", err)
		}
		defer resp.Body.Close()
		var h proxy.Health
		if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	send := func(addr string, i int) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions",
			strings.NewReader(fmt.Sprintf(`{"model":"gpt-4o","messages":[{"role":"user","content":"ping %d %s"}]}`, i, strings.Repeat("y", 4000))))
		req.Header.Set("X-Bb-Session-Id", fmt.Sprintf("full-%d", i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("request %d: the proxy is down: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), "pong") {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, b)
		}
	}
	waitFor := func(what string, cond func() bool) {
		deadline := time.Now().Add(60 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	addr, stop, stderr := start(fs)
	waitFor("derivation to run", func() bool { return health(addr).Derivation == "ok" })
	send(addr, 0)
	full.Store(true)
	i := 1
	waitFor("derivation to pause", func() bool {
		send(addr, i)
		i++
		return health(addr).Derivation != "ok"
	})
	h := health(addr)
	t.Logf("after %d requests on a full disk: derivation %q", i, h.Derivation)
	if h.Status != "ok" || !strings.Contains(h.Derivation, "no space left") {
		t.Fatalf("health: %+v", h)
	}
	for j := range 5 {
		send(addr, i+j) // still forwarding and recording
	}
	full.Store(false)
	if !strings.Contains(stderr.String(), "no space left") {
		t.Fatalf("the log does not say why derivation stopped:\n%s", stderr.String())
	}
	last := i + 4
	if err := stop(); err == nil || !strings.Contains(err.Error(), "derivation stopped") {
		t.Errorf("the proxy stopped with %v, want it to say derivation stopped", err)
	}
	// Every exchange is in the WAL; a new process derives them (an
	// abandoned Pebble keeps its lock in this one).
	out, errs, code := run(t, "--dir", dir, "replay", "--from", "0", "--format", "jsonl")
	if code != 0 {
		t.Fatalf("replay: %d %s", code, errs)
	}
	for _, j := range []int{0, 1, i, last} {
		if !strings.Contains(out, fmt.Sprintf(`full-%d\"`, j)) {
			t.Fatalf("exchange %d is not in the WAL:\n%.2000s", j, out)
		}
	}
}
