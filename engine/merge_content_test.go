package engine

import (
	"bytes"
	"context"
	"fmt"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/wal"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/engine/schema"
)

// geminiLogLines writes the lines [0, n) of the Gemini pair's log (all of it
// for n < 0) under session id sid, with line i's old replaced by new
// for each edit {i, old, new}, and returns its path.
func geminiLogLines(t *testing.T, sid string, n int, edits ...geminiEdit) string {
	t.Helper()
	return geminiLogAt(t, filepath.Join(t.TempDir(), "session-"+sid[:8]+".jsonl"), sid, n, edits...)
}

// geminiLogAt is geminiLogLines writing to path.
func geminiLogAt(t *testing.T, path, sid string, n int, edits ...geminiEdit) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(geminiPair, "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if n >= 0 {
		lines = lines[:n]
	}
	const orig = "121aa87b-ce61-4fb5-a082-0ea1851859fd"
	for i := range lines {
		lines[i] = strings.ReplaceAll(lines[i], orig, sid)
	}
	for _, ed := range edits {
		if !strings.Contains(lines[ed.line], ed.old) {
			t.Fatalf("line %d lacks %q", ed.line, ed.old)
		}
		lines[ed.line] = strings.Replace(lines[ed.line], ed.old, ed.new, 1)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type geminiEdit struct {
	line     int
	old, new string
}

// mergedWith returns the members of the merged session import id is in,
// "" when it is apart.
func mergedWith(t *testing.T, e *Engine, id string) string {
	t.Helper()
	ss, err := e.Sessions(SessionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if s.Merged != nil && strings.Contains(strings.Join(s.Merged.Members, " "), id) {
			return strings.Join(s.Merged.Members, " ")
		}
	}
	return ""
}

// TestMergeGeminiTieBroken: two logs tie for the proxied run (both
// apart); the run's fourth call then pairs with the first log with other
// usage, so only the second log still joins. The fourth call's reply key
// marks the first log only; deciding it again must decide the second
// again too (contentRivals: an import left apart that shares a first
// reply of the run), or incremental derivation leaves it apart where a
// rebuild merges it.
func TestMergeGeminiTieBroken(t *testing.T) {
	dir, log := newData(t)
	e := open(t, dir, log, &Options{BatchBytes: 2048})
	const a, b = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
	// a: the whole log, its last call (the text answer) with other usage;
	// b: the log's first three calls.
	pa := geminiLogLines(t, a, -1, geminiEdit{19, `"input":100`, `"input":101`})
	pb := geminiLogLines(t, b, 18)
	for _, p := range []string{pa, pb} {
		fi, err := ReadImport("gemini", p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := AppendImport(e.WAL(), fi.Records); err != nil {
			t.Fatal(err)
		}
	}
	copyFrames(t, filepath.Join(geminiPair, "wal"), log)
	for _, end := range frameEnds(t, log) {
		if _, err := e.CatchUpTo(context.Background(), end); err != nil {
			t.Fatal(err)
		}
	}
	catchUp(t, e)
	incA, incB := mergedWith(t, e, "gemini:"+a), mergedWith(t, e, "gemini:"+b)
	before := dump(t, e)
	if _, err := e.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	rebA, rebB := mergedWith(t, e, "gemini:"+a), mergedWith(t, e, "gemini:"+b)
	t.Logf("incremental: a %q, b %q; rebuild: a %q, b %q", incA, incB, rebA, rebB)
	if after := dump(t, e); after != before {
		t.Errorf("rebuild differs from the incremental state:\n%s", diffLines(before, after))
	}
	if incB == "" || incA != "" {
		t.Errorf("incremental: log b merged with %q, log a with %q; want b merged (a no longer pairs on usage) and a apart", incB, incA)
	}
}

// copyFramesReplacing is copyFrames with old replaced by new in every
// payload.
func copyFramesReplacing(t *testing.T, dir string, log *wal.Log, old, new string) {
	t.Helper()
	copyFramesEdited(t, dir, log, 0, old, new)
}

// copyFramesEdited is copyFrames with each pair of strings of repl
// replaced in every payload and shift added to every exchange id.
func copyFramesEdited(t *testing.T, dir string, log *wal.Log, shift uint64, repl ...string) {
	t.Helper()
	src, err := wal.Open(dir, &wal.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	r := src.NewReader()
	defer r.Close()
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
		for i := 0; i+1 < len(repl); i += 2 {
			if bytes.Contains(p, []byte(repl[i])) {
				n++
				p = bytes.ReplaceAll(p, []byte(repl[i]), []byte(repl[i+1]))
			}
		}
		x := h.Exchange
		if x != 0 {
			x += shift
		}
		if _, err := log.Append(wal.Record{Kind: h.Kind, Exchange: x, Time: h.Time, Last: h.Flags&frame.FlagLast != 0, Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	if n == 0 && len(repl) > 0 {
		t.Fatalf("no frame holds %q", repl[0])
	}
}

// TestMergeGeminiKeyRedacted: the live side's reply key ('j' 'r' key
// 'L') must be the key of the events as stored, redacted, as the import
// side's is and as the decision reads them. A reply holding a secret the
// engine redacts (here unredacted in the frames, as when a secret
// streams across SSE chunks the proxy redacts one by one) must mark its
// import when it breaks a tie, or the log stays apart incrementally and
// merges on rebuild.
func TestMergeGeminiKeyRedacted(t *testing.T) {
	dir, log := newData(t)
	e := open(t, dir, log, &Options{BatchBytes: 2048})
	const secret = "sk-ant-api03-Qm7vX2pL9sKd4TfR8wYb3NcJ6hGe1ZuA5oVi0qWx"
	const a, b = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
	const old = "GEMLIVE done: gemlive-run-1 read both files."
	repl := "GEMLIVE done: " + secret + " read both files."
	// a: the whole log; b: its first three calls. They tie until the
	// run's fourth call, which only a has.
	pa := geminiLogLines(t, a, -1, geminiEdit{19, old, repl})
	pb := geminiLogLines(t, b, 18)
	for _, p := range []string{pa, pb} {
		fi, err := ReadImport("gemini", p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := AppendImport(e.WAL(), fi.Records); err != nil {
			t.Fatal(err)
		}
	}
	copyFramesReplacing(t, filepath.Join(geminiPair, "wal"), log, old, repl)
	for _, end := range frameEnds(t, log) {
		if _, err := e.CatchUpTo(context.Background(), end); err != nil {
			t.Fatal(err)
		}
	}
	catchUp(t, e)
	incA := mergedWith(t, e, "gemini:"+a)
	before := dump(t, e)
	if _, err := e.Rebuild(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Logf("incremental: a %q; rebuild: a %q", incA, mergedWith(t, e, "gemini:"+a))
	if after := dump(t, e); after != before {
		t.Errorf("rebuild differs from the incremental state:\n%s", diffLines(before, after))
	}
	if incA == "" {
		t.Errorf("incremental: log a apart; want it merged (it pairs all 4 calls, b only 3)")
	}
}

// TestMergeGeminiLogMoved: a log merged by content is written again as
// another session (a new generation of the file whose first record names
// another id), so its old import session loses its only file. Its reply
// keys ('j' 'r' … 'I', 'j' 'k') must go and its group be decided again
// (importJob takes the source from the stored session), or the proxied
// run stays merged with an import that has no events, and a rebuild,
// which never forms that group, differs.
func TestMergeGeminiLogMoved(t *testing.T) {
	dir, log := newData(t)
	e := open(t, dir, log, nil)
	copyFrames(t, filepath.Join(geminiPair, "wal"), log)
	catchUp(t, e)
	const a, b = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
	path := geminiLogLines(t, a, -1)
	importPath(t, e, "gemini", path)
	if mergedWith(t, e, "gemini:"+a) == "" {
		t.Fatal("the log did not merge with the run")
	}
	// The same file, now another session of one call the run does not
	// have: it stays apart, and the old session has no file left.
	geminiLogAt(t, path, b, 8, geminiEdit{6, `"name":"list_directory"`, `"name":"glob"`})
	importPath(t, e, "gemini", path)
	old, err := e.Session("gemini:" + a)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("old import: %d events; merged with %q", old.Events, mergedWith(t, e, "gemini:"+a))
	if m := mergedWith(t, e, "gemini:"+a); m != "" {
		t.Errorf("the run is still merged with the emptied import: %s", m)
	}
	var stale int
	err = e.scan([]byte{schema.PrefixJoin, schema.JoinReply}, func(k, _ []byte) error {
		if k[2+schema.ReplyKeyLen] == schema.ReplyImport {
			stale++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := countPrefix(t, e, []byte{schema.PrefixJoin, schema.JoinKeys}); n != 1 {
		t.Errorf("%d import key lists ('j' 'k'), want 1 (the new session's)", n)
	}
	t.Logf("%d import reply keys", stale)
	sameAfterRebuild(t, e, dump(t, e), "rebuild differs after the log moved to another session")
}

// TestMergeGeminiCostOneLog: n proxied Gemini runs, each merged with its
// own log, whose first calls are alike (the same tool calls, as runs in
// one project often start) and whose answers differ. One more record in
// one log derives its own group again, not every group that shares a
// reply key with it: the others' live sessions pair better with their
// own logs (contentRivals).
func TestMergeGeminiCostOneLog(t *testing.T) {
	dir, log := newData(t)
	e := open(t, dir, log, nil)
	const n = 8
	const live = "ses_b212b59726750681339d4725864f8790"
	const answer = "GEMLIVE done: gemlive-run-1 read both files."
	var paths []string
	for i := range n {
		ans := fmt.Sprintf("GEMLIVE done: copy %02d read both files.", i)
		copyFramesEdited(t, filepath.Join(geminiPair, "wal"), log, uint64(i+1)*1000,
			live, fmt.Sprintf("ses_%032d", i), answer, ans)
		catchUp(t, e)
		sid := fmt.Sprintf("%08d-0000-4000-8000-000000000000", i)
		paths = append(paths, geminiLogLines(t, sid, -1, geminiEdit{19, answer, ans}))
		importPath(t, e, "gemini", paths[i])
		if mergedWith(t, e, "gemini:"+sid) == "" {
			t.Fatalf("run %d did not merge with its log", i)
		}
	}
	f, err := os.OpenFile(paths[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"$set":{"lastUpdated":"2026-11-27T17:15:37.000Z"}}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	catchUp(t, e)
	st, ok, err := e.ImportState(paths[0])
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	fi, err := ReadImport("gemini", paths[0], &st)
	if err != nil {
		t.Fatal(err)
	}
	if err := AppendImport(e.WAL(), fi.Records); err != nil {
		t.Fatal(err)
	}
	p := catchUp(t, e)
	if p.Merges != 1 {
		t.Errorf("one more record of one log derived %d merge groups again, want its own only", p.Merges)
	}
}
