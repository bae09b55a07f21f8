package api_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/server"
	"github.com/bbengine/bbengine/wal"
)

// TestDoctorPeekProxyStarts: a proxy starts on the data directory after
// doctor found it free and opened its derived state, before doctor reads
// it. Doctor drops what it read and asks the proxy for the derivation
// lag instead: no offset read here, no fail.
func TestDoctorPeekProxyStarts(t *testing.T) {
	home := t.TempDir()
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("CODEX_HOME", "")
	dir := filepath.Join(home, "data")
	log, err := wal.Open(filepath.Join(dir, "wal"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.Open(dir, &engine.Options{WAL: log})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := api.NewLocal(e, &api.LocalOptions{WAL: log}).Note(exchange.Note{Op: "checkpoint", Session: "s1", Text: "step", Source: "run"}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}

	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no upstream", http.StatusTeapot) }))
	defer up.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	started := false
	api.SetPeekHook(func() {
		started = true
		ready := make(chan string, 1)
		go func() {
			done <- server.Run(ctx, io.Discard, io.Discard, server.Config{Dir: dir, Listen: "127.0.0.1:0", Sync: wal.SyncInterval,
				Proxy: proxy.Options{Upstreams: map[string]string{"anthropic": up.URL}}, Shutdown: 5 * time.Second}, ready)
		}()
		select {
		case <-ready:
		case err := <-done:
			t.Fatalf("proxy stopped: %v", err)
		}
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if h, held, _ := engine.ReadHolder(dir); held && h.Proxy != "" {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the proxy never holds the directory")
			}
		}
	})
	defer api.SetPeekHook(nil)
	rep, err := api.Doctor(context.Background(), api.DoctorRequest{Dir: dir, Home: home, ProjectDir: home, Exe: "/usr/bin/bbengine"})
	api.SetPeekHook(nil)
	if started {
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("proxy: %v", err)
			}
		}()
	} else {
		cancel()
		t.Fatal("doctor never opened the derived state")
	}
	if err != nil {
		t.Fatal(err)
	}
	var lag *agents.Finding
	for i, f := range rep.Findings {
		if f.Agent == "bbengine" && f.Check == "lag" {
			lag = &rep.Findings[i]
		}
		if f.Severity == agents.Fail || strings.Contains(f.Fix, "rebuild") {
			t.Errorf("finding with a proxy starting: %+v", f)
		}
	}
	if lag == nil {
		t.Fatalf("no lag finding: %+v", rep.Findings)
	}
	if strings.Contains(lag.Message, "offset") || strings.Contains(lag.Message, "while doctor read it") || strings.HasPrefix(lag.Message, "derivation lag:") {
		t.Errorf("lag with a proxy starting, want the proxy's figures: %+v", *lag)
	}
}
