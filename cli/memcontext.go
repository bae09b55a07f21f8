package cli

import (
	"fmt"
	"os"
	"strings"

	"github.com/bbengine/bbengine/api"
	ucli "github.com/urfave/cli/v2"
)

func memContextCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "context",
		Usage: "print the context pack for a task: goal, decisions in force, constraints, what earlier tasks did, open threads",
		Description: "The pack is what `bbengine run` and the Claude Code hook inject before a task. It is\n" +
			"deterministic and cached by session, task, budget and memory state. The task\n" +
			"description ranks items by keyword and file affinity. It carries what the other\n" +
			"sessions of the session's project (its working directory) left in force, each item\n" +
			"saying which session it comes from; what a later session replaced or closed is left out.",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "session", Usage: "session id (required)"},
			&ucli.StringFlag{Name: "task", Usage: "what the task is about to do"},
			&ucli.StringFlag{Name: "task-id", Usage: "the task's id (X-Bb-Task-Id)"},
			&ucli.IntFlag{Name: "budget", Usage: "total tokens (default 1200; the sections scale with it)"},
			&ucli.StringFlag{Name: "project", Usage: "for a session not recorded yet: its working directory, whose project's decisions, constraints and open threads the pack carries (default: the current directory)"},
			&ucli.BoolFlag{Name: "json", Usage: "print the pack as JSON"},
		},
		Action: memContext,
	}
}

func memContext(c *ucli.Context) error {
	if c.NArg() > 0 {
		return usagef("mem context: unexpected argument %q (the task goes in --task \"...\")", c.Args().First())
	}
	if strings.TrimSpace(c.String("session")) == "" {
		return usagef("mem context: --session is required (bbengine sessions lists them)")
	}
	if b := c.Int("budget"); c.IsSet("budget") && b <= 0 {
		return usagef("mem context: --budget %d: want a positive number of tokens", b)
	}
	m, closeFn, err := openService(c, false)
	if err != nil {
		return err
	}
	defer closeFn()
	project := c.String("project")
	if project == "" {
		project, _ = os.Getwd()
	}
	p, err := m.Context(api.ContextRequest{Session: c.String("session"), Task: c.String("task"), TaskID: c.String("task-id"), Budget: c.Int("budget"), Project: project})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return writeJSON(c, p)
	}
	_, err = fmt.Fprint(c.App.Writer, p.Markdown())
	return err
}
