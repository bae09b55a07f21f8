package export

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/bbox"
	"github.com/bbengine/bbengine/codec/census"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
)

// importedSession is a hand-built imported session with every event
// kind: a system prompt, typed and meta prompts, thinking (with text,
// redacted), assistant text, tool calls and results (an error, a large
// one, one with Extra, an orphan), an MCP call, a subagent thread with
// its own call, records known and unknown (one large), an error, an
// interruption, rewrites, and usage with cache reads and creation.
func importedSession() (engine.Session, []engine.Event) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano()
	at := func(s int) int64 { return t0 + int64(s)*int64(time.Second) }
	prov := func(line int64) engine.Provenance {
		return engine.Provenance{Side: "import", File: "/logs/s1.jsonl", Line: line}
	}
	call := func(s, thread int, uuid, model, stop string) engine.Event {
		return engine.Event{Kind: engine.KindModelCall, Time: at(s), Thread: thread, UUID: uuid, Prov: prov(int64(s)),
			Call: &engine.Call{API: "anthropic.messages", Provider: "anthropic", Model: model, StopReason: stop, ResponseID: "msg_" + uuid, Complete: true, Status: 200}}
	}
	usage := func(s, thread int, uuid string, u engine.Usage) engine.Event {
		return engine.Event{Kind: engine.KindUsage, Time: at(s), Thread: thread, UUID: uuid, Usage: &u, Prov: prov(int64(s))}
	}
	big := strings.Repeat("line of output → with arrows\n", 80)
	evs := []engine.Event{
		{Kind: engine.KindSystem, Time: at(0), Thread: 1, Text: "You are a helpful agent.", Prov: prov(1)},
		{Kind: engine.KindMessage, Role: "user", Meta: "meta", Time: at(0), Thread: 1, UUID: "u-0", Text: "<system-reminder>\nCLAUDE.md says: test first\n</system-reminder>", Prov: prov(1)},
		{Kind: engine.KindMessage, Role: "user", Time: at(1), Thread: 1, UUID: "u-1", Text: "Fix the failing test at step=3 # please", Prov: prov(2)},
		{Kind: engine.KindRecord, Time: at(1), Thread: 1, UUID: "r-1", Record: &engine.Record{Type: "file-history-snapshot", Known: true, Raw: json.RawMessage(`{"type":"file-history-snapshot","messageId":"u-1"}`)}, Prov: prov(3)},
		call(2, 1, "a-1", "claude-sonnet-4-5", "tool_use"),
		{Kind: engine.KindThinking, Time: at(2), Thread: 1, UUID: "a-1", Text: "Run the test first.", Signature: "c2lnbmF0dXJl", Prov: prov(4)},
		{Kind: engine.KindThinking, Time: at(2), Thread: 1, UUID: "a-1", Data: "ZW5jcnlwdGVk", Prov: prov(4)},
		{Kind: engine.KindMessage, Role: "assistant", Time: at(2), Thread: 1, UUID: "a-1", Text: "# Plan\nI'll run the test.", Prov: prov(4)},
		{Kind: engine.KindToolCall, Time: at(2), Thread: 1, UUID: "a-2", Tool: &engine.Tool{ID: "toolu_1", Name: "Bash", Args: json.RawMessage(`{"command":"go test ./...","timeout":120000,"ts":"x","uuid":"y"}`)}, Prov: prov(5)},
		{Kind: engine.KindToolCall, Time: at(2), Thread: 1, UUID: "a-2", Tool: &engine.Tool{ID: "toolu_2", Name: "mcp__github__get_issue", Args: json.RawMessage(`{"n":7}`)}, Prov: prov(5)},
		{Kind: engine.KindToolCall, Time: at(2), Thread: 1, UUID: "a-3", Tool: &engine.Tool{ID: "toolu_3", Name: "Task", Args: json.RawMessage(`{"description":"find the bug","prompt":"look"}`)}, Prov: prov(6)},
		usage(2, 1, "a-1", engine.Usage{Input: 1500, Output: 200, CacheRead: 1000, CacheCreation: 300, CacheCreation5m: 300}),
		{Kind: engine.KindToolResult, Time: at(3), Thread: 1, UUID: "u-2", Tool: &engine.Tool{ID: "toolu_1", Name: "Bash", IsError: true}, Text: "FAIL: TestX\nexit 1", Extra: json.RawMessage(`{"stdout":"FAIL: TestX","interrupted":false}`), Prov: prov(7)},
		{Kind: engine.KindToolResult, Time: at(3), Thread: 1, UUID: "u-3", Tool: &engine.Tool{ID: "toolu_2", Name: "mcp__github__get_issue"}, Text: big, Prov: prov(8)},
		{Kind: engine.KindRecord, Time: at(3), Thread: 1, UUID: "r-2", Record: &engine.Record{Type: "progress/bash_progress", Known: true, Raw: json.RawMessage(`{"type":"progress","data":"` + strings.Repeat("x", 2000) + `"}`)}, Prov: prov(9)},
		{Kind: engine.KindRecord, Time: at(3), Thread: 1, Record: &engine.Record{Type: "brand-new-type", Raw: json.RawMessage(`{"type":"brand-new-type","n":1}`)}, Prov: prov(10)},
		// The subagent.
		{Kind: engine.KindMessage, Role: "user", Time: at(4), Thread: 2, UUID: "s-1", Text: "look", Prov: prov(11)},
		call(5, 2, "s-2", "claude-haiku-4-5", "tool_use"),
		{Kind: engine.KindToolCall, Time: at(5), Thread: 2, UUID: "s-2", Tool: &engine.Tool{ID: "toolu_4", Name: "Read", Args: json.RawMessage(`{"file_path":"/src/x_test.go"}`)}, Prov: prov(12)},
		usage(5, 2, "s-2", engine.Usage{Input: 400, Output: 30}),
		{Kind: engine.KindToolResult, Time: at(6), Thread: 2, UUID: "s-3", Tool: &engine.Tool{ID: "toolu_4", Name: "Read"}, Text: "", Prov: prov(13)},
		call(7, 2, "s-4", "claude-haiku-4-5", "end_turn"),
		{Kind: engine.KindMessage, Role: "assistant", Time: at(7), Thread: 2, UUID: "s-4", Text: "The bug is in x.go.", Prov: prov(14)},
		usage(7, 2, "s-4", engine.Usage{Input: 450, Output: 12, CacheRead: 400}),
		{Kind: engine.KindToolResult, Time: at(8), Thread: 1, UUID: "u-4", Tool: &engine.Tool{ID: "toolu_3", Name: "Task"}, Text: "The bug is in x.go.", Prov: prov(15)},
		{Kind: engine.KindToolResult, Time: at(8), Thread: 1, UUID: "u-5", Tool: &engine.Tool{ID: "toolu_9", Name: "Grep"}, Text: "orphan", Prov: prov(16)},
		{Kind: engine.KindRewrite, Time: at(9), Thread: 1, Rewrite: &engine.Rewrite{Kind: "compaction", From: 1, Dropped: 12}, Prov: prov(17)},
		{Kind: engine.KindMessage, Role: "user", Meta: "compact_summary", Time: at(9), Thread: 1, UUID: "u-6", Text: "Summary: we ran the tests.", Prov: prov(17)},
		call(10, 1, "a-5", "claude-sonnet-4-5", ""),
		{Kind: engine.KindMessage, Role: "assistant", Time: at(10), Thread: 1, UUID: "a-5", Text: "Fixing", Partial: true, Prov: prov(18)},
		{Kind: engine.KindInterruption, Time: at(10), Thread: 1, Text: "the user pressed Esc", Prov: prov(18)},
		usage(10, 1, "a-5-usage", engine.Usage{Input: 2000, Output: 5, CacheRead: 1900}),
		{Kind: engine.KindError, Time: at(11), Thread: 1, UUID: "e-1", Error: &engine.Error{Stage: "upstream", Status: 529, Type: "overloaded_error", Message: "Overloaded"}, Prov: prov(19)},
		{Kind: engine.KindRewrite, Time: at(12), Thread: 3, Rewrite: &engine.Rewrite{Kind: "fork", From: 1, Kept: 2, Dropped: 1}, Prov: prov(20)},
		{Kind: engine.KindMessage, Role: "user", Meta: "developer", Time: at(12), Thread: 3, UUID: "d-1", Text: "env: linux", Prov: prov(20)},
		{Kind: engine.KindMessage, Role: "system", Time: at(12), Thread: 3, Text: "system text", Prov: prov(21)},
	}
	for i := range evs {
		evs[i].Seq = uint64(i + 1)
	}
	s := engine.Session{
		ID: "claude:s1", Agent: "claude-code", Client: "claude-cli/2.1.3", Source: "import",
		First: at(0), Last: at(12), Requests: 4, Errors: 1, Threads: 3,
		Usage: engine.Usage{Input: 4350, Output: 247, CacheRead: 3300, CacheCreation: 300, CacheCreation5m: 300},
		Models: []engine.ModelUsage{
			{Model: "claude-sonnet-4-5", Requests: 2, Usage: engine.Usage{Input: 3500, Output: 205, CacheRead: 2900, CacheCreation: 300, CacheCreation5m: 300}},
			{Model: "claude-haiku-4-5", Requests: 2, Usage: engine.Usage{Input: 850, Output: 42, CacheRead: 400}},
		},
		Title: "Fix: the failing test", CWD: "/home/dev/proj", Branch: "main", Version: "2.1.3",
		Agents: []engine.Agent{{Thread: 2, ID: "agent-1", Type: "general-purpose", Description: "find the bug", Call: "toolu_3"}},
		Import: &engine.ImportInfo{Source: "claude", Files: []string{"/logs/s1.jsonl", "/logs/s1/subagents/agent-1.jsonl"}, Records: 40, Errors: 1, Unknown: 1},
		Events: uint64(len(evs)),
	}
	return s, evs
}

// roundTrip renders a session, reads the text back and checks the census
// and the bytes of a second rendering. It returns the first rendering.
func roundTrip(t *testing.T, s engine.Session, evs []engine.Event, opts *BBoxOptions) string {
	t.Helper()
	doc, err := BBox(s, evs, opts)
	if err != nil {
		t.Fatal(err)
	}
	text := doc.String()
	if text == "" {
		t.Fatal("the document does not write")
	}
	for _, d := range bbox.Validate(doc, s.ID) {
		if d.Severity == bbox.Error {
			t.Errorf("%v", d)
		}
	}
	var ropts BBoxReadOptions
	if opts != nil {
		ropts.Blobs = opts.Blobs
	}
	var jsonl bytes.Buffer
	if err := bbox.WriteJSONL(&jsonl, doc); err != nil {
		t.Fatal(err)
	}
	for _, form := range []struct {
		name string
		data []byte
	}{{"text", []byte(text)}, {"jsonl", jsonl.Bytes()}} {
		back, err := DecodeBBox(form.data, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !back.Equal(doc) {
			t.Fatalf("%s: the document does not read back equal", form.name)
		}
		im := ReadBBox(back, &ropts)
		want, got := engine.Census(&s, evs), engine.Census(&im.Session, im.Events)
		if got != want {
			var b strings.Builder
			census.WriteTable(&b, "events", "read back", census.Compare(want, got))
			t.Errorf("%s: census differs:\n%s", form.name, b.String())
		}
		again, err := BBox(im.Session, im.Events, opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := again.String(); got != text {
			t.Errorf("%s: bbox → events → bbox differs:\n%s", form.name, diffLines(text, got))
		}
	}
	return text
}

func TestBBoxReadImported(t *testing.T) {
	s, evs := importedSession()
	dir := t.TempDir()
	text := roundTrip(t, s, evs, &BBoxOptions{Blobs: engine.NewBlobs(dir), RepoSHA: "abc1234"})
	for _, want := range []string{
		"import.source: claude",
		`@agent tid=2 id=agent-1 type=general-purpose call=toolu_3 description="find the bug"`,
		"meta=meta uuid=u-0",
		"# record type=brand-new-type ts=",
		"extra.usage_uuid=a-5-usage",
		"cached_tokens=1000",
		"extra.cache_creation_input_tokens=300",
		"meta=compact_summary",
		"# system: system text",
		`extra="{\"stdout\":`,
		"raw=@blob sha256=",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("lacks %q:\n%s", want, text)
		}
	}
	// Without a blob store everything is inline and still reads back.
	roundTrip(t, s, evs, nil)
	// A proxied-style hand-built session (no Import).
	s.Import, s.Title, s.CWD, s.Branch, s.Version, s.Agents = nil, "", "", "", "", nil
	// One exchange per model call: a new one starts after each usage.
	ex := uint64(100)
	for i := range evs {
		evs[i].Prov.Exchange = ex
		if evs[i].Kind == engine.KindUsage {
			ex++
		}
	}
	roundTrip(t, s, evs, nil)
}

// TestBBoxReadGolden reads back every proxied golden session.
func TestBBoxReadGolden(t *testing.T) {
	for _, name := range wireNames(t) {
		t.Run(name, func(t *testing.T) {
			_, ss, evs, data := timeline(t, name)
			for _, s := range ss {
				roundTrip(t, s, evs[s.ID], &BBoxOptions{Blobs: engine.NewBlobs(data)})
				roundTrip(t, s, evs[s.ID], &BBoxOptions{BlobThreshold: -1})
			}
		})
	}
}

// TestBBoxImporter runs the registered importer on a document and on its
// JSONL form.
func TestBBoxImporter(t *testing.T) {
	s, evs := importedSession()
	doc, err := BBox(s, evs, nil)
	if err != nil {
		t.Fatal(err)
	}
	var jsonl bytes.Buffer
	if err := bbox.WriteJSONL(&jsonl, doc); err != nil {
		t.Fatal(err)
	}
	for _, data := range [][]byte{[]byte(doc.String()), jsonl.Bytes()} {
		im, err := engine.DeriveImport("bbox", "bbox:s1", []engine.ImportFile{{Path: "/x/s1.bbox", Records: []engine.ImportRecord{{Import: exchange.Import{Kind: exchange.ImportDoc, Data: data}, WAL: 77}}}})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := engine.Census(&im.Session, im.Events), engine.Census(&s, evs); got != want {
			t.Errorf("census differs: %+v, want %+v", got, want)
		}
		if im.Session.ID != s.ID || im.Events[0].Prov.First != 77 || im.Events[0].Prov.File != "/x/s1.bbox" {
			t.Errorf("session %q, first event prov %+v", im.Session.ID, im.Events[0].Prov)
		}
	}
	for _, files := range [][]engine.ImportFile{
		nil,
		{{Path: "a", Records: []engine.ImportRecord{{Import: exchange.Import{Kind: exchange.ImportLine}}}}},
		{{Path: "a", Records: []engine.ImportRecord{{Import: exchange.Import{Kind: exchange.ImportDoc}}, {Import: exchange.Import{Kind: exchange.ImportDoc}}}}},
		{{Path: "a", Records: []engine.ImportRecord{{Import: exchange.Import{Kind: exchange.ImportDoc, Data: []byte(`{"t":"nope"}`)}}}}},
	} {
		if _, err := engine.DeriveImport("bbox", "bbox:x", files); err == nil {
			t.Errorf("%+v: no error", files)
		}
	}
}

// TestBBoxReadForeign reads the spec's examples: every line becomes an
// event, unknown lines are kept as records.
func TestBBoxReadForeign(t *testing.T) {
	spec := filepath.Join("..", "..", "shared", "spec", "bbox-format.md")
	md, err := os.ReadFile(spec)
	if err != nil {
		t.Skipf("spec not available: %v", err)
	}
	blocks := bbox.MarkdownBlocks(string(md))
	if len(blocks) == 0 {
		t.Fatal("no bbox blocks in the spec")
	}
	for i, b := range blocks {
		doc, err := DecodeBBox([]byte(b.Text), spec)
		if err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
		im := ReadBBox(doc, &BBoxReadOptions{File: spec})
		lines := 0
		for _, l := range doc.Lines {
			if l.Kind != bbox.KindBlank {
				lines++
			}
		}
		if im.Session.Import == nil || im.Session.Import.Source != "bbox" || im.Session.Import.Records != int64(lines) {
			t.Errorf("block %d: import %+v, want %d records", i, im.Session.Import, lines)
		}
		if len(im.Events) < lines-countKind(doc, bbox.KindComment)-countKind(doc, bbox.KindLifecycle) {
			t.Errorf("block %d: %d events for %d lines", i, len(im.Events), lines)
		}
		if _, err := BBox(im.Session, im.Events, nil); err != nil {
			t.Errorf("block %d: render: %v", i, err)
		}
	}
	doc, _ := DecodeBBox([]byte("u: hi step=1 ts=2025-12-18T03:21:08Z\nt:grep id=call_1 \"billing\" type=rs → [4 files]\nt!:test id=c2 cargo test → [running]\no: id=c2 → [ok] 128 passed\nhello there\n# notes: x\nx:explore id=sub_2 tid=2 \"find\" → [launched]\n"), "x")
	im := ReadBBox(doc, nil)
	var kinds []string
	for _, ev := range im.Events {
		kinds = append(kinds, string(ev.Kind))
	}
	want := "message tool_call tool_result tool_call tool_result record record tool_call tool_result"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("kinds %s, want %s", got, want)
	}
	if a := im.Events[1].Tool; string(a.Args) != `{"argv":["billing"],"type":"rs"}` || a.ID != "call_1" {
		t.Errorf("call %+v args %s", a, a.Args)
	}
	if im.Session.Import.Unknown != 1 || len(im.Session.Agents) != 1 || im.Events[0].Text != "hi" || string(im.Events[0].Extra) != `{"bbox":{"step":"1"}}` {
		t.Errorf("session %+v first %+v", im.Session, im.Events[0])
	}
}

func countKind(doc *bbox.Document, k bbox.Kind) int {
	n := 0
	for _, l := range doc.Lines {
		if l.Kind == k {
			n++
		}
	}
	return n
}

// FuzzReadBBox: any input decodes without panic, and what ReadBBox reads
// renders.
func FuzzReadBBox(f *testing.F) {
	s, evs := importedSession()
	doc, _ := BBox(s, evs, nil)
	f.Add([]byte(doc.String()))
	f.Add([]byte("---\nformat: bbox/1\nid: x\nrepo_sha: abc123\nstarted: 2026-01-01T00:00:00Z\n---\n# metrics prompt_tokens=3 extra.exchange=4\nt:x id=a → [err] y\n"))
	f.Add([]byte(`{"t":"u","c":"hi"}` + "\n"))
	f.Add([]byte("x:explore tid=2 \"a\"\no: id=q\n@compact from=1\n# record type=a raw=@blob sha256=00 bytes=1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := DecodeBBox(data, "fuzz")
		if err != nil {
			return
		}
		im := ReadBBox(doc, nil)
		engine.Census(&im.Session, im.Events)
		if _, err := BBox(im.Session, im.Events, nil); err != nil {
			t.Fatalf("render what was read: %v", err)
		}
	})
}
