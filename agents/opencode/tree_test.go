package opencode

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/engine"
)

// treeFixture is a JSON tree of opencode 1.1 written by hand from design
// section 1.2 (no 1.1 binary was run): one session with a prompt, a
// file and a synthetic text; a response with reasoning, text, a bash
// call that completed, a read that failed, step-finish and a patch; a
// failed response with a retry; a compaction and its summary; and an
// aborted response with an edit still running.
const treeFixture = "testdata/json-tree-1.1-handwritten/storage"

const treeSession1 = "ses_tree1aaaaaaaaaaaaaaaaaaaaa"

// deriveTree reads the files of the session of path, as convert does,
// and derives it, checking the census of its events against its files'.
func deriveTree(t *testing.T, path string) (*engine.Imported, []string) {
	t.Helper()
	paths, err := Agent{}.SessionFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	var files []engine.ImportFile
	for i, p := range paths {
		fi, err := engine.ReadImport(Source, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(fi.Problems) > 0 || fi.Session != Source+":"+treeSession1 || fi.Kind != "doc" {
			t.Fatalf("%s: session %q kind %q problems %v", p, fi.Session, fi.Kind, fi.Problems)
		}
		f := engine.ImportFile{Path: fi.Path}
		for _, r := range fi.Records {
			f.Records = append(f.Records, engine.ImportRecord{Import: r, WAL: uint64(i + 1)})
		}
		files = append(files, f)
	}
	im, err := engine.DeriveImport(Source, Source+":"+treeSession1, files)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := engine.Census(&im.Session, im.Events), engine.SourceCensus(Source, files); got != want {
		t.Errorf("census of the events %+v, of the source %+v", got, want)
	}
	return im, paths
}

func TestImportTree(t *testing.T) {
	// Any file of the session names all of them.
	im, paths := deriveTree(t, treeFixture+"/part/msg_002/prt_002d.json")
	if len(paths) != 22 || paths[0] != treeFixture+"/part/msg_002/prt_002d.json" || !strings.HasSuffix(paths[1], "/"+treeSession1+".json") {
		t.Errorf("session files %q", paths)
	}
	if slices.ContainsFunc(paths, func(p string) bool { return strings.Contains(p, "session_share") }) {
		t.Errorf("a session's files include its share (a secret)")
	}
	s := im.Session
	if s.Title != "Fix the failing test" || s.Version != "1.1.10" || s.CWD != "/home/user/proj" || s.Requests != 4 || s.Errors != 2 ||
		s.Import.Records != 22 || s.Import.Errors != 0 {
		t.Errorf("session %+v", s)
	}
	want := "message:user message:usermeta " +
		"model_call record:step-start thinking message:assistant tool_call:call_1 tool_result:call_1 tool_call:call_2 tool_result:call_2 usage record:patch " +
		"model_call record:retry error usage error " +
		"rewrite:compaction message:usermeta " +
		"model_call message:assistantcompact_summary usage " +
		"model_call tool_call:call_3 interruption"
	if got := kinds(im.Events); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
	c := engine.Census(&s, im.Events)
	if c.Records != 22 || c.UserPrompts != 1 || c.MetaUser != 2 || c.Responses != 4 || c.Assistant != 2 || c.Thinking != 1 ||
		c.ToolCalls != 3 || c.ToolResults != 2 || c.CallIDs != 3 || c.Errors != 2 || c.TokensIn != 330 || c.CacheRead != 50 ||
		c.CacheCreation != 10 || c.TokensOut != 65 || c.Kept != 3 || c.Unknown != 0 || c.UUIDs != 18 {
		t.Errorf("census %+v", c)
	}
	for _, ev := range im.Events {
		switch {
		case ev.Kind == engine.KindMessage && ev.Role == "user" && ev.Meta == "":
			if ev.Text != "Fix the failing test" || len(ev.Parts) != 1 || ev.Parts[0].Name != "notes.txt" || ev.UUID != "msg_001" {
				t.Errorf("prompt %q %+v", ev.Text, ev.Parts)
			}
		case ev.Kind == engine.KindToolResult && ev.Tool.ID == "call_2":
			if !ev.Tool.IsError || !strings.HasPrefix(ev.Text, "File not found") {
				t.Errorf("failed read %+v %q", ev.Tool, ev.Text)
			}
		case ev.Kind == engine.KindToolCall && ev.Tool.ID == "call_3":
			if !ev.Partial {
				t.Error("the running edit is not partial")
			}
		case ev.Kind == engine.KindError && ev.Error.Status == 529:
		case ev.Kind == engine.KindError:
			t.Errorf("error %+v", ev.Error)
		case ev.Kind == engine.KindUsage && ev.UUID == "prt_002f":
			if *ev.Usage != (engine.Usage{Input: 160, Output: 25, Reasoning: 5, CacheRead: 50, CacheCreation: 10}) {
				t.Errorf("usage %+v", ev.Usage)
			}
		}
		if !strings.HasPrefix(ev.Prov.File, treeFixture) {
			t.Errorf("%s: provenance %+v", ev.Kind, ev.Prov)
		}
	}
}

// TestTreeSession checks which session each file of the tree is filed
// under, and which files are the tree's.
func TestTreeSession(t *testing.T) {
	for _, c := range []struct {
		path, first, want string
	}{
		{"/d/storage/session/p1/ses_a.json", `{"id":"ses_moved"}`, "ses_a"},
		{"/d/storage/message/ses_a/msg_1.json", `{"sessionID":"ses_moved"}`, "ses_a"},
		{"/d/storage/part/msg_1/prt_1.json", `{"sessionID":"ses_a"}`, "ses_a"},
		{"/d/storage/session_share/ses_a.json", `{"secret":"x"}`, ""},
		{"/d/other/session/p1/ses_a.json", `{}`, ""},
	} {
		if got := treeSession(c.path, []byte(c.first)); got != c.want {
			t.Errorf("treeSession(%s) = %q, want %q", c.path, got, c.want)
		}
	}
}

// TestCleanDoc: a session file's share, revert and permission members
// are blanked out wherever they are, the file keeps its length and lines
// and stays JSON; other files and members are left as they are.
func TestCleanDoc(t *testing.T) {
	const session = "/d/storage/session/prj/ses_1.json"
	for _, tc := range []struct{ path, in, want string }{
		{session, `{"id":"ses_1","share":{"url":"u"}}`, `{"id":"ses_1"}`},
		{session, `{"share":{"url":"u"},"id":"ses_1"}`, `{"id":"ses_1"}`},
		{session, "{\"revert\": 1,\n \"share\": {\n\"url\": \"u\"},\n \"id\": 2, \"permission\": []}", `{"id":2}`},
		{session, `{"share":1}`, `{}`},
		{session, `{"id":"ses_1","x":{"share":1}}`, `{"id":"ses_1","x":{"share":1}}`},
		{"/d/storage/message/ses_1/msg_1.json", `{"share":1,"id":"m"}`, `{"share":1,"id":"m"}`},
		{session, `{"share":`, ``},
	} {
		got := cleanDoc(tc.path, []byte(tc.in))
		if len(got) != len(tc.in) || strings.Count(string(got), "\n") != strings.Count(tc.in, "\n") {
			t.Errorf("cleanDoc(%q) = %q: length or lines changed", tc.in, got)
		}
		if tc.want == "" {
			if string(got) != tc.in {
				t.Errorf("cleanDoc(%q) = %q, want it as it is", tc.in, got)
			}
			continue
		}
		var v any
		if err := json.Unmarshal(got, &v); err != nil {
			t.Errorf("cleanDoc(%q) = %q: %v", tc.in, got, err)
			continue
		}
		if b, _ := json.Marshal(v); !jsonEqual(string(b), tc.want) {
			t.Errorf("cleanDoc(%q) = %s, want %s", tc.in, b, tc.want)
		}
	}
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(a, b string) bool {
	var x, y any
	json.Unmarshal([]byte(a), &x)
	json.Unmarshal([]byte(b), &y)
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}
