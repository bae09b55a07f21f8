package export

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/census"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
)

// TestTrajectoryGolden writes the hand-built imported session and the
// proxied anthropic-tool-loop session as trajectory JSON and rlog/1 and
// compares them with testdata/golden/trajectory (go test -update
// rewrites them).
func TestTrajectoryGolden(t *testing.T) {
	type named struct {
		name string
		s    engine.Session
		evs  []engine.Event
	}
	s, evs := importedSession()
	cases := []named{{"imported", s, evs}}
	_, ss, tl, _ := timeline(t, "anthropic-tool-loop")
	for _, s := range ss {
		cases = append(cases, named{"anthropic-tool-loop", s, tl[s.ID]})
	}
	for _, c := range cases {
		js, err := Trajectory(&c.s, c.evs)
		if err != nil {
			t.Fatal(err)
		}
		rl, err := RLog(&c.s, c.evs)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join("testdata", "golden", "trajectory")
		golden(t, filepath.Join(dir, c.name+".json"), string(js))
		golden(t, filepath.Join(dir, c.name+".rlog"), string(rl))
		checkTrajectory(t, c.name, js)
		if !strings.HasPrefix(string(rl), "---\nformat: rlog/1\nid: ") || !strings.Contains(string(rl), "\n=== Summary ===\n") {
			t.Errorf("%s: rlog frame:\n%s", c.name, rl)
		}
	}
}

// checkTrajectory checks the document against the spec's shape: the
// required keys, step ids 1…n, each step type's fields.
func checkTrajectory(t *testing.T, name string, js []byte) {
	t.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, k := range []string{"session_id", "prompt", "model", "cwd", "repo_sha", "started_at", "steps", "usage"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("%s: no %s", name, k)
		}
	}
	var steps []map[string]any
	json.Unmarshal(doc["steps"], &steps)
	need := map[string][]string{
		"user": {"content"}, "assistant": {"content"}, "thinking": {"content"},
		"tool_call": {"tool", "tool_id", "input"}, "tool_result": {"tool_id", "success"},
		"system_init": {"model"}, "system_status": {"status"},
	}
	for i, st := range steps {
		if id, _ := st["step_id"].(float64); int(id) != i+1 {
			t.Errorf("%s: step %d has step_id %v", name, i+1, st["step_id"])
		}
		typ, _ := st["type"].(string)
		keys, ok := need[typ]
		if !ok {
			t.Errorf("%s: step %d type %q", name, i+1, typ)
		}
		for _, k := range append(keys, "timestamp") {
			if _, ok := st[k]; !ok {
				t.Errorf("%s: step %d (%s) lacks %s", name, i+1, typ, k)
			}
		}
	}
	var u map[string]any
	json.Unmarshal(doc["usage"], &u)
	for _, k := range []string{"input_tokens", "output_tokens", "cache_read_tokens", "cache_creation_tokens", "cost_usd"} {
		if _, ok := u[k]; !ok {
			t.Errorf("%s: usage lacks %s", name, k)
		}
	}
}

// TestTrajectoryCensus: a trajectory reads back into events with the same
// census, for the hand-built session and every proxied golden session.
func TestTrajectoryCensus(t *testing.T) {
	check := func(name string, s engine.Session, evs []engine.Event) {
		js, err := Trajectory(&s, evs)
		if err != nil {
			t.Fatal(err)
		}
		im, err := engine.DeriveImport("trajectory", s.ID, []engine.ImportFile{{Path: name + ".json", Records: []engine.ImportRecord{{Import: exchange.Import{Kind: exchange.ImportDoc, Data: js}}}}})
		if err != nil {
			t.Fatal(err)
		}
		if want, got := engine.Census(&s, evs), engine.Census(&im.Session, im.Events); got != want {
			var b strings.Builder
			census.WriteTable(&b, "events", "trajectory", census.Compare(want, got))
			t.Errorf("%s %s: census differs:\n%s", name, s.ID, b.String())
		}
		again, err := Trajectory(&im.Session, im.Events)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(js) {
			t.Errorf("%s %s: trajectory → events → trajectory differs:\n%s", name, s.ID, diffLines(string(js), string(again)))
		}
	}
	s, evs := importedSession()
	check("imported", s, evs)
	for _, name := range []string{"anthropic-compaction", "anthropic-errors", "anthropic-tool-loop", "gemini", "interleaved", "openai-chat", "openai-responses"} {
		_, ss, tl, _ := timeline(t, name)
		for _, s := range ss {
			check(name, s, tl[s.ID])
		}
	}
	// Another writer's document: the spec's example.
	foreign := `{"session_id":"a1b2c3d4","prompt":"Fix","model":"claude-sonnet-4","cwd":"/p","repo_sha":"abc123","started_at":"2025-12-20T10:00:00Z",
"steps":[{"step_id":1,"timestamp":"2025-12-20T10:00:00Z","type":"system_init","model":"claude-sonnet-4"},
{"step_id":2,"timestamp":"2025-12-20T10:00:01Z","type":"user","content":"Fix"},
{"step_id":3,"timestamp":"2025-12-20T10:00:02Z","type":"assistant","content":"ok","tokens_in":50,"tokens_out":20},
{"step_id":4,"timestamp":"2025-12-20T10:00:03Z","type":"tool_call","tool":"Read","tool_id":"toolu_1","input":{"file_path":"x"}},
{"step_id":5,"timestamp":"2025-12-20T10:00:04Z","type":"tool_result","tool_id":"toolu_1","success":true,"output":"fn"},
{"step_id":6,"timestamp":"2025-12-20T10:00:05Z","type":"system_status","status":"done"}],
"usage":{"input_tokens":500,"output_tokens":250,"cache_read_tokens":100,"cache_creation_tokens":50,"cost_usd":0.012}}`
	im, err := ReadTrajectory([]byte(foreign), "x.json")
	if err != nil {
		t.Fatal(err)
	}
	c := engine.Census(&im.Session, im.Events)
	if c.Records != 6 || c.UserPrompts != 1 || c.Assistant != 1 || c.ToolCalls != 1 || c.ToolResults != 1 || c.TokensIn != 50 || c.Kept != 1 {
		t.Errorf("foreign census %+v", c)
	}
	if _, err := ReadTrajectory([]byte("{"), "bad.json"); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("bad document: %v", err)
	}
}

// FuzzReadTrajectory: any input reads without panic, and what it reads
// writes.
func FuzzReadTrajectory(f *testing.F) {
	s, evs := importedSession()
	js, _ := Trajectory(&s, evs)
	f.Add(js)
	f.Add([]byte(`{"steps":[{"type":"tool_call","tokens_in":3},{"type":"system_status","call":{}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		im, err := ReadTrajectory(data, "fuzz")
		if err != nil {
			return
		}
		engine.Census(&im.Session, im.Events)
		if _, err := Trajectory(&im.Session, im.Events); err != nil {
			t.Fatal(err)
		}
		if _, err := RLog(&im.Session, im.Events); err != nil {
			t.Fatal(err)
		}
	})
}
