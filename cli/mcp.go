package cli

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/internal/guard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	ucli "github.com/urfave/cli/v2"
)

func mcpCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "mcp",
		Usage: "serve the memory tools to an agent over MCP (stdio, or streamable HTTP on loopback)",
		Description: "Tools: " + strings.Join(toolNames(), ", ") + ", all read-only.\n" +
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

// Timing of the memory a local MCP server holds between calls.
const (
	// mcpLinger is how long the server keeps the data directory open
	// after a call, so a burst of calls (search, then get) opens it once.
	mcpLinger = time.Second
	// mcpMaxHold is how long it keeps the directory at most before it
	// opens it again, so that a proxy started meanwhile (which waits for
	// the directory, retrying every second) is not kept out.
	mcpMaxHold = 5 * time.Second
	// mcpWait is how long a call waits for a directory another command
	// holds briefly.
	mcpWait = 10 * time.Second
)

// memSource lends the memory of a data directory to tool calls: the
// running proxy's when there is one, else the engine and index opened
// here, shared by concurrent calls and closed mcpLinger after the last
// one. It is safe for concurrent use.
type memSource struct {
	dir string
	mu  sync.Mutex
	// local is the memory opened here, while it is held.
	local     *localMemory
	closeLoc  func() error
	opened    time.Time
	users     int
	idle      *time.Timer
	closed    bool
	logf      func(string, ...any)
	linger    time.Duration
	maxHold   time.Duration
	closeErrs []error
}

func newMemSource(dir string, logf func(string, ...any)) *memSource {
	return &memSource{dir: dir, logf: logf, linger: mcpLinger, maxHold: mcpMaxHold}
}

// lend returns memory for one call; release gives it back.
func (s *memSource) lend(ctx context.Context) (memory, func(), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, errors.New("the MCP server is shutting down")
	}
	if s.local != nil && (s.users > 0 || time.Since(s.opened) < s.maxHold) {
		return s.hold(), s.release, nil
	}
	if s.local != nil {
		s.closeLocal()
	}
	wait, cancel := context.WithTimeout(ctx, mcpWait)
	defer cancel()
	for {
		h, held, err := engine.ReadHolder(s.dir)
		if err != nil {
			return nil, nil, err
		}
		if held && h.Addr != "" {
			return &remoteMemory{&remote{addr: h.Addr, token: h.Token, pid: h.PID}}, func() {}, nil
		}
		if !held {
			m, closeFn, err := openLocalMemory(wait, s.dir, false)
			if err == nil {
				s.local, s.closeLoc, s.opened = m, closeFn, time.Now()
				return s.hold(), s.release, nil
			}
			if !errors.Is(err, engine.ErrLocked) {
				return nil, nil, err
			}
		}
		// A proxy starting, or another command holding the directory
		// for a moment: wait for it.
		select {
		case <-wait.Done():
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			return nil, nil, fmt.Errorf("the data directory %s is held by process %d, which serves no queries; stop it or retry later", s.dir, h.PID)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// hold counts one more user of the local memory. s.mu is held.
func (s *memSource) hold() memory {
	s.users++
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	return s.local
}

func (s *memSource) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users--
	if s.users > 0 || s.local == nil {
		return
	}
	if time.Since(s.opened) >= s.maxHold {
		s.closeLocal()
		return
	}
	s.idle = time.AfterFunc(s.linger, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.users == 0 && s.local != nil {
			s.closeLocal()
		}
	})
}

// closeLocal closes the memory opened here. s.mu is held and no call
// uses it.
func (s *memSource) closeLocal() {
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	if err := s.closeLoc(); err != nil {
		s.logf("close the data directory: %v", err)
		s.closeErrs = append(s.closeErrs, err)
	}
	s.local, s.closeLoc = nil, nil
}

// Close lets the data directory go. Calls still running keep their
// memory until they end; later ones fail.
func (s *memSource) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.local != nil && s.users == 0 {
		s.closeLocal()
	} else if s.local != nil {
		// The last release closes it.
		s.maxHold = 0
	}
	return errors.Join(s.closeErrs...)
}

// NewMCPServer returns the MCP server of the memory tools over the data
// directory dir, and a function that lets the directory go. logf gets
// operational notes (nil discards them); the server advertises no
// logging capability, so nothing is logged to the client.
func NewMCPServer(dir string, logf func(string, ...any)) (*mcp.Server, func() error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	src := newMemSource(dir, logf)
	s := newMCPServer(src.lend, logf)
	return s, src.Close
}

func newMCPServer(lend lender, logf func(string, ...any)) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bbengine", Title: "bbengine memory", Version: Version}, &mcp.ServerOptions{
		Instructions: "bbengine remembers this project's agent sessions: decisions, constraints, task outcomes and open threads, " +
			"each with provenance. A context pack is usually given before a task; use these tools only for what it lacks.",
		// Tools only: no logging capability (the SDK advertises it
		// otherwise), and the tools never change.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: false}},
		Logger:       slog.New(&logfHandler{logf: logf}),
	})
	for _, t := range tools {
		t.add(s, lend)
	}
	return s
}

// logfHandler passes the SDK's warnings and errors to logf.
type logfHandler struct {
	logf  func(string, ...any)
	attrs []slog.Attr
}

func (h *logfHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *logfHandler) Handle(_ context.Context, r slog.Record) error {
	var sb strings.Builder
	sb.WriteString(r.Message)
	add := func(a slog.Attr) bool {
		fmt.Fprintf(&sb, " %s=%v", a.Key, a.Value)
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	h.logf("mcp: %s", sb.String())
	return nil
}

func (h *logfHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &logfHandler{logf: h.logf, attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}

func (h *logfHandler) WithGroup(string) slog.Handler { return h }

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
	srv := &http.Server{Handler: mcpHTTPHandler(s, token), ReadHeaderTimeout: 10 * time.Second}
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

// mcpHTTPHandler serves s as streamable HTTP at /mcp to clients that
// send the bearer token. A request for a Host other than localhost or a
// loopback address is refused (421), and one whose Origin is not on
// loopback (403), as the MCP transport spec asks, so that a web page
// cannot reach the server through the browser (DNS rebinding).
func mcpHTTPHandler(s *mcp.Server, token string) http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mcp" {
			http.Error(w, "bbengine mcp: the endpoint is /mcp", http.StatusNotFound)
			return
		}
		if err := guard.CheckHost(r); err != nil {
			http.Error(w, err.Error(), http.StatusMisdirectedRequest)
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !loopbackOrigin(o) {
			http.Error(w, "bbengine mcp: origin "+o+" is not on this machine", http.StatusForbidden)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="bbengine mcp"`)
			http.Error(w, "bbengine mcp: bad or missing bearer token (bbengine mcp --http prints where it is)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// loopbackOrigin reports whether an Origin header names this machine.
func loopbackOrigin(origin string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	if u.Hostname() == "localhost" {
		return true
	}
	ip := net.ParseIP(u.Hostname())
	return ip != nil && ip.IsLoopback()
}
