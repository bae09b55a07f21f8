package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bbengine/bbengine/agents"
	_ "github.com/bbengine/bbengine/agents/all" // registers every agent
	ucli "github.com/urfave/cli/v2"
)

// defaultBaseURL is the address of `bbengine proxy` with its default
// --listen.
const defaultBaseURL = agents.DefaultProxy

func installCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "install",
		Usage: "set up an agent to use bbengine: hooks that inject the context pack, the MCP server, the proxy's base URL",
		Description: "Edits the agent's own configuration files, merging with what is there: keys, hooks and\n" +
			"servers of others stay as they are, and running it twice changes nothing. Each file it\n" +
			"changes is first copied to FILE.bak-<time>. A file that does not parse is left alone and\n" +
			"named with the line and column of the problem. `bbengine uninstall` removes what it added.",
		Subcommands: agentCommands(func(a agents.Agent) *ucli.Command {
			return &ucli.Command{
				Name:        a.Name(),
				Usage:       a.Doc().InstallUsage,
				Description: a.Doc().InstallDescription,
				Flags:       installFlags(a.Doc().ForceUsage),
				Action:      func(c *ucli.Context) error { return install(c, a, false) },
			}
		}),
	}
}

// agentCommands returns one subcommand per registered agent, in the
// order of their names.
func agentCommands(cmd func(a agents.Agent) *ucli.Command) []*ucli.Command {
	var out []*ucli.Command
	for _, a := range agents.All() {
		out = append(out, cmd(a))
	}
	return out
}

func uninstallCommand() *ucli.Command {
	flags := func() []ucli.Flag {
		return []ucli.Flag{
			&ucli.BoolFlag{Name: "project", Usage: "the project's files (the default)"},
			&ucli.BoolFlag{Name: "user", Usage: "the user's files"},
			&ucli.StringFlag{Name: "project-dir", Value: ".", Usage: "the project directory"},
			&ucli.BoolFlag{Name: "dry-run", Usage: "print the changes as a diff and write nothing"},
			&ucli.BoolFlag{Name: "json", Usage: "print what changed as JSON"},
		}
	}
	return &ucli.Command{
		Name:  "uninstall",
		Usage: "remove what `bbengine install` added to an agent's configuration",
		Description: "Removes bbengine's hooks, its MCP server entry and marked sections, and the base URL\n" +
			"only while it is still the one install set. Everything else stays; each changed file is\n" +
			"first copied to FILE.bak-<time>.",
		Subcommands: agentCommands(func(a agents.Agent) *ucli.Command {
			return &ucli.Command{Name: a.Name(), Usage: a.Doc().Title, Flags: flags(), Action: func(c *ucli.Context) error { return install(c, a, true) }}
		}),
	}
}

// installFlags are the flags of `bbengine install AGENT`; force is the
// usage of --force, "" for none.
func installFlags(force string) []ucli.Flag {
	fs := []ucli.Flag{
		&ucli.BoolFlag{Name: "project", Usage: "the project's files (the default)"},
		&ucli.BoolFlag{Name: "user", Usage: "the user's files"},
		&ucli.StringFlag{Name: "project-dir", Value: ".", Usage: "the project directory"},
		&ucli.StringFlag{Name: "base-url", Value: defaultBaseURL, Usage: "the proxy's address (bbengine proxy --listen)"},
		&ucli.BoolFlag{Name: "no-base-url", Usage: "leave the agent's base URL alone (nothing is recorded unless the agent goes through the proxy)"},
		&ucli.BoolFlag{Name: "no-mcp", Usage: "do not add the MCP server"},
		&ucli.BoolFlag{Name: "no-hooks", Usage: "do not add the hooks"},
		&ucli.BoolFlag{Name: "dry-run", Usage: "print the changes as a diff and write nothing"},
		&ucli.BoolFlag{Name: "json", Usage: "print what changed as JSON"},
	}
	if force != "" {
		fs = append(fs, &ucli.BoolFlag{Name: "force", Usage: force})
	}
	return fs
}

// install runs `bbengine install AGENT` or, with uninstall, `bbengine
// uninstall AGENT`: the flags make the agent's setup, the agent says what
// changes, and install shows the changes or applies them.
func install(c *ucli.Context, a agents.Agent, uninstall bool) error {
	agent := a.Name()
	verb := "install"
	if uninstall {
		verb = "uninstall"
	}
	if c.NArg() > 0 {
		return usagef("%s %s: unexpected argument %q", verb, agent, c.Args().First())
	}
	if c.Bool("project") && c.Bool("user") {
		return usagef("%s %s: --project and --user exclude each other", verb, agent)
	}
	s := &agents.Setup{User: c.Bool("user"), Uninstall: uninstall}
	var err error
	if s.ProjectDir, err = filepath.Abs(c.String("project-dir")); err != nil {
		return err
	}
	if !uninstall {
		s.MCP, s.Hooks, s.Force = !c.Bool("no-mcp"), !c.Bool("no-hooks"), c.Bool("force")
		if !c.Bool("no-base-url") {
			s.BaseURL = strings.TrimRight(c.String("base-url"), "/")
			if !strings.HasPrefix(s.BaseURL, "http://") && !strings.HasPrefix(s.BaseURL, "https://") {
				return usagef("%s %s: --base-url %q: want http://HOST:PORT, the address bbengine proxy listens on", verb, agent, c.String("base-url"))
			}
		}
		if s.Dir, err = hookDir(c.String("dir")); err != nil {
			return err
		}
	}
	if s.Exe, err = os.Executable(); err != nil {
		return fmt.Errorf("find this executable for the hook command: %w", err)
	}
	if s.Home, err = os.UserHomeDir(); err != nil && s.User {
		return fmt.Errorf("find the home directory: %w", err)
	}
	changes, err := a.Install(s)
	if err != nil {
		return err
	}
	w := c.App.Writer
	if c.Bool("dry-run") {
		for _, ch := range changes {
			fmt.Fprint(w, ch.Diff())
		}
		if c.Bool("json") {
			return writeJSON(c, changes)
		}
		return nil
	}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	for _, ch := range changes {
		if err := ch.Apply(stamp); err != nil {
			return err
		}
	}
	if c.Bool("json") {
		return writeJSON(c, changes)
	}
	for _, ch := range changes {
		fmt.Fprintf(w, "%-9s %s", ch.Action, ch.File)
		if ch.Backup != "" {
			fmt.Fprintf(w, " (backup %s)", ch.Backup)
		}
		fmt.Fprintln(w)
	}
	if !uninstall {
		if s.BaseURL != "" {
			fmt.Fprintf(w, "The agent now talks to %s: keep `bbengine proxy` running (or install with --no-base-url).\n", s.BaseURL)
		}
		if note := a.Doc().HookNote; note != "" && s.Hooks {
			fmt.Fprintln(w, note)
		}
	}
	return nil
}

// hookDir is the --dir the installed commands pass: "" for the default
// data directory, else dir made absolute (hooks run in any directory).
func hookDir(dir string) (string, error) {
	if dir == "" || dir == DefaultDir() {
		return "", nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if abs == DefaultDir() {
		return "", nil
	}
	return abs, nil
}
