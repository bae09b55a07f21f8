package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
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

// openAITool is a function definition for OpenAI's Chat Completions and
// Responses tools lists.
type openAITool struct {
	Type     string         `json:"type"`
	Function openAIFunction `json:"function"`
}

type openAIFunction struct {
	Name        string             `json:"name"`
	Description string             `json:"description"`
	Parameters  *jsonschema.Schema `json:"parameters"`
}

// anthropicTool is a tool definition for Anthropic's Messages API.
type anthropicTool struct {
	Name        string             `json:"name"`
	Description string             `json:"description"`
	InputSchema *jsonschema.Schema `json:"input_schema"`
}

// toolDefs returns the tools as function definitions in format.
func toolDefs(format string) (any, error) {
	switch format {
	case "openai":
		out := make([]openAITool, len(tools))
		for i, t := range tools {
			out[i] = openAITool{Type: "function", Function: openAIFunction{Name: t.Name, Description: t.Description, Parameters: t.In}}
		}
		return out, nil
	case "anthropic":
		out := make([]anthropicTool, len(tools))
		for i, t := range tools {
			out[i] = anthropicTool{Name: t.Name, Description: t.Description, InputSchema: t.In}
		}
		return out, nil
	}
	return nil, usagef("tools schema: --format %q: want openai or anthropic", format)
}

func toolsSchema(c *ucli.Context) error {
	if c.NArg() > 0 {
		return usagef("tools schema: unexpected argument %q", c.Args().First())
	}
	defs, err := toolDefs(c.String("format"))
	if err != nil {
		return err
	}
	return writeJSON(c, defs)
}

func toolsCall(c *ucli.Context) error {
	if c.NArg() == 0 || c.NArg() > 2 {
		return usagef("tools call: give a tool name and its JSON arguments, e.g. bbengine tools call memory_get '{\"id\":\"ID\"}' (tools: %s)", strings.Join(toolNames(), ", "))
	}
	name := c.Args().Get(0)
	t := toolNamed(name)
	if t == nil {
		return usagef("tools call: unknown tool %q (the tools are %s)", name, strings.Join(toolNames(), ", "))
	}
	raw := []byte(c.Args().Get(1))
	if c.Args().Get(1) == "-" {
		var err error
		if raw, err = io.ReadAll(io.LimitReader(c.App.Reader, 1<<20)); err != nil {
			return fmt.Errorf("tools call %s: read the arguments from stdin: %w", name, err)
		}
	}
	args, err := decodeArgs(t, raw)
	if err != nil {
		return usagef("tools call %v", err)
	}
	m, closeFn, err := openMemory(c, false)
	if err != nil {
		return err
	}
	defer closeFn()
	out, err := t.call(m, args)
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
