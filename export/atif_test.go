package export

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/bbengine/bbengine/codec/atif"
	"github.com/bbengine/bbengine/codec/census"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/llm"
	"github.com/bbengine/bbengine/engine"
)

// everyKind is a hand-built session with every event kind: a system
// prompt, typed and injected user messages, two model calls with
// thinking, text, tool calls (object, non-object and no arguments) and
// usage, results folded back into an earlier step, a result whose call is
// unknown, a subagent thread spawned by a call, an error, an
// interruption, a rewrite and records.
func everyKind() (*engine.Session, []engine.Event) {
	const t0 = int64(1_760_000_000_123_456_789)
	s := &engine.Session{ID: "claude:s-1", Agent: "claude-code", Client: "claude-cli/2.1", Version: "2.1.0",
		Title: "fix the build", CWD: "/src/app", Branch: "main",
		Models: []engine.ModelUsage{{Model: "claude-opus-4", Requests: 2}},
		Agents: []engine.Agent{{Thread: 2, ID: "a1", Type: "Explore", Description: "look around", Call: "toolu_task"}},
		Import: &engine.ImportInfo{Source: "claude", Files: []string{"/x.jsonl"}, Records: 40, Errors: 1, Unknown: 1}}
	raw := func(s string) json.RawMessage { return json.RawMessage(s) }
	ev := []engine.Event{
		{Kind: engine.KindRecord, Thread: 1, Record: &engine.Record{Type: "file-history-snapshot", Known: true, Raw: raw(`{"type":"file-history-snapshot"}`)}, UUID: "u0"},
		{Kind: engine.KindSystem, Thread: 1, Role: "system", Text: "You are Claude Code."},
		{Kind: engine.KindMessage, Thread: 1, Role: "user", Text: "<system-reminder>CLAUDE.md</system-reminder>", Meta: "meta", UUID: "u1"},
		{Kind: engine.KindMessage, Thread: 1, Role: "user", Text: "Fix the build, see the screenshot.", UUID: "u2",
			Parts: []llm.Part{{Type: llm.PartImage, MediaType: "image/png", Size: 10, SHA256: "ab"}}},
		{Kind: engine.KindModelCall, Thread: 1, Call: &engine.Call{API: llm.AnthropicMessages, Provider: "anthropic", Model: "claude-opus-4", StopReason: "tool_use", ResponseID: "msg_1", Complete: true, Status: 200}, UUID: "u3",
			Prov: engine.Provenance{RequestID: "req_1"}},
		{Kind: engine.KindThinking, Thread: 1, Role: "assistant", Text: "Look first.", Signature: "sig==", UUID: "u3"},
		{Kind: engine.KindMessage, Thread: 1, Role: "assistant", Text: "Checking.", UUID: "u4"},
		{Kind: engine.KindToolCall, Thread: 1, Role: "assistant", Tool: &engine.Tool{ID: "toolu_1", Name: "Bash", Args: raw(`{"command": "go build ./...", "timeout": 5}`)}, UUID: "u5"},
		{Kind: engine.KindToolCall, Thread: 1, Role: "assistant", Tool: &engine.Tool{ID: "toolu_task", Name: "Task", Args: raw(`{"prompt":"look around"}`)}, UUID: "u5"},
		{Kind: engine.KindToolCall, Thread: 1, Role: "assistant", Tool: &engine.Tool{ID: "toolu_2", Name: "Weird", Args: raw(`"just a string"`)}},
		{Kind: engine.KindToolCall, Thread: 1, Role: "assistant", Tool: &engine.Tool{ID: "toolu_3", Name: "NoArgs"}},
		{Kind: engine.KindUsage, Thread: 1, Usage: &engine.Usage{Input: 1500, Output: 90, CacheRead: 1000, CacheCreation: 400, CacheCreation5m: 400, Reasoning: 20}},
		{Kind: engine.KindMessage, Thread: 2, Role: "user", Text: "look around"},
		{Kind: engine.KindModelCall, Thread: 2, Call: &engine.Call{Model: "claude-haiku-4", Complete: true, Status: 200}},
		{Kind: engine.KindMessage, Thread: 2, Role: "assistant", Text: "Found main.go.", UUID: "u6"},
		{Kind: engine.KindUsage, Thread: 2, Usage: &engine.Usage{Input: 50, Output: 5}},
		{Kind: engine.KindToolResult, Thread: 1, Role: "user", Tool: &engine.Tool{ID: "toolu_1", IsError: true}, Text: "main.go:3: undefined: x", UUID: "u7",
			Extra: raw(`{"stdout":"","stderr":"main.go:3: undefined: x","interrupted":false}`)},
		{Kind: engine.KindToolResult, Thread: 1, Role: "user", Tool: &engine.Tool{ID: "toolu_task"}, Text: "Found main.go.", UUID: "u8"},
		{Kind: engine.KindToolResult, Thread: 1, Role: "user", Tool: &engine.Tool{ID: "toolu_2"}, Text: ""},
		{Kind: engine.KindToolResult, Thread: 1, Role: "user", Tool: &engine.Tool{ID: "toolu_gone"}, Text: "result of a call before the log started",
			Parts: []llm.Part{{Type: llm.PartImage, MediaType: "image/jpeg", URL: "https://x/y.jpg"}}},
		{Kind: engine.KindRewrite, Thread: 1, Rewrite: &engine.Rewrite{Kind: "retry", From: 1, Kept: 4, Dropped: 1}},
		{Kind: engine.KindModelCall, Thread: 1, Call: &engine.Call{Model: "claude-opus-4", Complete: false, Status: 200}},
		{Kind: engine.KindThinking, Thread: 1, Role: "assistant", Text: "one", Partial: true},
		{Kind: engine.KindThinking, Thread: 1, Role: "assistant", Data: "redacted-bytes"},
		{Kind: engine.KindMessage, Thread: 1, Role: "assistant", Text: "Fixed x", Partial: true},
		{Kind: engine.KindMessage, Thread: 1, Role: "assistant", Text: "and y."},
		{Kind: engine.KindUsage, Thread: 1, Usage: &engine.Usage{Input: 10, Output: 1}},
		{Kind: engine.KindUsage, Thread: 1, Usage: &engine.Usage{Input: 5, Output: 2, CacheRead: 3}},
		{Kind: engine.KindInterruption, Thread: 1, Text: "client went away"},
		{Kind: engine.KindError, Thread: 1, Error: &engine.Error{Stage: "upstream", Status: 529, Type: "overloaded_error", Message: "Overloaded"}},
		{Kind: engine.KindRecord, Thread: 1, Record: &engine.Record{Type: "mystery", Raw: raw(`{"type":"mystery","n":1}`)}, UUID: "u9"},
		{Kind: engine.KindMessage, Thread: 1, Role: "developer", Text: "env: linux"},
	}
	for i := range ev {
		ev[i].Time = t0 + int64(i)*1_500_000
		ev[i].Seq = uint64(i + 1)
	}
	ev[3].Time = t0 // same time as the first event
	return s, ev
}

func importDoc(t *testing.T, b []byte) *engine.Imported {
	t.Helper()
	im, err := engine.DeriveImport("atif", "atif:test", []engine.ImportFile{{Path: "/tmp/t.json", Records: []engine.ImportRecord{{
		Import: exchange.Import{Source: "atif", Session: "atif:test", File: "/tmp/t.json", Kind: exchange.ImportDoc, Data: b}, WAL: 77}}}})
	if err != nil {
		t.Fatal(err)
	}
	return im
}

func export(t *testing.T, s *engine.Session, events []engine.Event) []byte {
	t.Helper()
	tr, err := ATIF(s, events, &ATIFOptions{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if errs := atif.Validate(tr); errs != nil {
		t.Fatalf("export does not validate: %v", errs)
	}
	b, err := atif.Encode(tr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameCensus(t *testing.T, a Census2, b Census2) {
	t.Helper()
	rows := census.Compare(engine.Census(a.s, a.ev), engine.Census(b.s, b.ev))
	for _, r := range rows {
		if r.Differs {
			t.Errorf("census %s: %d → %d", r.Name, r.Source, r.Result)
		}
	}
}

// Census2 is a session with its events.
type Census2 struct {
	s  *engine.Session
	ev []engine.Event
}

// TestATIFRoundTrip exports a session with every event kind and imports
// the document back: the same events, in the same order, with the same
// census.
func TestATIFRoundTrip(t *testing.T) {
	s, events := everyKind()
	b := export(t, s, events)
	im := importDoc(t, b)
	if im.Session.Import.Errors != 0 {
		t.Fatalf("import errors: %+v", im.Session.Import)
	}
	sameCensus(t, Census2{s, events}, Census2{&im.Session, im.Events})
	if len(im.Events) != len(events) {
		t.Fatalf("%d events back, want %d", len(im.Events), len(events))
	}
	for i := range events {
		want, got := events[i], im.Events[i]
		if got.Prov.Side != "import" || got.Prov.First != 77 || got.Prov.File != "/tmp/t.json" || got.Prov.RequestID != want.Prov.RequestID {
			t.Errorf("event %d: prov %+v", i, got.Prov)
		}
		want.Prov, got.Prov = engine.Provenance{}, engine.Provenance{}
		want.Seq = uint64(i + 1)
		if want.Tool != nil && want.Tool.Args != nil {
			var x, y any
			json.Unmarshal(want.Tool.Args, &x)
			json.Unmarshal(got.Tool.Args, &y)
			if !reflect.DeepEqual(x, y) {
				t.Errorf("event %d: args %s, want %s", i, got.Tool.Args, want.Tool.Args)
			}
			wt, gt := *want.Tool, *got.Tool
			wt.Args, gt.Args = nil, nil
			want.Tool, got.Tool = &wt, &gt
		}
		if !reflect.DeepEqual(want, got) {
			w, _ := json.Marshal(want)
			g, _ := json.Marshal(got)
			t.Errorf("event %d:\n got %s\nwant %s", i, g, w)
		}
	}
	if !reflect.DeepEqual(im.Session.Agents, s.Agents) || im.Session.Title != s.Title || im.Session.Agent != s.Agent {
		t.Errorf("session: %+v", im.Session)
	}
	// The imported session is a fixed point: exporting and importing it
	// again gives the same session and events.
	im.Session.ID = "atif:test"
	again := importDoc(t, export(t, &im.Session, im.Events))
	if !reflect.DeepEqual(again, im) {
		t.Errorf("second round trip differs:\n%+v\n%+v", again.Session, im.Session)
	}
}

// TestATIFExportShape checks the ATIF fields a consumer reads.
func TestATIFExportShape(t *testing.T) {
	s, events := everyKind()
	tr, err := ATIF(s, events, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Agent.Name != "claude-code" || tr.Agent.Version != "2.1.0" || *tr.Agent.ModelName != "claude-opus-4" || *tr.SessionID != s.ID {
		t.Errorf("agent %+v", tr.Agent)
	}
	var sources []string
	for _, st := range tr.Steps {
		sources = append(sources, st.Source)
	}
	want := []string{"system", "system", "user", "user", "agent", "system", "system", "agent", "system", "system", "system", "system"}
	if !reflect.DeepEqual(sources, want) {
		t.Fatalf("sources %q\nwant    %q", sources, want)
	}
	a := tr.Steps[4]
	if *a.ModelName != "claude-opus-4" || *a.ReasoningContent != "Look first." || a.Message.Text != "Checking." || len(a.ToolCalls) != 4 || *a.LLMCallCount != 1 {
		t.Errorf("agent step %+v", a)
	}
	if m := a.Metrics; *m.PromptTokens != 1500 || *m.CompletionTokens != 90 || *m.CachedTokens != 1000 || string(m.Extra) != `{"cache_creation_input_tokens":400,"reasoning_tokens":20}` {
		t.Errorf("metrics %+v %s", m, m.Extra)
	}
	if string(a.ToolCalls[0].Arguments) != `{"command":"go build ./...","timeout":5}` || string(a.ToolCalls[2].Arguments) != `{}` {
		t.Errorf("arguments %s %s", a.ToolCalls[0].Arguments, a.ToolCalls[2].Arguments)
	}
	res := a.Observation.Results
	if len(res) != 3 || *res[0].SourceCallID != "toolu_1" || res[0].Content.Text != "main.go:3: undefined: x" ||
		*res[1].SubagentTrajectoryRef[0].TrajectoryID != "claude:s-1/thread-2" {
		t.Errorf("results %+v", res)
	}
	if o := tr.Steps[5]; o.Source != "system" || o.Observation.Results[0].SourceCallID != nil || o.Observation.Results[0].Content.Text != "result of a call before the log started" {
		t.Errorf("orphan result step %+v", o)
	}
	b := tr.Steps[7]
	if *b.ReasoningContent != "one\n\n" || b.Message.Text != "Fixed x\n\nand y." || *b.Metrics.PromptTokens != 15 || *b.Metrics.CachedTokens != 3 {
		t.Errorf("second agent step %+v", b)
	}
	if fm := tr.FinalMetrics; *fm.TotalSteps != 12 || *fm.TotalPromptTokens != 1515 || *fm.TotalCompletionTokens != 93 {
		t.Errorf("final metrics %+v", fm)
	}
	if len(tr.SubagentTrajectories) != 1 || tr.SubagentTrajectories[0].Agent.Name != "Explore" || len(tr.SubagentTrajectories[0].Steps) != 2 {
		t.Errorf("subagents %+v", tr.SubagentTrajectories)
	}
	if *tr.Steps[0].Timestamp != "2025-10-09T08:53:20.123456Z" {
		t.Errorf("timestamp %s", *tr.Steps[0].Timestamp)
	}
}

// TestATIFForeign imports foreign documents and exports them back: the
// same JSON, and a valid document.
func TestATIFForeign(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "codec", "atif", "testdata", "*.json"))
	if len(files) < 6 {
		t.Fatalf("found %d documents", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			in, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			im := importDoc(t, in)
			for _, ev := range im.Events {
				if ev.Kind == engine.KindError {
					t.Errorf("error event: %+v", ev.Error)
				}
			}
			tr, err := ATIF(&im.Session, im.Events, nil)
			if err != nil {
				t.Fatal(err)
			}
			if errs := atif.Validate(tr); errs != nil {
				t.Errorf("export does not validate: %v", errs)
			}
			out, err := atif.Encode(tr)
			if err != nil {
				t.Fatal(err)
			}
			if !jsonSame(t, in, out) {
				t.Errorf("exported document differs from the input:\n%s", out)
			}
			again := importDoc(t, out)
			sameCensus(t, Census2{&im.Session, im.Events}, Census2{&again.Session, again.Events})
		})
	}
}

func jsonSame(t *testing.T, a, b []byte) bool {
	t.Helper()
	x, err := atif.Decode(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := atif.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

// TestATIFImportProblems checks what an invalid document imports.
func TestATIFImportProblems(t *testing.T) {
	im := importDoc(t, []byte("{\"schema_version\": \"ATIF-v1.7\",\n  \"steps\": [}"))
	if im.Session.Import.Errors != 1 || im.Session.Import.Records != 1 || len(im.Events) != 0 {
		t.Errorf("not JSON: %+v, %d events", im.Session.Import, len(im.Events))
	}
	doc := `{"schema_version":"ATIF-v1.6","session_id":"x","agent":{"name":"a","version":"1"},"steps":[
		{"step_id":1,"source":"user","message":"hi"},
		{"step_id":3,"source":"agent","message":"hello","mood":"good","tool_calls":[{"tool_call_id":"c","function_name":"f","arguments":{}}],
		 "observation":{"results":[{"source_call_id":"zz","content":"?"}]}}]}`
	im = importDoc(t, []byte(doc))
	var errs []string
	kinds := map[engine.Kind]int{}
	for _, ev := range im.Events {
		kinds[ev.Kind]++
		if ev.Kind == engine.KindError {
			errs = append(errs, ev.Error.Message)
		}
	}
	want := []string{`steps[1]: unexpected field "mood"`, `steps[1].step_id: expected 2 (sequential from 1), got 3`,
		`steps[1].observation.results[0].source_call_id: references source_call_id 'zz' which is not found in step 3's tool_calls`}
	if !reflect.DeepEqual(errs, want) {
		t.Errorf("errors %q\nwant   %q", errs, want)
	}
	if kinds[engine.KindMessage] != 2 || kinds[engine.KindToolCall] != 1 || kinds[engine.KindToolResult] != 1 || kinds[engine.KindModelCall] != 1 {
		t.Errorf("kinds %v", kinds)
	}
	// The document exports back as it decoded (without the unknown key).
	tr, err := ATIF(&im.Session, im.Events, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Steps[1].StepID != 3 || tr.Steps[1].Message.Text != "hello" {
		t.Errorf("steps %+v", tr.Steps)
	}
}

// TestATIFForeignEvents checks the events of a foreign document, and that
// they, not the kept fields, make the exported text.
func TestATIFForeignEvents(t *testing.T) {
	in, err := os.ReadFile(filepath.Join("..", "codec", "atif", "testdata", "v17_subagents.json"))
	if err != nil {
		t.Fatal(err)
	}
	im := importDoc(t, in)
	c := engine.Census(&im.Session, im.Events)
	if c.Subagents != 2 || c.UserPrompts != 2 || c.MetaUser != 1 || c.Responses != 3 || c.ToolCalls != 2 || c.ToolResults != 2 || c.TokensIn != 390 || c.Thinking != 1 {
		t.Errorf("census %+v", c)
	}
	wantAgents := []engine.Agent{{Thread: 2, ID: "helper-a", Type: "reader", Call: "spawn_a"}, {Thread: 3, ID: "helper-b", Type: "reader", Call: "spawn_b"}}
	if !reflect.DeepEqual(im.Session.Agents, wantAgents) || im.Session.Agent != "planner" || im.Session.Threads != 3 {
		t.Errorf("session %+v", im.Session)
	}
	var threads []int
	for _, ev := range im.Events {
		if len(threads) == 0 || threads[len(threads)-1] != ev.Thread {
			threads = append(threads, ev.Thread)
		}
	}
	if !reflect.DeepEqual(threads, []int{1, 2, 3, 1}) {
		t.Errorf("thread order %v: subagents should follow the step that spawned them", threads)
	}
	for i := range im.Events {
		if ev := &im.Events[i]; ev.Kind == engine.KindMessage && ev.Text == "Doc A: storage." {
			ev.Text = "Doc A: the WAL."
		}
	}
	tr, err := ATIF(&im.Session, im.Events, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.SubagentTrajectories[0].Steps[1].Message.Text; got != "Doc A: the WAL." {
		t.Errorf("message %q", got)
	}
}

// TestATIFOwnDocumentEdited imports a document that claims to be
// bbengine's but lost a step's events as a foreign one, with the problem
// reported.
func TestATIFOwnDocumentEdited(t *testing.T) {
	s, events := everyKind()
	tr, err := ATIF(s, events, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr.Steps[2].Extra = nil
	b, err := atif.Encode(tr)
	if err != nil {
		t.Fatal(err)
	}
	im := importDoc(t, b)
	var msgs []string
	for _, ev := range im.Events {
		if ev.Kind == engine.KindError && ev.Error.Stage == "import" {
			msgs = append(msgs, ev.Error.Message)
		}
	}
	if want := []string{"steps[2].extra.bbengine: the step has no bbengine events"}; !reflect.DeepEqual(msgs, want) {
		t.Errorf("problems %q, want %q", msgs, want)
	}
	if c := engine.Census(&im.Session, im.Events); c.UserPrompts != 3 || c.Responses != 3 || c.Subagents != 1 {
		t.Errorf("census %+v", c)
	}
}
