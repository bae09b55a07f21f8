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
	"syscall"
	"time"

	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/wal"
	ucli "github.com/urfave/cli/v2"
)

func proxyCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "proxy",
		Usage:     "run the recording proxy: agents point their base URL here; every exchange lands in the WAL",
		ArgsUsage: " ",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "listen", Value: "127.0.0.1:8787", Usage: "address to listen on (loopback unless you mean otherwise)"},
			&ucli.StringSliceFlag{Name: "upstream", Usage: "route name=URL (repeatable): replaces a default (anthropic, openai, gemini, ollama, lmstudio, vllm) or adds a /name/ prefix route"},
			&ucli.StringFlag{Name: "mode", Value: "lossless", Usage: "capture mode: lossless, degrade, privacy (no bodies) or passthrough (usage and timings only)"},
			&ucli.StringFlag{Name: "sync", Value: "interval", Usage: "WAL fsync policy: always, interval or none"},
			&ucli.IntFlag{Name: "queue", Value: 4096, Usage: "recorder queue length (frames)"},
			&ucli.Int64Flag{Name: "max-request-bytes", Value: 64 << 20, Usage: "largest request body accepted"},
			&ucli.StringSliceFlag{Name: "redact", Usage: "extra body redaction rule, kind=regexp (repeatable)"},
			&ucli.DurationFlag{Name: "shutdown-timeout", Value: 30 * time.Second, Usage: "how long to let in-flight streams finish on SIGINT/SIGTERM"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("proxy: takes no arguments (got %q)", c.Args().First())
			}
			mode, err := proxy.ParseMode(c.String("mode"))
			if err != nil {
				return usagef("%v", err)
			}
			syncPolicy, err := wal.ParseSyncPolicy(c.String("sync"))
			if err != nil {
				return usagef("%v", err)
			}
			ups := map[string]string{}
			for _, u := range c.StringSlice("upstream") {
				name, raw, ok := strings.Cut(u, "=")
				if !ok || name == "" || raw == "" {
					return usagef("proxy: --upstream %q: want name=URL, e.g. ollama=http://127.0.0.1:11434", u)
				}
				ups[name] = raw
			}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runProxy(ctx, c.App.Writer, c.App.ErrWriter, proxyConfig{
				dir: c.String("dir"), listen: c.String("listen"), sync: syncPolicy,
				opts: proxy.Options{Upstreams: ups, Mode: mode, QueueLen: c.Int("queue"),
					MaxRequestBody: c.Int64("max-request-bytes"), RedactPatterns: c.StringSlice("redact")},
				shutdown: c.Duration("shutdown-timeout"),
			}, nil)
		},
	}
}

type proxyConfig struct {
	dir      string
	listen   string
	sync     wal.SyncPolicy
	opts     proxy.Options
	shutdown time.Duration
}

// runProxy serves until ctx ends, then stops accepting, lets in-flight
// streams finish (bounded), and flushes and syncs the WAL. ready, when
// not nil, receives the listening address.
func runProxy(ctx context.Context, stdout, stderr io.Writer, cfg proxyConfig, ready chan<- string) error {
	walDir := cfg.dir + string(os.PathSeparator) + "wal"
	if err := os.MkdirAll(walDir, 0o755); err != nil {
		return fmt.Errorf("proxy: data directory: %w", err)
	}
	log, err := wal.Open(walDir, &wal.Options{Sync: cfg.sync})
	if err != nil {
		return fmt.Errorf("proxy: open WAL: %w", err)
	}
	if rec := log.Recovery(); rec != nil {
		fmt.Fprintf(stderr, "bbengine: %s\n", rec)
	}
	opts := cfg.opts
	opts.Logf = func(format string, args ...any) {
		fmt.Fprintf(stderr, "bbengine proxy: "+format+"\n", args...)
	}
	eng, err := openProxyEngine(cfg.dir, log, opts.Logf)
	if err != nil {
		log.Close()
		return err
	}
	qs, err := startQueryServer(eng)
	if err != nil {
		eng.Close()
		log.Close()
		return err
	}
	// The canonicalizer follows the WAL in its own goroutine: the proxy
	// never waits for it.
	followCtx, stopFollow := context.WithCancel(context.Background())
	followDone := make(chan error, 1)
	go func() { followDone <- eng.Follow(followCtx) }()
	closeEngine := func() error {
		stopFollow()
		ferr := <-followDone
		_, cerr := eng.CatchUp(context.Background())
		qs.Close()
		return errors.Join(ferr, cerr, eng.Close())
	}
	p, err := proxy.New(log, &opts)
	if err != nil {
		closeEngine()
		log.Close()
		return err
	}
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		p.Close()
		closeEngine()
		log.Close()
		return fmt.Errorf("proxy: listen on %s: %w", cfg.listen, err)
	}
	addr := ln.Addr().String()
	if host, _, _ := net.SplitHostPort(addr); !net.ParseIP(host).IsLoopback() {
		fmt.Fprintf(stderr, "bbengine proxy: warning: listening on %s, reachable from other machines; the proxy forwards your agents' credentials\n", addr)
	}
	printWiring(stdout, addr, walDir, opts.Mode, p)
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if ready != nil {
		ready <- addr
	}
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdown)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		fmt.Fprintf(stderr, "bbengine proxy: streams still open after %v; closing them\n", cfg.shutdown)
		srv.Close()
	}
	recErr := p.Close()
	syncErr := log.Sync()
	engErr := closeEngine()
	closeErr := log.Close()
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("proxy: serve: %w", serveErr)
	}
	if recErr != nil {
		return fmt.Errorf("proxy: recording failed: %w", recErr)
	}
	if syncErr != nil {
		return fmt.Errorf("proxy: sync WAL: %w", syncErr)
	}
	if closeErr != nil {
		return fmt.Errorf("proxy: close WAL: %w", closeErr)
	}
	if engErr != nil {
		return fmt.Errorf("proxy: canonicalizer: %w", engErr)
	}
	fmt.Fprintf(stdout, "bbengine proxy: stopped; WAL flushed and synced in %s\n", walDir)
	return nil
}

// printWiring tells the user how to point each agent at the proxy.
func printWiring(w io.Writer, addr, walDir string, mode proxy.Mode, p *proxy.Proxy) {
	base := "http://" + addr
	fmt.Fprintf(w, "bbengine proxy listening on %s (mode %s, recording to %s)\n\n", base, mode, walDir)
	fmt.Fprintf(w, "Point your agent at it:\n")
	fmt.Fprintf(w, "  Claude Code        export ANTHROPIC_BASE_URL=%s\n", base)
	fmt.Fprintf(w, "  OpenAI SDKs, aider export OPENAI_BASE_URL=%s/v1\n", base)
	fmt.Fprintf(w, "  Codex CLI          codex -c openai_base_url=%s/v1   (custom providers: base_url = \"%s/v1\", supports_websockets = false)\n", base, base)
	fmt.Fprintf(w, "  Gemini CLI         export GOOGLE_GEMINI_BASE_URL=%s\n", base)
	fmt.Fprintf(w, "  OpenAI-compatible  %s/<route>/v1 for a route below (ollama, lmstudio, vllm, or --upstream name=URL)\n", base)
	fmt.Fprintf(w, "  Ids (optional)     X-Bb-Session-Id, X-Bb-Task-Id, X-Bb-Run-Id request headers (ANTHROPIC_CUSTOM_HEADERS for Claude Code)\n\n")
	fmt.Fprintf(w, "Routes:\n")
	for _, u := range p.Upstreams() {
		fmt.Fprintf(w, "  %-10s %s\n", u[0], u[1])
	}
	fmt.Fprintf(w, "\nHealth %s/_bb/health, metrics %s/_bb/metrics. Ctrl-C stops and syncs the WAL.\n", base, base)
}

// openProxyEngine opens the data directory's engine on the proxy's WAL.
// A command that briefly holds the directory (sessions, show) delays the
// proxy by at most a few seconds.
func openProxyEngine(dir string, log *wal.Log, logf func(string, ...any)) (*engine.Engine, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		e, err := engine.Open(dir, &engine.Options{WAL: log, Logf: logf})
		if err == nil {
			return e, nil
		}
		if !errors.Is(err, engine.ErrLocked) || time.Now().After(deadline) {
			return nil, fmt.Errorf("proxy: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
