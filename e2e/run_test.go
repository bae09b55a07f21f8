package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The three tasks of the run session. The fake knows each task's main
// conversation by its marker.
var runMarks = []string{"E2E-RUN-ONE-7c1d", "E2E-RUN-TWO-7c1d", "E2E-RUN-THREE-7c1d"}

// What task 1's model says: a decision it then replaces, a constraint,
// and a TODO it writes into a file.
const (
	runDecisionOld = "We decided to use SQLite for the job store because it is simple."
	runDecisionNew = "Switch from SQLite to BoltDB for the job store, since we need no SQL."
	runRule        = "The job store must never drop a job."
	runTODO        = "// TODO: add retries with backoff to the worker."
	runGoal        = "A job service that never loses work."
	runDecision2   = "We decided to use four goroutines for the retry loop."
	runWriteID     = "toolu_01E2eRunWriteStore00000"
)

// runFake plays the model for the three tasks and keeps what each
// task's main conversation received.
type runFake struct {
	store string // the absolute path of store.go
	mu    sync.Mutex
	// prompts holds, per task (0, 1, 2), the text of each main request.
	prompts map[int][]string
}

func (c *runFake) answer(s *seen, req *amsgRequest, w http.ResponseWriter) {
	rep := areply{id: fmt.Sprintf("msg_01E2eRun%06d", s.Seq), model: req.Model, stop: "end_turn",
		usage: ausage{Input: int64(len(s.Body) / 4), Output: 20}}
	all := req.allText()
	task := -1
	for i, m := range runMarks {
		if req.hasTool("Bash") && strings.Contains(lastUserText(req)+all, m) {
			task = i
		}
	}
	if task < 0 {
		rep.blocks = []ablock{{Type: "text", Text: "E2E side answer"}}
		rep.write(w, req.Stream)
		return
	}
	c.mu.Lock()
	c.prompts[task] = append(c.prompts[task], all)
	c.mu.Unlock()
	switch task {
	case 0:
		if _, done := req.toolResults()[runWriteID]; !done {
			in, _ := json.Marshal(map[string]string{"file_path": c.store,
				"content": "package store\n\n" + runTODO + "\nconst Backend = \"sqlite\"\n"})
			rep.blocks = []ablock{{Type: "text", Text: runDecisionOld},
				{Type: "tool_use", ID: runWriteID, Name: "Write", Input: in}}
			rep.stop = "tool_use"
		} else {
			rep.blocks = []ablock{{Type: "text", Text: runDecisionNew + " " + runRule}}
		}
	case 1:
		rep.blocks = []ablock{{Type: "text", Text: "The worker is added to the job store. " + runDecision2}}
	case 2:
		rep.blocks = []ablock{{Type: "text", Text: "The job store is documented."}}
	}
	rep.write(w, req.Stream)
}

// TestRunSession is issue 8's acceptance test: three tasks of one
// session, each `bbengine run -- claude -p "..."` against a scripted
// fake Anthropic upstream. Tasks 2 and 3 must reach the model with the
// context pack: the decision in force, the constraint and the open
// thread from task 1, and not the decision it replaced.
func TestRunSession(t *testing.T) {
	nodeModules := requireNodeModules(t)
	argv, version := claudeCommand(t, nodeModules)
	t.Logf("Claude Code %s", version)
	exe := buildBBEngine(t, t.TempDir())

	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	config := filepath.Join(tmp, "config")
	work := filepath.Join(tmp, "work")
	for _, d := range []string{home, config, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rf := &runFake{store: filepath.Join(work, "store.go"), prompts: map[int][]string{}}
	up := newFake(t, messagesAPI(rf.answer))
	loopbackOnly(t, up.URL)
	tw := newTripwire(t)
	dir := t.TempDir()
	apiKey := "sk-ant-api03-fake" + randomHex(24) + "-E2E"
	const session = "e2e-run-session"

	run := func(task int, extra ...string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		prompt := runMarks[task] + ": " + []string{"set up the job store", "add a worker to the job store", "document the job store"}[task]
		args := append([]string{"--dir", dir, "run", "--session", session, "--upstream", "anthropic=" + up.URL}, extra...)
		args = append(append(append(args, "--"), argv...), "-p", prompt, "--output-format", "text", "--allowedTools", "Write")
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Dir = work
		cmd.Env = append(claudeEnv(filepath.Dir(exe)+string(os.PathListSeparator)+os.Getenv("PATH"), home, config, tmp,
			"http://127.0.0.1:9/not-used", apiKey), tw.env()...)
		cmd.WaitDelay = 5 * time.Second
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		t.Logf("task %d: bbengine run took %v", task+1, time.Since(start).Round(time.Millisecond))
		logOutput(t, "run stdout", stdout.Bytes())
		logOutput(t, "run stderr", stderr.Bytes())
		if err != nil {
			log, _ := os.ReadFile(filepath.Join(dir, "run.log"))
			t.Fatalf("task %d: bbengine run: %v\nrun.log:\n%s", task+1, err, log)
		}
	}
	run(0, "--goal", runGoal)
	run(1)
	run(2)
	if a := tw.attempts(); len(a) > 0 {
		t.Errorf("traffic left loopback: %v", a)
	}

	rf.mu.Lock()
	prompts := rf.prompts
	rf.mu.Unlock()
	for task := range 3 {
		if len(prompts[task]) == 0 {
			t.Fatalf("task %d never reached the model's main conversation", task+1)
		}
	}
	var pack string
	for _, task := range []int{1, 2} {
		first := prompts[task][0]
		for _, want := range []string{"<bbengine-context-pack", runGoal, runDecisionNew, runRule, strings.TrimPrefix(runTODO, "// TODO: ")} {
			if !strings.Contains(first, want) {
				t.Errorf("task %d: the model was not told %q; it received:\n%s", task+1, want, first)
			}
		}
		if strings.Contains(first, runDecisionOld) {
			t.Errorf("task %d: the model was told the superseded decision %q", task+1, runDecisionOld)
		}
		if n := strings.Count(first, "<bbengine-context-pack"); n != 1 {
			t.Errorf("task %d: the pack reached the model %d times in its first request", task+1, n)
		}
		pack = first
	}
	// Task 2 ran no tool: its conversation still counts as the task's
	// own, so its decision and outcome reach task 3.
	if !strings.Contains(prompts[2][0], "task-2") || !strings.Contains(prompts[2][0], runDecision2) {
		t.Errorf("task 3's pack lacks task 2 (its outcome and decision):\n%s", prompts[2][0])
	}
	if strings.Contains(prompts[0][0], "<bbengine-context-pack") && strings.Contains(prompts[0][0], "## Decisions") {
		t.Errorf("task 1 was told decisions before any were made:\n%s", prompts[0][0])
	}

	// The decision in force, by the id the pack listed.
	m := regexp.MustCompile(regexp.QuoteMeta(runDecisionNew) + `[^\[\n]*\[(dec-[0-9a-f]+)\]`).FindStringSubmatch(pack)
	if m == nil {
		t.Fatalf("no id for the decision in the pack:\n%s", pack)
	}
	checkMCPGet(t, exe, dir, m[1], runDecisionNew)
}

// checkMCPGet asks bbengine's MCP server (over stdio, with the SDK's
// client) for the artifact id and checks it is the decision, with
// evidence whose provenance points at WAL offsets.
func checkMCPGet(t *testing.T, exe, dir, id, text string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(exe, "--dir", dir, "mcp")}, nil)
	if err != nil {
		t.Fatalf("connect to bbengine mcp: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "memory_get", Arguments: map[string]any{"id": id}})
	if err != nil || res.IsError {
		t.Fatalf("memory_get %s: %v %+v", id, err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var out tools.GetOut
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("memory_get %s: %v\n%s", id, err, b)
	}
	a := out.Artifact
	if a.ID != id || a.Status != "active" || !strings.Contains(a.Text, text) || len(a.Evidence) == 0 {
		t.Fatalf("memory_get %s = %s", id, b)
	}
	for _, ev := range a.Evidence {
		if ev.Prov.Last == 0 || ev.Prov.Last < ev.Prov.First || ev.Prov.Exchange == 0 {
			t.Errorf("evidence without WAL offsets or exchange: %+v", ev)
		}
	}
	t.Logf("memory_get %s: %d evidence, first at WAL offsets %d-%d", id, len(a.Evidence), a.Evidence[0].Prov.First, a.Evidence[0].Prov.Last)
}
