package e2e

import (
	"bytes"
	"context"
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

	"github.com/bbengine/bbengine/engine"
)

// The markers of the three runs of the hook session.
const (
	hookMark1 = "E2E-HOOK-ONE-7c1d"
	hookMark2 = "E2E-HOOK-TWO-7c1d"
	hookMark3 = "E2E-HOOK-THREE-7c1d"
)

const hookDecision = "We decided to use SQLite instead of Postgres for the job queue because it needs no server."

// hookFake plays the model: run 1 states a decision, runs 2 and 3 just
// answer. It keeps the text of every main-conversation request by run.
type hookFake struct {
	mu   sync.Mutex
	runs map[int][]string
}

func (h *hookFake) answer(s *seen, req *amsgRequest, w http.ResponseWriter) {
	rep := areply{id: fmt.Sprintf("msg_01E2eHook%06d", s.Seq), model: req.Model, stop: "end_turn",
		usage: ausage{Input: int64(len(s.Body) / 4), Output: 20}}
	all := req.allText()
	run := 0
	switch {
	case !req.hasTool("Bash"):
	case strings.Contains(all, hookMark3):
		run = 3
	case strings.Contains(all, hookMark2):
		run = 2
	case strings.Contains(all, hookMark1):
		run = 1
	}
	switch run {
	case 0:
		rep.blocks = []ablock{{Type: "text", Text: "E2E side answer"}}
	case 1:
		rep.blocks = []ablock{{Type: "text", Text: hookDecision}}
	default:
		rep.blocks = []ablock{{Type: "text", Text: fmt.Sprintf("E2E run %d done.", run)}}
	}
	if run > 0 {
		h.mu.Lock()
		h.runs[run] = append(h.runs[run], all)
		h.mu.Unlock()
	}
	rep.write(w, req.Stream)
}

func (h *hookFake) requests(run int) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.runs[run])
}

// packOf returns the <bbengine-context-pack> elements in text.
func packOf(text string) []string {
	var out []string
	for {
		i := strings.Index(text, "<"+engine.PackTag)
		if i < 0 {
			return out
		}
		j := strings.Index(text[i:], "</"+engine.PackTag+">")
		if j < 0 {
			return append(out, text[i:])
		}
		out = append(out, text[i:i+j])
		text = text[i+j:]
	}
}

// TestClaudeCodeHook runs Claude Code with bbengine's hooks: run 1
// states a decision through the proxy; `bbengine install claude --user`
// adds the hooks, and run 2 (resuming the session) gets the context pack
// with that decision at SessionStart; after `bbengine uninstall claude`,
// run 3 is a new Claude Code session given the hooks with --settings and
// the bbengine session and task in the environment, as `bbengine run`
// does, and its prompt carries the pack exactly once. Along the way it
// measures the hook binary's latency through the running proxy.
func TestClaudeCodeHook(t *testing.T) {
	nodeModules := requireNodeModules(t)
	argv, version := claudeCommand(t, nodeModules)
	t.Logf("Claude Code %s", version)
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("the hook runs a built bbengine, and go is not on PATH: %v", err)
	}
	start := time.Now()
	bin := buildBBEngine(t, t.TempDir())
	t.Logf("built %s in %v", bin, time.Since(start).Round(time.Millisecond))

	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	config := filepath.Join(tmp, "config")
	work := filepath.Join(tmp, "work")
	gen := filepath.Join(tmp, "gen")
	for _, d := range []string{home, config, work, gen} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	apiKey := "sk-ant-api03-fake" + randomHex(24) + "-E2E"
	hf := &hookFake{runs: map[int][]string{}}
	up := newFake(t, messagesAPI(hf.answer))
	tw := newTripwire(t)
	loopbackOnly(t, up.URL)
	dir := t.TempDir()
	px := startProxy(t, dir, up.URL)
	base := "http://" + px.addr
	loopbackOnly(t, base)

	// bbengine runs the built binary as a user would, with its own
	// HOME and Claude Code's config directory.
	bbBin := func(env []string, stdin string, args ...string) (string, string) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--dir", dir}, args...)...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, env...)
		cmd.Stdin = strings.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("bbengine %v: %v\n%s%s", args, err, stdout.String(), stderr.String())
		}
		return stdout.String(), stderr.String()
	}
	claude := func(prompt string, env []string, extra ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		debugFile := filepath.Join(tmp, fmt.Sprintf("claude-debug-%d.log", time.Now().UnixNano()))
		args := append(append(argv[1:len(argv):len(argv)], "-p", prompt, "--output-format", "text", "--debug-file", debugFile), extra...)
		cmd := exec.CommandContext(ctx, argv[0], args...)
		cmd.Dir = work
		cmd.Env = append(append(claudeEnv(os.Getenv("PATH"), home, config, tmp, base, apiKey), tw.env()...), env...)
		cmd.WaitDelay = 5 * time.Second
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		t.Logf("claude ran for %v", time.Since(start).Round(time.Millisecond))
		logOutput(t, "claude stdout", stdout.Bytes())
		logOutput(t, "claude stderr", stderr.Bytes())
		if b, rerr := os.ReadFile(debugFile); rerr == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if strings.Contains(l, "hook") && strings.Contains(l, "bbengine") {
					t.Logf("claude debug: %s", l)
				}
			}
			if err != nil || ctx.Err() != nil {
				logOutput(t, "claude debug", b)
			}
		}
		if err != nil || ctx.Err() != nil {
			t.Fatalf("claude: %v (context: %v)", err, ctx.Err())
		}
		return stdout.String()
	}

	// Run 1: no hooks; the decision goes into memory.
	if out := claude(hookMark1+": pick a store for the job queue.", nil); !strings.Contains(out, "SQLite") {
		t.Fatalf("run 1 printed %q", out)
	}
	var session string
	for _, s := range up.requests() {
		if id := s.Header.Get("X-Claude-Code-Session-Id"); id != "" {
			session = id
		}
	}
	if session == "" {
		t.Fatal("run 1 sent no X-Claude-Code-Session-Id")
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		if len(bbJSON[[]engine.Card](t, dir, "mem", "list", session, "--type", "decision")) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy has not derived the decision of run 1:\n%s", bb(t, dir, "mem", "list"))
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The hooks, installed for the user as a user does it.
	claudeDir := []string{"CLAUDE_CONFIG_DIR=" + config}
	out, _ := bbBin(claudeDir, "", "install", "claude", "--user", "--no-mcp", "--base-url", base)
	t.Logf("bbengine install claude --user:\n%s", out)
	settings, err := os.ReadFile(filepath.Join(config, "settings.json"))
	if err != nil || !strings.Contains(string(settings), bin+" --dir "+dir+" hook claude") {
		t.Fatalf("settings.json after install: %v\n%s", err, settings)
	}

	// The hook binary's own latency through the running proxy.
	var times []time.Duration
	ev := fmt.Sprintf(`{"session_id":%q,"hook_event_name":"SessionStart","source":"startup","cwd":%q}`, session, work)
	for range 10 {
		start := time.Now()
		out, _ := bbBin(nil, ev, "hook", "claude")
		times = append(times, time.Since(start))
		if !strings.Contains(out, engine.PackTag) {
			t.Fatalf("bbengine hook claude: %q", out)
		}
	}
	slices.Sort(times)
	t.Logf("bbengine hook claude through the proxy, process start to exit, 10 runs: min %v, median %v, max %v", times[0], times[5], times[9])

	// Run 2 resumes the session: SessionStart brings the pack with run
	// 1's decision.
	if out := claude(hookMark2+": add a retry to the job queue.", nil, "--resume", session); !strings.Contains(out, "E2E run 2 done.") {
		t.Fatalf("run 2 printed %q", out)
	}
	reqs := hf.requests(2)
	if len(reqs) == 0 {
		t.Fatal("run 2 sent no main-conversation request")
	}
	packs := packOf(reqs[0])
	if len(packs) != 1 || !strings.Contains(packs[0], `session="`+session+`"`) || !strings.Contains(packs[0], "SQLite instead of Postgres") {
		t.Fatalf("run 2's request carries %d packs, want one with run 1's decision:\n%s", len(packs), strings.Join(packs, "\n---\n"))
	}
	t.Logf("the pack run 2 received:\n%s", packs[0])

	// The injected pack is not memory: run 2's task is its prompt, and
	// the session still holds the one decision.
	var outcomes []engine.Card
	for deadline := time.Now().Add(30 * time.Second); ; {
		if outcomes = bbJSON[[]engine.Card](t, dir, "mem", "list", session, "--type", "outcome"); len(outcomes) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the proxy has not derived run 2: %+v", outcomes)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, c := range outcomes {
		a := bbJSON[engine.Artifact](t, dir, "mem", "get", c.ID)
		if a.Outcome == nil || strings.Contains(a.Outcome.Prompt, engine.PackTag) || strings.Contains(a.Outcome.Prompt, "Session context from bbengine") {
			t.Errorf("outcome %s: prompt %+v", a.ID, a.Outcome)
		}
	}
	if d := bbJSON[[]engine.Card](t, dir, "mem", "list", session, "--type", "decision"); len(d) != 1 {
		t.Errorf("after run 2 the session holds %d decisions, want the one of run 1: %+v", len(d), d)
	}

	// Uninstall gives back a settings file without the hooks.
	out, _ = bbBin(claudeDir, "", "uninstall", "claude", "--user")
	t.Logf("bbengine uninstall claude --user:\n%s", out)
	if b, err := os.ReadFile(filepath.Join(config, "settings.json")); err == nil && strings.Contains(string(b), "hook claude") {
		t.Fatalf("settings.json after uninstall:\n%s", b)
	}

	// Run 3: a new Claude Code session of the same bbengine session, as
	// `bbengine run` starts it: hooks from --settings, the ids in the
	// environment and the request headers.
	bbBin([]string{"CLAUDE_CONFIG_DIR=" + gen}, "", "install", "claude", "--user", "--no-mcp", "--no-base-url")
	task := "Add metrics to the job queue"
	env := []string{"BBENGINE_SESSION=" + session, "BBENGINE_TASK_ID=task-3", "BBENGINE_TASK_TEXT=" + task,
		"ANTHROPIC_CUSTOM_HEADERS=X-Bb-Session-Id: " + session + "\nX-Bb-Task-Id: task-3"}
	if out := claude(hookMark3+": "+task+".", env, "--settings", filepath.Join(gen, "settings.json")); !strings.Contains(out, "E2E run 3 done.") {
		t.Fatalf("run 3 printed %q", out)
	}
	reqs = hf.requests(3)
	if len(reqs) == 0 {
		t.Fatal("run 3 sent no main-conversation request")
	}
	for i, r := range reqs {
		packs := packOf(r)
		if len(packs) != 1 || !strings.Contains(packs[0], `task="task-3"`) || !strings.Contains(packs[0], "This task: "+task) ||
			!strings.Contains(packs[0], "SQLite instead of Postgres") {
			t.Errorf("run 3 request %d carries %d packs, want exactly one for task-3 with the decision:\n%s", i, len(packs), strings.Join(packs, "\n---\n"))
		}
	}
	if a := tw.attempts(); len(a) > 0 {
		t.Errorf("Claude Code tried to reach the outside: %v", a)
	}

	scanFiles(t, dir, apiKey)
}
