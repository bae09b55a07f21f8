package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/api"
	ucli "github.com/urfave/cli/v2"
)

func hookCommand() *ucli.Command {
	flags := func() []ucli.Flag {
		return []ucli.Flag{
			&ucli.StringFlag{Name: "session", Usage: "the bbengine session (default: the agent's own session id from the hook input)"},
			&ucli.StringFlag{Name: "task-id", Usage: "the task about to start (X-Bb-Task-Id)"},
			// BBENGINE_TASK_TEXT is what bbengine run sets (its BBENGINE_TASK
			// would be --task of run itself, a task id).
			&ucli.StringFlag{Name: "task", EnvVars: []string{"BBENGINE_TASK_TEXT"}, Usage: "what the task is about to do (default: the prompt of UserPromptSubmit)"},
			&ucli.IntFlag{Name: "budget", Usage: "total tokens of the pack (default 1200); the pack stays under 9,000 characters whatever the budget"},
			&ucli.DurationFlag{Name: "timeout", Value: 500 * time.Millisecond, Usage: "give up silently after this long"},
			&ucli.BoolFlag{Name: "verbose", Usage: "write one line to stderr saying what the hook did and why"},
		}
	}
	desc := "Installed by `bbengine install claude` (or codex) and run by the agent, which writes the\n" +
		"hook event as JSON on stdin (session_id, hook_event_name, source, prompt, ...). The\n" +
		"answer on stdout is {\"hookSpecificOutput\":{\"hookEventName\":EVENT,\"additionalContext\":PACK}},\n" +
		"PACK being the Markdown of `bbengine mem context` (under 9,000 characters whatever --budget).\n\n" +
		"The session is --session (BBENGINE_SESSION, which `bbengine run` sets) or else the agent's\n" +
		"session_id, which is how the proxy knows the agent's traffic (an imported session\n" +
		"\"claude:<id>\" is found by it too). The task is --task (BBENGINE_TASK_TEXT, set by run, or\n" +
		"BBENGINE_TASK) or else the prompt; its id --task-id (BBENGINE_TASK_ID).\n\n" +
		"Once per agent session: the first pack the hook builds in an agent session is recorded in\n" +
		"<dir>/hooks/<agent>-<session_id>.json (written atomically). SessionStart (startup, resume,\n" +
		"clear, compact: each begins a context without the pack) always injects the pack. A\n" +
		"UserPromptSubmit injects only when no pack of this bbengine session was built yet in the\n" +
		"agent session (SessionStart is not installed, or it gave up). It does not inject because\n" +
		"memory changed since: what changed it is this conversation, which the agent has in\n" +
		"context; an empty pack at SessionStart is recorded for the same reason. A compaction runs\n" +
		"SessionStart again. So under `bbengine run` the task's pack reaches the model once per run.\n\n" +
		"The hook never stands in the agent's way: it asks the running proxy, or opens the data\n" +
		"directory itself when no proxy runs, and gives up after --timeout. Whatever goes wrong\n" +
		"(bad input, unknown event or session, no data directory, an empty pack), it prints\n" +
		"nothing and exits 0; --verbose says why, in one line on stderr."
	return &ucli.Command{
		Name:        "hook",
		Usage:       "answer an agent's SessionStart or UserPromptSubmit hook with the session's context pack",
		Description: desc,
		Subcommands: agentCommands(func(a agents.Agent) *ucli.Command {
			return &ucli.Command{
				Name:        a.Name(),
				Usage:       a.Doc().HookUsage,
				Description: desc,
				Flags:       flags(),
				Action:      func(c *ucli.Context) error { return runHook(c, a) },
			}
		}),
	}
}

// runHook answers one hook event of agent a. It returns nil whatever
// happens, even a panic: what went wrong goes to stderr with --verbose
// only. The pack builder keeps a pack under 9,000 characters
// (pack.DefaultMaxChars) whatever its token budget; the hook checks it
// against the agent's cap.
func runHook(c *ucli.Context, a agents.Agent) (err error) {
	agent := a.Name()
	start := time.Now()
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("timeout"))
	defer cancel()
	say := func(format string, args ...any) {
		if c.Bool("verbose") {
			fmt.Fprintf(c.App.ErrWriter, "bbengine hook %s: %s (%s)\n", agent, fmt.Sprintf(format, args...), time.Since(start).Round(time.Microsecond))
		}
	}
	defer func() {
		if r := recover(); r != nil {
			say("silent: %v", r)
			err = nil
		}
	}()
	if c.NArg() > 0 {
		say("silent: unexpected argument %q", c.Args().First())
		return nil
	}
	in, err := readHookInput(ctx, a, c.App.Reader)
	if err != nil {
		say("silent: %v", err)
		return nil
	}
	ans := api.AnswerHook(ctx, api.HookRequest{Dir: c.String("dir"), Agent: a, Event: in, Session: c.String("session"),
		TaskID: c.String("task-id"), Task: c.String("task"), Budget: c.Int("budget")})
	if ans.Out != nil {
		if _, err := c.App.Writer.Write(ans.Out); err != nil {
			say("silent: %v", err)
			return nil
		}
	}
	say("%s", ans.Why)
	return nil
}

// maxHookInput bounds the hook event read from stdin (a prompt may hold
// a pasted file).
const maxHookInput = 16 << 20

// readHookInput reads the hook event and decodes it as agent a writes
// it, giving up when ctx ends (a terminal on stdin never closes).
func readHookInput(ctx context.Context, a agents.Agent, r io.Reader) (agents.HookEvent, error) {
	var in agents.HookEvent
	if r == nil {
		return in, errors.New("no stdin")
	}
	type result struct {
		b   []byte
		err error
	}
	ch := make(chan result, 1)
	go func() {
		b, err := io.ReadAll(io.LimitReader(r, maxHookInput+1))
		ch <- result{b, err}
	}()
	var res result
	select {
	case res = <-ch:
	case <-ctx.Done():
		return in, errors.New("stdin did not end in time")
	}
	switch {
	case res.err != nil:
		return in, fmt.Errorf("read stdin: %v", res.err)
	case len(res.b) > maxHookInput:
		return in, fmt.Errorf("the hook input is over %d bytes", maxHookInput)
	}
	in, err := a.ParseHook(res.b)
	if err != nil {
		return in, fmt.Errorf("the hook input is not a JSON object: %v", err)
	}
	return in, nil
}
