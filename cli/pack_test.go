package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/index"
)

// longTranscript is a Claude Code log of n tasks: each a prompt, a
// decision with an edit, a failing or passing test run and a summary.
func longTranscript(n int) string {
	var lines []string
	seq := 0
	ts := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	add := func(m map[string]any) {
		seq++
		ts = ts.Add(time.Second)
		m["uuid"] = fmt.Sprintf("00000000-0000-4000-8000-%012d", seq)
		m["sessionId"], m["timestamp"], m["cwd"], m["version"] = "44444444-2222-4333-8444-555555555555", ts.Format(time.RFC3339Nano), "/repo", "2.1.39"
		b, _ := json.Marshal(m)
		lines = append(lines, string(b))
	}
	words := strings.Fields("cache queue parser retry backoff index schema migration token budget worker pool lexer config router handler")
	for i := range n {
		w1, w2 := words[i%len(words)], words[(i*7+3)%len(words)]
		file := fmt.Sprintf("internal/%s/%s_%d.go", w1, w2, i)
		add(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": fmt.Sprintf("Task %d: improve the %s %s in %s.", i, w1, w2, file)}})
		add(map[string]any{"type": "assistant", "requestId": fmt.Sprintf("req_%d", seq), "message": map[string]any{
			"id": fmt.Sprintf("msg_%d", seq), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
			"content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("We decided to use a %s %s for %s because it is simpler.", w2, w1, file)},
				map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", i), "name": "Edit", "input": map[string]any{"file_path": file, "old_string": "a", "new_string": "b // TODO: tune " + w2}}},
			"stop_reason": "tool_use", "usage": map[string]any{"input_tokens": 900, "output_tokens": 90}}})
		add(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": fmt.Sprintf("toolu_%d", i), "content": "The file " + file + " has been updated."}}}})
		add(map[string]any{"type": "assistant", "requestId": fmt.Sprintf("req_%d", seq), "message": map[string]any{
			"id": fmt.Sprintf("msg_%d", seq), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
			"content":     []any{map[string]any{"type": "text", "text": fmt.Sprintf("Done: the %s %s now lives in %s. The %s must never block the %s.", w1, w2, file, w1, w2)}},
			"stop_reason": "end_turn", "usage": map[string]any{"input_tokens": 900, "output_tokens": 90}}})
	}
	return strings.Join(lines, "\n") + "\n"
}

// BenchmarkContext builds the context pack of a session of 1,000 tasks
// through the engine and the index, as `mem context` and the hook do:
// miss (another task each time: the artifacts stay loaded, the pack is
// built) and hit (the same task again: a lookup).
func BenchmarkContext(b *testing.B) {
	dir := b.TempDir()
	src := filepath.Join(b.TempDir(), "44444444-2222-4333-8444-555555555555.jsonl")
	writeFileB(b, src, longTranscript(1000))
	if code := Main([]string{"bbengine", "--dir", dir, "import", "claude", src, "--quiet"}, discard{}, discard{}); code != 0 {
		b.Fatalf("import: exit %d", code)
	}
	e, err := engine.Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	if _, err := e.CatchUp(context.Background()); err != nil {
		b.Fatal(err)
	}
	ix, err := index.Open(api.IndexDir(dir), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer ix.Close()
	m := api.NewLocal(e, &api.LocalOptions{Index: ix})
	const session = "claude:44444444-2222-4333-8444-555555555555"
	st, _ := e.MemoryState(session)
	b.Logf("session of %d tasks, %d artifacts", st.Tasks, len(st.Artifacts))
	measure := func(b *testing.B, task func(i int) string) {
		var ds []time.Duration
		i := 0
		for b.Loop() {
			t0 := time.Now()
			if _, err := m.Context(api.ContextRequest{Session: session, Task: task(i)}); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(t0))
			i++
		}
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(ds[len(ds)*95/100].Microseconds())/1000, "p95-ms")
	}
	b.Run("case=miss", func(b *testing.B) {
		measure(b, func(i int) string { return fmt.Sprintf("task %d: the retry backoff of the worker pool", i) })
	})
	b.Run("case=hit", func(b *testing.B) {
		measure(b, func(int) string { return "the retry backoff of the worker pool" })
	})
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func writeFileB(b *testing.B, path, text string) {
	b.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
}

// TestMemorySyncSkips checks that memory counting the engine's memory
// passes (as the proxy's does) syncs the index only when one happened
// since its last sync.
func TestMemorySyncSkips(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(t.TempDir(), "44444444-2222-4333-8444-555555555555.jsonl")
	if err := os.WriteFile(src, []byte(longTranscript(3)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := Main([]string{"bbengine", "--dir", dir, "import", "claude", src, "--quiet"}, discard{}, discard{}); code != 0 {
		t.Fatalf("import: exit %d", code)
	}
	e, err := engine.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	ix, err := index.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	var passes atomic.Uint64
	m := api.NewLocal(e, &api.LocalOptions{Index: ix, Changes: &passes})
	found := func() int {
		t.Helper()
		cs, err := m.Search(api.SearchRequest{Text: "tune"})
		if err != nil {
			t.Fatal(err)
		}
		return len(cs)
	}
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	if found() == 0 {
		t.Fatal("the first sync indexed nothing")
	}
	// Emptied behind its back, the index stays empty while no pass
	// happened: the sync is skipped.
	if err := ix.Reset(); err != nil {
		t.Fatal(err)
	}
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	if n := found(); n != 0 {
		t.Fatalf("a sync without a memory pass read the engine: %d cards", n)
	}
	passes.Add(1)
	if err := m.Sync(); err != nil {
		t.Fatal(err)
	}
	if found() == 0 {
		t.Fatal("a sync after a memory pass indexed nothing")
	}
}

// TestArtifactSums checks the engine's SumSource for the index: the ids
// of the memory state, artifacts read by id as Artifacts reads them, and
// a correction that changes the sum of its artifact only.
func TestArtifactSums(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(t.TempDir(), "44444444-2222-4333-8444-555555555555.jsonl")
	if err := os.WriteFile(src, []byte(longTranscript(3)), 0o600); err != nil {
		t.Fatal(err)
	}
	if code := Main([]string{"bbengine", "--dir", dir, "import", "claude", src, "--quiet"}, discard{}, discard{}); code != 0 {
		t.Fatalf("import: exit %d", code)
	}
	const session = "claude:44444444-2222-4333-8444-555555555555"
	read := func() ([]string, []uint64, []engine.Artifact) {
		t.Helper()
		e, err := engine.Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if _, err := e.CatchUp(context.Background()); err != nil {
			t.Fatal(err)
		}
		var _ index.SumSource = e
		ids, sums, err := e.ArtifactSums(session)
		if err != nil {
			t.Fatal(err)
		}
		st, err := e.MemoryState(session)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids, st.Artifacts) || len(sums) != len(ids) || len(ids) == 0 {
			t.Fatalf("ids %v (%d sums), memory state %v", ids, len(sums), st.Artifacts)
		}
		byID, err := e.ArtifactsByID(append(slices.Clone(ids), "no-such-artifact"))
		if err != nil {
			t.Fatal(err)
		}
		all, err := e.Artifacts(session)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(byID)
		b, _ := json.Marshal(all)
		if string(a) != string(b) {
			t.Fatalf("ArtifactsByID differs from Artifacts:\n%s\n%s", a, b)
		}
		return ids, sums, all
	}
	ids, before, arts := read()
	_, again, _ := read()
	if !slices.Equal(before, again) {
		t.Fatal("sums differ between two reads of the same memory")
	}
	pinned := arts[len(arts)/2].ID
	if code := Main([]string{"bbengine", "--dir", dir, "mem", "pin", pinned}, discard{}, discard{}); code != 0 {
		t.Fatalf("mem pin: exit %d", code)
	}
	_, after, _ := read()
	for i, id := range ids {
		if changed := before[i] != after[i]; changed != (id == pinned) {
			t.Errorf("%s: sum changed %v after pinning %s", id, changed, pinned)
		}
	}
}

// BenchmarkSessionRead reads the artifacts of a session of 1,800 as the
// index's Sync reads them from the engine: all of them decoded
// (read=artifacts, a plain Source) or their sums only (read=sums, the
// SumSource path, which then decodes only those that changed).
func BenchmarkSessionRead(b *testing.B) {
	dir := b.TempDir()
	src := filepath.Join(b.TempDir(), "44444444-2222-4333-8444-555555555555.jsonl")
	writeFileB(b, src, longTranscript(450))
	if code := Main([]string{"bbengine", "--dir", dir, "import", "claude", src, "--quiet"}, discard{}, discard{}); code != 0 {
		b.Fatalf("import: exit %d", code)
	}
	e, err := engine.Open(dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	if _, err := e.CatchUp(context.Background()); err != nil {
		b.Fatal(err)
	}
	const session = "claude:44444444-2222-4333-8444-555555555555"
	b.Run("read=artifacts", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			arts, err := e.Artifacts(session)
			if err != nil {
				b.Fatal(err)
			}
			n = len(arts)
		}
		b.ReportMetric(float64(n), "artifacts")
	})
	b.Run("read=sums", func(b *testing.B) {
		b.ReportAllocs()
		n := 0
		for b.Loop() {
			ids, _, err := e.ArtifactSums(session)
			if err != nil {
				b.Fatal(err)
			}
			n = len(ids)
		}
		b.ReportMetric(float64(n), "artifacts")
	})
}
