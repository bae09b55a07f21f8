package gemini

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/llm"
	"github.com/bbengine/bbengine/engine"
)

// fixture is a log the real Gemini CLI 0.61.0 wrote (e2e's
// TestGeminiCLIImport, its machine paths replaced by /home/user and the
// projectHash recomputed): one prompt, run_shell_command, read_file,
// and a final answer.
const fixture = "testdata/gemini-cli-0.61.0-tools.jsonl"

// readLog reads path as bbengine import does and derives its session.
func readLog(t *testing.T, path string) (*engine.FileImport, *engine.Imported, engine.ImportFile) {
	t.Helper()
	fi, err := engine.ReadImport(Source, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	file := engine.ImportFile{Path: fi.Path}
	for _, r := range fi.Records {
		file.Records = append(file.Records, engine.ImportRecord{Import: r, WAL: uint64(r.Line)})
	}
	im, err := engine.DeriveImport(Source, Source+":"+fi.Session, []engine.ImportFile{file})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := engine.Census(&im.Session, im.Events), engine.SourceCensus(Source, []engine.ImportFile{file}); got != want {
		t.Errorf("%s: census of the events %+v, of the source %+v", path, got, want)
	}
	return fi, im, file
}

// kinds lists the events as "kind" or "kind:detail".
func kinds(evs []engine.Event) string {
	var out []string
	for _, ev := range evs {
		k := string(ev.Kind)
		switch {
		case ev.Tool != nil:
			k += ":" + ev.Tool.ID
		case ev.Record != nil:
			k += ":" + ev.Record.Type
		case ev.Rewrite != nil:
			k += fmt.Sprintf(":%s/%d/%d", ev.Rewrite.Kind, ev.Rewrite.Kept, ev.Rewrite.Dropped)
		case ev.Kind == engine.KindMessage:
			k += ":" + ev.Role + ev.Meta
		}
		out = append(out, k)
	}
	return strings.Join(out, " ")
}

func TestImportGeminiFixture(t *testing.T) {
	fi, im, _ := readLog(t, fixture)
	if fi.Session != "gemini:3f849cf4-c2a2-4b67-a9c5-29d3a4ec5e1d" || len(fi.Problems) != 0 {
		t.Errorf("session %q, problems %v", fi.Session, fi.Problems)
	}
	s := im.Session
	if s.Agent != "gemini-cli" || s.CWD != "/home/user/project" || s.Requests != 3 || s.Import.Records != 16 || s.Import.Errors != 0 {
		t.Errorf("session %+v", s)
	}
	shell, read := "call-e2e-shell-0001", "call-e2e-read-0002"
	want := "record:metadata record:$set message:usercontext message:user record:$set " +
		"model_call thinking message:assistant tool_call:" + shell + " usage tool_result:" + shell + " record:$set record:$set " +
		"model_call tool_call:" + read + " usage tool_result:" + read + " record:$set record:$set " +
		"model_call message:assistant usage record:$set"
	if got := kinds(im.Events); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	c := engine.Census(&s, im.Events)
	if c.UserPrompts != 1 || c.MetaUser != 1 || c.Responses != 3 || c.Assistant != 2 || c.Thinking != 1 || c.ToolCalls != 2 || c.ToolResults != 2 ||
		c.TokensIn != 11578+11688-1024+11781 || c.CacheRead != 1024 || c.TokensOut != 31+12+23+17 || c.Kept != 8 {
		t.Errorf("census %+v", c)
	}
	for _, ev := range im.Events {
		switch {
		case ev.Kind == engine.KindToolResult && ev.Tool.ID == shell:
			if !strings.Contains(ev.Text, "Output: hello") || ev.Tool.IsError || ev.Tool.Name != "run_shell_command" || string(ev.Extra) != `{"resultDisplay":"hello","status":"success"}` {
				t.Errorf("shell result %+v %s", ev.Tool, ev.Extra)
			}
			// The result is written twice: in the call's entry (line 7)
			// and in the user message after it (line 8).
			if ev.Prov.First != 5 || ev.Prov.Last != 8 || ev.Prov.Line != 5 {
				t.Errorf("shell result provenance %+v", ev.Prov)
			}
		case ev.Kind == engine.KindToolCall && ev.Tool.ID == read:
			if string(ev.Tool.Args) != `{"file_path":"/home/user/project/note.txt"}` || string(ev.Extra) != `{"cli_id":"read_file__call-e2e-read-0002"}` {
				t.Errorf("read args %s, extra %s", ev.Tool.Args, ev.Extra)
			}
		case ev.Kind == engine.KindModelCall:
			if ev.Call.API != llm.Gemini || ev.Call.Model != "gemini-3.8-flash" || ev.Call.Provider != "google" {
				t.Errorf("call %+v", ev.Call)
			}
		case ev.Kind == engine.KindThinking:
			if ev.Text != "Let me think about the command." {
				t.Errorf("thinking %q", ev.Text)
			}
		}
	}
	if s.First == 0 || s.Last <= s.First {
		t.Errorf("first %d last %d", s.First, s.Last)
	}
}

// writeLog writes lines as a log under dir/chats and returns its path.
func writeLog(t *testing.T, rel string, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tmp", "proj", "chats", rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const metaLine = `{"sessionId":"s-1","projectHash":"x","startTime":"2026-01-01T00:00:00.000Z","lastUpdated":"2026-01-01T00:00:00.000Z","kind":"main"}`

// TestImportGeminiRewrites checks the lines that change what stands:
// a repeated id (the last wins, where the first stood), $rewindTo (drops
// the message and every one after it), and a $set.messages checkpoint.
// What they drop happened: its events stay, and a rewrite event says
// what was dropped.
func TestImportGeminiRewrites(t *testing.T) {
	p := writeLog(t, "session-2026-01-01T00-00-s-1.jsonl",
		metaLine,
		`{"id":"u1","timestamp":"2026-01-01T00:00:01.000Z","type":"user","content":"first"}`,
		`{"id":"g1","timestamp":"2026-01-01T00:00:02.000Z","type":"gemini","content":"draft","model":"m"}`,
		`{"id":"u2","timestamp":"2026-01-01T00:00:03.000Z","type":"user","content":[{"text":"second"}]}`,
		`{"id":"g1","timestamp":"2026-01-01T00:00:02.000Z","type":"gemini","content":"final","model":"m","tokens":{"input":10,"output":2,"cached":4,"thoughts":1,"tool":3,"total":16}}`,
		`{"id":"u3","timestamp":"2026-01-01T00:00:04.000Z","type":"user","content":"third"}`,
		`{"id":"g3","timestamp":"2026-01-01T00:00:05.000Z","type":"gemini","content":"gone","model":"m"}`,
		`{"$rewindTo":"u3"}`,
		`{"$set":{"summary":"A title"}}`,
		`{"id":"e1","timestamp":"2026-01-01T00:00:06.000Z","type":"error","content":"quota exceeded"}`,
		`{"id":"i1","timestamp":"2026-01-01T00:00:07.000Z","type":"info","content":"Request cancelled."}`,
		"")
	_, im, _ := readLog(t, p)
	want := "record:metadata message:user model_call message:assistant usage message:user " +
		"message:user model_call message:assistant record:$rewindTo rewrite:drop/3/2 record:$set error record:message/info"
	if got := kinds(im.Events); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	if im.Session.Title != "A title" || im.Session.Errors != 1 {
		t.Errorf("session %+v", im.Session)
	}
	for _, ev := range im.Events {
		if ev.Kind == engine.KindMessage && ev.Role == "assistant" && ev.Prov.Line == 3 && (ev.Text != "final" || ev.Prov.First != 3 || ev.Prov.Last != 5) {
			t.Errorf("g1: %q %+v", ev.Text, ev.Prov)
		}
		if ev.Kind == engine.KindUsage && *ev.Usage != (engine.Usage{Input: 13, Output: 3, CacheRead: 4, Reasoning: 1}) {
			t.Errorf("usage %+v", *ev.Usage)
		}
	}

	// A checkpoint replaces the list: u1 goes, c1 comes, u2 keeps its
	// history. A rewind to an id that is not there clears the list; the
	// dropped session context still names the project.
	p = writeLog(t, "session-2026-01-01T00-00-s-1.jsonl",
		metaLine,
		`{"id":"u1","type":"user","content":"first"}`,
		`{"id":"u2","type":"user","content":"second"}`,
		`{"$set":{"messages":[{"id":"c1","type":"user","content":"<session_context>\n- **Workspace Directories:**\n  - /w\n</session_context>"},{"id":"u2","type":"user","content":"second"}]}}`,
		`{"$rewindTo":"nowhere"}`,
		`{"id":"u4","type":"user","content":"after a rewind to an unknown id, which clears the list"}`)
	_, im, _ = readLog(t, p)
	want = "record:metadata message:user message:user record:$set rewrite:compaction/1/1 message:usercontext " +
		"record:$rewindTo rewrite:drop/0/2 message:user"
	if got := kinds(im.Events); got != want {
		t.Errorf("checkpoint events\n got %s\nwant %s", got, want)
	}
	if im.Session.CWD != "/w" {
		t.Errorf("cwd %q", im.Session.CWD)
	}
}

// TestImportGeminiCompression checks a checkpoint as a compression
// writes it: the summary and the model's acknowledgement it brings in
// are history, not a prompt and a response, and the response it drops
// keeps its usage.
func TestImportGeminiCompression(t *testing.T) {
	p := writeLog(t, "session-2026-01-01T00-00-s-1.jsonl",
		metaLine,
		`{"id":"u1","type":"user","content":"build it"}`,
		`{"id":"g1","type":"gemini","content":"built","model":"m","tokens":{"input":10,"output":2}}`,
		`{"$set":{"messages":[{"id":"h1","type":"user","content":[{"text":"<state_snapshot>built it</state_snapshot>"}]},{"id":"h2","type":"gemini","content":[{"text":"Got it."},{"text":"noted","thought":true}]}]}}`,
		`{"id":"u2","type":"user","content":"now test it"}`)
	_, im, _ := readLog(t, p)
	want := "record:metadata message:user model_call message:assistant usage " +
		"record:$set rewrite:compaction/0/2 message:usersummary thinking message:assistant message:user"
	if got := kinds(im.Events); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	if c := engine.Census(&im.Session, im.Events); c.UserPrompts != 2 || c.MetaUser != 1 || c.Responses != 1 || c.Assistant != 2 || c.TokensOut != 2 || im.Session.Requests != 1 {
		t.Errorf("census %+v", c)
	}
}

// TestImportGeminiImage checks that an image the user attached is
// described by its media type, size and SHA-256.
func TestImportGeminiImage(t *testing.T) {
	p := writeLog(t, "session-2026-01-01T00-00-s-1.jsonl", metaLine,
		`{"id":"u1","type":"user","content":[{"text":"what is this"},{"inlineData":{"mimeType":"image/png","data":"aGVsbG8="}}]}`)
	_, im, _ := readLog(t, p)
	ev := im.Events[1]
	if len(ev.Parts) != 1 || ev.Parts[0].Type != llm.PartImage || ev.Parts[0].Size != 5 ||
		ev.Parts[0].SHA256 != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" || ev.Text != "what is this" {
		t.Errorf("event %+v", ev)
	}
}

// TestImportGeminiBadLines checks that a line that is not JSON is a
// problem naming the file and line, one of an unknown kind is kept, one
// with a member that does not decode is a parse error but kept without
// that member, and a truncated last line (the CLI writing it) waits for
// the next import.
func TestImportGeminiBadLines(t *testing.T) {
	p := writeLog(t, "session-2026-01-01T00-00-s-1.jsonl",
		metaLine,
		`{not json`,
		`{"future":"record"}`,
		`{"id":"g1","type":"gemini","thoughts":"not a list"}`,
		`{"id":"g2","type":"gemini","content":[{"text":"ok"}],"toolCalls":[{"name":"ls","args":{},"status":"error","result":[{"functionResponse":{"name":"ls","response":{"error":"denied"}}}]}]}`,
		`{"id":"u9","type":"user","content":[{"text":"half`)
	fi, im, _ := readLog(t, p)
	if len(fi.Problems) != 1 || !strings.HasPrefix(fi.Problems[0].String(), p+":2:3: not JSON") || fi.Tail == 0 {
		t.Errorf("problems %v, tail %d", fi.Problems, fi.Tail)
	}
	imp := im.Session.Import
	if imp.Records != 4 || imp.Errors != 1 || imp.Unknown != 1 {
		t.Errorf("import %+v", imp)
	}
	want := "record:metadata record:unknown model_call model_call message:assistant tool_call:gemini#g2#0 tool_result:gemini#g2#0"
	if got := kinds(im.Events); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	last := im.Events[len(im.Events)-1]
	if !last.Tool.IsError || !last.Tool.SyntheticID || last.Text != "denied" {
		t.Errorf("result %+v %q", last.Tool, last.Text)
	}
}

// TestImportGeminiSubagent checks that a subagent's log is a session of
// its own that names its parent.
func TestImportGeminiSubagent(t *testing.T) {
	p := writeLog(t, "parent-1/sub-1.jsonl",
		`{"sessionId":"sub-1","projectHash":"h","startTime":"2026-01-01T00:00:00.000Z","kind":"subagent","directories":["/repo"]}`,
		`{"id":"u1","type":"user","content":"look around"}`)
	if !(Agent{}).IsLog(p) {
		t.Errorf("IsLog(%s) = false", p)
	}
	fi, im, _ := readLog(t, p)
	if fi.Session != "gemini:sub-1" || im.Session.CWD != "/repo" || string(im.Events[0].Extra) != `{"parent":"gemini:parent-1"}` {
		t.Errorf("session %q cwd %q extra %s", fi.Session, im.Session.CWD, im.Events[0].Extra)
	}
}

// TestImportGeminiDeterministic derives the fixture twice.
func TestImportGeminiDeterministic(t *testing.T) {
	_, a, _ := readLog(t, fixture)
	_, b, _ := readLog(t, fixture)
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Error("two derivations differ")
	}
}

// legacyDoc is a session as versions before 0.43 wrote it: one
// pretty-printed document, tool results only in the calls' entries.
const legacyDoc = `{
  "sessionId": "old-1",
  "projectHash": "h",
  "startTime": "2025-12-01T21:45:00.000Z",
  "lastUpdated": "2025-12-01T21:46:00.000Z",
  "messages": [
    {
      "id": "u1",
      "timestamp": "2025-12-01T21:45:01.000Z",
      "type": "user",
      "content": "show tools"
    },
    {
      "id": "g1",
      "timestamp": "2025-12-01T21:45:30.000Z",
      "type": "gemini",
      "content": "",
      "toolCalls": [
        {
          "id": "write_todos-1768561360195-92b321077029e8",
          "name": "write_todos",
          "args": {"todos": []},
          "result": [{"functionResponse": {"id": "write_todos-1768561360195-92b321077029e8", "name": "write_todos", "response": {"output": "Successfully updated the todo list."}}}],
          "status": "success",
          "timestamp": "2025-12-01T21:45:29.000Z"
        }
      ],
      "thoughts": [{"subject": "Planning", "description": "List the todos.", "timestamp": "2025-12-01T21:45:20.000Z"}],
      "tokens": {"input": 4749, "output": 292, "cached": 100, "thoughts": 240, "tool": 0, "total": 5281},
      "model": "gemini-3-pro"
    }
  ]
}
`

// TestImportGeminiLegacy reads an older version's session document,
// drops it when the session's .jsonl (written on resume) is there, and
// reads a project's logs.json as a session of its own.
func TestImportGeminiLegacy(t *testing.T) {
	p := writeLog(t, "session-2025-12-01T21-45-old1.json", legacyDoc)
	if !(Agent{}).IsLog(p) {
		t.Errorf("IsLog(%s) = false", p)
	}
	fi, im, file := readLog(t, p)
	if fi.Session != "gemini:old-1" || len(fi.Records) != 1 || len(fi.Problems) != 0 {
		t.Fatalf("session %q, %d records, problems %v", fi.Session, len(fi.Records), fi.Problems)
	}
	want := "record:metadata message:user model_call thinking tool_call:write_todos-1768561360195-92b321077029e8 usage tool_result:write_todos-1768561360195-92b321077029e8"
	if got := kinds(im.Events); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	c := engine.SourceCensus(Source, []engine.ImportFile{file})
	if c.Records != 1 || c.UserPrompts != 1 || c.ToolResults != 1 || c.TokensIn != 4649 || c.TokensOut != 532 || c.Thinking != 1 {
		t.Errorf("census %+v", c)
	}

	// Resumed by 0.43 or later: X.jsonl holds the same messages again.
	lines := []string{`{"sessionId":"old-1","projectHash":"h","startTime":"2025-12-01T21:45:00.000Z"}`}
	lines = append(lines, `{"id":"u1","timestamp":"2025-12-01T21:45:01.000Z","type":"user","content":"show tools"}`)
	q := filepath.Join(filepath.Dir(p), "session-2025-12-01T21-45-old1.jsonl")
	if err := os.WriteFile(q, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	jf, _, jfile := readLog(t, q)
	both := []engine.ImportFile{file, jfile}
	im, err := engine.DeriveImport(Source, jf.Session, both)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := engine.Census(&im.Session, im.Events), engine.SourceCensus(Source, both); got != want || got.UserPrompts != 1 || len(im.Session.Import.Files) != 1 {
		t.Errorf("with the .jsonl: census %+v, source %+v, files %q", got, want, im.Session.Import.Files)
	}

	logs := filepath.Join(filepath.Dir(filepath.Dir(p)), "logs.json")
	if err := os.WriteFile(logs, []byte(`[
  {"sessionId": "old-1", "messageId": 0, "type": "user", "message": "show tools", "timestamp": "2025-12-01T21:45:01.000Z"},
  {"sessionId": "old-2", "messageId": 0, "type": "user", "message": "/quit", "timestamp": "2025-12-02T08:00:00.000Z"}
]`), 0o600); err != nil {
		t.Fatal(err)
	}
	if !(Agent{}).IsLog(logs) {
		t.Errorf("IsLog(%s) = false", logs)
	}
	fi, im, _ = readLog(t, logs)
	if fi.Session != "gemini:logs-proj" || kinds(im.Events) != "message:user message:user" || im.Events[1].Text != "/quit" {
		t.Errorf("logs.json: session %q, events %s", fi.Session, kinds(im.Events))
	}

	// A document that is not JSON is a problem naming its line and
	// column; one cut short too.
	for _, c := range []struct{ doc, want string }{
		{"{\n  \"sessionId\": x\n}", ":2:16: not JSON"},
		{legacyDoc[:200], ":9:24: not JSON: unexpected end of JSON input"},
	} {
		bad := writeLog(t, "session-2025-12-01T21-45-bad1.json", c.doc)
		fi, err := engine.ReadImport(Source, bad, nil)
		if err != nil || len(fi.Records) != 0 || len(fi.Problems) != 1 || !strings.HasPrefix(fi.Problems[0].String(), bad+c.want) {
			t.Errorf("bad document: %v, %d records, problems %v", err, len(fi.Records), fi.Problems)
		}
	}
}

func TestWireID(t *testing.T) {
	for _, c := range []struct{ name, id, want string }{
		{"run_shell_command", "run_shell_command__call-1", "call-1"},
		{"read_file", "read_file__synth_p1_1700000000000_0", "synth_p1_1700000000000_0"},
		{"", "generic_tool__x", "x"},
		{"read_file", "write_file__x", "write_file__x"},
		{"read_file", "read_file__", "read_file__"},
		{"ls", "call-2", "call-2"},
	} {
		if got := wireID(c.name, c.id); got != c.want {
			t.Errorf("wireID(%q, %q) = %q, want %q", c.name, c.id, got, c.want)
		}
	}
}
