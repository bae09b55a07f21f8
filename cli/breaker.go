package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/proxy/breaker"
	ucli "github.com/urfave/cli/v2"
)

func breakerCommand() *ucli.Command {
	jsonFlag := &ucli.BoolFlag{Name: "json", Usage: "print JSON"}
	return &ucli.Command{
		Name:  "breaker",
		Usage: "the circuit breaker that stops agent loops making no progress: status, reset, trip",
		Description: "The proxy's circuit breaker watches each session's model calls. It opens after\n" +
			"max_loops_no_progress calls without progress (default 10), stagnation_threshold\n" +
			"consecutive stagnant calls (same tool call, same error, same answer; default 3), or\n" +
			"max_loops_never_progress calls of an agent that never changes anything (default 20),\n" +
			"or at a cap (calls, tokens, cost, wall time; none by default). An open session's\n" +
			"requests get the provider's 429 until the cooldown (default 300 s) lets one probe\n" +
			"through: progress closes it, none opens it again. Thresholds: a circuit_breaker:\n" +
			"section in the --config file, overridden per project by a bbengine.yaml in the\n" +
			"project's root (found from the agent's working directory, or proxy --project).\n" +
			"With a proxy running, these commands ask it; otherwise they read (and write) the\n" +
			"records the breaker keeps in the WAL, which the next proxy start restores.",
		Subcommands: []*ucli.Command{
			{
				Name:      "status",
				Usage:     "a session's breaker: state, why it tripped, counters, thresholds, transitions (every session without SESSION)",
				ArgsUsage: "[SESSION]",
				Flags:     []ucli.Flag{jsonFlag},
				Action:    breakerStatus,
			},
			{
				Name:      "reset",
				Usage:     "close a session's breaker now and clear its loop counters (a manual override)",
				ArgsUsage: "SESSION",
				Flags:     []ucli.Flag{jsonFlag},
				Action: func(c *ucli.Context) error {
					return breakerChange(c, "reset", "")
				},
			},
			{
				Name:      "trip",
				Usage:     "open a session's breaker until a reset (an emergency stop)",
				ArgsUsage: "SESSION",
				Flags: []ucli.Flag{
					&ucli.StringFlag{Name: "reason", Usage: "why (shown to the agent in the error and in status); required"},
					jsonFlag,
				},
				Action: func(c *ucli.Context) error {
					return breakerChange(c, "trip", c.String("reason"))
				},
			},
		},
	}
}

// openBreakers returns the running proxy's breaker, or the one restored
// here from the records kept in the data directory.
func openBreakers(c *ucli.Context, write bool) (api.Breakers, func() error, error) {
	dir := c.String("dir")
	if r := api.Dial(dir); r != nil {
		return r, func() error { return nil }, nil
	}
	if _, err := os.Stat(filepath.Join(dir, "wal")); errors.Is(err, os.ErrNotExist) && !write {
		return nil, nil, fmt.Errorf("no data directory at %s (bbengine proxy creates it; --dir names another)", dir)
	}
	opts, err := breakerOptions(c.String("config"), "", true)
	if err != nil {
		return nil, nil, err
	}
	return api.OpenLocalBreakers(c.Context, dir, opts, write)
}

func breakerStatus(c *ucli.Context) error {
	if c.NArg() > 1 {
		return usagef("breaker status: takes at most one SESSION (got %d arguments)", c.NArg())
	}
	b, closeB, err := openBreakers(c, false)
	if err != nil {
		return err
	}
	defer closeB()
	if c.NArg() == 0 {
		all, err := b.BreakerList()
		if err != nil {
			return err
		}
		if c.Bool("json") {
			if all == nil {
				all = []breaker.Status{}
			}
			return writeJSON(c, all)
		}
		return printBreakerList(c.App.Writer, all)
	}
	_, st, err := api.ResolveBreaker(b, c.Args().First())
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return writeJSON(c, st)
	}
	printBreakerStatus(c.App.Writer, st, time.Now())
	return nil
}

func breakerChange(c *ucli.Context, op, reason string) error {
	if c.NArg() != 1 {
		return usagef("breaker %s: need exactly one SESSION", op)
	}
	if op == "trip" && strings.TrimSpace(reason) == "" {
		return usagef("breaker trip: --reason must say why")
	}
	id := c.Args().First()
	if !exchange.ValidID(id) {
		return usagef("breaker %s: %q is not a session id (1 to %d bytes of UTF-8 without control characters)", op, id, exchange.MaxNoteID)
	}
	b, closeB, err := openBreakers(c, true)
	if err != nil {
		return err
	}
	defer closeB()
	id, _, err = api.ResolveBreaker(b, id)
	// A trip may stop a session the breaker has not seen yet; a reset
	// needs one it knows.
	if err != nil && (op == "reset" || !errors.Is(err, engine.ErrNotFound)) {
		return err
	}
	var st breaker.Status
	if op == "reset" {
		st, err = b.BreakerReset(api.BreakerResetRequest{Session: id, By: whoami()})
	} else {
		st, err = b.BreakerTrip(api.BreakerTripRequest{Session: id, Reason: reason})
	}
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return writeJSON(c, st)
	}
	if op == "reset" {
		fmt.Fprintf(c.App.Writer, "session %s: breaker closed (reset); its next request goes through\n", st.Session)
	} else {
		fmt.Fprintf(c.App.Writer, "session %s: breaker open until `bbengine breaker reset %s`; its requests get a 429 saying: %s\n", st.Session, st.Session, st.Detail)
	}
	if !st.Live {
		fmt.Fprintf(c.App.Writer, "(no proxy runs: recorded in the WAL; the next proxy start takes it)\n")
	}
	return nil
}

// whoami names the person behind a reset, for the record.
func whoami() string {
	name := "a user"
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	return name + " (bbengine breaker reset)"
}

// breakerOptions reads the breaker's global thresholds from the
// circuit_breaker section of the --config file (defaults without one),
// with the project directory of every session (proxy --project) and
// whether the breaker is on.
func breakerOptions(configFile, project string, enabled bool) (breaker.Options, error) {
	o := breaker.Options{Config: breaker.Defaults()}
	if configFile != "" {
		f, err := os.Open(configFile)
		if err != nil {
			return o, fmt.Errorf("config: %w", err)
		}
		cfg, found, err := breaker.Overlay(o.Config, configFile, f, false)
		f.Close()
		if err != nil {
			return o, fmt.Errorf("config %w", err)
		}
		if found {
			o.Config, o.ConfigFrom = cfg, configFile
		}
	}
	if project != "" {
		abs, err := filepath.Abs(project)
		if err != nil {
			return o, usagef("--project %q: %v", project, err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return o, usagef("--project %q: not a directory", project)
		}
		o.Project = abs
	}
	if !enabled {
		o.Config.Enabled = false
	}
	return o, nil
}

// printBreakerList prints one line per session.
func printBreakerList(w io.Writer, all []breaker.Status) error {
	if len(all) == 0 {
		fmt.Fprintln(w, "the circuit breaker has no session on record")
		return nil
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSTATE\tREASON\tSINCE\tCALLS\tSINCE PROGRESS\tSTAGNANT\tTOKENS\tCOST")
	for _, st := range all {
		since := "-"
		if !st.Since.IsZero() {
			since = st.Since.Local().Format("2006-01-02 15:04:05")
		}
		c := st.Counters
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t$%.2f\n", st.Session, st.State, orDash(st.Reason), since,
			c.Calls, c.SinceProgress, c.Stagnant, tokens(c.Tokens), c.CostUSD)
	}
	return tw.Flush()
}

// printBreakerStatus prints one session's status for a person.
func printBreakerStatus(w io.Writer, st breaker.Status, now time.Time) {
	clock := func(t time.Time) string { return t.Local().Format("2006-01-02 15:04:05") }
	fmt.Fprintf(w, "session %s: %s", st.Session, strings.ToUpper(st.State))
	if !st.Since.IsZero() {
		fmt.Fprintf(w, " since %s", clock(st.Since))
	}
	if st.Reason != "" {
		fmt.Fprintf(w, " (%s)", st.Reason)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	row := func(k, v string) { fmt.Fprintf(tw, "  %s\t%s\n", k, v) }
	switch st.State {
	case exchange.BreakerOpen:
		row("why", st.Detail)
		switch {
		case st.Until.IsZero():
			row("until", fmt.Sprintf("a reset: `bbengine breaker reset %s`", st.Session))
		case st.Until.After(now):
			row("probe", fmt.Sprintf("one request may pass in %v (at %s); `bbengine breaker reset %s` resumes now", st.Until.Sub(now).Round(time.Second), clock(st.Until), st.Session))
		default:
			row("probe", fmt.Sprintf("the cooldown ended at %s: the next request passes as a probe", clock(st.Until)))
		}
	case exchange.BreakerHalfOpen:
		row("probe", "one request passed after the cooldown; the next one says whether it made progress")
	default:
		if st.Detail != "" {
			row("last change", st.Detail)
		}
	}
	c := st.Counters
	row("calls", fmt.Sprintf("%d in the session; %d since the last progress; %d stagnant in a row", c.Calls, c.SinceProgress, c.Stagnant))
	if c.Run != "" {
		row("run", fmt.Sprintf("%s: %d calls, %s tokens, $%.4f", c.Run, c.RunCalls, tokens(c.RunTokens), c.RunCostUSD))
	}
	usage := fmt.Sprintf("%s tokens, $%.4f", tokens(c.Tokens), c.CostUSD)
	if c.Unpriced != "" {
		usage += fmt.Sprintf(" (no price for %s: its calls count $0)", c.Unpriced)
	}
	row("usage", usage)
	if c.LastProgress > 0 {
		row("last progress", fmt.Sprintf("%s: %s", clock(time.Unix(0, c.LastProgress)), c.Signal))
	} else if c.Calls > 0 {
		row("last progress", "none seen")
	}
	if c.Stagnation != "" {
		row("last stagnation", c.Stagnation)
	}
	if cfg := st.Config; cfg != nil {
		th := "off (every call passes)"
		if cfg.Enabled {
			th = fmt.Sprintf("no progress %s, never progress %s, stagnation %s, cooldown %s", rule(cfg.NoProgress), rule(cfg.NeverProgress), rule(cfg.Stagnation), (time.Duration(cfg.Cooldown) * time.Second).String())
			for _, cp := range []struct {
				name string
				c    breaker.Caps
			}{{"session caps", cfg.Caps}, {"run caps", cfg.Run}} {
				if s := capsText(cp.c); s != "" {
					th += "; " + cp.name + " " + s
				}
			}
		}
		row("thresholds", th+" (from "+st.ConfigFrom+")")
	}
	if st.ConfigError != "" {
		row("config error", st.ConfigError)
	}
	if !st.Live {
		row("source", "the records in the WAL (no proxy runs)")
	}
	tw.Flush()
	if len(st.Transitions) > 0 {
		fmt.Fprintln(w, "  transitions:")
		for _, t := range st.Transitions {
			fmt.Fprintf(w, "    %s  %-9s %s -> %s  %s: %s (%s)\n", clock(time.Unix(0, t.Time)), t.Op, orDash(t.From), t.State, t.Reason, t.Detail, t.Source)
		}
	}
}

func rule(n int64) string {
	if n == 0 {
		return "off"
	}
	return fmt.Sprint(n)
}

func capsText(c breaker.Caps) string {
	var parts []string
	if c.MaxCalls > 0 {
		parts = append(parts, fmt.Sprintf("%d calls", c.MaxCalls))
	}
	if c.MaxTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", c.MaxTokens))
	}
	if c.MaxCostUSD > 0 {
		parts = append(parts, fmt.Sprintf("$%.2f", c.MaxCostUSD))
	}
	if c.MaxWallSeconds > 0 {
		parts = append(parts, (time.Duration(c.MaxWallSeconds) * time.Second).String())
	}
	return strings.Join(parts, ", ")
}
