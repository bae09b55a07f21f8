package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/server"
	"github.com/bbengine/bbengine/wal"
)

// TestProxyRetention runs the proxy with a size cap on the WAL and small
// segments: while requests flow, retention removes the oldest segments in
// the background (it shows on /_bb/health and /_bb/metrics), every
// session stays with its events, the trace of an early exchange says its
// frames expired and when, no secret of the requests is in any file of
// the directory (the snapshot included), and after the proxy stops a
// rebuild gives the same sessions and timelines.
func TestProxyRetention(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(sseAnswer))
	defer up.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, &stdout, &stderr, server.Config{Dir: dir, Listen: "127.0.0.1:0", Sync: wal.SyncInterval,
			Proxy: proxy.Options{Upstreams: map[string]string{"anthropic": up.URL}}, Shutdown: 5 * time.Second,
			Retention: engine.Retention{RawBytes: 12 << 10}, RetentionEvery: 20 * time.Millisecond, SegmentSize: 4 << 10}, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("proxy stopped: %v", err)
	}
	const secret = "sk-ant-api03-" + "RETAINxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx-AA"
	var first string
	for i := range 40 {
		body := fmt.Sprintf(`{"model":"claude-sonnet-4","stream":true,"messages":[{"role":"user","content":"request %d: %s"}]}`, i, strings.Repeat("words ", 60))
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/messages", strings.NewReader(body))
		req.Header.Set("X-Bb-Session-Id", fmt.Sprintf("ret-%02d", i))
		req.Header.Set("X-Api-Key", secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if i == 0 {
			first = resp.Header.Get("X-Bb-Exchange-Id")
		}
	}
	// Wait for a run that removed segments: its counters are updated
	// once it is over.
	get := func(path string) string {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	removed := regexp.MustCompile(`(?m)^bbengine_retention_removed_segments_total ([1-9][0-9]*)$`)
	for deadline := time.Now().Add(20 * time.Second); !removed.MatchString(get("/_bb/metrics")); {
		if time.Now().After(deadline) {
			t.Fatalf("no retention run removed anything:\n%s\n%s", grepLines(get("/_bb/metrics"), "bbengine_retention"), stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var health proxy.Health
	if err := json.Unmarshal([]byte(get("/_bb/health")), &health); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(health.Retention, "at most 12.0 KiB of WAL") || !strings.Contains(health.Retention, "last run") {
		t.Errorf("health: retention %q", health.Retention)
	}
	if rs, err := engine.ExpiredIn(dir); err != nil || len(rs) == 0 {
		t.Errorf("expired ranges: %v, %v", rs, err)
	}
	out, errs, code := run(t, "--dir", dir, "trace", first)
	if code == 0 || !strings.Contains(errs, "expired on "+time.Now().UTC().Format(time.DateOnly)+" by retention") {
		t.Errorf("trace of an expired exchange: %d\n%s%s", code, out, errs)
	}
	sessions, errs, code := run(t, "--dir", dir, "sessions", "--json")
	if code != 0 || strings.Count(sessions, `"id": "ret-`) != 40 {
		t.Fatalf("sessions while running: %d\n%s%s", code, sessions, errs)
	}
	show, errs, code := run(t, "--dir", dir, "show", "ret-00")
	if code != 0 || !strings.Contains(show, "u: request 0") || !strings.Contains(show, "a: pong") {
		t.Fatalf("show of an expired session: %d\n%s%s", code, show, errs)
	}
	// gc through the running proxy: its dry run reports the WAL.
	if out, errs, code := run(t, "--dir", dir, "gc", "--dry-run", "--retention-max-size", "12KiB", "--retention-memory-days", "3650"); code != 0 || !strings.Contains(out, "WAL: would remove") || !strings.Contains(out, "memory: would forget 0 sessions") {
		t.Errorf("gc --dry-run through the proxy: %d\n%s%s", code, out, errs)
	}
	if cards := memJSON[[]engine.Card](t, "--dir", dir, "mem", "list", "ret-00"); len(cards) == 0 {
		t.Error("no memory of an expired session")
	} else if out, errs, code := run(t, "--dir", dir, "mem", "get", cards[0].ID); code != 0 || !strings.Contains(out, "(raw frames expired on "+time.Now().UTC().Format(time.DateOnly)+")") {
		t.Errorf("mem get of an expired session's artifact: %d\n%s%s", code, out, errs)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("proxy: %v\n%s", err, stderr.String())
	}
	filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			if b, _ := os.ReadFile(path); strings.Contains(string(b), secret) {
				t.Errorf("%s holds the secret", path)
			}
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(dir, "snapshot")); err != nil {
		t.Fatalf("no snapshot: %v", err)
	}
	sessionsBefore, _, _ := run(t, "--dir", dir, "sessions", "--json")
	if _, errs, code := run(t, "--dir", dir, "rebuild"); code != 0 {
		t.Fatalf("rebuild: %d %s", code, errs)
	}
	if after, _, _ := run(t, "--dir", dir, "sessions", "--json"); after != sessionsBefore {
		t.Errorf("sessions after rebuild differ:\n%s\n---\n%s", sessionsBefore, after)
	}
	if again, _, _ := run(t, "--dir", dir, "show", "ret-00"); again != show {
		t.Errorf("show after rebuild differs:\n%s\n---\n%s", show, again)
	}
	// A backup of the trimmed directory, full or raw, restores to the
	// same sessions, and so does a rebuild of the restored directory.
	for _, raw := range []bool{false, true} {
		dest := filepath.Join(t.TempDir(), "b")
		args := []string{"--dir", dir, "backup", dest}
		if raw {
			args = append(args, "--raw")
		}
		if _, errs, code := run(t, args...); code != 0 {
			t.Fatalf("backup (raw %v): %d %s", raw, code, errs)
		}
		to := filepath.Join(t.TempDir(), "r")
		if _, errs, code := run(t, "--dir", to, "restore", dest); code != 0 {
			t.Fatalf("restore (raw %v): %d %s", raw, code, errs)
		}
		for _, step := range []string{"restored", "rebuilt"} {
			if step == "rebuilt" {
				if _, errs, code := run(t, "--dir", to, "rebuild"); code != 0 {
					t.Fatalf("rebuild of the restore: %d %s", code, errs)
				}
			}
			if got, _, _ := run(t, "--dir", to, "sessions", "--json"); got != sessionsBefore {
				t.Errorf("raw %v, %s: sessions differ:\n%s", raw, step, got)
			}
		}
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestRetentionConfig: retention is set in the config file's retention:
// section, the environment or flags (flags, then the environment, then
// the file), and shows on /_bb/health; a misspelt key or a bad size is an
// error naming it.
func TestRetentionConfig(t *testing.T) {
	cfg := writeFile(t, t.TempDir(), "bb.yaml", "retention:\n  raw_days: 30\n  max_size: 1GiB\n  memory_days: 365\n")
	health := func(global []string, args ...string) string {
		t.Helper()
		dir := t.TempDir()
		p := startCmdProxy(t, append([]string{"--dir", dir}, global...), args...)
		defer p.stop(t)
		resp, err := http.Get("http://" + p.addr + "/_bb/health")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var h proxy.Health
		json.NewDecoder(resp.Body).Decode(&h)
		return h.Retention
	}
	if got := health([]string{"--config", cfg}); !strings.HasPrefix(got, "keeps raw frames for 30 days, at most 1.0 GiB of WAL, memory for 365 days") {
		t.Errorf("from the file: %q", got)
	}
	t.Setenv("BBENGINE_RETENTION_RAW_DAYS", "7")
	if got := health([]string{"--config", cfg}, "--retention-max-size", "500MiB"); !strings.HasPrefix(got, "keeps raw frames for 7 days, at most 500.0 MiB of WAL, memory for 365 days") {
		t.Errorf("environment and flag over the file: %q", got)
	}
	t.Setenv("BBENGINE_RETENTION_RAW_DAYS", "")
	if got := health(nil); got != "" {
		t.Errorf("no retention set, health says %q", got)
	}

	bad := writeFile(t, t.TempDir(), "bb.yaml", "retention:\n  raw_dayz: 3\n")
	if _, errs, code := run(t, "--dir", t.TempDir(), "--config", bad, "proxy", "--listen", "127.0.0.1:0"); code != 1 || !strings.Contains(errs, `bb.yaml:2: unknown key "raw_dayz" in retention:`) {
		t.Errorf("misspelt key: %d %s", code, errs)
	}
	if _, errs, code := run(t, "--dir", t.TempDir(), "proxy", "--retention-max-size", "lots"); code != 2 || !strings.Contains(errs, "--retention-max-size") {
		t.Errorf("bad size: %d %s", code, errs)
	}
	if _, errs, code := run(t, "--dir", t.TempDir(), "proxy", "--retention-raw-days", "-1"); code != 2 || !strings.Contains(errs, "cannot be negative") {
		t.Errorf("negative days: %d %s", code, errs)
	}
}

// TestGCRetention: bbengine gc applies the retention of the config file
// once; --dry-run lists the segments that would go and what they free
// and changes nothing; gc with nothing to do is a usage error.
func TestGCRetention(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(sseAnswer))
	defer up.Close()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr syncBuffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, io.Discard, &stderr, server.Config{Dir: dir, Listen: "127.0.0.1:0", Sync: wal.SyncInterval,
			Proxy: proxy.Options{Upstreams: map[string]string{"anthropic": up.URL}}, Shutdown: 5 * time.Second, SegmentSize: 4 << 10}, ready)
	}()
	addr := <-ready
	for i := range 30 {
		body := fmt.Sprintf(`{"model":"claude-sonnet-4","stream":true,"messages":[{"role":"user","content":"request %d: %s"}]}`, i, strings.Repeat("words ", 60))
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/messages", strings.NewReader(body))
		req.Header.Set("X-Bb-Session-Id", fmt.Sprintf("gc-%02d", i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("proxy: %v\n%s", err, stderr.String())
	}
	sessions, _, _ := run(t, "--dir", dir, "sessions", "--json")
	segs := func() int {
		m, _ := filepath.Glob(filepath.Join(dir, "wal", "*.wal"))
		return len(m)
	}
	n := segs()
	cfg := writeFile(t, t.TempDir(), "bb.yaml", "retention:\n  max_size: 12KiB\n")
	out, errs, code := run(t, "--dir", dir, "--config", cfg, "gc", "--dry-run")
	if code != 0 || !strings.Contains(out, "would remove") || !strings.Contains(out, "WAL: would remove") || segs() != n {
		t.Fatalf("gc --dry-run: %d, %d of %d segments left\n%s%s", code, segs(), n, out, errs)
	}
	out, errs, code = run(t, "--dir", dir, "--config", cfg, "gc")
	if code != 0 || !strings.Contains(out, "WAL: removed") || segs() >= n {
		t.Fatalf("gc: %d, %d of %d segments left\n%s%s", code, segs(), n, out, errs)
	}
	if after, _, _ := run(t, "--dir", dir, "sessions", "--json"); after != sessions {
		t.Errorf("sessions after gc differ")
	}
	if _, errs, code := run(t, "--dir", dir, "gc"); code != 2 || !strings.Contains(errs, "say what to remove") {
		t.Errorf("gc with nothing to do: %d %s", code, errs)
	}
}
