package engine

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/engine/schema"
	"github.com/bbengine/bbengine/wal"
)

// geminiPair is a real Gemini CLI 0.61.0 run with three tool calls,
// proxied by bbengine proxy (wal/) against e2e's fake Gemini API, and the
// log the CLI wrote of it (session.jsonl); made by e2e's
// TestGeminiLiveSessions with BBENGINE_GEMINI_PAIR.
var geminiPair = filepath.Join("testdata", "merge", "gemini-cli-0.61.0")

// copyFrames appends the frames of the WAL in dir to log, as they are.
func copyFrames(t *testing.T, dir string, log *wal.Log) {
	t.Helper()
	copyFramesEdited(t, dir, log, 0)
}

// geminiLog returns the pair's log with each old string replaced by its
// new one, written to a new file, and the log's session id.
func geminiLog(t *testing.T, replace ...string) (string, string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(geminiPair, "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(replace); i += 2 {
		if !bytes.Contains(b, []byte(replace[i])) {
			t.Fatalf("the log lacks %q", replace[i])
		}
		b = bytes.ReplaceAll(b, []byte(replace[i]), []byte(replace[i+1]))
	}
	const key = `{"sessionId":"`
	if !bytes.HasPrefix(b, []byte(key)) {
		t.Fatalf("the log does not start with its session id")
	}
	id, _, _ := strings.Cut(string(b[len(key):]), `"`)
	path := filepath.Join(t.TempDir(), "session-"+id[:8]+".jsonl")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, id
}

// TestMergeGeminiContent merges the proxied Gemini CLI run with its log
// by content (Gemini CLI sends no session id): with the import after the
// run and before it, catching up at every frame, the run is one session
// of 4 calls counted once, each tool call with its result once, and a
// rebuild gives the same bytes.
func TestMergeGeminiContent(t *testing.T) {
	var views []string
	for _, order := range []string{"import-after", "import-before"} {
		t.Run(order, func(t *testing.T) {
			dir, log := newData(t)
			e := open(t, dir, log, &Options{BatchBytes: 2048})
			path, id := geminiLog(t)
			fi, err := ReadImport("gemini", path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if order == "import-before" {
				if err := AppendImport(e.WAL(), fi.Records); err != nil {
					t.Fatal(err)
				}
			}
			copyFrames(t, filepath.Join(geminiPair, "wal"), log)
			if order == "import-after" {
				if err := AppendImport(e.WAL(), fi.Records); err != nil {
					t.Fatal(err)
				}
			}
			for _, end := range frameEnds(t, log) {
				if _, err := e.CatchUpTo(context.Background(), end); err != nil {
					t.Fatal(err)
				}
			}
			catchUp(t, e)
			views = append(views, checkGeminiMerged(t, e, id))
			sameAfterRebuild(t, e, dump(t, e), "rebuild differs from the incremental merge by content")
		})
	}
	if len(views) == 2 && views[0] != views[1] {
		t.Errorf("the view depends on the order:\n%s", diffLines(views[0], views[1]))
	}
}

// checkGeminiMerged checks the merged session of geminiPair, whose log is
// gemini:<id>, and returns its timeline as text.
func checkGeminiMerged(t *testing.T, e *Engine, id string) string {
	t.Helper()
	ss, err := e.Sessions(SessionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 || ss[0].Merged == nil {
		t.Fatalf("%d sessions (first merged: %v), want one merged", len(ss), len(ss) > 0 && ss[0].Merged != nil)
	}
	s := ss[0]
	if got := strings.Join(s.Merged.Members, " "); !strings.HasPrefix(got, "ses_") || !strings.HasSuffix(got, " gemini:"+id) {
		t.Errorf("members %q, want the live session and gemini:%s", got, id)
	}
	if s.Requests != 4 || s.Usage.Input != 400 || s.Usage.Output != 48 {
		t.Errorf("%d requests, usage %+v; want 4 calls, 400 in, 48 out, once", s.Requests, s.Usage)
	}
	if r, err := e.Session("gemini:" + id); err != nil || r.ID != s.ID {
		t.Errorf("Session(gemini:%s) = %s, %v; want %s", id, r.ID, err, s.ID)
	}
	evs, err := e.Events(s.ID, EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	calls, results := map[string]int{}, map[string]int{}
	var b strings.Builder
	for _, ev := range evs {
		b.WriteString(string(ev.Kind))
		if ev.Tool != nil {
			b.WriteString(" " + ev.Tool.ID)
			switch ev.Kind {
			case KindToolCall:
				calls[ev.Tool.ID]++
			case KindToolResult:
				results[ev.Tool.ID]++
			}
		}
		if len(ev.Also) > 0 {
			b.WriteString(" paired")
		}
		b.WriteString("\n")
	}
	if len(calls) != 3 {
		t.Errorf("tool calls %v, want 3", calls)
	}
	for c, n := range calls {
		if n != 1 || results[c] != 1 {
			t.Errorf("tool call %s: %d calls, %d results; want one each", c, n, results[c])
		}
	}
	if len(results) != 3 {
		t.Errorf("tool results %v, want 3", results)
	}
	return b.String()
}

// TestMergeGeminiApart: a log whose first reply is not the run's (its
// later ones are), one whose replies are but whose usage is not, and two
// logs with the same content (the same run logged twice) each stay apart
// from the proxied run.
func TestMergeGeminiApart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		logs    [][]string // each log's replacements
		apart   int        // sessions listed
		joinKey bool       // the import wrote reply keys the run shares
	}{
		{"another first reply", [][]string{{`"name":"list_directory"`, `"name":"glob"`}}, 2, true},
		{"other usage", [][]string{{`"input":100`, `"input":101`}}, 2, true},
		{"twins", [][]string{nil, {`"sessionId":"`, `"sessionId":"f`}}, 3, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, log := newData(t)
			e := open(t, dir, log, nil)
			copyFrames(t, filepath.Join(geminiPair, "wal"), log)
			catchUp(t, e)
			for _, r := range tc.logs {
				path, _ := geminiLog(t, r...)
				importPath(t, e, "gemini", path)
			}
			ss, err := e.Sessions(SessionFilter{})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range ss {
				if s.Merged != nil {
					t.Errorf("session %s merged with %v", s.ID, s.Merged.Members)
				}
			}
			if len(ss) != tc.apart {
				t.Errorf("%d sessions, want %d apart", len(ss), tc.apart)
			}
			if n := countPrefix(t, e, []byte{schema.PrefixMerge, schema.MergeHeadKey}); n != 0 {
				t.Errorf("%d merge records", n)
			}
			shared := countPrefix(t, e, []byte{schema.PrefixJoin, schema.JoinKeys}) > 0 && sharesReply(t, e)
			if shared != tc.joinKey {
				t.Errorf("the run and the log share a reply key: %v, want %v", shared, tc.joinKey)
			}
			sameAfterRebuild(t, e, dump(t, e), "rebuild differs with the sessions apart")
		})
	}
}

// sharesReply reports whether a reply key has both a live and an import
// entry.
func sharesReply(t *testing.T, e *Engine) bool {
	t.Helper()
	sides := map[string]map[byte]bool{}
	err := e.scan([]byte{schema.PrefixJoin, schema.JoinReply}, func(k, _ []byte) error {
		key := string(k[2 : 2+schema.ReplyKeyLen])
		if sides[key] == nil {
			sides[key] = map[byte]bool{}
		}
		sides[key][k[2+schema.ReplyKeyLen]] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sides {
		if s[schema.ReplyLive] && s[schema.ReplyImport] {
			return true
		}
	}
	return false
}
