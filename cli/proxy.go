package cli

import (
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bbengine/bbengine/internal/guard"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/server"
	"github.com/bbengine/bbengine/wal"
	ucli "github.com/urfave/cli/v2"
)

func proxyCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "proxy",
		Usage:     "run the recording proxy: agents point their base URL here; every exchange lands in the WAL",
		ArgsUsage: " ",
		Flags: append([]ucli.Flag{
			&ucli.StringFlag{Name: "listen", Value: "127.0.0.1:8787", Usage: "address to listen on (loopback unless you mean otherwise)"},
			&ucli.StringSliceFlag{Name: "upstream", Usage: "route name=URL (repeatable): replaces a default (anthropic, openai, gemini, ollama, lmstudio, vllm) or adds a /name/ prefix route"},
			&ucli.StringFlag{Name: "mode", Value: "lossless", Usage: "capture mode: lossless, degrade, privacy (no bodies) or passthrough (usage and timings only)"},
			&ucli.StringFlag{Name: "sync", Value: "interval", Usage: "WAL fsync policy: always, interval or none"},
			&ucli.StringFlag{Name: "wal-segment-size", Value: "64MiB", Usage: "start a new WAL segment file at this `SIZE`: retention removes whole segments, so smaller ones trim the WAL in finer steps"},
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
		}, retentionFlags()...),
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
				if _, err := server.LoopbackAddr(a); err != nil {
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
			ret, err := retentionOf(c)
			if err != nil {
				return err
			}
			segSize, err := parseByteSize(c.String("wal-segment-size"))
			if err != nil || segSize < 4<<10 {
				return usagef("proxy: --wal-segment-size %q: want a size of at least 4KiB", c.String("wal-segment-size"))
			}
			return server.Run(ctx, c.App.Writer, c.App.ErrWriter, server.Config{
				Retention: ret, SegmentSize: segSize,
				Dir: c.String("dir"), Listen: c.String("listen"), Sync: syncPolicy,
				Proxy: proxy.Options{Upstreams: ups, Mode: mode, QueueLen: c.Int("queue"),
					MaxRequestBody: c.Int64("max-request-bytes"), RedactPatterns: c.StringSlice("redact"), Breaker: &bopts,
					AllowOrigins:  c.StringSlice("allow-origin"),
					HeaderTimeout: flagTimeout(c, "upstream-header-timeout"), IdleTimeout: flagTimeout(c, "stream-idle-timeout"),
					BodyTimeout: flagTimeout(c, "client-body-timeout")},
				Shutdown: c.Duration("shutdown-timeout"), API: c.String("api"), APIToken: c.String("api-token"),
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
