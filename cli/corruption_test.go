package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/server"
	"github.com/bbengine/bbengine/wal"
)

// corruptDir returns a data directory holding three imported sessions in
// a WAL of small segments, derived and indexed, and the number of WAL
// frames (segment headers excluded).
func corruptDir(t *testing.T) (string, int) {
	t.Helper()
	dir, logs := t.TempDir(), t.TempDir()
	for i, id := range []string{"019e1625-789d-76c0-80ab-3724b5ddb799", "019e1625-789d-76c0-80ab-3724b5ddb7a0", "019e1625-789d-76c0-80ab-3724b5ddb7a1"} {
		body := strings.ReplaceAll(codexRollout, "019e1625-789d-76c0-80ab-3724b5ddb799", id)
		writeFile(t, logs, "rollout-2026-05-11T11-26-5"+string(rune('5'+i))+"-"+id+".jsonl", body)
	}
	if _, errs, code := run(t, "--dir", dir, "import", "codex", logs); code != 0 {
		t.Fatalf("import: %d %s", code, errs)
	}
	// Copy the log into segments of 512 bytes, then derive afresh.
	src, tmp := filepath.Join(dir, "wal"), filepath.Join(dir, "wal.new")
	old, err := wal.Open(src, &wal.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	nl, err := wal.Open(tmp, &wal.Options{SegmentSize: 512})
	if err != nil {
		t.Fatal(err)
	}
	r := old.NewReader()
	n := 0
	for r.Next() {
		h := r.Header()
		if h.Kind == frame.KindSegmentHeader {
			continue
		}
		p, err := r.Payload()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nl.Append(wal.Record{Kind: h.Kind, Exchange: h.Exchange, Time: h.Time, Last: h.Flags&frame.FlagLast != 0, Payload: p}); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if err := nl.Close(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{src, filepath.Join(dir, "db"), filepath.Join(dir, "index")} {
		if err := os.RemoveAll(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Rename(tmp, src); err != nil {
		t.Fatal(err)
	}
	if _, errs, code := run(t, "--dir", dir, "rebuild"); code != 0 {
		t.Fatalf("rebuild: %d %s", code, errs)
	}
	return dir, n
}

// segments returns the paths of the WAL's segments in offset order.
func segments(t *testing.T, dir string) []string {
	t.Helper()
	segs, err := filepath.Glob(filepath.Join(dir, "wal", "*.wal"))
	if err != nil || len(segs) < 4 {
		t.Fatalf("segments %v, %v; want at least 4", segs, err)
	}
	return segs
}

// damageFile flips the middle half of the bytes of the file matching
// pattern.
func damageFile(t *testing.T, pattern string) string {
	t.Helper()
	m, _ := filepath.Glob(pattern)
	if len(m) == 0 {
		t.Fatalf("no file matches %s", pattern)
	}
	b, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	for i := len(b) / 4; i < len(b)*3/4; i++ {
		b[i] ^= 0x5a
	}
	if err := os.WriteFile(m[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	return m[0]
}

// replayFrames counts the frames replay prints (segment headers
// excluded).
func replayFrames(t *testing.T, dir string) int {
	t.Helper()
	out, errs, code := run(t, "--dir", dir, "replay", "--format", "jsonl")
	if code != 0 {
		t.Fatalf("replay: %d %s", code, errs)
	}
	return strings.Count(out, "\n") - strings.Count(out, `"kind":"segment-header"`)
}

// TestCorruptionDerived is the corruption table for the commands: each
// row damages the WAL's segments or the derived state of a data directory
// and states what verify, replay, the other commands and rebuild report,
// and that everything readable is kept.
func TestCorruptionDerived(t *testing.T) {
	oneLine := func(t *testing.T, errs string, want ...string) {
		t.Helper()
		if strings.Count(strings.TrimSpace(errs), "\n") > 0 || strings.Contains(errs, "goroutine") {
			t.Errorf("not one line:\n%s", errs)
		}
		for _, w := range want {
			if !strings.Contains(errs, w) {
				t.Errorf("%q does not say %q", errs, w)
			}
		}
	}
	tests := []struct {
		name  string
		check func(t *testing.T, dir string, frames int, sessions, search string)
	}{
		{"missing segment", func(t *testing.T, dir string, frames int, sessions, search string) {
			segs := segments(t, dir)
			gone, next := segs[len(segs)/2], segs[len(segs)/2+1]
			lost := replayFramesIn(t, dir, gone)
			if err := os.Remove(gone); err != nil {
				t.Fatal(err)
			}
			out, errs, code := run(t, "--dir", dir, "wal", "verify")
			if code != 1 || !strings.Contains(out, "gap in the log") || !strings.Contains(out, next) || !strings.Contains(errs, "1 gap(s)") {
				t.Fatalf("verify: %d\n%s%s", code, out, errs)
			}
			_, errs, code = run(t, "--dir", dir, "replay")
			if code != 1 {
				t.Fatalf("replay across the gap: exit %d", code)
			}
			oneLine(t, errs, "gap in the log", next)
			_, errs, code = run(t, "--dir", dir, "rebuild")
			if code != 1 {
				t.Fatalf("rebuild across the gap: exit %d", code)
			}
			oneLine(t, errs, "refusing", next, "wal repair")
			if out, _, _ := run(t, "--dir", dir, "sessions"); out != sessions {
				t.Fatalf("a refused rebuild changed the sessions:\n%s\nwant\n%s", out, sessions)
			}
			proxyReports(t, dir, next)
			if out, errs, code = run(t, "--dir", dir, "wal", "repair"); code != 0 || !strings.Contains(out, "accepted a gap") {
				t.Fatalf("repair: %d %s %s", code, out, errs)
			}
			if _, errs, code = run(t, "--dir", dir, "wal", "verify"); code != 0 {
				t.Fatalf("verify after repair: %d %s", code, errs)
			}
			if got := replayFrames(t, dir); got != frames-lost {
				t.Fatalf("after repair replay reads %d frames, want %d of %d", got, frames-lost, frames)
			}
			if _, errs, code = run(t, "--dir", dir, "rebuild"); code != 0 {
				t.Fatalf("rebuild after repair: %d %s", code, errs)
			}
		}},
		{"renamed segment", func(t *testing.T, dir string, frames int, sessions, search string) {
			segs := segments(t, dir)
			victim := segs[len(segs)/2]
			base, err := strconv.ParseUint(strings.TrimSuffix(filepath.Base(victim), ".wal"), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			renamed := filepath.Join(dir, "wal", fmt.Sprintf("%016x.wal", base+8))
			if err := os.Rename(victim, renamed); err != nil {
				t.Fatal(err)
			}
			out, errs, code := run(t, "--dir", dir, "wal", "verify")
			if code != 1 || !strings.Contains(out, "gap in the log") {
				t.Fatalf("verify: %d\n%s%s", code, out, errs)
			}
			if !strings.Contains(out, renamed) || !strings.Contains(out, "different offset") {
				t.Fatalf("verify does not name the renamed segment %s:\n%s", renamed, out)
			}
			if _, errs, code = run(t, "--dir", dir, "replay"); code != 1 || !strings.Contains(errs, "gap in the log") {
				t.Fatalf("replay: %d %s", code, errs)
			}
			if _, errs, code = run(t, "--dir", dir, "rebuild"); code != 1 || !strings.Contains(errs, "refusing") {
				t.Fatalf("rebuild: %d %s", code, errs)
			}
			// Named back, nothing is lost.
			if err := os.Rename(renamed, victim); err != nil {
				t.Fatal(err)
			}
			if got := replayFrames(t, dir); got != frames {
				t.Fatalf("renamed back: replay reads %d frames, want %d", got, frames)
			}
		}},
		{"damaged Pebble file", func(t *testing.T, dir string, frames int, sessions, search string) {
			// Every table: which one holds what sessions reads depends
			// on how the store's writes were laid out (an import's
			// events are tables of their own).
			tables, _ := filepath.Glob(filepath.Join(dir, "db", "*.sst"))
			for _, f := range tables {
				damageFile(t, f)
			}
			_, errs, code := run(t, "--dir", dir, "sessions")
			if code != 1 {
				t.Fatalf("sessions on a damaged store: exit %d", code)
			}
			oneLine(t, errs, filepath.Join(dir, "db"), "bbengine rebuild")
			out, errs, code := run(t, "--dir", dir, "rebuild")
			if code != 0 {
				t.Fatalf("rebuild: %d %s", code, errs)
			}
			oneLine(t, errs, "set it aside as "+filepath.Join(dir, "db.damaged-"), "from the WAL")
			if m, _ := filepath.Glob(filepath.Join(dir, "db.damaged-*")); len(m) != 1 {
				t.Fatalf("set aside: %v", m)
			}
			if !strings.Contains(out, "indexed") {
				t.Fatalf("rebuild output: %s", out)
			}
		}},
		{"damaged Bluge segment", func(t *testing.T, dir string, frames int, sessions, search string) {
			damageFile(t, filepath.Join(dir, "index", "bluge", "*.seg"))
			_, errs, code := run(t, "--dir", dir, "mem", "search", "files")
			if code != 1 {
				t.Fatalf("search on a damaged index: exit %d", code)
			}
			oneLine(t, errs, filepath.Join(dir, "index"), "rebuild")
			_, errs, code = run(t, "--dir", dir, "rebuild")
			if code != 0 {
				t.Fatalf("rebuild: %d %s", code, errs)
			}
			oneLine(t, errs, "set it aside as "+filepath.Join(dir, "index.damaged-"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, frames := corruptDir(t)
			sessions, errs, code := run(t, "--dir", dir, "sessions")
			if code != 0 || strings.Count(sessions, "codex:") != 3 {
				t.Fatalf("sessions: %d %s%s", code, sessions, errs)
			}
			search, _, _ := run(t, "--dir", dir, "mem", "search", "files")
			tt.check(t, dir, frames, sessions, search)
			if strings.Contains(tt.name, "segment") && !strings.Contains(tt.name, "Bluge") {
				return // frames were lost on purpose
			}
			// Derived again, nothing is lost.
			if out, _, _ := run(t, "--dir", dir, "sessions"); out != sessions {
				t.Errorf("sessions after rebuild:\n%s\nwant\n%s", out, sessions)
			}
			if out, _, _ := run(t, "--dir", dir, "mem", "search", "files"); stripTiming(out) != stripTiming(search) {
				t.Errorf("search after rebuild:\n%s\nwant\n%s", out, search)
			}
		})
	}
}

// stripTiming drops the "N cards in 1ms" line's time.
func stripTiming(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if i := strings.Index(l, " cards in "); i >= 0 {
			l = l[:i]
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// replayFramesIn counts the frames of one segment file.
func replayFramesIn(t *testing.T, dir, seg string) int {
	t.Helper()
	infos, err := wal.Check(filepath.Join(dir, "wal"))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		if in.Path == seg {
			return in.Frames - 1
		}
	}
	t.Fatalf("no segment %s", seg)
	return 0
}

// proxyReports starts the proxy on dir, which has a segment missing: it
// records, and reports the gap on stderr and /_bb/health.
func proxyReports(t *testing.T, dir, next string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- server.Run(ctx, &stdout, &stderr, server.Config{Dir: dir, Listen: "127.0.0.1:0", Sync: wal.SyncInterval,
			Proxy: proxy.Options{Upstreams: map[string]string{"anthropic": "http://127.0.0.1:9"}}, Shutdown: 5 * time.Second}, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("proxy stopped: %v", err)
	}
	resp, err := http.Get("http://" + addr + "/_bb/health")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var h proxy.Health
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("health: %v %s", err, b)
	}
	if len(h.WALDamage) == 0 || !strings.Contains(h.WALDamage[0], "gap in the log") || !strings.Contains(h.WALDamage[0], next) {
		t.Errorf("health does not report the gap: %s", b)
	}
	if !strings.Contains(stderr.String(), "gap in the log") {
		t.Errorf("stderr at start does not report the gap:\n%s", stderr.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("proxy: %v", err)
	}
}
