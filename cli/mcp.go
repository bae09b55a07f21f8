package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bbengine/bbengine/api/mcpserver"
	"github.com/bbengine/bbengine/api/tools"
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
	var ln net.Listener
	if addr := c.String("http"); addr != "" {
		host, err := loopbackAddr(addr)
		if err != nil {
			return usagef("mcp: --http %s: %v", addr, err)
		}
		if ln, err = net.Listen("tcp", host); err != nil {
			return fmt.Errorf("mcp: listen on %s: %w", host, err)
		}
		defer ln.Close()
	}
	ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir := c.String("dir")
	s, closeMem := NewMCPServer(dir, logf)
	defer closeMem()
	if ln == nil {
		t := &mcp.IOTransport{Reader: io.NopCloser(c.App.Reader), Writer: nopWriteCloser{c.App.Writer}}
		err := s.Run(ctx, t)
		if err == nil || errors.Is(err, io.EOF) || ctx.Err() != nil {
			return closeMem()
		}
		return fmt.Errorf("mcp: %w", err)
	}
	token, where, err := mcpToken(c, dir)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mcpserver.HTTPHandler(s, token), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	logf("streamable HTTP listening on http://%s/mcp; bearer token %s", ln.Addr(), where)
	select {
	case err := <-done:
		return fmt.Errorf("mcp: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return errors.Join(srv.Shutdown(sctx), closeMem())
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpToken returns the bearer token HTTP clients must send and where it
// is: --token (or BBENGINE_MCP_TOKEN, or the config), else the one kept
// in DIR/mcp.token, made on first use and readable by the owner only.
func mcpToken(c *ucli.Context, dir string) (string, string, error) {
	t, file, made, err := bearerToken(dir, "mcp.token", c.String("token"))
	switch {
	case err != nil && c.String("token") != "":
		return "", "", usagef("mcp: --token: %v", err)
	case err != nil:
		return "", "", fmt.Errorf("mcp: %w", err)
	case file == "":
		return t, "as given (--token, BBENGINE_MCP_TOKEN or the config)", nil
	case made:
		return t, "in " + file + " (new)", nil
	}
	return t, "in " + file, nil
}
