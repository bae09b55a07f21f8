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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/cli"
	"github.com/bbengine/bbengine/engine"
)

// The markers of the two prompts of the memory session: the fake knows
// the main conversation by the first, and the second run by the second.
const (
	memMark1 = "E2E-MEM-ONE-5b2e"
	memMark2 = "E2E-MEM-TWO-5b2e"
)

// The tool calls the fake makes, in order: run 1 writes queue.go (with a
// TODO) and runs the failing test; run 2 reads queue.go, edits the TODO
// away while switching the backend, and runs the test again, which
// passes.
const (
	memWriteID = "toolu_01E2eMemWriteQueue0000"
	memTest1ID = "toolu_01E2eMemTestFails00000"
	memReadID  = "toolu_01E2eMemReadQueue00000"
	memEditID  = "toolu_01E2eMemEditQueue00000"
	memTest2ID = "toolu_01E2eMemTestPasses0000"
)

// What the model says.
const (
	memDecision1 = "We decided to use SQLite instead of Postgres for the job queue because it needs no server."
	memDecision2 = "Switch from SQLite to BoltDB for the job queue, since we need no SQL."
	memRule      = "The queue must never drop a job."
	memTestCmd   = "go test ./..."
	memTODO      = "// TODO: retry failed jobs with backoff."
)

// memFake plays the model for the two runs of the memory session.
type memFake struct {
	queue string // the absolute path of queue.go
	mu    sync.Mutex
	side  []string
	// sessions are the X-Claude-Code-Session-Id values of the main
	// conversation's requests, by run (1 and 2).
	sessions map[int][]string
}

func (c *memFake) answer(s *seen, req *amsgRequest, w http.ResponseWriter) {
	rep := areply{id: fmt.Sprintf("msg_01E2eMem%06d", s.Seq), model: req.Model, stop: "tool_use",
		usage: ausage{Input: int64(len(s.Body) / 4), Output: 20, CacheRead: 1000}}
	all := req.allText()
	if !req.hasTool("Bash") || !strings.Contains(all, memMark1) {
		c.mu.Lock()
		c.side = append(c.side, fmt.Sprintf("model=%s max_tokens=%d stream=%v tools=%d system=%.80q last=%.120q",
			req.Model, req.MaxTokens, req.Stream, len(req.Tools), string(req.System), lastUserText(req)))
		c.mu.Unlock()
		rep.blocks = []ablock{{Type: "text", Text: "E2E side answer"}}
		rep.stop = "end_turn"
		rep.write(w, req.Stream)
		return
	}
	run := 1
	if strings.Contains(all, memMark2) {
		run = 2
	}
	c.mu.Lock()
	c.sessions[run] = append(c.sessions[run], s.Header.Get("X-Claude-Code-Session-Id"))
	c.mu.Unlock()
	res := req.toolResults()
	if run == 1 {
		write, haveWrite := res[memWriteID]
		test, haveTest := res[memTest1ID]
		switch {
		case !haveWrite:
			in, _ := json.Marshal(map[string]string{"file_path": c.queue,
				"content": "package queue\n\n" + memTODO + "\nconst Backend = \"sqlite\"\n"})
			rep.blocks = []ablock{{Type: "text", Text: memDecision1},
				{Type: "tool_use", ID: memWriteID, Name: "Write", Input: in}}
		case !haveTest:
			rep.blocks = []ablock{{Type: "tool_use", ID: memTest1ID, Name: "Bash",
				Input: json.RawMessage(`{"command":"` + memTestCmd + `","description":"Run the queue tests"}`)}}
		case write.IsError || !test.IsError || !strings.Contains(test.resultText(), "--- FAIL: TestQueue"):
			rep.blocks = []ablock{{Type: "text", Text: fmt.Sprintf("E2E MISMATCH: write %q (error %v), test %q (error %v)",
				write.resultText(), write.IsError, test.resultText(), test.IsError)}}
			rep.stop = "end_turn"
		default:
			rep.blocks = []ablock{{Type: "text", Text: "TestQueue fails for now. " + memRule}}
			rep.stop = "end_turn"
		}
	} else {
		read, haveRead := res[memReadID]
		edit, haveEdit := res[memEditID]
		test, haveTest := res[memTest2ID]
		switch {
		case !haveRead:
			in, _ := json.Marshal(map[string]string{"file_path": c.queue})
			rep.blocks = []ablock{{Type: "text", Text: memDecision2},
				{Type: "tool_use", ID: memReadID, Name: "Read", Input: in}}
		case !haveEdit:
			in, _ := json.Marshal(map[string]string{"file_path": c.queue,
				"old_string": memTODO + "\nconst Backend = \"sqlite\"",
				"new_string": "// Backend stores the job queue.\nconst Backend = \"boltdb\""})
			rep.blocks = []ablock{{Type: "tool_use", ID: memEditID, Name: "Edit", Input: in}}
		case !haveTest:
			rep.blocks = []ablock{{Type: "tool_use", ID: memTest2ID, Name: "Bash",
				Input: json.RawMessage(`{"command":"` + memTestCmd + `","description":"Run the queue tests"}`)}}
		case read.IsError || edit.IsError || test.IsError || !strings.Contains(test.resultText(), "ok"):
			rep.blocks = []ablock{{Type: "text", Text: fmt.Sprintf("E2E MISMATCH: read %q (error %v), edit %q (error %v), test %q (error %v)",
				read.resultText(), read.IsError, edit.resultText(), edit.IsError, test.resultText(), test.IsError)}}
			rep.stop = "end_turn"
		default:
			rep.blocks = []ablock{{Type: "text", Text: "TestQueue passes with BoltDB."}}
			rep.stop = "end_turn"
		}
	}
	rep.write(w, req.Stream)
}

// lastUserText is the text of the request's last user message.
func lastUserText(r *amsgRequest) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role != "user" {
			continue
		}
		var parts []string
		for _, b := range r.Messages[i].blocks() {
			if b.Text != "" {
				parts = append(parts, b.Text)
			}
		}
		return strings.Join(parts, " ")
	}
	return ""
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent
// readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// bbProxy is `bbengine proxy` running in this process, as a user runs it:
// the recorder, the engine following the WAL, the memory index and the
// loopback query endpoint the other commands ask.
type bbProxy struct {
	addr           string
	cancel         context.CancelFunc
	done           chan int
	stdout, stderr syncBuffer
	stopped        bool
}

func startProxy(t *testing.T, dir, upstream string) *bbProxy {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &bbProxy{cancel: cancel, done: make(chan int, 1)}
	go func() {
		p.done <- cli.MainContext(ctx, []string{"bbengine", "--dir", dir, "proxy", "--listen", "127.0.0.1:0",
			"--upstream", "anthropic=" + upstream, "--sync", "none", "--shutdown-timeout", "5s"}, &p.stdout, &p.stderr)
	}()
	t.Cleanup(func() { p.stop(t) })
	const prefix = "listening on http://"
	for deadline := time.Now().Add(20 * time.Second); ; {
		out := p.stdout.String()
		if i := strings.Index(out, prefix); i >= 0 {
			p.addr, _, _ = strings.Cut(out[i+len(prefix):], " ")
			return p
		}
		select {
		case code := <-p.done:
			p.stopped = true
			t.Fatalf("bbengine proxy exited with %d:\n%s%s", code, out, p.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("bbengine proxy did not start:\n%s%s", out, p.stderr.String())
		}
	}
}

// stop stops the proxy as Ctrl-C does: it flushes the WAL, derives and
// indexes what is left, and releases the data directory.
func (p *bbProxy) stop(t *testing.T) {
	t.Helper()
	if p.stopped {
		return
	}
	p.stopped = true
	p.cancel()
	code := <-p.done
	logOutput(t, "bbengine proxy stderr", []byte(p.stderr.String()))
	if code != 0 {
		t.Errorf("bbengine proxy exited with %d:\n%s%s", code, p.stdout.String(), p.stderr.String())
	}
}

// bb runs a bbengine command on dir and returns its output.
func bb(t *testing.T, dir string, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := cli.Main(append([]string{"bbengine", "--dir", dir}, args...), &out, &errb); code != 0 {
		t.Fatalf("bbengine %v: exit %d:\n%s%s", args, code, out.String(), errb.String())
	}
	return out.String()
}

// bbJSON runs a bbengine command with --json and decodes its output.
func bbJSON[T any](t *testing.T, dir string, args ...string) T {
	t.Helper()
	out := bb(t, dir, append(args, "--json")...)
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("bbengine %v --json: %v\n%s", args, err, out)
	}
	return v
}

// TestClaudeCodeMemory runs a two-prompt Claude Code session (the second
// run resumes the first) through `bbengine proxy` and checks the memory
// the running proxy derives from it, as `bbengine mem` shows it: the
// decision in force and the one it replaced, the constraint, the open
// threads closed, the outcomes of both tasks, and evidence that points
// into the WAL. Then it forgets an artifact through the proxy, stops the
// proxy, rebuilds, and checks that search answers as before.
func TestClaudeCodeMemory(t *testing.T) {
	nodeModules := requireNodeModules(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("the session runs go test, and go is not on PATH: %v", err)
	}
	argv, version := claudeCommand(t, nodeModules)
	t.Logf("Claude Code %s", version)
	goCache, err := exec.Command(goBin, "env", "GOCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOCACHE: %v", err)
	}

	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	config := filepath.Join(tmp, "config")
	work := filepath.Join(tmp, "work")
	for _, d := range []string{home, config, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// The project: a Go module whose test wants the BoltDB backend, so
	// it fails after run 1 and passes after run 2's edit.
	for name, text := range map[string]string{
		"go.mod": "module example.com/queue\n\ngo 1.21\n",
		"queue_test.go": "package queue\n\nimport \"testing\"\n\nfunc TestQueue(t *testing.T) {\n" +
			"\tif Backend != \"boltdb\" {\n\t\tt.Fatalf(\"the job queue runs on %s, want boltdb\", Backend)\n\t}\n}\n",
	} {
		if err := os.WriteFile(filepath.Join(work, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	queue := filepath.Join(work, "queue.go")
	apiKey := "sk-ant-api03-fake" + randomHex(24) + "-E2E"

	mf := &memFake{queue: queue, sessions: map[int][]string{}}
	up := newFake(t, messagesAPI(mf.answer))
	tw := newTripwire(t)
	loopbackOnly(t, up.URL)
	dir := t.TempDir()
	px := startProxy(t, dir, up.URL)
	loopbackOnly(t, "http://"+px.addr)
	t.Logf("bbengine proxy on %s, data directory %s", px.addr, dir)

	claude := func(prompt string, extra ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		debugFile := filepath.Join(tmp, fmt.Sprintf("claude-debug-%d.log", time.Now().UnixNano()))
		args := append(append(argv[1:len(argv):len(argv)], "-p", prompt, "--output-format", "text",
			"--allowedTools", "Write", "Read", "Edit", "Bash("+memTestCmd+")",
			"--debug-file", debugFile), extra...)
		cmd := exec.CommandContext(ctx, argv[0], args...)
		cmd.Dir = work
		cmd.Env = append(claudeEnv(filepath.Dir(goBin)+string(os.PathListSeparator)+os.Getenv("PATH"), home, config, tmp,
			"http://"+px.addr, apiKey,
			"GOCACHE="+strings.TrimSpace(string(goCache)), "GOTOOLCHAIN=local", "GOPROXY=off", "GOFLAGS="), tw.env()...)
		cmd.WaitDelay = 5 * time.Second
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		t.Logf("claude ran for %v", time.Since(start).Round(time.Millisecond))
		logOutput(t, "claude stdout", stdout.Bytes())
		logOutput(t, "claude stderr", stderr.Bytes())
		if err != nil || ctx.Err() != nil {
			if b, rerr := os.ReadFile(debugFile); rerr == nil {
				logOutput(t, "claude debug", b)
			}
			t.Fatalf("claude: %v (context: %v)", err, ctx.Err())
		}
		return stdout.String()
	}

	out1 := claude(memMark1 + ": put the job queue in queue.go, then run the tests.")
	if !strings.Contains(out1, memRule) {
		t.Fatalf("run 1 printed %q, want it to end with %q", out1, memRule)
	}
	mf.mu.Lock()
	s1 := slices.Compact(slices.Clone(mf.sessions[1]))
	mf.mu.Unlock()
	if len(s1) != 1 || s1[0] == "" {
		t.Fatalf("run 1 sent session ids %v, want one", s1)
	}
	session := s1[0]
	out2 := claude(memMark2+": make the queue tests pass.", "--resume", session)
	if !strings.Contains(out2, "TestQueue passes with BoltDB.") {
		t.Fatalf("run 2 printed %q", out2)
	}
	mf.mu.Lock()
	s2 := slices.Compact(slices.Clone(mf.sessions[2]))
	side := slices.Clone(mf.side)
	mf.mu.Unlock()
	if len(s2) != 1 || s2[0] != session {
		t.Fatalf("run 2 (--resume %s) sent session ids %v: not the same Claude Code session", session, s2)
	}
	for _, s := range side {
		t.Logf("side request: %s", s)
	}
	for _, s := range up.requests() {
		t.Logf("upstream got #%d %s %s (%d bytes, session %s) -> %d", s.Seq, s.Method, s.Path, len(s.Body), s.Header.Get("X-Claude-Code-Session-Id"), s.Status)
	}
	if a := tw.attempts(); len(a) > 0 {
		t.Errorf("Claude Code tried to reach the outside: %v", a)
	}
	if b, err := os.ReadFile(queue); err != nil || strings.Contains(string(b), "TODO") || !strings.Contains(string(b), "boltdb") {
		t.Errorf("queue.go after the session: %q (%v)", b, err)
	}

	// The running proxy derives memory as it records; wait until it has
	// taken the end of run 2 (the second task's final message).
	var cards []engine.Card
	for deadline := time.Now().Add(30 * time.Second); ; {
		cards = bbJSON[[]engine.Card](t, dir, "mem", "list", session, "--type", "outcome")
		if len(cards) >= 2 && strings.Contains(bb(t, dir, "mem", "get", cards[len(cards)-1].ID), "TestQueue passes with BoltDB") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy has not derived both tasks: outcomes %+v", cards)
		}
		time.Sleep(50 * time.Millisecond)
	}
	list := bbJSON[[]engine.Card](t, dir, "mem", "list")
	t.Logf("bbengine mem list:\n%s", bb(t, dir, "mem", "list"))
	checkMemory(t, dir, session, queue, list)

	// Forget through the running proxy hides the constraint from search;
	// --all still finds it.
	rule := findOne(t, dir, "never drop a job", engine.ArtifactConstraint)
	if out := bb(t, dir, "mem", "forget", rule.ID, "--reason", "e2e"); !strings.Contains(out, "forgot artifact "+rule.ID) {
		t.Errorf("mem forget: %q", out)
	}
	for _, c := range bbJSON[[]engine.Card](t, dir, "mem", "search", "queue must never drop a job", "-k", "50") {
		if c.ID == rule.ID {
			t.Errorf("the forgotten constraint %s is still found through the proxy", rule.ID)
		}
	}
	if all := bbJSON[[]engine.Card](t, dir, "mem", "search", "queue must never drop a job", "--all"); !slices.ContainsFunc(all, func(c engine.Card) bool { return c.ID == rule.ID }) {
		t.Errorf("search --all does not find the forgotten constraint: %+v", all)
	}

	// The same searches after the proxy stopped and the data directory
	// was rebuilt from the WAL give the same cards in the same order.
	queries := []string{"job queue database", "SQLite", "BoltDB", "never drop a job", "TestQueue", "TODO retry failed jobs",
		"queue.go", "go test", "make the queue tests pass"}
	closeFirst := map[string]bool{}
	// Each query's result carries, after the cards, whether its first
	// two scored within 5% of each other: such a pair may swap when the
	// collection statistics change (below).
	search := func() map[string][]string {
		out := map[string][]string{}
		for _, q := range queries {
			cards := bbJSON[[]engine.Card](t, dir, "mem", "search", q, "-k", "20")
			for _, c := range cards {
				out[q] = append(out[q], c.ID+" "+string(c.Type)+" "+c.Status)
			}
			if len(cards) > 1 && cards[1].Score >= 0.95*cards[0].Score {
				closeFirst[q] = true
			}
		}
		return out
	}
	before := search()
	px.stop(t)
	if h, held, _ := engine.ReadHolder(dir); held {
		t.Fatalf("the stopped proxy still holds %s: %+v", dir, h)
	}
	// (A merge in between purges replaced documents from the collection
	// statistics: see after the rebuild below.)
	if stopped := search(); !sameFinds(stopped, before, closeFirst) {
		t.Errorf("search differs once the proxy stopped:\nrunning %v\nstopped %v", before, stopped)
	}
	if out := bb(t, dir, "rebuild"); !strings.Contains(out, "indexed") {
		t.Errorf("bbengine rebuild: %q", out)
	}
	// A rebuilt index finds the same artifacts with the same status and
	// ranks the same first. Bluge's collection statistics (document
	// count, field lengths) count replaced documents until a merge
	// purges them, so the BM25 scores of a live index drift from a
	// rebuilt one's and close results may swap places.
	if after := search(); !sameFinds(after, before, closeFirst) {
		t.Errorf("search differs after rebuild:\nbefore %v\nafter  %v", before, after)
	} else if !mapsEqual(after, before) {
		t.Logf("after rebuild, close results ranked differently:\nbefore %v\nafter  %v", before, after)
	}
	for _, q := range queries {
		if len(before[q]) == 0 {
			t.Errorf("search %q found nothing", q)
		}
	}
	if got := bbJSON[engine.Artifact](t, dir, "mem", "get", rule.ID); !got.Forgotten {
		t.Errorf("after rebuild the constraint is no longer forgotten")
	}
	scanFiles(t, dir, apiKey)
}

func mapsEqual(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

// sameFinds reports whether a and b found the same results for each
// query, the first the same (or the first two swapped, for a query in
// closeFirst), the rest in any order.
func sameFinds(a, b map[string][]string, closeFirst map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w := b[k]
		if len(v) != len(w) {
			return false
		}
		// The same first, or the first two swapped when they scored
		// within 5% of each other in some search.
		if len(v) > 0 && v[0] != w[0] && !(closeFirst[k] && len(v) > 1 && v[0] == w[1] && v[1] == w[0]) {
			return false
		}
		if !slices.Equal(slices.Sorted(slices.Values(v)), slices.Sorted(slices.Values(w))) {
			return false
		}
	}
	return true
}

// findOne searches for q among artifacts of type typ and returns the
// top card.
func findOne(t *testing.T, dir, q string, typ engine.ArtifactType) engine.Card {
	t.Helper()
	cards := bbJSON[[]engine.Card](t, dir, "mem", "search", q, "--type", string(typ))
	if len(cards) == 0 {
		t.Fatalf("mem search %q --type %s found nothing", q, typ)
	}
	return cards[0]
}

// checkMemory checks what the proxy derived from the session.
func checkMemory(t *testing.T, dir, session, queue string, list []engine.Card) {
	t.Helper()
	get := func(id string) engine.Artifact { return bbJSON[engine.Artifact](t, dir, "mem", "get", id) }

	// Every artifact belongs to the session and points at the WAL and
	// at the exchange and request its events came from.
	types := map[engine.ArtifactType]int{}
	for _, c := range list {
		types[c.Type]++
		a := get(c.ID)
		if a.Session != session {
			t.Errorf("%s belongs to session %q, want %q", a.ID, a.Session, session)
		}
		if len(a.Evidence) == 0 {
			t.Errorf("%s %q has no evidence", a.ID, a.Title)
		}
		for _, ev := range a.Evidence {
			if ev.Prov.First == 0 || ev.Prov.Last < ev.Prov.First || ev.Prov.Exchange == 0 || ev.Prov.RequestID == "" {
				t.Errorf("%s %q: evidence event %d has provenance %+v, want WAL offsets, an exchange and a request id", a.ID, a.Title, ev.Seq, ev.Prov)
			}
		}
	}
	t.Logf("artifact types: %v", types)
	// Only what the session said: Claude Code's own system text (tool and
	// skill listings) yields no decisions or constraints.
	if types[engine.ArtifactDecision] != 2 || types[engine.ArtifactConstraint] != 1 || types[engine.ArtifactOutcome] != 2 {
		t.Errorf("artifact types %v, want 2 decisions, 1 constraint, 2 outcomes", types)
	}

	// The decision in force is BoltDB; the SQLite one is superseded by
	// it, and search for the job queue's store brings BoltDB first.
	top := bbJSON[[]engine.Card](t, dir, "mem", "search", "which database for the job queue", "--type", "decision")
	if len(top) < 2 || !strings.Contains(top[0].Title, "BoltDB") || top[0].Status != "active" {
		t.Fatalf("decision search: %+v, want the active BoltDB decision first", top)
	}
	bolt := get(top[0].ID)
	t.Logf("bbengine mem get %s:\n%s", bolt.ID, bb(t, dir, "mem", "get", bolt.ID))
	if bolt.Decision == nil || bolt.Decision.Statement != memDecision2 || len(bolt.Decision.Supersedes) != 1 {
		t.Fatalf("BoltDB decision: %+v", bolt.Decision)
	}
	sqlite := get(bolt.Decision.Supersedes[0])
	if sqlite.Status != "superseded" || sqlite.Decision == nil || sqlite.Decision.Statement != memDecision1 || sqlite.Decision.SupersededBy != bolt.ID {
		t.Errorf("the decision BoltDB supersedes: %s %+v", sqlite.Status, sqlite.Decision)
	}
	if sqlite.Task == bolt.Task {
		t.Errorf("both decisions are in task %q, want one per run", bolt.Task)
	}
	rel := bbJSON[api.Related](t, dir, "mem", "related", sqlite.ID)
	if len(rel.SupersededBy) != 1 || rel.SupersededBy[0].ID != bolt.ID || len(rel.Events) == 0 {
		t.Errorf("mem related %s: superseded by %+v, %d events", sqlite.ID, rel.SupersededBy, len(rel.Events))
	}
	t.Logf("bbengine mem related %s:\n%s", sqlite.ID, bb(t, dir, "mem", "related", sqlite.ID))
	// A search that matches the old choice best brings the new one above it.
	old := bbJSON[[]engine.Card](t, dir, "mem", "search", "SQLite Postgres", "--type", "decision")
	if len(old) < 2 || old[0].ID != bolt.ID || old[1].ID != sqlite.ID {
		t.Errorf("search for the old choice: %+v, want BoltDB then SQLite", old)
	}

	// The constraint.
	rule := get(findOne(t, dir, "queue must never drop a job", engine.ArtifactConstraint).ID)
	if rule.Constraint == nil || rule.Constraint.Statement != memRule || rule.Status != "active" || rule.Constraint.Modal != "never" && rule.Constraint.Modal != "must not" {
		t.Errorf("constraint: %s %+v", rule.Status, rule.Constraint)
	}

	// The TODO written in run 1 and edited away in run 2.
	todo := get(findOne(t, dir, "TODO retry failed jobs with backoff", engine.ArtifactThread).ID)
	if todo.Thread == nil || todo.Thread.Kind != "todo" || todo.Status != "closed" || todo.Thread.File != queue || todo.Thread.ClosedBy == nil {
		t.Errorf("TODO thread: %s %+v", todo.Status, todo.Thread)
	}
	// The failing test, closed by the passing run.
	failing := get(findOne(t, dir, "TestQueue fails", engine.ArtifactThread).ID)
	if failing.Thread == nil || failing.Thread.Kind != "failing_test" || failing.Status != "closed" || failing.Thread.ClosedBy == nil {
		t.Errorf("failing-test thread: %s %+v", failing.Status, failing.Thread)
	}
	if failing.Thread != nil && failing.Thread.ClosedBy != nil && failing.Thread.ClosedBy.Prov.First <= failing.Evidence[0].Prov.First {
		t.Errorf("the failing test is closed by WAL offset %d, before it failed at %d", failing.Thread.ClosedBy.Prov.First, failing.Evidence[0].Prov.First)
	}

	// Two tasks, one per run, with their files and commands.
	var outcomes []engine.Artifact
	for _, c := range list {
		if c.Type == engine.ArtifactOutcome {
			outcomes = append(outcomes, get(c.ID))
		}
	}
	if len(outcomes) != 2 {
		t.Fatalf("%d outcomes, want 2 (one per prompt): %+v", len(outcomes), outcomes)
	}
	slices.SortFunc(outcomes, func(a, b engine.Artifact) int { return a.TaskN - b.TaskN })
	for i, want := range []struct {
		prompt, op, test string
		exit             int
	}{
		{memMark1, "write", "failed", 1},
		{memMark2, "edit", "passed", 0},
	} {
		a := outcomes[i]
		t.Logf("bbengine mem get %s:\n%s", a.ID, bb(t, dir, "mem", "get", a.ID))
		o := a.Outcome
		if o == nil || !strings.Contains(o.Prompt, want.prompt) {
			t.Errorf("outcome %d: prompt %+v", i+1, o)
			continue
		}
		if !slices.ContainsFunc(o.Files, func(f engine.FileChange) bool { return f.Path == queue && f.Op == want.op }) {
			t.Errorf("outcome %d: files %+v, want %s %s", i+1, o.Files, want.op, queue)
		}
		if len(o.Commands) != 1 || o.Commands[0].Command != memTestCmd || o.Commands[0].Exit == nil || *o.Commands[0].Exit != want.exit || o.Commands[0].Test != want.test {
			t.Errorf("outcome %d: commands %+v, want %q exit %d, test %s", i+1, o.Commands, memTestCmd, want.exit, want.test)
		}
		if o.Calls < 3 || o.Usage.Output == 0 {
			t.Errorf("outcome %d: %d calls, usage %+v", i+1, o.Calls, o.Usage)
		}
	}
	if outcomes[1].Status != "success" {
		t.Errorf("task 2 ended %s (%s), want success", outcomes[1].Status, outcomes[1].Outcome.Reason)
	}
	if outcomes[0].Task == outcomes[1].Task {
		t.Errorf("both outcomes are task %q", outcomes[0].Task)
	}
}
