package mcpserver

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/api/tools"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/internal/guard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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

// memSource lends the service of a data directory to tool calls: the
// running proxy's when there is one, else the engine and index opened
// here, shared by concurrent calls and closed mcpLinger after the last
// one. It is safe for concurrent use.
type memSource struct {
	dir string
	mu  sync.Mutex
	// local is the memory opened here, while it is held.
	local     *api.Local
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
func (s *memSource) lend(ctx context.Context) (api.Service, func(), error) {
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
			return &api.Remote{Addr: h.Addr, Token: h.Token, PID: h.PID}, func() {}, nil
		}
		if !held {
			m, closeFn, err := api.OpenLocal(wait, s.dir, false)
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
func (s *memSource) hold() api.Service {
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

// Options configure the MCP server. Every field is optional.
type Options struct {
	// Logf gets operational notes. The default discards them; the
	// server advertises no logging capability, so nothing is logged to
	// the client.
	Logf func(string, ...any)
	// Version is the version the server reports. The default is "dev".
	Version string
}

// New returns the MCP server of the memory tools (package tools) over
// the data directory dir, and a function that lets the directory go.
// Each call asks the running proxy when there is one, else opens the
// directory for a call and lets it go a moment later.
func New(dir string, opts *Options) (*mcp.Server, func() error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	src := newMemSource(dir, o.Logf)
	s := NewServer(src.lend, o.Version, o.Logf)
	return s, src.Close
}

// NewServer returns the MCP server of the memory tools whose calls get
// the service from lend.
func NewServer(lend tools.Lender, version string, logf func(string, ...any)) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "bbengine", Title: "bbengine memory", Version: version}, &mcp.ServerOptions{
		Instructions: "bbengine remembers this project's agent sessions: decisions, constraints, task outcomes and open threads, " +
			"each with provenance. A context pack is usually given before a task; use these tools only for what it lacks.",
		// Tools only: no logging capability (the SDK advertises it
		// otherwise), and the tools never change.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: false}},
		Logger:       slog.New(&logfHandler{logf: logf}),
	})
	for _, t := range tools.All {
		t.AddTo(s, lend)
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

// HTTPHandler serves s as streamable HTTP at /mcp to clients that
// send the bearer token. A request for a Host other than localhost or a
// loopback address is refused (421), and one whose Origin is not on
// loopback (403), as the MCP transport spec asks, so that a web page
// cannot reach the server through the browser (DNS rebinding).
func HTTPHandler(s *mcp.Server, token string) http.Handler {
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
