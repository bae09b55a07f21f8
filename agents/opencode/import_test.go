package opencode

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/llm"
	"github.com/bbengine/bbengine/engine"
)

// fixture is the database the real opencode 1.18.33 wrote in e2e's
// TestOpencodeDirect: one `opencode run "Run echo hi with bash"` against a
// fake OpenAI-compatible upstream (a bash call, its result, reasoning and
// text), every row still in the -wal, as opencode left it.
const fixture = "testdata/opencode-1.18.33-tools.db"

// fixtureSession is the session of the fixture.
const fixtureSession = "ses_de3373617ffeEUid1EoeXUeDtH"

// copyDB copies the database src and its -wal into a new directory (a
// read makes a -shm beside the database) and returns the copy's path.
func copyDB(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "opencode.db")
	for _, suffix := range []string{"", "-wal"} {
		in, err := os.Open(src + suffix)
		if err != nil {
			t.Fatal(err)
		}
		out, err := os.Create(dst + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			t.Fatal(err)
		}
		in.Close()
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// derive reads path as bbengine import does and derives each session,
// checking that the census of its events equals that of its rows.
func derive(t *testing.T, path string) (*engine.FileImport, map[string]*engine.Imported) {
	t.Helper()
	fi, err := engine.ReadImport(Source, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*engine.ImportFile{}
	var order []string
	for i, r := range fi.Records {
		f := files[r.Session]
		if f == nil {
			f = &engine.ImportFile{Path: r.File}
			files[r.Session] = f
			order = append(order, r.Session)
		}
		f.Records = append(f.Records, engine.ImportRecord{Import: r, WAL: uint64(i + 1)})
	}
	out := map[string]*engine.Imported{}
	for _, id := range order {
		f := *files[id]
		im, err := engine.DeriveImport(Source, id, []engine.ImportFile{f})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := engine.Census(&im.Session, im.Events), engine.SourceCensus(Source, []engine.ImportFile{f}); got != want {
			t.Errorf("%s: census of the events %+v, of the source %+v", id, got, want)
		}
		out[id] = im
	}
	return fi, out
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
			k += fmt.Sprintf(":%s", ev.Rewrite.Kind)
		case ev.Kind == engine.KindMessage:
			k += ":" + ev.Role + ev.Meta
		}
		out = append(out, k)
	}
	return strings.Join(out, " ")
}

func TestImportFixture(t *testing.T) {
	db := copyDB(t, fixture)
	fi, ims := derive(t, db)
	if len(fi.Problems) != 0 || fi.Session != Source+":"+fixtureSession || len(ims) != 1 {
		t.Fatalf("session %q, sessions %v, problems %v", fi.Session, fi.Sessions, fi.Problems)
	}
	// The records: the database's identity, the session, 3 messages, 9
	// parts, all in one unit.
	if n := len(fi.Records); n != 14 {
		t.Errorf("%d records, want 14", n)
	}
	for _, r := range fi.Records {
		if r.File != db+"#"+fixtureSession || r.Kind != "row" {
			t.Fatalf("record of %q kind %q", r.File, r.Kind)
		}
	}
	im := ims[Source+":"+fixtureSession]
	s := im.Session
	if s.Agent != "opencode" || s.Title != "Echo hi" || s.Version != "1.18.33" || !strings.HasSuffix(s.CWD, "/proj") ||
		s.Requests != 2 || s.Import.Records != 13 || s.Import.Errors != 0 {
		t.Errorf("session %+v", s)
	}
	want := "message:user model_call record:step-start message:assistant tool_call:call_1 tool_result:call_1 usage " +
		"model_call record:step-start thinking message:assistant usage"
	if got := kinds(im.Events); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	c := engine.Census(&s, im.Events)
	if c.Records != 13 || c.UserPrompts != 1 || c.Responses != 2 || c.Assistant != 2 || c.Thinking != 1 || c.ToolCalls != 1 || c.ToolResults != 1 ||
		c.TokensIn != 7659+7721 || c.CacheRead != 80 || c.TokensOut != 14 || c.Kept != 2 || c.UUIDs != 11 {
		t.Errorf("census %+v", c)
	}
	for _, ev := range im.Events {
		switch {
		case ev.Kind == engine.KindMessage && ev.Role == "user":
			if ev.Text != `"Run echo hi with bash"` { // opencode run keeps the quotes
				t.Errorf("prompt %q", ev.Text)
			}
		case ev.Kind == engine.KindToolCall:
			if ev.Tool.Name != "bash" || string(ev.Tool.Args) != `{"command":"echo hi","description":"Print hi"}` || ev.Partial {
				t.Errorf("call %+v", ev.Tool)
			}
		case ev.Kind == engine.KindToolResult:
			if ev.Text != "hi\n" || ev.Tool.IsError || !strings.Contains(string(ev.Extra), `"title":"echo hi"`) {
				t.Errorf("result %q %s", ev.Text, ev.Extra)
			}
		case ev.Kind == engine.KindModelCall:
			if ev.Call.Provider != "fake" || ev.Call.Model != "fake-1" || !ev.Call.Complete {
				t.Errorf("call %+v", ev.Call)
			}
		case ev.Kind == engine.KindUsage:
			if ev.Usage.CacheRead != 40 || ev.Usage.Output != 7 || ev.Usage.Reasoning != 2 {
				t.Errorf("usage %+v", ev.Usage)
			}
		}
		if ev.Prov.File != db || ev.UUID == "" {
			t.Errorf("%s: provenance %+v uuid %q", ev.Kind, ev.Prov, ev.UUID)
		}
	}
	if s.Usage.Input != 7659+7721+80 || s.Usage.Output != 14 {
		t.Errorf("usage %+v", s.Usage)
	}
}

// v2Fixture is the database the real opencode 1.18.33 wrote in e2e's
// TestOpencodeV2: the same task through `opencode serve`'s v2 API, which
// writes session_message rather than message and part.
const v2Fixture = "testdata/opencode-1.18.33-v2.db"

func TestImportV2Fixture(t *testing.T) {
	db := copyDB(t, v2Fixture)
	fi, ims := derive(t, db)
	if len(fi.Problems) != 0 || len(ims) != 1 {
		t.Fatalf("sessions %v, problems %v", fi.Sessions, fi.Problems)
	}
	im := ims[fi.Session]
	s := im.Session
	if !strings.HasPrefix(s.Title, "New session - ") || s.Requests != 2 || s.Import.Records != 4 {
		t.Errorf("session %+v", s)
	}
	want := "message:user model_call message:assistant tool_call:call_1 tool_result:call_1 usage model_call thinking message:assistant usage"
	if got := kinds(im.Events); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	for _, ev := range im.Events {
		switch ev.Kind {
		case engine.KindMessage:
			if ev.Role == "user" && ev.Text != "Run echo hi with bash" { // the v2 API stores it bare
				t.Errorf("prompt %q", ev.Text)
			}
		case engine.KindToolResult:
			if ev.Text != "hi\n\nCommand exited with code 0." || !strings.Contains(string(ev.Extra), `"structured":{"exit":0`) {
				t.Errorf("result %q %s", ev.Text, ev.Extra)
			}
		case engine.KindUsage:
			if ev.Usage.CacheRead != 40 || ev.Usage.Output != 7 {
				t.Errorf("usage %+v", ev.Usage)
			}
		}
	}
}

// TestSubagent: a subagent's session (parent_id set, as opencode's task
// tool makes it) is a session of its own, and its parent's session lists
// it in Agents with its agent, title and the call of the task tool part
// that started it (state.metadata.sessionId).
func TestSubagent(t *testing.T) {
	db := copyDB(t, fixture)
	child := "ses_child00000001aaaaaaaaaaaa"
	execDB(t, db,
		`insert into session (id, project_id, parent_id, slug, directory, title, version, agent, time_created, time_updated) `+
			`select '`+child+`', project_id, id, 'child', directory, 'Echo hi (@general subagent)', version, 'general', time_created + 1, time_updated + 1 from session`,
		`insert into part (id, message_id, session_id, time_created, time_updated, data) values ('prt_zztask', 'msg_21cc8cca50013NDIgiOR5Z7VLr', '`+fixtureSession+`', 1795779252600, 1795779252600, `+
			`'{"type":"tool","tool":"task","callID":"call_task","state":{"status":"completed","input":{"description":"Echo hi","prompt":"Run echo hi","subagent_type":"general"},"output":"<task id=\"`+child+`\" state=\"completed\">","title":"Echo hi","metadata":{"sessionId":"`+child+`","parentSessionId":"`+fixtureSession+`"},"time":{"start":1,"end":2}}}')`,
		`insert into message (id, session_id, time_created, time_updated, data) values ('msg_zzchild', '`+child+`', 1795779252601, 1795779252601, '{"role":"user","time":{"created":1795779252601},"agent":"general","model":{"providerID":"fake","modelID":"fake-1"}}')`,
		`insert into part (id, message_id, session_id, time_created, time_updated, data) values ('prt_zzchild', 'msg_zzchild', '`+child+`', 1795779252601, 1795779252601, '{"type":"text","text":"Run echo hi"}')`,
	)
	fi, ims := derive(t, db)
	if len(ims) != 2 || len(fi.Sessions) != 2 {
		t.Fatalf("sessions %v", fi.Sessions)
	}
	parent := ims[Source+":"+fixtureSession].Session
	want := []engine.Agent{{Thread: 1, ID: Source + ":" + child, Type: "general", Description: "Echo hi (@general subagent)", Call: "call_task"}}
	if len(parent.Agents) != 1 || parent.Agents[0] != want[0] {
		t.Errorf("agents %+v, want %+v", parent.Agents, want)
	}
	if c := engine.Census(&parent, ims[Source+":"+fixtureSession].Events); c.Subagents != 1 || c.ToolCalls != 2 {
		t.Errorf("census %+v", c)
	}
	if got := kinds(ims[Source+":"+child].Events); got != "message:user" {
		t.Errorf("child events %s", got)
	}
}

// subagentFixture is the database the real opencode 1.18.33 wrote in
// e2e's TestOpencodeSubagent: the parent's first turn called the task
// tool, whose child session ran bash.
const subagentFixture = "testdata/opencode-1.18.33-subagent.db"

func TestImportSubagentFixture(t *testing.T) {
	db := copyDB(t, subagentFixture)
	fi, ims := derive(t, db)
	if len(fi.Problems) != 0 || len(ims) != 2 {
		t.Fatalf("sessions %v, problems %v", fi.Sessions, fi.Problems)
	}
	var parent, child *engine.Imported
	for _, im := range ims {
		if len(im.Session.Agents) > 0 {
			parent = im
		} else {
			child = im
		}
	}
	if parent == nil || child == nil {
		t.Fatal("no parent listing a subagent")
	}
	a := parent.Session.Agents[0]
	if len(parent.Session.Agents) != 1 || a.Type != "general" || a.Call != "call_task" || a.Description != "Echo hi (@general subagent)" ||
		a.ID != child.Session.ID {
		t.Errorf("agents %+v", parent.Session.Agents)
	}
	if got := kinds(parent.Events); !strings.Contains(got, "tool_call:call_task tool_result:call_task") {
		t.Errorf("parent events %s", got)
	}
	if got := kinds(child.Events); !strings.Contains(got, "tool_call:call_1 tool_result:call_1") {
		t.Errorf("child events %s", got)
	}
}

// TestOddText: a title with a control character and a byte that is no
// UTF-8 still makes a session record that is JSON: the title is kept
// (the stray byte as U+FFFD).
func TestOddText(t *testing.T) {
	db := copyDB(t, fixture)
	execDB(t, db, `update session set title = 'a' || char(7) || 'b' || cast(x'ff' as text) || '"q"'`)
	_, ims := derive(t, db)
	s := ims[Source+":"+fixtureSession].Session
	if s.Title != "a\ab\uFFFD\"q\"" || s.Import.Errors != 0 {
		t.Errorf("title %q, %d records that do not decode", s.Title, s.Import.Errors)
	}
}

// TestOlderVersionLast: the last version of a row in the WAL stands,
// even when its time_updated is older (a clock stepped back); a stale one
// appended by two imports racing is mended by the next read (see
// TestRacingImports).
func TestOlderVersionLast(t *testing.T) {
	recs := func(datas ...string) []engine.ImportFile {
		f := engine.ImportFile{Path: "/d/opencode.db#ses_1"}
		for i, d := range datas {
			f.Records = append(f.Records, engine.ImportRecord{Import: exchange.Import{File: f.Path, Kind: exchange.ImportRow, Data: []byte(d)}, WAL: uint64(i + 1)})
		}
		return []engine.ImportFile{f}
	}
	msg := `{"table":"message","id":"msg_1","session_id":"ses_1","time_created":1,"time_updated":1,"data":{"role":"assistant","time":{"created":1}}}`
	part := func(text string, t int) string {
		return fmt.Sprintf(`{"table":"part","id":"prt_1","message_id":"msg_1","session_id":"ses_1","time_updated":%d,"data":{"type":"text","text":%q}}`, t, text)
	}
	im, err := engine.DeriveImport(Source, "opencode:ses_1", recs(msg, part("new", 5), part("old", 3)))
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(im.Events); got != "model_call message:assistant" || im.Events[1].Text != "old" {
		t.Errorf("events %s, text %q", got, im.Events[1].Text)
	}
}

// TestOddPath: a database whose path holds a space, '#', '?' and '%' is
// opened (the path is escaped in SQLite's URI) and its units named so
// that the session id is found after the last '#'.
func TestOddPath(t *testing.T) {
	src := copyDB(t, fixture)
	dir := filepath.Join(t.TempDir(), "a b#c?d%20e")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "opencode.db")
	for _, suffix := range []string{"", "-wal"} {
		if err := os.Rename(src+suffix, db+suffix); err != nil {
			t.Fatal(err)
		}
	}
	fi, ims := derive(t, db)
	if len(ims) != 1 || fi.Records[0].File != db+"#"+fixtureSession || len(fi.Problems) != 0 {
		t.Fatalf("sessions %v, file %q", fi.Sessions, fi.Records[0].File)
	}
	unit, err := engine.ReadImport(Source, db+"#"+fixtureSession, nil)
	if err != nil || len(unit.Records) != 14 {
		t.Fatalf("the unit alone: %v", err)
	}
}

func TestFilePart(t *testing.T) {
	for _, c := range []struct {
		in   part
		want llm.Part
	}{
		{part{Mime: "text/plain", Filename: "a.txt", URL: "file:///p/a.txt"}, llm.Part{Type: llm.PartDocument, MediaType: "text/plain", Name: "a.txt", URL: "file:///p/a.txt"}},
		{part{Mime: "image/png", URL: "data:image/png;base64,aGk="}, llm.Part{Type: llm.PartImage, MediaType: "image/png", Size: 2,
			SHA256: "8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4"}},
		{part{Mime: "text/plain", URL: "data:text/plain,h%69"}, llm.Part{Type: llm.PartDocument, MediaType: "text/plain", Size: 2,
			SHA256: "8f434346648f6b96df89dda901c5176b10a6d83961dd3c1ac88b59b2dc327aa4"}},
	} {
		if got := filePart(&c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("filePart(%+v) = %+v, want %+v", c.in, got, c.want)
		}
	}
}

// TestV2Types: the session_message types besides user and assistant, as
// 1.18.33's session.next.* handlers write them (no real run made them).
func TestV2Types(t *testing.T) {
	f := engine.ImportFile{Path: "/d/opencode.db#ses_1"}
	for i, d := range []string{
		`{"table":"session","id":"ses_1","title":"t","time_created":1,"time_updated":9}`,
		`{"table":"session_message","id":"m1","type":"user","seq":1,"time_created":1,"data":{"text":"go","files":[{"uri":"file:///a"}],"agents":[],"time":{"created":1}}}`,
		`{"table":"session_message","id":"m2","type":"system","seq":2,"time_created":2,"data":{"text":"<env>","time":{"created":2}}}`,
		`{"table":"session_message","id":"m3","type":"synthetic","seq":3,"time_created":3,"data":{"text":"","time":{"created":3}}}`,
		`{"table":"session_message","id":"m4","type":"shell","seq":4,"time_created":4,"data":{"callID":"sh1","command":"ls","output":"a\n","time":{"created":4,"completed":5}}}`,
		`{"table":"session_message","id":"m5","type":"shell","seq":5,"time_created":6,"data":{"callID":"sh2","command":"sleep 9","output":"","time":{"created":6}}}`,
		`{"table":"session_message","id":"m6","type":"compaction","seq":6,"time_created":7,"data":{"reason":"auto","summary":"so far","recent":[],"time":{"created":7}}}`,
		`{"table":"session_message","id":"m7","type":"future","seq":7,"time_created":8,"data":{"time":{"created":8}}}`,
	} {
		f.Records = append(f.Records, engine.ImportRecord{Import: exchange.Import{File: f.Path, Kind: exchange.ImportRow, Data: []byte(d)}, WAL: uint64(i + 1)})
	}
	files := []engine.ImportFile{f}
	im, err := engine.DeriveImport(Source, "opencode:ses_1", files)
	if err != nil {
		t.Fatal(err)
	}
	want := "message:user message:usermeta tool_call:sh1 tool_result:sh1 tool_call:sh2 rewrite:compaction message:usercompact_summary record:session_message/future"
	if got := kinds(im.Events); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	if string(im.Events[0].Extra) != `{"files":[{"uri":"file:///a"}]}` || !im.Events[4].Partial || im.Events[3].Text != "a\n" {
		t.Errorf("extra %s, running shell partial %v, output %q", im.Events[0].Extra, im.Events[4].Partial, im.Events[3].Text)
	}
	c := engine.Census(&im.Session, im.Events)
	if got, want := c, engine.SourceCensus(Source, files); got != want {
		t.Errorf("census of the events %+v, of the source %+v", got, want)
	}
	if c.UserPrompts != 1 || c.MetaUser != 2 || c.ToolCalls != 2 || c.ToolResults != 1 || c.Unknown != 1 || c.Records != 8 {
		t.Errorf("census %+v", c)
	}
}
