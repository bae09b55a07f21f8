package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/api/httpapi"
	"github.com/bbengine/bbengine/api/webui"
	"github.com/bbengine/bbengine/codec/redact"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/internal/guard"
	"github.com/bbengine/bbengine/internal/private"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/wal"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// A ConfigError is a configuration Run or ServeMCP cannot serve: a bad
// redaction pattern, browser origin, address or token. The command line
// reports it as a usage error (exit status 2).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func configErrorf(format string, args ...any) error {
	return &ConfigError{fmt.Errorf(format, args...)}
}

// Config is what Run serves.
type Config struct {
	// Dir is the data directory; the WAL is its wal/ directory.
	Dir string
	// Listen is the proxy's address, host:port (port 0 picks a free
	// one).
	Listen string
	// Sync is the WAL's fsync policy.
	Sync wal.SyncPolicy
	// Proxy configures the recording proxy; its Logf is set by Run.
	Proxy proxy.Options
	// Shutdown bounds how long in-flight streams may finish once ctx
	// ends.
	Shutdown time.Duration
	// API is the harness API's address ("" for none), APIToken its token
	// ("" for the one in <dir>/api.token); APIReady, when not nil,
	// receives the address it listens on.
	API      string
	APIToken string
	APIReady chan<- string
	// FS, when set, is the file system the engine's Pebble writes
	// through: fault tests inject errors there.
	FS vfs.FS
	// LagEvery and SizeEvery, when set, replace how often /_bb/metrics'
	// derivation lag and directory sizes are refreshed (tests).
	LagEvery, SizeEvery time.Duration
	// Retention is what the user keeps; the proxy runs it in the
	// background once the engine is open and then every RetentionEvery
	// (10 minutes when zero). A zero Retention keeps everything.
	Retention      engine.Retention
	RetentionEvery time.Duration
	// SegmentSize, when set, replaces the WAL's segment size (64 MiB):
	// retention removes whole segments (bbengine proxy
	// --wal-segment-size).
	SegmentSize int64
}

// Run serves the recording proxy on cfg.Dir's WAL, with the engine
// following that WAL beside it, until ctx ends; then it stops accepting,
// lets in-flight streams finish (bounded), and flushes and syncs the
// WAL. It writes how to point agents at the proxy to stdout and its log
// to stderr. ready, when not nil, receives the listening address.
func Run(ctx context.Context, stdout, stderr io.Writer, cfg Config, ready chan<- string) error {
	walDir := cfg.Dir + string(os.PathSeparator) + "wal"
	if _, err := private.Secure(cfg.Dir); err != nil {
		return fmt.Errorf("proxy: data directory: %w", err)
	}
	if err := private.MkdirAll(walDir); err != nil {
		return fmt.Errorf("proxy: data directory: %w", err)
	}
	opts := cfg.Proxy
	opts.Logf = func(format string, args ...any) {
		fmt.Fprintf(stderr, "bbengine proxy: "+format+"\n", args...)
	}
	// Damage in sealed segments does not stop recording: Open reports
	// gaps and bad segment headers at once, a background scan verifies
	// every frame of them, and both show on stderr and /_bb/health.
	// An encrypted directory is unlocked before anything is recorded:
	// the proxy never records in the clear into it.
	keys, err := api.Keys(cfg.Dir)
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	log, err := wal.Open(walDir, &wal.Options{Keys: keys, Sync: cfg.Sync, ScanSealed: true, SegmentSize: cfg.SegmentSize, OnDamage: func(err error) {
		opts.Logf("warning: %v (recording goes on; readers stop there)", err)
	}})
	if err != nil {
		return fmt.Errorf("proxy: open WAL: %w", err)
	}
	if rec := log.Recovery(); rec != nil {
		fmt.Fprintf(stderr, "bbengine: %s\n", rec)
	}
	for _, d := range log.Damage() {
		opts.Logf("warning: %v (recording goes on; readers stop there)", d)
	}
	// The canonicalizer opens and follows the WAL in its own goroutine:
	// the proxy records whether or not it is running, and never waits
	// for it.
	red, err := redact.New(opts.RedactPatterns)
	if err != nil {
		log.Close()
		return configErrorf("proxy: --redact: %v", err)
	}
	p, err := proxy.New(log, &opts)
	if err != nil {
		log.Close()
		return err
	}
	pol, err := guard.New(opts.AllowOrigins)
	if err != nil {
		p.Close()
		log.Close()
		return configErrorf("proxy: %v", err)
	}
	pm := newProxyMetrics(cfg.Dir, walDir, log)
	if err := pm.register(p); err != nil {
		opts.Logf("warning: metrics: %v", err)
	}
	var rt *retainer
	if !cfg.Retention.Off() {
		rt = newRetainer(cfg.Retention, cfg.RetentionEvery)
		if err := rt.register(p); err != nil {
			opts.Logf("warning: metrics: %v", err)
		}
		p.SetRetention(rt.Status)
	}
	// The web UI's token is kept in the data directory, owner-only:
	// bbengine ui reads it and gives it in the URL it opens.
	uiToken, _, _, err := BearerToken(cfg.Dir, UITokenFile, "")
	if err != nil {
		opts.Logf("warning: web UI off: %v", err)
	}
	eng := startEngine(cfg.Dir, log, red, opts.Logf, p, pol, cfg.FS, pm, rt, uiToken)
	p.SetDerivation(eng.Status)
	eng.setBusy(p.Active)
	pm.start(cmp.Or(cfg.LagEvery, lagEvery), cmp.Or(cfg.SizeEvery, sizeEvery), eng.applied)
	// The metrics' refresher reads the WAL and the engine: it stops
	// first.
	closeEngine := func() error {
		pm.close()
		return eng.close()
	}
	// The breaker takes back what it recorded before this start (an open
	// session stays open) before the first request is judged; an engine
	// that is slow to open (another command holds the directory, or it
	// rebuilds) is not waited for long.
	select {
	case <-eng.restored:
	case <-time.After(breakerRestoreWait):
		fmt.Fprintf(stderr, "bbengine proxy: the circuit breaker's recorded state is not restored yet (the engine is not open after %v); sessions it sees meanwhile start afresh\n", breakerRestoreWait)
	case <-ctx.Done():
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		p.Close()
		closeEngine()
		log.Close()
		return fmt.Errorf("proxy: listen on %s: %w", cfg.Listen, err)
	}
	addr := ln.Addr().String()
	if host, _, _ := net.SplitHostPort(addr); !net.ParseIP(host).IsLoopback() {
		fmt.Fprintf(stderr, "bbengine proxy: warning: listening on %s, reachable from other machines; the proxy forwards your agents' credentials\n", addr)
	}
	var harness *httpapi.Harness
	if cfg.API != "" {
		addr, err := LoopbackAddr(cfg.API)
		token, file := "", ""
		if err != nil {
			err = configErrorf("proxy: --api: %v", err)
		} else if token, file, _, err = BearerToken(cfg.Dir, "api.token", cfg.APIToken); err != nil && cfg.APIToken != "" {
			err = configErrorf("proxy: --api-token (or BBENGINE_API_TOKEN, or api-token in the config): %v", err)
		} else if err != nil {
			err = fmt.Errorf("proxy: harness API: %w", err)
		} else {
			harness, err = httpapi.Listen(addr, token, eng.query, pol)
		}
		if err != nil {
			ln.Close()
			p.Close()
			closeEngine()
			log.Close()
			return err
		}
		if file != "" {
			fmt.Fprintf(stderr, "bbengine proxy: harness API token in %s\n", file)
		}
	}
	eng.setProxy(addr)
	printWiring(stdout, addr, walDir, opts.Mode, p)
	if harness != nil {
		fmt.Fprintf(stdout, "Harness API http://%s/v1/ (Authorization: Bearer <api-token>): pack, outcomes, checkpoints, goal, search, artifacts\n", harness.Addr())
		if cfg.APIReady != nil {
			cfg.APIReady <- harness.Addr()
		}
	}
	srv := &http.Server{Handler: withUI(p, eng.serveUI), ReadHeaderTimeout: 30 * time.Second}
	srv.RegisterOnShutdown(eng.closeUI)
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
	sctx, cancel := context.WithTimeout(context.Background(), cfg.Shutdown)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		fmt.Fprintf(stderr, "bbengine proxy: streams still open after %v; closing them\n", cfg.Shutdown)
		srv.Close()
	}
	if harness != nil {
		// The API writes notes to the WAL: it stops before the WAL does.
		harness.Close()
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
	fmt.Fprintf(w, "  opencode           bbengine install opencode --user --base-url %s   (provider \"bbengine\", baseURL %s/v1)\n", base, base)
	fmt.Fprintf(w, "  OpenAI-compatible  %s/<route>/v1 for a route below (ollama, lmstudio, vllm, or --upstream name=URL)\n", base)
	fmt.Fprintf(w, "  Ids (optional)     X-Bb-Session-Id, X-Bb-Task-Id, X-Bb-Run-Id, X-Bb-Session-Goal request headers (ANTHROPIC_CUSTOM_HEADERS for Claude Code)\n\n")
	fmt.Fprintf(w, "Routes:\n")
	for _, u := range p.Upstreams() {
		fmt.Fprintf(w, "  %-10s %s\n", u[0], u[1])
	}
	fmt.Fprintf(w, "\nHealth %s/_bb/health, metrics %s/_bb/metrics, web UI %s/_bb/ui/ (bbengine ui opens it). Ctrl-C stops and syncs the WAL.\n", base, base, base)
}

// UITokenFile is the file of the data directory that keeps the web UI's
// token (mode 0600).
const UITokenFile = "ui.token"

// withUI routes the web UI's paths (webui.Prefix) to ui, everything else
// to the proxy.
func withUI(p http.Handler, ui http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, webui.Prefix) || r.URL.Path == strings.TrimSuffix(webui.Prefix, "/") {
			ui(w, r)
			return
		}
		p.ServeHTTP(w, r)
	})
}
