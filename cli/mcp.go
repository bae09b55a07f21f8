package cli

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/bbengine/bbengine/api/mcpserver"
	"github.com/bbengine/bbengine/api/tools"
	"github.com/bbengine/bbengine/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	ucli "github.com/urfave/cli/v2"
)

// NewMCPServer returns the MCP server of the memory tools over the data
// directory dir (mcpserver.New), reporting this build's version, and a
// function that lets the directory go. logf gets operational notes (nil
// discards them).
func NewMCPServer(dir string, logf func(string, ...any)) (*mcp.Server, func() error) {
	return mcpserver.New(dir, &mcpserver.Options{Logf: logf, Version: Version})
}

func mcpCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "mcp",
		Usage: "serve the memory tools to an agent over MCP (stdio, or streamable HTTP on loopback)",
		Description: "Tools: " + strings.Join(tools.Names(), ", ") + ", all read-only.\n" +
			"With a proxy running, each call asks it; otherwise the server opens the data directory\n" +
			"for a call and lets it go a moment later, so a proxy started meanwhile can take it.\n" +
			"Register it with Claude Code:  claude mcp add bbengine -- bbengine mcp\n" +
			"--http 127.0.0.1:PORT serves streamable HTTP at /mcp behind a bearer token instead.",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "http", Usage: "serve streamable HTTP on this loopback address (127.0.0.1:PORT) instead of stdio"},
			&ucli.StringFlag{Name: "token", EnvVars: []string{"BBENGINE_MCP_TOKEN"}, Usage: "the bearer token HTTP clients must send (default: one kept in DIR/mcp.token); stdio needs none"},
		},
		Action: mcpServe,
	}
}

func mcpServe(c *ucli.Context) error {
	if c.NArg() > 0 {
		return usagef("mcp: unexpected argument %q", c.Args().First())
	}
	stderr := c.App.ErrWriter
	var logMu sync.Mutex
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(stderr, "bbengine mcp: "+format+"\n", args...)
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	return server.ServeMCP(ctx, c.String("dir"), &server.MCPOptions{HTTP: c.String("http"), Token: c.String("token"),
		In: c.App.Reader, Out: c.App.Writer, Version: Version, Logf: logf})
}
