package codex

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/agentlog/agentlogtest"
	"github.com/bbengine/bbengine/codec/census"
	"github.com/bbengine/bbengine/codec/codex"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/llm"
	"github.com/bbengine/bbengine/engine"
	"github.com/klauspost/compress/zstd"
)

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

func codexGolden(t testing.TB) []string {
	return agentlogtest.CodexRollouts(t, agentlogtest.Golden(2, "codex"))
}

// readRollout reads a rollout as the import does, into import records
// and raw lines.
func readRollout(t testing.TB, path string) (engine.ImportFile, [][]byte) {
	t.Helper()
	f, lines, _ := agentlogtest.ReadLog(t, path, "codex", "")
	return importFile(f, true), lines
}

func deriveRollout(t testing.TB, file engine.ImportFile) *engine.Imported {
	first, _ := codex.ParseLine(file.Records[0].Data)
	id := codex.SessionID(file.Path, first)
	im, err := engine.DeriveImport("codex", "codex:"+id, []engine.ImportFile{file})
	if err != nil {
		t.Fatal(err)
	}
	return im
}

func TestImportCodexGolden(t *testing.T) {
	for _, path := range codexGolden(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			file, lines := readRollout(t, path)
			im := deriveRollout(t, file)
			want := codex.Count(lines)
			got := engine.Census(&im.Session, im.Events)
			if got != want {
				t.Errorf("census of the events differs from the source census:\n got %+v\nwant %+v", got, want)
			}
			s := im.Session
			if s.Agent != "codex" || s.Client == "" || s.Version == "" || s.CWD == "" || s.First == 0 || s.Last < s.First {
				t.Errorf("session = %+v", s)
			}
			if int64(s.Requests) != want.Responses {
				t.Errorf("requests = %d, want %d", s.Requests, want.Responses)
			}
			if s.Usage.Input-s.Usage.CacheRead != want.TokensIn || s.Usage.Output != want.TokensOut {
				t.Errorf("usage = %+v, census %+v", s.Usage, want)
			}
			var perModel engine.Usage
			for _, m := range s.Models {
				perModel.Add(m.Usage)
			}
			if perModel != s.Usage {
				t.Errorf("models' usage %+v != session usage %+v", perModel, s.Usage)
			}
			// Every record is in at least one event: its first or last
			// record (the test's WAL offsets are the line numbers).
			covered := make([]bool, len(lines)+1)
			for _, ev := range im.Events {
				if ev.Prov.Side != "import" || ev.Prov.File != path || ev.Prov.Line < 1 || ev.Thread != 1 || ev.Prov.First != uint64(ev.Prov.Line) {
					t.Fatalf("event %d prov %+v thread %d", ev.Seq, ev.Prov, ev.Thread)
				}
				covered[ev.Prov.First], covered[ev.Prov.Last] = true, true
			}
			for n := 1; n <= len(lines); n++ {
				if !covered[n] {
					t.Errorf("line %d is in no event", n)
				}
			}
		})
	}
}

// TestImportCodexEvents checks the events of one small rollout by hand.
func TestImportCodexEvents(t *testing.T) {
	var path string
	for _, p := range codexGolden(t) {
		if strings.Contains(p, "20-34-25") {
			path = p
		}
	}
	file, _ := readRollout(t, path)
	im := deriveRollout(t, file)
	if im.Session.ID != "codex:019c8bfe-ec25-79e0-97d7-bda6a9c575ff" || im.Session.Client != "Codex Desktop/0.104.0-alpha.1" || im.Session.Branch != "main" {
		t.Errorf("session = %+v", im.Session)
	}
	var kinds []string
	for _, ev := range im.Events[:16] {
		k := string(ev.Kind)
		switch {
		case ev.Kind == engine.KindMessage:
			k += "/" + ev.Role + "/" + ev.Meta
		case ev.Kind == engine.KindRecord:
			k += "/" + ev.Record.Type
		}
		kinds = append(kinds, k)
	}
	want := []string{
		"record/session_meta",
		"message/user/developer", "message/user/developer", "message/user/developer", "message/user/developer",
		"message/user/developer", "message/user/developer",
		"record/event_msg/task_started",
		"message/user/", // the user item and the user_message event
		"record/turn_context",
		"record/event_msg/token_count", // info null
		"model_call",
		"thinking", // agent_reasoning + reasoning
		"message/assistant/",
		"tool_call",
		"usage",
	}
	if strings.Join(kinds, " ") != strings.Join(want, " ") {
		t.Errorf("events:\n got %v\nwant %v", kinds, want)
	}
	um := im.Events[8]
	if um.Prov.Line != 9 || um.Prov.File != path || !strings.HasPrefix(um.Text, "[REDACTED_MESSAGE len=98") {
		t.Errorf("user message = %+v", um)
	}
	if mc := im.Events[11].Call; mc.Model != "gpt-5.3-codex" || mc.API != "openai-responses" || mc.Provider != "openai" || !mc.Complete || mc.Status != 200 {
		t.Errorf("model call = %+v", mc)
	}
	if th := im.Events[12]; th.Data == "" || th.Prov.Line != 13 {
		t.Errorf("thinking = %+v", th)
	}
	// The sanitized arguments are not JSON: they stay text.
	if tc := im.Events[14]; tc.Tool.Args != nil || !strings.HasPrefix(tc.Text, "[REDACTED") || tc.Tool.ID == "" || tc.Tool.Name == "" {
		t.Errorf("tool call = %+v %q", tc.Tool, tc.Text)
	}
	if u := im.Events[15].Usage; u.Input == 0 || u.Output == 0 {
		t.Errorf("usage = %+v", u)
	}
}

// TestImportCodexExtra checks the folding of exec_command_end,
// patch_apply_end and web_search_end, and free-text custom tool input.
func TestImportCodexExtra(t *testing.T) {
	var path string
	for _, p := range codexGolden(t) {
		if strings.Contains(p, "11-26-55") {
			path = p
		}
	}
	file, _ := readRollout(t, path)
	im := deriveRollout(t, file)
	var exec, patch, search, custom int
	for _, ev := range im.Events {
		var x map[string]json.RawMessage
		if ev.Extra != nil {
			if err := json.Unmarshal(ev.Extra, &x); err != nil {
				t.Fatalf("event %d extra: %v", ev.Seq, err)
			}
		}
		switch {
		case ev.Kind == engine.KindToolResult && x["exec_command_end"] != nil:
			exec++
		case ev.Kind == engine.KindToolResult && x["patch_apply_end"] != nil:
			patch++
		case ev.Kind == engine.KindToolCall && ev.Tool.Server && x["web_search_end"] != nil && strings.HasPrefix(ev.Tool.ID, "ws_"):
			search++
		case ev.Kind == engine.KindToolCall && ev.Tool.Name == "apply_patch":
			var args struct{ Input string }
			if json.Unmarshal(ev.Tool.Args, &args) != nil || !strings.HasPrefix(args.Input, "*** Begin Patch") {
				t.Errorf("apply_patch args = %s", ev.Tool.Args)
			}
			custom++
		}
	}
	if exec != 43 || patch != 3 || search != 3 || custom != 3 {
		t.Errorf("exec %d patch %d search %d custom %d, want 43 3 3 3", exec, patch, search, custom)
	}
}

// TestImportCodexZstd derives a compressed copy of a golden rollout and
// checks it matches the plain file.
func TestImportCodexZstd(t *testing.T) {
	var path string
	for _, p := range codexGolden(t) {
		if strings.Contains(p, "12-54-34") {
			path = p
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	zpath := filepath.Join(t.TempDir(), filepath.Base(path)+".zst")
	if err := os.WriteFile(zpath, enc.EncodeAll(raw, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	enc.Close()
	pf, _ := readRollout(t, path)
	zf, lines := readRollout(t, zpath)
	a, b := deriveRollout(t, pf), deriveRollout(t, zf)
	if a.Session.ID != b.Session.ID || len(a.Events) != len(b.Events) {
		t.Fatalf("zstd session %s %d events, plain %s %d", b.Session.ID, len(b.Events), a.Session.ID, len(a.Events))
	}
	for i := range b.Events {
		b.Events[i].Prov.File = path
	}
	b.Session.Import.Files = a.Session.Import.Files
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Error("the zstd rollout derives differently from the plain one")
	}
	if got, want := engine.Census(&b.Session, b.Events), codex.Count(lines); got != want {
		t.Errorf("census %+v, want %+v", got, want)
	}
	// With both files in one directory, the plain one is read.
	plain := strings.TrimSuffix(zpath, ".zst")
	if err := os.WriteFile(plain, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	pf, _ = readRollout(t, plain)
	both, err := engine.DeriveImport("codex", a.Session.ID, []engine.ImportFile{zf, pf})
	if err != nil {
		t.Fatal(err)
	}
	if len(both.Session.Import.Files) != 1 || both.Session.Import.Files[0] != plain || len(both.Events) != len(a.Events) {
		t.Errorf("both files: %v, %d events", both.Session.Import.Files, len(both.Events))
	}
}

// TestImportCodexBadLines adds a malformed line, an unknown envelope
// type, an unknown event and an unknown item to a golden rollout.
func TestImportCodexBadLines(t *testing.T) {
	var path string
	for _, p := range codexGolden(t) {
		if strings.Contains(p, "13-19-38") {
			path = p
		}
	}
	file, lines := readRollout(t, path)
	extra := []string{
		`{synthetic malformed json`,
		`{"timestamp":"2026-02-23T12:20:00.000Z","type":"future_synthetic_record","payload":{"x":1}}`,
		`{"timestamp":"2026-02-23T12:20:01.000Z","type":"event_msg","payload":{"type":"future_event"}}`,
		`{"timestamp":"2026-02-23T12:20:02.000Z","type":"response_item","payload":{"type":"future_item"}}`,
		`{"timestamp":"2026-02-23T12:20:03.000Z","type":"event_msg","payload":{"type":"error","message":"stream disconnected"}}`,
	}
	n := int64(len(lines))
	for i, s := range extra {
		lines = append(lines, []byte(s))
		file.Records = append(file.Records, engine.ImportRecord{Import: exchange.Import{Source: "codex", File: path, Kind: exchange.ImportLine, Line: n + int64(i) + 1, Data: []byte(s)}})
	}
	im := deriveRollout(t, file)
	got, want := engine.Census(&im.Session, im.Events), codex.Count(lines)
	if got != want {
		t.Errorf("census %+v, want %+v", got, want)
	}
	if imp := im.Session.Import; imp.Errors != 1 || imp.Unknown != 3 || imp.Records != n+5 || want.Unknown != 3 || want.Errors != 1 || im.Session.Errors != 1 {
		t.Errorf("import = %+v, census %+v", imp, want)
	}
	var unknown []string
	for _, ev := range im.Events {
		if ev.Kind == engine.KindRecord && !ev.Record.Known {
			unknown = append(unknown, ev.Record.Type)
			if !json.Valid(ev.Record.Raw) {
				t.Errorf("raw %q", ev.Record.Raw)
			}
		}
	}
	if strings.Join(unknown, " ") != "future_synthetic_record event_msg/future_event response_item/future_item" {
		t.Errorf("unknown records = %v", unknown)
	}
}

func TestImportCodexDeterministic(t *testing.T) {
	for _, path := range codexGolden(t) {
		file, _ := readRollout(t, path)
		a, _ := json.Marshal(deriveRollout(t, file))
		b, _ := json.Marshal(deriveRollout(t, file))
		if !bytes.Equal(a, b) {
			t.Errorf("%s: two derivations differ", filepath.Base(path))
		}
	}
}

func BenchmarkImportCodex(b *testing.B) {
	var path string
	for _, p := range codexGolden(b) {
		if strings.Contains(p, "12-54-34") {
			path = p
		}
	}
	file, _ := readRollout(b, path)
	var size int64
	for _, r := range file.Records {
		size += int64(len(r.Data)) + 1
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := engine.DeriveImport("codex", "codex:x", []engine.ImportFile{file}); err != nil {
			b.Fatal(err)
		}
	}
}

// fixture0169 is the rollout the real Codex CLI 0.169.0 wrote in e2e's
// TestCodex: one `codex exec` through bbengine proxy to a fake Responses
// API, an exec_command call of `echo hello`, its output, then a
// text-only answer.
const (
	fixture0169        = "testdata/codex-0.169.0-tool.jsonl"
	fixture0169Session = "01a21dff-d575-7003-9b96-4b029ce49315"
)

// TestImportCodex0169 derives the 0.169.0 rollout and checks its census,
// its session and its events exactly: the prompt (a user item mirrored
// by an item_completed UserMessage, no user_message) is one user
// prompt, the skills and environment context are injected context, the
// item_completed events of the reasoning and the answer fold into their
// items and the CommandExecution into the call's result, and each model
// call carries the response id of its token_usage_record.
func TestImportCodex0169(t *testing.T) {
	file, lines := readRollout(t, fixture0169)
	im := deriveRollout(t, file)
	got, want := engine.Census(&im.Session, im.Events), codex.Count(lines)
	if got != want {
		t.Errorf("census of the events differs from the source census:\n got %+v\nwant %+v", got, want)
	}
	exact := census.Counts{Records: 21, UserPrompts: 1, MetaUser: 2, Assistant: 1, Responses: 2, Thinking: 1,
		ToolCalls: 1, ToolResults: 1, CallIDs: 1, TokensIn: 9741, TokensOut: 53, CacheRead: 9472, Kept: 8}
	if want != exact {
		t.Errorf("source census:\n got %+v\nwant %+v", want, exact)
	}
	s := im.Session
	if s.ID != "codex:"+fixture0169Session || s.Agent != "codex" || s.Version != "0.169.0" || s.Requests != 2 || s.CWD == "" || s.Import.Unknown != 0 || s.Import.Errors != 0 {
		t.Errorf("session = %+v", s)
	}
	if s.Usage.Input != 9538+9675 || s.Usage.Output != 41+12 || s.Usage.CacheRead != 9472 || s.Usage.Reasoning != 24 {
		t.Errorf("usage = %+v, want input 19213, output 53, cache read 9472, reasoning 24", s.Usage)
	}
	var got2 []string
	for _, ev := range im.Events {
		e := fmt.Sprintf("%d-%d %s", ev.Prov.First, ev.Prov.Last, ev.Kind)
		switch {
		case ev.Kind == engine.KindRecord:
			e += fmt.Sprintf(" %s known=%v", ev.Record.Type, ev.Record.Known)
		case ev.Kind == engine.KindMessage:
			txt, _, _ := strings.Cut(ev.Text, "\n")
			e += fmt.Sprintf(" %s meta=%q %q", ev.Role, ev.Meta, txt)
		case ev.Kind == engine.KindModelCall:
			e += " " + ev.Call.ResponseID
		case ev.Kind == engine.KindToolCall, ev.Kind == engine.KindToolResult:
			e += fmt.Sprintf(" %s %s", ev.Tool.ID, ev.Tool.Name)
		case ev.Kind == engine.KindUsage:
			e += fmt.Sprintf(" in=%d out=%d cache=%d", ev.Usage.Input, ev.Usage.Output, ev.Usage.CacheRead)
		}
		got2 = append(got2, e)
	}
	wantEvents := []string{
		"1-1 record session_meta known=true",
		"2-2 record event_msg/task_started known=true",
		`3-3 message user meta="developer" "<skills_instructions>"`,
		`4-4 message user meta="developer" "<environment_context>"`,
		"5-5 record world_state known=true",
		"6-6 record turn_context known=true",
		"7-7 record event_msg/thread_settings_applied known=true",
		`8-9 message user meta="" "E2E-CODEX-5b2e: run ` + "`echo hello`" + ` in the shell and tell me what it printed."`,
		"11-11 model_call resp_0e2ec0de0000000000000001",
		"10-11 thinking",
		"12-12 tool_call call_E2eExecEchoHello0001 exec_command",
		"13-13 record token_usage_record known=true",
		"14-15 tool_result call_E2eExecEchoHello0001 exec_command",
		"16-16 usage in=9538 out=41 cache=0",
		"18-18 model_call resp_0e2ec0de0000000000000002",
		`17-18 message assistant meta="" "E2E done: the shell said hello."`,
		"19-19 record token_usage_record known=true",
		"20-20 usage in=9675 out=12 cache=9472",
		"21-21 record event_msg/task_complete known=true",
	}
	if strings.Join(got2, "\n") != strings.Join(wantEvents, "\n") {
		t.Errorf("events:\n%s\nwant\n%s", strings.Join(got2, "\n"), strings.Join(wantEvents, "\n"))
	}
	for _, ev := range im.Events {
		switch ev.Kind {
		case engine.KindToolCall:
			if string(ev.Tool.Args) != `{"cmd":"echo hello"}` {
				t.Errorf("tool args = %s", ev.Tool.Args)
			}
		case engine.KindToolResult:
			var x map[string]json.RawMessage
			if !strings.Contains(ev.Text, "hello") || json.Unmarshal(ev.Extra, &x) != nil || !bytes.Contains(x["item_completed"], []byte(`"aggregated_output":"hello\n"`)) {
				t.Errorf("tool result = %q, extra %s", ev.Text, ev.Extra)
			}
		}
	}
}

// TestImportCodexResponseIDs checks that each model call takes the
// response id of its token_usage_record whether the record comes before
// or after the call's token_count, that a call with no recorded output
// takes its record's id, and that no record mints a call or adds usage.
// It also checks an item_completed UserMessage alone: the prompt, with
// its images.
func TestImportCodexResponseIDs(t *testing.T) {
	const (
		meta    = `{"timestamp":"2026-11-27T17:13:55.000Z","type":"session_meta","payload":{"id":"s","cwd":"/w","originator":"codex_exec","cli_version":"0.169.0"}}`
		prompt  = `{"timestamp":"2026-11-27T17:13:55.001Z","type":"event_msg","payload":{"type":"item_completed","item":{"type":"UserMessage","id":"u1","content":[{"type":"text","text":"look "},{"type":"image","image_url":"data:image/png;base64,AA=="},{"type":"text","text":"here"}]}}}`
		call    = `{"timestamp":"2026-11-27T17:13:55.002Z","type":"response_item","payload":{"type":"function_call","name":"exec_command","arguments":"{}","call_id":"call_1"}}`
		output  = `{"timestamp":"2026-11-27T17:13:55.003Z","type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":"ok"}}`
		recA    = `{"timestamp":"2026-11-27T17:13:55.004Z","type":"token_usage_record","payload":{"response_id":"resp_A","usage":{"input_tokens":100,"output_tokens":10,"total_tokens":110}}}`
		countA  = `{"timestamp":"2026-11-27T17:13:55.005Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":100,"output_tokens":10,"total_tokens":110},"last_token_usage":{"input_tokens":100,"output_tokens":10,"total_tokens":110}}}}`
		recB    = `{"timestamp":"2026-11-27T17:13:55.006Z","type":"token_usage_record","payload":{"response_id":"resp_B","usage":{"input_tokens":120,"output_tokens":5,"total_tokens":125}}}`
		countB  = `{"timestamp":"2026-11-27T17:13:55.007Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":220,"output_tokens":15,"total_tokens":235},"last_token_usage":{"input_tokens":120,"output_tokens":5,"total_tokens":125}}}}`
		answer  = `{"timestamp":"2026-11-27T17:13:55.008Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}}`
		recC    = `{"timestamp":"2026-11-27T17:13:55.010Z","type":"token_usage_record","payload":{"response_id":"resp_C","usage":{"input_tokens":130,"output_tokens":1,"total_tokens":131}}}`
		countC  = `{"timestamp":"2026-11-27T17:13:55.009Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":350,"output_tokens":16,"total_tokens":366},"last_token_usage":{"input_tokens":130,"output_tokens":1,"total_tokens":131}}}}`
		countC2 = `{"timestamp":"2026-11-27T17:13:55.011Z","type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":350,"output_tokens":16,"total_tokens":366},"last_token_usage":{"input_tokens":130,"output_tokens":1,"total_tokens":131}}}}`
	)
	// A: record before the token_count; B: a call with no output; C:
	// record after the token_count (then a repeat).
	lines := []string{meta, prompt, call, recA, output, countA, recB, countB, answer, countC, recC, countC2}
	file := engine.ImportFile{Path: "/h/.codex/sessions/2026/11/27/rollout-2026-11-27T17-13-55-s.jsonl"}
	var raw [][]byte
	for i, l := range lines {
		raw = append(raw, []byte(l))
		file.Records = append(file.Records, engine.ImportRecord{Import: exchange.Import{Source: "codex", Kind: exchange.ImportLine, Line: int64(i + 1), Data: []byte(l)}, WAL: uint64(i + 1)})
	}
	im := deriveRollout(t, file)
	got, want := engine.Census(&im.Session, im.Events), codex.Count(raw)
	if got != want {
		t.Errorf("census of the events differs from the source census:\n got %+v\nwant %+v", got, want)
	}
	if want.UserPrompts != 1 || want.Responses != 3 || want.Kept != 5 || want.TokensIn != 350 || want.TokensOut != 16 {
		t.Errorf("source census %+v", want)
	}
	var ids []string
	usage := 0
	for _, ev := range im.Events {
		switch ev.Kind {
		case engine.KindModelCall:
			ids = append(ids, ev.Call.ResponseID)
		case engine.KindUsage:
			usage++
		case engine.KindMessage:
			if ev.Role == "user" && (ev.Meta != "" || ev.Text != "look here" || len(ev.Parts) != 1 || ev.Parts[0].Type != llm.PartImage || ev.Parts[0].Size != 1) {
				t.Errorf("prompt = %+v", ev)
			}
		}
	}
	if strings.Join(ids, " ") != "resp_A resp_B resp_C" || usage != 3 || im.Session.Requests != 3 || im.Session.Usage.Input != 350 {
		t.Errorf("model calls %q, %d usage events, %d requests, usage %+v; want resp_A resp_B resp_C, 3, 3, input 350", ids, usage, im.Session.Requests, im.Session.Usage)
	}
}
