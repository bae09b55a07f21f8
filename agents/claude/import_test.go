package claude

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/agentlog/agentlogtest"
	"github.com/bbengine/bbengine/codec/census"
	"github.com/bbengine/bbengine/codec/claude"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
)

var claudeGolden = agentlogtest.Golden(2, "claude")

// claudeSession is the files of one golden session, as bbengine import
// groups them (codec/agentlog/agentlogtest reads them).
type claudeSession struct {
	id    string
	files []engine.ImportFile
	lines [][]byte // every line of its .jsonl files
	metas int
	size  int64
}

// importFile wraps a golden file's records into an import file; with
// lineWAL the records' WAL offsets are their line numbers.
func importFile(f agentlogtest.File, lineWAL bool) engine.ImportFile {
	file := engine.ImportFile{Path: f.Path}
	for _, r := range f.Records {
		rec := engine.ImportRecord{Import: r}
		if lineWAL {
			rec.WAL = uint64(r.Line)
		}
		file.Records = append(file.Records, rec)
	}
	return file
}

// readLog reads a Claude Code log file as import line records.
func readLog(t testing.TB, path, session string) (engine.ImportFile, [][]byte, int64) {
	t.Helper()
	f, lines, end := agentlogtest.ReadLog(t, path, "claude", session)
	return importFile(f, false), lines, end
}

// goldenClaude reads the golden Claude Code logs, grouped by session.
func goldenClaude(t testing.TB) []*claudeSession {
	t.Helper()
	var out []*claudeSession
	for _, g := range agentlogtest.Claude(t, claudeGolden) {
		s := &claudeSession{id: g.ID, lines: g.Lines, metas: g.Metas, size: g.Size}
		for _, f := range g.Files {
			s.files = append(s.files, importFile(f, false))
		}
		out = append(out, s)
	}
	return out
}

// TestImportClaudeGolden: for every golden session the census of the
// derived events equals the source census of its lines (codec/claude
// Count, checked against the MANIFEST there), plus one kept record per
// meta file.
func TestImportClaudeGolden(t *testing.T) {
	sessions := goldenClaude(t)
	if len(sessions) != 9 {
		t.Errorf("%d golden sessions, want 9", len(sessions))
	}
	for _, s := range sessions {
		t.Run(s.id, func(t *testing.T) {
			im, err := engine.DeriveImport("claude", "claude:"+s.id, s.files)
			if err != nil {
				t.Fatal(err)
			}
			var want census.Counts
			for _, f := range s.files {
				if f.Records == nil || f.Records[0].Kind == exchange.ImportLine {
					var lines [][]byte
					for _, r := range f.Records {
						lines = append(lines, r.Data)
					}
					addCounts(&want, claude.Count(lines))
				}
			}
			want.Records += int64(s.metas)
			want.Kept += int64(s.metas)
			got := engine.Census(&im.Session, im.Events)
			if got != want {
				var b strings.Builder
				census.WriteTable(&b, "source", "import", census.Compare(want, got))
				t.Errorf("census differs (records %d/%d):\n%s", want.Records, got.Records, b.String())
			}
			checkClaudeSession(t, im)
		})
	}
}

// checkClaudeSession checks what every imported session must have.
func checkClaudeSession(t *testing.T, im *engine.Imported) {
	t.Helper()
	s := im.Session
	if s.Agent != "claude-code" || s.Import == nil || s.Import.Source != "claude" {
		t.Errorf("session %+v", s)
	}
	if s.Threads != 1+len(s.Agents) {
		t.Errorf("threads %d, agents %d", s.Threads, len(s.Agents))
	}
	calls := 0
	var usage engine.Usage
	for i, ev := range im.Events {
		if ev.Seq != uint64(i+1) || ev.Prov.Side != "import" || ev.Thread < 1 || ev.Thread > s.Threads {
			t.Fatalf("event %d: %+v", i, ev)
		}
		if ev.Kind == engine.KindModelCall {
			calls++
		}
		if ev.Kind == engine.KindUsage {
			usage.Add(*ev.Usage)
		}
		if ev.Kind == engine.KindRecord && !json.Valid(ev.Record.Raw) {
			t.Errorf("event %d: record raw is not JSON", ev.Seq)
		}
	}
	if calls != s.Requests || usage != s.Usage {
		t.Errorf("requests %d usage %+v, events say %d %+v", s.Requests, s.Usage, calls, usage)
	}
	if s.Requests > 0 && (s.First == 0 || s.Last < s.First || s.Version == "" || s.Client != "claude-cli/"+s.Version) {
		t.Errorf("session %s: first %d last %d version %q client %q", s.ID, s.First, s.Last, s.Version, s.Client)
	}
}

func addCounts(dst *census.Counts, c census.Counts) {
	d := []*int64{&dst.Records, &dst.ParseErrors, &dst.UserPrompts, &dst.MetaUser, &dst.Assistant, &dst.Responses, &dst.Thinking,
		&dst.ToolCalls, &dst.ToolResults, &dst.Errors, &dst.UUIDs, &dst.CallIDs, &dst.TokensIn, &dst.TokensOut, &dst.CacheRead,
		&dst.CacheCreation, &dst.Subagents, &dst.Kept, &dst.Unknown}
	s := []int64{c.Records, c.ParseErrors, c.UserPrompts, c.MetaUser, c.Assistant, c.Responses, c.Thinking,
		c.ToolCalls, c.ToolResults, c.Errors, c.UUIDs, c.CallIDs, c.TokensIn, c.TokensOut, c.CacheRead,
		c.CacheCreation, c.Subagents, c.Kept, c.Unknown}
	for i := range d {
		*d[i] += s[i]
	}
}

// TestImportClaudeDeterministic derives every golden session twice.
func TestImportClaudeDeterministic(t *testing.T) {
	for _, s := range goldenClaude(t) {
		var out [2][]byte
		for i := range out {
			im, err := engine.DeriveImport("claude", "claude:"+s.id, s.files)
			if err != nil {
				t.Fatal(err)
			}
			if out[i], err = json.Marshal(im); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(out[0], out[1]) {
			t.Errorf("session %s: two derivations differ", s.id)
		}
	}
}

// TestImportClaudeKeepsUnknown: an unknown record type is kept, a line
// that is not JSON is counted and skipped, a spilled output replaces its
// placeholder, and the rest imports.
func TestImportClaudeKeepsUnknown(t *testing.T) {
	dir := t.TempDir()
	sid := "0b6c8a52-0000-4000-8000-000000000001"
	log := strings.Join([]string{
		`{"type":"user","uuid":"u1","sessionId":"` + sid + `","version":"2.1.114","cwd":"/src","gitBranch":"main","timestamp":"2026-03-01T10:00:00.000Z","message":{"role":"user","content":"list files"}}`,
		`{"type":"future-thing","sessionId":"` + sid + `","payload":{"x":1}}`,
		`{"type":"assistant","uuid":"a1","requestId":"req_1","timestamp":"2026-03-01T10:00:01.000Z","message":{"id":"msg_1","model":"claude-opus-4-7","role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1,"cache_read_input_tokens":10}}}`,
		`{"type":"assistant","uuid":"a1b","requestId":"req_1","timestamp":"2026-03-01T10:00:01.500Z","message":{"id":"msg_1","model":"claude-opus-4-7","role":"assistant","content":[{"type":"text","text":"done"}],"stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":7,"cache_read_input_tokens":10}}}`,
		`{"type":"user","uuid":"u2","timestamp":"2026-03-01T10:00:02.000Z","toolUseResult":{"stdout":"Output too large","persistedOutputPath":"/home/x/.claude/projects/p/` + sid + `/tool-results/toolu_1.txt"},"message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"Output too large. Full output saved to: …"}]}}`,
		`{"type":"user","uuid":"u3",`,
		`{"type":"assistant","uuid":"a2","timestamp":"2026-03-01T10:00:03.000Z","isApiErrorMessage":true,"message":{"id":"x","model":"<synthetic>","role":"assistant","content":[{"type":"text","text":"API Error: 529 overloaded"}]}}`,
		`{"type":"summary","summary":"Listing files","leafUuid":"a1b"}`,
	}, "\n") + "\n"
	main := filepath.Join(dir, sid+".jsonl")
	if err := os.WriteFile(main, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	file, lines, _ := readLog(t, main, "claude:"+sid)
	spillPath := filepath.Join(dir, sid, "tool-results", "toolu_1.txt")
	spill := engine.ImportFile{Path: spillPath, Records: []engine.ImportRecord{{Import: exchange.Import{Source: "claude", File: spillPath,
		Kind: exchange.ImportSpill, Data: []byte("a\nb\nc\n")}}}}
	im, err := engine.DeriveImport("claude", "claude:"+sid, []engine.ImportFile{file, spill})
	if err != nil {
		t.Fatal(err)
	}
	s := im.Session
	if got, want := *s.Import, (engine.ImportInfo{Source: "claude", Files: []string{main, spillPath}, Records: 9, Errors: 1, Unknown: 1}); !slices.Equal(got.Files, want.Files) ||
		got.Records != want.Records || got.Errors != want.Errors || got.Unknown != want.Unknown {
		t.Errorf("import info %+v, want %+v", got, want)
	}
	want := claude.Count(lines)
	got := engine.Census(&s, im.Events)
	want.Records++ // the spill
	if got != want {
		var b strings.Builder
		census.WriteTable(&b, "source", "import", census.Compare(want, got))
		t.Errorf("census differs:\n%s", b.String())
	}
	var kinds []string
	for _, ev := range im.Events {
		k := string(ev.Kind)
		switch ev.Kind {
		case engine.KindRecord:
			k += ":" + ev.Record.Type
			if !ev.Record.Known {
				k += "?"
			}
		case engine.KindToolResult:
			if ev.Text != "a\nb\nc\n" || ev.Tool.Name != "Bash" || !bytes.Contains(ev.Extra, []byte(`"persistedOutputPath"`)) {
				t.Errorf("tool result %+v", ev)
			}
		case engine.KindModelCall:
			if c := ev.Call; c.StopReason != "tool_use" || c.Model != "claude-opus-4-7" || c.ResponseID != "msg_1" || ev.Prov.RequestID != "req_1" {
				t.Errorf("model call %+v", c)
			}
		case engine.KindUsage:
			if *ev.Usage != (engine.Usage{Input: 13, Output: 7, CacheRead: 10}) {
				t.Errorf("usage %+v", *ev.Usage)
			}
		}
		kinds = append(kinds, k)
	}
	wantKinds := []string{"message", "record:future-thing?", "model_call", "tool_call", "message", "usage", "tool_result", "error", "record:summary"}
	if !slices.Equal(kinds, wantKinds) {
		t.Errorf("events %v, want %v", kinds, wantKinds)
	}
	if s.Title != "Listing files" || s.Requests != 1 || s.Errors != 1 || s.CWD != "/src" || s.Branch != "main" || s.Client != "claude-cli/2.1.114" {
		t.Errorf("session %+v", s)
	}
}

// BenchmarkImportClaude derives every golden session; MB/s is of JSONL
// bytes.
func BenchmarkImportClaude(b *testing.B) {
	sessions := goldenClaude(b)
	var size int64
	for _, s := range sessions {
		size += s.size
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range sessions {
			if _, err := engine.DeriveImport("claude", "claude:"+s.id, s.files); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// FuzzImportClaude: any log imports without panic, and the census of the
// events equals the source census of the lines.
func FuzzImportClaude(f *testing.F) {
	f.Add([]byte(`{"type":"user","uuid":"u1","message":{"content":"hi"}}` + "\n" +
		`{"type":"assistant","uuid":"a1","requestId":"r","message":{"id":"m","content":[{"type":"text","text":"x"},{"type":"tool_use","id":"t","name":"Task","input":{}}],"usage":{"input_tokens":1,"output_tokens":2}}}` + "\n" +
		`{"type":"user","uuid":"u2","toolUseResult":{"agentId":"ab"},"message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"ok"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"aGk="}}]}]}}` + "\n" +
		`{"type":"user","uuid":"s1","isSidechain":true,"parentUuid":null,"message":{"content":"Task"}}` + "\n" +
		`{"type":"assistant","uuid":"s2","isSidechain":true,"parentUuid":"s1","message":{"id":"m2","model":"<synthetic>","content":[]}}` + "\n" +
		`{"type":"user","uuid":"c1","agentId":"ab","isSidechain":true,"message":{"content":"sub"}}` + "\n" +
		`{"type":"system","subtype":"compact_boundary","uuid":"b","compactMetadata":{"trigger":"auto"}}` + "\n" +
		`{"type":"mystery"}` + "\n" + `{bad` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file := engine.ImportFile{Path: "/p/s.jsonl"}
		var lines [][]byte
		for i, l := range bytes.Split(data, []byte("\n")) {
			lines = append(lines, l)
			file.Records = append(file.Records, engine.ImportRecord{Import: exchange.Import{Source: "claude", File: file.Path,
				Kind: exchange.ImportLine, Line: int64(i + 1), Data: l}, WAL: uint64(i)})
		}
		im, err := engine.DeriveImport("claude", "claude:s", []engine.ImportFile{file})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := engine.Census(&im.Session, im.Events), claude.Count(lines); got != want {
			var b strings.Builder
			census.WriteTable(&b, "source", "import", census.Compare(want, got))
			t.Fatalf("census differs:\n%s", b.String())
		}
	})
}
