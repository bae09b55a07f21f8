package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/bbengine/bbengine/api/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MCPOptions configures ServeMCP.
type MCPOptions struct {
	// HTTP is the loopback address (host:port) on which to serve
	// streamable HTTP at /mcp; "" serves one client on In and Out.
	HTTP string
	// Token is the bearer token HTTP clients must send; "" for the one
	// kept in <dir>/mcp.token, made on first use and readable by the
	// owner only. Stdio needs none.
	Token string
	// In and Out are the stdio transport's streams.
	In  io.Reader
	Out io.Writer
	// Version is the version the server reports.
	Version string
	// Logf gets operational notes; nil discards them.
	Logf func(string, ...any)
}

// ServeMCP serves the memory tools over the data directory dir
// (mcpserver.New) until ctx ends or, on stdio, the client goes.
func ServeMCP(ctx context.Context, dir string, opts *MCPOptions) error {
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	var ln net.Listener
	if addr := opts.HTTP; addr != "" {
		host, err := LoopbackAddr(addr)
		if err != nil {
			return configErrorf("mcp: --http %s: %v", addr, err)
		}
		if ln, err = net.Listen("tcp", host); err != nil {
			return fmt.Errorf("mcp: listen on %s: %w", host, err)
		}
		defer ln.Close()
	}
	s, closeMem := mcpserver.New(dir, &mcpserver.Options{Logf: opts.Logf, Version: opts.Version})
	defer closeMem()
	if ln == nil {
		t := &mcp.IOTransport{Reader: io.NopCloser(opts.In), Writer: nopWriteCloser{opts.Out}}
		err := s.Run(ctx, t)
		if err == nil || errors.Is(err, io.EOF) || ctx.Err() != nil {
			return closeMem()
		}
		return fmt.Errorf("mcp: %w", err)
	}
	token, where, err := mcpToken(dir, opts.Token)
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
// is: configured (--token, BBENGINE_MCP_TOKEN or the config), else the
// one kept in dir/mcp.token, made on first use and readable by the
// owner only.
func mcpToken(dir, configured string) (string, string, error) {
	t, file, made, err := BearerToken(dir, "mcp.token", configured)
	switch {
	case err != nil && configured != "":
		return "", "", configErrorf("mcp: --token: %v", err)
	case err != nil:
		return "", "", fmt.Errorf("mcp: %w", err)
	case file == "":
		return t, "as given (--token, BBENGINE_MCP_TOKEN or the config)", nil
	case made:
		return t, "in " + file + " (new)", nil
	}
	return t, "in " + file, nil
}
