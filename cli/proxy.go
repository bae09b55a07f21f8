package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/api/httpapi"
	"github.com/bbengine/bbengine/codec/redact"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/index"
	"github.com/bbengine/bbengine/internal/guard"
	"github.com/bbengine/bbengine/internal/private"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/proxy/breaker"
	"github.com/bbengine/bbengine/wal"
	"github.com/cockroachdb/pebble/v2/vfs"
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
			&ucli.StringFlag{Name: "api", Usage: "serve the harness API (packs, outcomes, checkpoints, goals, search) on this loopback address, e.g. 127.0.0.1:7435; off when empty"},
			&ucli.StringFlag{Name: "api-token", Usage: "bearer token of the harness API (at least 16 characters); when empty one is generated into <dir>/api.token"},
			&ucli.StringFlag{Name: "breaker", Value: "on", Usage: "the circuit breaker that refuses a session's requests once it loops without progress: on or off (thresholds: circuit_breaker: in --config, a project's bbengine.yaml)"},
			&ucli.DurationFlag{Name: "upstream-header-timeout", Value: 10 * time.Minute, Usage: "give up (504) on an upstream that sends no response headers for this long after the request (reasoning models are slow); 0: never"},
			&ucli.DurationFlag{Name: "stream-idle-timeout", Value: 5 * time.Minute, Usage: "cut a response when the upstream sends no bytes of it for this long; 0: never"},
			&ucli.DurationFlag{Name: "client-body-timeout", Value: 60 * time.Second, Usage: "give up (408) on a client that sends no bytes of its request body for this long; 0: never"},
			&ucli.StringFlag{Name: "memory-limit", Value: "160MiB", Usage: "soft limit of the proxy's Go memory, as GOMEMLIMIT: the garbage collector works harder near it, so that a huge request or response does not double the heap for a moment; a `SIZE` such as 160MiB or 1GiB, or off (GOMEMLIMIT in the environment takes precedence)"},
			&ucli.StringSliceFlag{Name: "allow-origin", Usage: "accept browser requests from this web `ORIGIN` (scheme://host[:port], repeatable); by default any request with an Origin header or Sec-Fetch-Site: cross-site is refused"},
			&ucli.StringFlag{Name: "project", Usage: "project `DIR` of every session, whose bbengine.yaml sets the breaker's thresholds (default: found from each agent's working directory)"},
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
			ups, err := parseUpstreams("proxy", c.StringSlice("upstream"))
			if err != nil {
				return err
			}
			if a := c.String("api"); a != "" {
				if _, err := loopbackAddr(a); err != nil {
					return usagef("proxy: --api: %v", err)
				}
			}
			var on bool
			switch c.String("breaker") {
			case "on":
				on = true
			case "off":
			default:
				return usagef("proxy: --breaker %q: want on or off", c.String("breaker"))
			}
			bopts, err := breakerOptions(c.String("config"), c.String("project"), on)
			if err != nil {
				return err
			}
			limit, err := parseByteSize(c.String("memory-limit"))
			if err != nil {
				return usagef("proxy: --memory-limit: %v", err)
			}
			if os.Getenv("GOMEMLIMIT") == "" && limit > 0 {
				defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit))
			}
			defer restrictUmask()()
			if _, err := guard.New(c.StringSlice("allow-origin")); err != nil {
				return usagef("proxy: %v", err)
			}
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runProxy(ctx, c.App.Writer, c.App.ErrWriter, proxyConfig{
				dir: c.String("dir"), listen: c.String("listen"), sync: syncPolicy,
				opts: proxy.Options{Upstreams: ups, Mode: mode, QueueLen: c.Int("queue"),
					MaxRequestBody: c.Int64("max-request-bytes"), RedactPatterns: c.StringSlice("redact"), Breaker: &bopts,
					AllowOrigins:  c.StringSlice("allow-origin"),
					HeaderTimeout: flagTimeout(c, "upstream-header-timeout"), IdleTimeout: flagTimeout(c, "stream-idle-timeout"),
					BodyTimeout: flagTimeout(c, "client-body-timeout")},
				shutdown: c.Duration("shutdown-timeout"), api: c.String("api"), apiToken: c.String("api-token"),
			}, nil)
		},
	}
}

// flagTimeout reads a timeout flag as proxy.Options takes it: 0 (never)
// is negative there, where 0 means the default.
func flagTimeout(c *ucli.Context, name string) time.Duration {
	if d := c.Duration(name); d > 0 {
		return d
	}
	return -1
}

// parseByteSize reads a size such as 160MiB, 1GiB, 200MB or 4096 (bytes);
// off is 0.
func parseByteSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "off") {
		return 0, nil
	}
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') {
		i--
	}
	mult := map[string]float64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30}[strings.ToLower(strings.TrimSpace(t[i:]))]
	n, err := strconv.ParseFloat(strings.TrimSpace(t[:i]), 64)
	if err != nil || mult == 0 || n <= 0 || n*mult >= 1<<62 {
		return 0, fmt.Errorf("%q is not a size (want e.g. 160MiB, 1GiB, 200MB, or off)", s)
	}
	return int64(n * mult), nil
}

// parseUpstreams reads --upstream name=URL flags.
func parseUpstreams(cmd string, flags []string) (map[string]string, error) {
	ups := map[string]string{}
	for _, u := range flags {
		name, raw, ok := strings.Cut(u, "=")
		if !ok || name == "" || raw == "" {
			return nil, usagef("%s: --upstream %q: want name=URL, e.g. ollama=http://127.0.0.1:11434", cmd, proxy.StripUserinfo(u))
		}
		ups[name] = raw
	}
	return ups, nil
}

type proxyConfig struct {
	dir      string
	listen   string
	sync     wal.SyncPolicy
	opts     proxy.Options
	shutdown time.Duration
	// api is the harness API's address ("" for none), apiToken its token
	// ("" for the one in <dir>/api.token); apiReady, when not nil,
	// receives the address it listens on.
	api      string
	apiToken string
	apiReady chan<- string
	// fs, when set, is the file system the engine's Pebble writes
	// through: fault tests inject errors there.
	fs vfs.FS
	// lagEvery and sizeEvery, when set, replace how often /_bb/metrics'
	// derivation lag and directory sizes are refreshed (tests).
	lagEvery, sizeEvery time.Duration
}

// runProxy serves until ctx ends, then stops accepting, lets in-flight
// streams finish (bounded), and flushes and syncs the WAL. ready, when
// not nil, receives the listening address.
func runProxy(ctx context.Context, stdout, stderr io.Writer, cfg proxyConfig, ready chan<- string) error {
	walDir := cfg.dir + string(os.PathSeparator) + "wal"
	if _, err := private.Secure(cfg.dir); err != nil {
		return fmt.Errorf("proxy: data directory: %w", err)
	}
	if err := private.MkdirAll(walDir); err != nil {
		return fmt.Errorf("proxy: data directory: %w", err)
	}
	opts := cfg.opts
	opts.Logf = func(format string, args ...any) {
		fmt.Fprintf(stderr, "bbengine proxy: "+format+"\n", args...)
	}
	// Damage in sealed segments does not stop recording: Open reports
	// gaps and bad segment headers at once, a background scan verifies
	// every frame of them, and both show on stderr and /_bb/health.
	log, err := wal.Open(walDir, &wal.Options{Sync: cfg.sync, ScanSealed: true, OnDamage: func(err error) {
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
		return usagef("proxy: --redact: %v", err)
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
		return usagef("proxy: %v", err)
	}
	pm := newProxyMetrics(cfg.dir, walDir, log)
	if err := pm.register(p); err != nil {
		opts.Logf("warning: metrics: %v", err)
	}
	eng := startEngine(cfg.dir, log, red, opts.Logf, p.Breaker(), pol, cfg.fs, pm)
	p.SetDerivation(eng.Status)
	eng.setBusy(p.Active)
	pm.start(cmp.Or(cfg.lagEvery, lagEvery), cmp.Or(cfg.sizeEvery, sizeEvery), eng.applied)
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
	var harness *httpapi.Harness
	if cfg.api != "" {
		addr, err := loopbackAddr(cfg.api)
		token, file := "", ""
		if err != nil {
			err = usagef("proxy: --api: %v", err)
		} else if token, file, _, err = bearerToken(cfg.dir, "api.token", cfg.apiToken); err != nil && cfg.apiToken != "" {
			err = usagef("proxy: --api-token (or BBENGINE_API_TOKEN, or api-token in the config): %v", err)
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
		if cfg.apiReady != nil {
			cfg.apiReady <- harness.Addr()
		}
	}
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
	fmt.Fprintf(w, "  OpenAI-compatible  %s/<route>/v1 for a route below (ollama, lmstudio, vllm, or --upstream name=URL)\n", base)
	fmt.Fprintf(w, "  Ids (optional)     X-Bb-Session-Id, X-Bb-Task-Id, X-Bb-Run-Id, X-Bb-Session-Goal request headers (ANTHROPIC_CUSTOM_HEADERS for Claude Code)\n\n")
	fmt.Fprintf(w, "Routes:\n")
	for _, u := range p.Upstreams() {
		fmt.Fprintf(w, "  %-10s %s\n", u[0], u[1])
	}
	fmt.Fprintf(w, "\nHealth %s/_bb/health, metrics %s/_bb/metrics. Ctrl-C stops and syncs the WAL.\n", base, base)
}

// proxyEngine runs the engine inside the proxy: it opens the data
// directory's engine on the proxy's WAL (waiting while a command holds the
// directory), serves queries on loopback and follows the WAL, restarting
// after an error.
type proxyEngine struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	e      *engine.Engine
	qs     *httpapi.Server
	mem    *api.Local
	ix     *index.Index
	// memory is signalled when the engine derived memory: the index
	// syncer wakes on it. memoryN counts those passes (see
	// api.LocalOptions.Changes).
	memory  chan struct{}
	memoryN atomic.Uint64
	syncers sync.WaitGroup
	// addr is the proxy's listening address, for the lock file.
	addr string
	// brk is the proxy's circuit breaker; restored is closed once it has
	// taken back its recorded state (or that failed).
	brk      *breaker.Breaker
	restored chan struct{}
	// guard is the proxy's browser policy, for the query endpoint.
	guard *guard.Policy
	fs    vfs.FS // the file system of the engine's Pebble; nil for the OS's
	// status is what /_bb/health says of derivation: "ok", "starting",
	// or why it is paused or stopped.
	status atomic.Pointer[string]
	// wedged: the engine panicked and must not be used again (see run).
	wedged bool
	// filled is set once the WAL could not be written this run (hold).
	filled atomic.Bool
	// busy reports the proxy's exchanges in progress; runUntil is when
	// derivation may yield to them again (see yield).
	busy     atomic.Pointer[func() int64]
	runUntil time.Time
	// metrics times derivation and retrieval for /_bb/metrics.
	metrics *proxyMetrics
}

// applied returns the engine's applied offset for the derivation lag
// metric; ok is false while the engine is not open or cannot be used.
func (pe *proxyEngine) applied() (off uint64, ok bool) {
	pe.mu.Lock()
	e, wedged := pe.e, pe.wedged
	pe.mu.Unlock()
	if e == nil || wedged {
		return 0, false
	}
	off, err := e.Applied()
	return off, err == nil
}

// setBusy tells derivation how many exchanges the proxy is serving.
func (pe *proxyEngine) setBusy(active func() int64) { pe.busy.Store(&active) }

// Derivation gives the proxy's exchanges the CPU first: while some are in
// progress it pauses between frames, up to yieldMax at a time, and then
// runs at least yieldMax before it pauses again, so that under constant
// load it still has half of a core and never falls behind for good.
const (
	yieldMax  = 10 * time.Millisecond
	yieldPoll = 500 * time.Microsecond
)

// yield is the engine's Yield: it returns how long it paused. It runs on
// the deriving goroutine only.
func (pe *proxyEngine) yield(ctx context.Context) time.Duration {
	busy := pe.busy.Load()
	if busy == nil || (*busy)() == 0 {
		return 0
	}
	now := time.Now()
	if now.Before(pe.runUntil) {
		return 0
	}
	deadline := now.Add(yieldMax)
	t := time.NewTimer(yieldPoll)
	defer t.Stop()
	for (*busy)() > 0 && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return time.Since(now)
		case <-t.C:
			t.Reset(yieldPoll)
		}
	}
	pe.runUntil = time.Now().Add(yieldMax)
	return time.Since(now)
}

// setStatus records derivation's state for /_bb/health.
func (pe *proxyEngine) setStatus(s string) { pe.status.Store(&s) }

// Status is derivation's state as /_bb/health reports it.
func (pe *proxyEngine) Status() string {
	if s := pe.status.Load(); s != nil {
		return *s
	}
	return "starting"
}

// panicError is a panic recovered at the derivation boundary.
type panicError struct {
	what  string
	v     any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("%s panicked: %v", p.what, p.v) }

// recovered runs f and turns a panic in it into a *panicError:
// derivation (the canonicalizer, memory, the index, Pebble and Bluge
// under them) never takes the proxy down.
func recovered(what string, f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{what: what, v: v, stack: debug.Stack()}
		}
	}()
	return f()
}

// breakerRestoreWait bounds how long the proxy waits for the engine to
// restore the circuit breaker before it serves.
const breakerRestoreWait = 10 * time.Second

// setProxy records the proxy's address in the lock file, now or when
// the engine opens.
func (pe *proxyEngine) setProxy(addr string) {
	pe.mu.Lock()
	defer pe.mu.Unlock()
	pe.addr = addr
	if pe.e != nil {
		pe.e.SetProxy(addr)
	}
}

func startEngine(dir string, log *wal.Log, red *redact.Redactor, logf func(string, ...any), brk *breaker.Breaker, pol *guard.Policy, fs vfs.FS, pm *proxyMetrics) *proxyEngine {
	ctx, cancel := context.WithCancel(context.Background())
	pe := &proxyEngine{cancel: cancel, done: make(chan struct{}), memory: make(chan struct{}, 1), brk: brk, restored: make(chan struct{}), guard: pol, fs: fs, metrics: pm}
	go pe.run(ctx, dir, log, red, logf)
	return pe
}

func (pe *proxyEngine) run(ctx context.Context, dir string, log *wal.Log, red *redact.Redactor, logf func(string, ...any)) {
	defer close(pe.done)
	lowPriority()
	restored := sync.OnceFunc(func() { close(pe.restored) })
	defer restored()
	var e *engine.Engine
	for warned := false; ; {
		var err error
		e, err = engine.Open(dir, &engine.Options{WAL: log, Logf: logf, OnMemory: pe.memoryChanged, Redactor: red, FS: pe.fs,
			Hold: func() bool { return pe.hold(log, logf) }, Yield: pe.yield, OnDerived: pe.metrics.onDerived})
		if err == nil {
			break
		}
		if !errors.Is(err, engine.ErrLocked) {
			pe.setStatus(fmt.Sprintf("off: %v (recording goes on; bbengine rebuild derives it later)", err))
			logf("canonicalizer off: %v (recording goes on; bbengine rebuild derives it later)", err)
			return
		}
		if !warned {
			logf("canonicalizer waiting: %v", err)
			warned = true
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	if pe.brk != nil {
		if err := api.RestoreBreaker(e, log, pe.brk); err != nil {
			logf("circuit breaker: restoring its recorded state: %v (sessions start afresh)", err)
		}
	}
	restored()
	var mem *api.Local
	ix, err := index.Open(api.IndexDir(dir), nil)
	if err != nil {
		ix = nil
		logf("memory index off: %v (bbengine rebuild --index rebuilds it)", err)
	} else {
		mem = api.NewLocal(e, &api.LocalOptions{Index: ix, WAL: log, Followed: true, Redactor: red, Timer: pe.metrics.retrieval, Changes: &pe.memoryN})
		pe.syncers.Add(1)
		go pe.syncIndex(ctx, mem, logf)
	}
	qs, err := httpapi.Start(e, mem, pe.brk, pe.guard)
	if err != nil {
		logf("query endpoint off: %v (sessions and show wait until the proxy stops)", err)
	}
	pe.mu.Lock()
	pe.e, pe.qs, pe.mem, pe.ix = e, qs, mem, ix
	if pe.addr != "" {
		e.SetProxy(pe.addr)
	}
	pe.mu.Unlock()
	for {
		pe.setStatus("ok")
		err := recovered("the canonicalizer", func() error { return e.Follow(ctx) })
		if ctx.Err() != nil {
			return
		}
		var pv *panicError
		if errors.As(err, &pv) {
			// Pebble panics when a write of its own log fails and leaves
			// its commit pipeline locked: this engine can neither derive
			// nor close again. Recording goes on; the next start derives
			// the rest from the WAL.
			pe.mu.Lock()
			pe.wedged = true
			pe.mu.Unlock()
			pe.setStatus(fmt.Sprintf("stopped: %v (recording goes on; the next proxy start derives the rest)", err))
			logf("canonicalizer stopped until the proxy restarts (recording goes on; the next start or bbengine rebuild derives the rest): %v\n%s", err, pv.stack)
			return
		}
		pe.setStatus(fmt.Sprintf("paused: %v (recording goes on; retrying every 5s)", err))
		logf("canonicalizer paused: %v; recording goes on, retrying in 5s", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
	}
}

// query returns the query server, or nil while the engine is not open.
func (pe *proxyEngine) query() *httpapi.Server {
	pe.mu.Lock()
	defer pe.mu.Unlock()
	return pe.qs
}

// memoryChanged wakes the index syncer and starts the index lag's clock
// if it is not running; it never blocks.
func (pe *proxyEngine) memoryChanged() {
	pe.memoryN.Add(1)
	pe.metrics.indexBehind(time.Now())
	select {
	case pe.memory <- struct{}{}:
	default:
	}
}

// The index syncer keeps to a duty cycle: after a sync that took d it
// waits indexShare·d, at most indexEvery, before the next, so that it
// uses at most about 1/(1+indexShare) of a core however busy memory is,
// and the passes of a busy session are taken in one Bluge batch (one
// segment fsync) instead of one each. A cheap sync (a small session)
// leaves the index a few milliseconds behind; an expensive one (reading
// a long session's artifacts) at most indexEvery plus the sync. A query
// that asks for fresh results syncs itself.
const (
	indexShare = 10
	indexEvery = 500 * time.Millisecond
)

// indexIdleMax is how long the index syncer waits for the proxy to have
// no exchange in progress before it syncs anyway: a sync reads the
// changed sessions' artifacts and feeds Bluge, CPU the proxy's requests
// should have first on a small machine.
const indexIdleMax = 500 * time.Millisecond

// syncIndex keeps the memory index up to the engine's artifacts: once at
// start, then after the engine derived memory, keeping to the duty cycle
// above and waiting for the proxy to be idle (see indexIdleMax). It runs
// off the request path, on its own goroutine.
func (pe *proxyEngine) syncIndex(ctx context.Context, mem *api.Local, logf func(string, ...any)) {
	defer pe.syncers.Done()
	lowPriority()
	var last time.Time
	var took time.Duration
	for {
		if wait := min(indexEvery, indexShare*took) - time.Since(last); !last.IsZero() && wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		if !pe.waitIdle(ctx, indexIdleMax) {
			return
		}
		// Changes from now on are not in this sync: drain the signal
		// first, so that one arriving during the sync wakes the next.
		select {
		case <-pe.memory:
		default:
		}
		start := time.Now()
		err := recovered("the memory index", mem.Sync)
		last = time.Now()
		took = last.Sub(start)
		var retry <-chan time.Time
		if err != nil {
			logf("memory index paused: %v (recording goes on; retrying in 5s)", err)
			retry = time.After(5 * time.Second)
		} else {
			pe.metrics.indexSynced(start, took)
		}
		select {
		case <-ctx.Done():
			return
		case <-pe.memory:
		case <-retry:
		}
	}
}

// waitIdle waits until the proxy has no exchange in progress, or max
// has passed; it returns false when ctx is done.
func (pe *proxyEngine) waitIdle(ctx context.Context, max time.Duration) bool {
	busy := pe.busy.Load()
	if busy == nil || (*busy)() == 0 {
		return ctx.Err() == nil
	}
	deadline := time.NewTimer(max)
	defer deadline.Stop()
	poll := time.NewTicker(yieldPoll)
	defer poll.Stop()
	for (*busy)() > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return true
		case <-poll.C:
		}
	}
	return true
}

// close stops following, derives and indexes what is left and closes the
// engine and the index.
// hold tells derivation not to write derived state: from the first time
// the WAL cannot be written until the proxy stops. A full disk is shared
// with Pebble, whose own log may have failed meanwhile, and a Pebble
// whose log failed crashes the process at its next rotation (a fatal
// error, past any recover), even after space returns; so derivation
// stops for this run, and the next start (or bbengine rebuild) derives
// what it missed from the WAL, where everything is recorded.
func (pe *proxyEngine) hold(log *wal.Log, logf func(string, ...any)) bool {
	if log.Failed() != nil && pe.filled.CompareAndSwap(false, true) {
		msg := "the disk filled while recording; the next proxy start (or bbengine rebuild) derives the rest from the WAL"
		pe.setStatus("stopped: " + msg)
		logf("canonicalizer stopped: %s", msg)
	}
	return pe.filled.Load()
}

func (pe *proxyEngine) close() error {
	pe.cancel()
	<-pe.done
	pe.syncers.Wait()
	pe.mu.Lock()
	defer pe.mu.Unlock()
	if pe.e == nil {
		return nil
	}
	if pe.qs != nil {
		pe.qs.Close()
	}
	if pe.wedged || pe.filled.Load() {
		// The engine panicked, or its store met a full disk: it cannot
		// be used, not even to close.
		if pe.mem != nil {
			pe.ix.Close()
		}
		return errors.New("derivation stopped after a panic or a full disk this run; the next start (or bbengine rebuild) derives what it missed from the WAL, where everything is recorded")
	}
	_, err := pe.e.CatchUp(context.Background())
	if pe.mem != nil {
		err = errors.Join(err, pe.mem.Sync(), pe.ix.Close())
	}
	return errors.Join(err, pe.e.Close())
}
