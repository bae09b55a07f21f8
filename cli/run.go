package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/runner"
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
	t := &runner.Task{Dir: dir, Session: c.String("session"), Task: c.String("task"), Describe: c.String("describe"),
		Goal: c.String("goal"), Budget: c.Int("budget"), Argv: append([]string{agentPath}, args[1:]...), Run: runner.NewRun()}
	if t.Session == "" {
		t.Session = runner.NewSession()
		fmt.Fprintf(c.App.ErrWriter, "bbengine run: new session %s (pass --session %s, or export BBENGINE_SESSION=%s, to run its next task)\n", t.Session, t.Session, t.Session)
	}
	if !exchange.ValidID(t.Session) || t.Task != "" && !exchange.ValidID(t.Task) {
		return usagef("run: session and task ids are at most 255 bytes of UTF-8, without control characters")
	}
	if t.Describe == "" {
		t.Describe = runner.PromptArg(args[1:])
	}

	// Capture: the running proxy, or one started for this task.
	r := api.Dial(dir)
	stopProxy := func() error { return nil }
	if r == nil || r.Proxy == "" {
		if r != nil {
			return fmt.Errorf("run: process %d holds %s but runs no proxy; stop it, or run bbengine proxy", r.PID, dir)
		}
		if t.Task == "" {
			// The task number needs the session's tasks: read them before
			// the proxy this run starts owns the directory.
			if t.Task, err = nextTask(c, t.Session); err != nil {
				return err
			}
		}
		bopts, err := breakerOptions(c.String("config"), "", true)
		if err != nil {
			return err
		}
		if r, stopProxy, err = server.StartRun(c.Context, dir, proxy.Options{Upstreams: ups, Mode: mode, Session: t.Session, Task: t.Task, Run: t.Run, Breaker: &bopts}); err != nil {
			return err
		}
	} else if len(ups) > 0 || c.IsSet("mode") {
		return usagef("run: a proxy already runs for %s (pid %d): --upstream and --mode apply only to a proxy run starts", dir, r.PID)
	}
	code, err := runner.Run(c.Context, r, r.Proxy, t, os.Stdin, c.App.Writer, c.App.ErrWriter)
	if err == nil && code != 0 {
		err = &exitError{code: code}
	}
	return errors.Join(err, stopProxy())
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
