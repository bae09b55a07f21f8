package cli

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/api"
	ucli "github.com/urfave/cli/v2"
)

func doctorCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "doctor",
		Usage:     "check each agent's setup and the data directory; one line per finding, with its fix",
		ArgsUsage: "[AGENT...]",
		Description: "For each agent found on the machine (or each one named): its version, whether its base\n" +
			"URL goes through the running proxy, whether bbengine's hooks and MCP server are registered,\n" +
			"whether its own cleanup deletes logs before they are imported (Claude Code's\n" +
			"cleanupPeriodDays, Gemini CLI's general.sessionRetention), and how many of its logs are\n" +
			"not imported yet. For the data directory:\n" +
			"its size, encryption, the WAL's checksums, the proxy that owns it and the derivation lag.\n" +
			"Works with the proxy running (it is asked over loopback) and without; writes nothing.\n" +
			"Exits 1 when a finding fails.",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "project-dir", Value: ".", Usage: "the project whose agent settings to check too"},
			&ucli.DurationFlag{Name: "timeout", Value: 0, Usage: "how long to wait for an agent's --version or the proxy (default 3s)"},
			&ucli.BoolFlag{Name: "json", Usage: "print the findings as JSON"},
		},
		Action: func(c *ucli.Context) error {
			req := api.DoctorRequest{Dir: c.String("dir"), Agents: c.Args().Slice(), Timeout: c.Duration("timeout")}
			var err error
			if req.ProjectDir, err = filepath.Abs(c.String("project-dir")); err != nil {
				return err
			}
			if req.HookDir, err = hookDir(req.Dir); err != nil {
				return err
			}
			if req.Exe, err = os.Executable(); err != nil {
				return fmt.Errorf("find this executable: %w", err)
			}
			if req.Home, err = os.UserHomeDir(); err != nil {
				return fmt.Errorf("find the home directory: %w", err)
			}
			rep, err := api.Doctor(c.Context, req)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				err = writeJSON(c, rep)
			} else {
				err = printFindings(c, rep.Findings)
			}
			if err != nil {
				return err
			}
			if rep.Failed {
				return &exitError{code: 1}
			}
			return nil
		},
	}
}

// printFindings writes one line per finding: severity, agent, check,
// what was found and its fix.
func printFindings(c *ucli.Context, fs []agents.Finding) error {
	w := c.App.Writer
	for _, f := range fs {
		line := fmt.Sprintf("%-4s %-8s %-10s %s", f.Severity, f.Agent, f.Check, f.Message)
		if f.Fix != "" {
			line += "; fix: " + f.Fix
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}
