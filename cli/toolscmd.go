package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/bbengine/bbengine/api/tools"
	ucli "github.com/urfave/cli/v2"
)

func toolsCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "tools",
		Usage: "the memory tools of `bbengine mcp` as function definitions, and one call run from a shell",
		Description: "For agents that take tool definitions (OpenAI, Anthropic APIs) or can only run commands.\n" +
			"The definitions come from the same Go types as the MCP server's schemas.",
		Subcommands: []*ucli.Command{
			{
				Name:  "schema",
				Usage: "print the tools as function definitions (JSON)",
				Flags: []ucli.Flag{
					&ucli.StringFlag{Name: "format", Value: "openai", Usage: "openai ({type: function, function: {name, description, parameters}}) or anthropic ({name, description, input_schema})"},
				},
				Action: toolsSchema,
			},
			{
				Name:      "call",
				Usage:     "run one tool and print its JSON output",
				ArgsUsage: "NAME [JSON|-]",
				Description: "JSON holds the arguments (default {}); - reads them from stdin. For example:\n" +
					"  bbengine tools call memory_search '{\"query\":\"which cache did we choose\"}'",
				Action: toolsCall,
			},
		},
	}
}

func toolsSchema(c *ucli.Context) error {
	if c.NArg() > 0 {
		return usagef("tools schema: unexpected argument %q", c.Args().First())
	}
	defs, err := tools.Defs(c.String("format"))
	if err != nil {
		return usagef("tools schema: %v", err)
	}
	return writeJSON(c, defs)
}

func toolsCall(c *ucli.Context) error {
	if c.NArg() == 0 || c.NArg() > 2 {
		return usagef("tools call: give a tool name and its JSON arguments, e.g. bbengine tools call memory_get '{\"id\":\"ID\"}' (tools: %s)", strings.Join(tools.Names(), ", "))
	}
	name := c.Args().Get(0)
	t := tools.Named(name)
	if t == nil {
		return usagef("tools call: unknown tool %q (the tools are %s)", name, strings.Join(tools.Names(), ", "))
	}
	raw := []byte(c.Args().Get(1))
	if c.Args().Get(1) == "-" {
		var err error
		if raw, err = io.ReadAll(io.LimitReader(c.App.Reader, 1<<20)); err != nil {
			return fmt.Errorf("tools call %s: read the arguments from stdin: %w", name, err)
		}
	}
	args, err := tools.DecodeArgs(t, raw)
	if err != nil {
		return usagef("tools call %v", err)
	}
	m, closeFn, err := openService(c, false)
	if err != nil {
		return err
	}
	defer closeFn()
	out, err := t.Call(m, args)
	if err != nil {
		return err
	}
	// The output is for a model to read: <, > and & as they are.
	enc := json.NewEncoder(c.App.Writer)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	return closeFn()
}
