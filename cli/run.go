package cli

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/bbengine/bbengine/agents/claude"
	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/server"
	ucli "github.com/urfave/cli/v2"
)

func runCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "run",
		Usage:     "run an agent for one task of a session: record it, give it the session's context pack first, record its outcome",
		ArgsUsage: "-- AGENT [ARGS...]",
		Description: "run records the agent through a proxy (the running one, or one it starts for the task on\n" +
			"127.0.0.1), sends it there (ANTHROPIC_BASE_URL, OPENAI_BASE_URL, GOOGLE_GEMINI_BASE_URL; the\n" +
			"X-Bb-Session-Id, X-Bb-Task-Id and X-Bb-Run-Id headers in ANTHROPIC_CUSTOM_HEADERS), builds the\n" +
			"context pack of the task from the session's earlier tasks, and injects it before the agent\n" +
			"starts: for Claude Code through its SessionStart/UserPromptSubmit hooks (bbengine hook claude,\n" +
			"given with --settings); for any command through a {pack} placeholder in its arguments and the\n" +
			"file named by BBENGINE_PACK_FILE. The agent keeps the terminal. When it exits, run records\n" +
			"the task's outcome (success on exit status 0) and exits with the agent's status.\n\n" +
			"The session id comes from --session (or BBENGINE_SESSION); without one, run starts a new\n" +
			"session and prints its id. The task id defaults to task-N, N counting the session's tasks.",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "session", Usage: "session id (a new one when empty)"},
			&ucli.StringFlag{Name: "task", Usage: "task id (default task-N, the session's next task)"},
			&ucli.StringFlag{Name: "goal", Usage: "the session's goal, recorded before the agent starts"},
			&ucli.StringFlag{Name: "describe", Usage: "what the task is, to rank the pack (default: the agent's longest argument that is not a flag, usually its prompt)"},
			&ucli.IntFlag{Name: "budget", Usage: "pack budget in tokens (default 1200)"},
			&ucli.StringSliceFlag{Name: "upstream", Usage: "route name=URL for the proxy run starts (as bbengine proxy --upstream)"},
			&ucli.StringFlag{Name: "mode", Value: "lossless", Usage: "capture mode of the proxy run starts"},
		},
		Action: runAgent,
	}
}

// runPlan is what one bbengine run does.
type runPlan struct {
	dir                  string
	session, task, runID string
	describe             string
	agent                []string
	// claude is the index of Claude Code's executable or script in
	// agent, or -1.
	claude                 int
	packFile, settingsFile string
}

func runAgent(c *ucli.Context) error {
	args := c.Args().Slice()
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		return usagef("run: name the agent to run after --, e.g. bbengine run -- claude -p \"fix the tests\"")
	}
	mode, err := proxy.ParseMode(c.String("mode"))
	if err != nil {
		return usagef("%v", err)
	}
	ups, err := parseUpstreams("run", c.StringSlice("upstream"))
	if err != nil {
		return err
	}
	if b := c.Int("budget"); c.IsSet("budget") && b <= 0 {
		return usagef("run: --budget %d: want a positive number of tokens", b)
	}
	agentPath, err := exec.LookPath(args[0])
	if err != nil {
		return fmt.Errorf("run: agent %q: %w", args[0], err)
	}
	dir, err := filepath.Abs(c.String("dir"))
	if err != nil {
		return err
	}
	pl := &runPlan{dir: dir, session: c.String("session"), task: c.String("task"), describe: c.String("describe"),
		agent: append([]string{agentPath}, args[1:]...), runID: "run-" + randHex(6)}
	pl.claude = claudeAt(pl.agent)
	if pl.session == "" {
		pl.session = "ses-" + time.Now().UTC().Format("20060102-150405") + "-" + randHex(3)
		fmt.Fprintf(c.App.ErrWriter, "bbengine run: new session %s (pass --session %s, or export BBENGINE_SESSION=%s, to run its next task)\n", pl.session, pl.session, pl.session)
	}
	if !exchange.ValidID(pl.session) || pl.task != "" && !exchange.ValidID(pl.task) {
		return usagef("run: session and task ids are at most 255 bytes of UTF-8, without control characters")
	}
	if pl.describe == "" {
		pl.describe = promptArg(args[1:])
	}

	// Capture: the running proxy, or one started for this task.
	r := api.Dial(dir)
	stopProxy := func() error { return nil }
	if r == nil || r.Proxy == "" {
		if r != nil {
			return fmt.Errorf("run: process %d holds %s but runs no proxy; stop it, or run bbengine proxy", r.PID, dir)
		}
		if pl.task == "" {
			// The task number needs the session's tasks: read them before
			// the proxy this run starts owns the directory.
			if pl.task, err = nextTask(c, pl.session); err != nil {
				return err
			}
		}
		bopts, err := breakerOptions(c.String("config"), "", true)
		if err != nil {
			return err
		}
		if r, stopProxy, err = server.StartRun(c.Context, dir, proxy.Options{Upstreams: ups, Mode: mode, Session: pl.session, Task: pl.task, Run: pl.runID, Breaker: &bopts}); err != nil {
			return err
		}
	} else if len(ups) > 0 || c.IsSet("mode") {
		return usagef("run: a proxy already runs for %s (pid %d): --upstream and --mode apply only to a proxy run starts", dir, r.PID)
	}
	ranErr := func() error {
		m := r
		if pl.task == "" {
			var err error
			if pl.task, err = api.NextTask(m, pl.session); err != nil {
				return err
			}
		}
		if g := c.String("goal"); g != "" {
			if err := recordGoal(m, pl.session, g); err != nil {
				return fmt.Errorf("run: record the goal: %w", err)
			}
		}
		p, err := m.Context(api.ContextRequest{Session: pl.session, TaskID: pl.task, Task: pl.describe, Budget: c.Int("budget")})
		if err != nil {
			return fmt.Errorf("run: build the context pack: %w", err)
		}
		md := ""
		if !p.Empty() {
			md = p.Markdown()
		}
		cleanup, err := pl.prepare(md)
		defer cleanup()
		if err != nil {
			return err
		}
		wd, _ := os.Getwd()
		before := snapshotRepo(c.Context, wd)
		code, why, err := pl.exec(c, r)
		if err != nil {
			return err
		}
		changes := withoutDir(repoChanges(c.Context, before, snapshotRepo(c.Context, wd)), before, dir)
		status := "success"
		if code != 0 {
			status = "fail"
		}
		summary := why // a success needs no "exited with status 0" bullet
		if code == 0 {
			summary = ""
		}
		if err := recordOutcome(m, pl.session, pl.task, status, summary, code, changes); err != nil {
			fmt.Fprintf(c.App.ErrWriter, "bbengine run: the agent exited (%s) but its outcome was not recorded: %v\n", why, err)
		}
		if code != 0 {
			return &exitError{code: code}
		}
		return nil
	}()
	return errors.Join(ranErr, stopProxy())
}

// prepare writes the pack file (and Claude Code's settings with our
// hooks), and puts the pack into the agent's arguments for {pack}.
func (pl *runPlan) prepare(md string) (func(), error) {
	var files []string
	cleanup := func() {
		for _, f := range files {
			os.Remove(f)
		}
	}
	f, err := os.CreateTemp("", "bbengine-pack-*.md")
	if err != nil {
		return cleanup, fmt.Errorf("run: pack file: %w", err)
	}
	files = append(files, f.Name())
	_, err = io.WriteString(f, md)
	if err = errors.Join(err, f.Close()); err != nil {
		return cleanup, fmt.Errorf("run: pack file: %w", err)
	}
	pl.packFile = f.Name()
	for i := 1; i < len(pl.agent); i++ {
		pl.agent[i] = strings.ReplaceAll(pl.agent[i], "{pack}", md)
	}
	if pl.claude >= 0 {
		exe, err := os.Executable()
		if err != nil {
			return cleanup, fmt.Errorf("run: find the bbengine executable for Claude Code's hooks: %w", err)
		}
		b, err := json.Marshal(claude.HooksSettings(exe, pl.dir))
		if err != nil {
			return cleanup, err
		}
		s, err := os.CreateTemp("", "bbengine-claude-settings-*.json")
		if err != nil {
			return cleanup, fmt.Errorf("run: Claude Code settings: %w", err)
		}
		files = append(files, s.Name())
		_, err = s.Write(b)
		if err = errors.Join(err, s.Close()); err != nil {
			return cleanup, fmt.Errorf("run: Claude Code settings: %w", err)
		}
		pl.settingsFile = s.Name()
		at := pl.claude + 1
		pl.agent = append(append(pl.agent[:at:at], "--settings", s.Name()), pl.agent[at:]...)
	}
	return cleanup, nil
}

// exec runs the agent with the terminal (stdin, stdout, stderr) as it is,
// and returns its exit status and a word on how it ended. While it runs,
// SIGINT reaches it from the terminal directly; bbengine ignores it and
// passes SIGTERM on.
func (pl *runPlan) exec(c *ucli.Context, r *api.Remote) (int, string, error) {
	base := "http://" + r.Proxy
	cmd := exec.Command(pl.agent[0], pl.agent[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, c.App.Writer, c.App.ErrWriter
	headers := fmt.Sprintf("X-Bb-Session-Id: %s\nX-Bb-Task-Id: %s\nX-Bb-Run-Id: %s", pl.session, pl.task, pl.runID)
	if wd, err := os.Getwd(); err == nil && !strings.ContainsAny(wd, "\r\n") {
		// The project whose bbengine.yaml sets the circuit breaker's
		// thresholds for this run.
		headers += "\nX-Bb-Project: " + wd
	}
	if h := os.Getenv("ANTHROPIC_CUSTOM_HEADERS"); h != "" {
		headers = h + "\n" + headers
	}
	cmd.Env = append(os.Environ(),
		"ANTHROPIC_BASE_URL="+base,
		"ANTHROPIC_CUSTOM_HEADERS="+headers,
		"OPENAI_BASE_URL="+base+"/v1",
		"GOOGLE_GEMINI_BASE_URL="+base,
		"BBENGINE_DIR="+pl.dir,
		"BBENGINE_SESSION="+pl.session,
		"BBENGINE_TASK_ID="+pl.task,
		"BBENGINE_TASK_TEXT="+pl.describe,
		"BBENGINE_RUN_ID="+pl.runID,
		"BBENGINE_PACK_FILE="+pl.packFile,
	)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	if err := cmd.Start(); err != nil {
		return 0, "", fmt.Errorf("run: start %s: %w", pl.agent[0], err)
	}
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				if s == syscall.SIGTERM {
					cmd.Process.Signal(s)
				}
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, "the agent exited with status 0", nil
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal()), "the agent was killed by " + ws.Signal().String(), nil
		}
		return ee.ExitCode(), fmt.Sprintf("the agent exited with status %d", ee.ExitCode()), nil
	}
	return 0, "", fmt.Errorf("run: %s: %w", pl.agent[0], err)
}

// nextTask is task-N for the session's next task, read from the data
// directory (no proxy runs).
func nextTask(c *ucli.Context, session string) (string, error) {
	if _, err := os.Stat(filepath.Join(c.String("dir"), "wal")); errors.Is(err, os.ErrNotExist) {
		return "task-1", nil
	}
	m, closeFn, err := openService(c, false)
	if err != nil {
		return "", err
	}
	defer closeFn()
	return api.NextTask(m, session)
}

// claudeAt finds Claude Code in an agent command line: its executable
// (claude), or its script run by node (…/@anthropic-ai/claude-code/…).
func claudeAt(argv []string) int {
	if b := strings.TrimSuffix(filepath.Base(argv[0]), ".exe"); b == "claude" || b == "claude-code" {
		return 0
	}
	if len(argv) > 1 && strings.TrimSuffix(filepath.Base(argv[0]), ".exe") == "node" &&
		strings.Contains(filepath.ToSlash(argv[1]), "claude-code/") {
		return 1
	}
	return -1
}

// promptArg guesses the task from the agent's arguments: the longest one
// that is not a flag, which is the prompt of `claude -p "..."` or
// `codex exec "..."` whatever flags follow it.
func promptArg(args []string) string {
	best := ""
	for _, a := range args {
		if !strings.HasPrefix(a, "-") && len(a) > len(best) {
			best = a
		}
	}
	return best
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// recordGoal records the session's goal (source "run") before the agent
// starts; it beats a goal from an X-Bb-Session-Goal header.
func recordGoal(m api.Service, session, goal string) error {
	_, err := m.Note(exchange.Note{Op: "goal", Session: session, Text: goal, Source: "run"})
	return err
}

// recordOutcome records how the task ended, from the agent's exit.
func recordOutcome(m api.Service, session, task, status, why string, code int, changes []exchange.FileStat) error {
	_, err := m.Note(exchange.Note{Op: "outcome", Session: session, TaskID: task, Status: status, Text: why, Exit: &code, Changes: changes, Source: "run"})
	return err
}

// withoutDir drops the changes under the data directory dir (a data
// directory kept inside the repository changes while the agent runs).
func withoutDir(changes []exchange.FileStat, st *repoState, dir string) []exchange.FileStat {
	if st == nil {
		return changes
	}
	rel, err := filepath.Rel(st.root, dir)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return changes
	}
	if rel == "." {
		return nil
	}
	rel = filepath.ToSlash(rel) + "/"
	return slices.DeleteFunc(changes, func(c exchange.FileStat) bool { return strings.HasPrefix(c.Path+"/", rel) })
}
