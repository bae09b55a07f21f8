package gemini

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/agents"
)

// TestImportGeminiSetOddField: a checkpoint ($set.messages) listing a
// message with a member of another type (as a newer Gemini CLI may
// write) keeps that message, less the member: no rewrite event counts it
// as dropped, and the line is counted in Import.Errors.
func TestImportGeminiSetOddField(t *testing.T) {
	p := writeLog(t, "session-2026-01-01T00-00-s-1.jsonl",
		metaLine,
		`{"id":"u1","type":"user","content":"first"}`,
		`{"id":"g1","type":"gemini","content":"answer","model":"m"}`,
		`{"$set":{"messages":[{"id":"u1","type":"user","content":"first"},{"id":"g1","type":"gemini","content":"answer","model":"m","tokens":{"input":"12"}}]}}`,
		`{"id":"u2","type":"user","content":"next"}`)
	fi, im, _ := readLog(t, p)
	got := kinds(im.Events)
	if strings.Contains(got, "rewrite:") || im.Session.Import.Errors != 1 || len(fi.Problems) != 0 {
		t.Errorf("g1 in the $set: events %s; problems %v; import %+v", got, fi.Problems, im.Session.Import)
	}
}

// TestImportGeminiOddField: a message line with one member of another
// type (a thought's timestamp as a number) keeps the message, its text,
// thought and tokens; the line is counted in Import.Errors and in the
// source census's parse errors alike (readLog compares them).
func TestImportGeminiOddField(t *testing.T) {
	odd := `{"id":"g1","type":"gemini","content":"answer","model":"gemini-2.5-pro","tokens":{"input":1000,"output":50,"cached":0,"thoughts":0,"tool":0,"total":1050},"thoughts":[{"subject":"s","description":"d","timestamp":5}],"toolCalls":[{"id":"c1","name":"ls","args":{},"status":7}]}`
	p := writeLog(t, "session-2026-01-01T00-00-s-1.jsonl",
		metaLine,
		`{"id":"u1","type":"user","content":"first"}`,
		odd)
	_, im, _ := readLog(t, p)
	want := "record:metadata message:user model_call thinking message:assistant tool_call:c1 usage"
	if got := kinds(im.Events); got != want || im.Session.Usage.Input != 1000 || im.Session.Import.Errors != 1 {
		t.Errorf("events %s (want %s); usage %+v; import %+v", got, want, im.Session.Usage, im.Session.Import)
	}
	if x := string(im.Events[2].Extra); x != `{"unread":[".thoughts[0].timestamp",".toolCalls[0].status"]}` || im.Events[2].Prov.Line != 3 {
		t.Errorf("model_call extra %s, line %d", x, im.Events[2].Prov.Line)
	}
	l, err := parseLine([]byte(odd))
	if err != nil || !slices.Equal(l.bad, []string{".thoughts[0].timestamp", ".toolCalls[0].status"}) || l.msg.Thoughts[0].Description != "d" {
		t.Errorf("parseLine: bad %q, err %v", l.bad, err)
	}
	l, err = parseLine([]byte(`{"$set":{"summary":5,"messages":[3,{"type":"user"},{"id":"u1","type":"user"}]}}`))
	if err != nil || len(l.set) != 1 || !slices.Equal(l.bad, []string{"$set.summary", "$set.messages[0]", "$set.messages[1]"}) {
		t.Errorf("parseLine $set: set %d, bad %q, err %v", len(l.set), l.bad, err)
	}
}

// TestDoctorMaxCountPerProject: maxCount is per project (Gemini CLI
// keeps the newest maxCount chats of each project): 3 projects of 3
// chats each with maxCount 5 lose nothing.
func TestDoctorMaxCountPerProject(t *testing.T) {
	home, _, env := doctorHome(t)
	writeFile(t, home+"/.gemini/settings.json", `{"general": {"sessionRetention": {"maxAge": "9999d", "maxCount": 5}}}`)
	env.Logs, env.Unimported, env.Oldest = 9, 1, env.Now.Add(-5*24*time.Hour)
	for _, p := range []string{"a", "b", "c"} {
		for _, c := range []string{"1", "2", "3"} {
			writeFile(t, home+"/.gemini/tmp/"+p+"/chats/session-"+c+".jsonl", "{}")
		}
	}
	f := doctorFinding(t, Agent{}.Doctor(env), "cleanup")
	if f.Severity == agents.Fail {
		t.Errorf("9 chats over 3 projects, maxCount 5 per project: %s %s", f.Severity, f.Message)
	}
}

// oddLines have members of every other type than the one read: the
// importer (parseLine) and the census (censusLine) read them with
// decoders of their own, and must agree (readLog compares the censuses;
// so does FuzzImportGemini, from these lines on).
var oddLines = []string{
	`{"sessionId":"s-1","projectHash":"x","startTime":5,"directories":["/a",null]}`,
	`{"sessionId":"s-1","projectHash":"x","directories":["/a",7]}`,
	`{"id":"u1","type":"user","content":[{"text":"hi"}],"timestamp":null}`,
	`{"id":"g1","type":"gemini","content":"a","model":3,"thoughts":[null,{"subject":1,"description":"d"},"x"],"tokens":{"input":1.5,"output":2}}`,
	`{"id":"g2","type":"gemini","content":"b","thoughts":"x","tokens":[1],"toolCalls":[{"id":"ls__1","name":"ls","status":"success","result":[]},4,null]}`,
	`{"id":"g3","type":"gemini","content":"c","tokens":{"input":"12","cached":-1,"tool":1e3},"toolCalls":{"id":"c"}}`,
	`{"$set":{"summary":["t"],"messages":[null,{"id":"u1","type":"user","content":"hi"},{"id":4},{"id":"g1","type":"gemini","tokens":7}]}}`,
	`{"$set":{"lastUpdated":"2026-01-01T00:00:09Z","messages":"all"}}`,
	`{"id":"g4","type":"gemini","content":"d","tokens":{"input":10,"output":1}}`,
	`{"$set":{"messages":[]}}`,
}

// TestImportGeminiOddLines: every line of oddLines but the clean ones
// is a parse error, and the importer and the census agree on all.
func TestImportGeminiOddLines(t *testing.T) {
	p := writeLog(t, "session-2026-01-01T00-00-s-1.jsonl", oddLines...)
	_, im, _ := readLog(t, p)
	if imp := im.Session.Import; imp.Records != int64(len(oddLines)) || imp.Errors != 7 {
		t.Errorf("import %+v; events %s", imp, kinds(im.Events))
	}
}

// TestPartsOddMember: a content part with a member of another type
// keeps its text, and so do the parts beside it.
func TestPartsOddMember(t *testing.T) {
	ps := parts([]byte(`[{"text":"a","thought":"no"},{"text":"b"},{"text":3}]`))
	if got := text(ps); got != "ab" || len(ps) != 3 {
		t.Errorf("parts %d, text %q", len(ps), got)
	}
}
