package cli

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/llm"
	ucli "github.com/urfave/cli/v2"
)

func usageCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "usage",
		Usage:     "tokens and cost of the model calls recorded and imported, by day, week, month, session or 5-hour block",
		ArgsUsage: "[daily|weekly|monthly|session|blocks]",
		Description: "Adds up the usage the engine derived from every session (proxied or imported); no log is\n" +
			"read again. Input, output, cache writes and cache reads are kept apart and each token is priced\n" +
			"once, at its own rate, from the dated price table built in (or --prices FILE, same format: see\n" +
			"docs/usage.md). A model the table does not know is listed as unpriced: its tokens count, its cost\n" +
			"is left out and marked, never shown as $0. blocks are ccusage's 5-hour billing blocks. Weeks\n" +
			"start on Monday. Works while the proxy runs (it is asked over loopback).",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "agent", Usage: "only sessions of this `AGENT` (claude-code, codex, gemini-cli, …)"},
			&ucli.StringFlag{Name: "model", Usage: "only calls whose model starts with `MODEL` (claude-opus, gpt-5)"},
			&ucli.StringFlag{Name: "since", Usage: "only calls since `WHEN`: a duration ago (24h, 90m) or a date in --tz (2026-11-01, RFC 3339)"},
			&ucli.StringFlag{Name: "tz", Usage: "the IANA time `ZONE` of days, weeks and months (default: $TZ, else the local zone)"},
			&ucli.StringFlag{Name: "prices", Usage: "price table `FILE` (JSON, the format of the built-in table) instead of the built-in one"},
			&ucli.BoolFlag{Name: "json", Usage: "print the report as JSON"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 1 {
				return usagef("usage: at most one period (%s)", strings.Join(api.Periods, ", "))
			}
			req := api.UsageRequest{Period: api.PeriodDaily, Agent: c.String("agent"), Model: c.String("model"), TZ: c.String("tz")}
			if c.NArg() == 1 {
				req.Period = c.Args().First()
				if !slices.Contains(api.Periods, req.Period) {
					return usagef("usage: no period %q (the periods are %s)", req.Period, strings.Join(api.Periods, ", "))
				}
			}
			if tz := os.Getenv("TZ"); req.TZ == "" && tz != "" {
				if _, err := time.LoadLocation(tz); err == nil {
					req.TZ = tz // the proxy answering may run in another zone
				}
			}
			loc := time.Local
			if req.TZ != "" && req.TZ != "Local" {
				l, err := time.LoadLocation(req.TZ)
				if err != nil {
					return usagef("--tz %q: %v (give an IANA name such as Europe/Paris, or UTC)", req.TZ, err)
				}
				loc = l
			}
			if s := c.String("since"); s != "" {
				t, err := sinceIn(s, time.Now(), loc)
				if err != nil {
					return usagef("--since %q: %v", s, err)
				}
				req.Since = t.UnixNano()
			}
			if f := c.String("prices"); f != "" {
				b, err := os.ReadFile(f)
				if err != nil {
					return fmt.Errorf("usage: --prices: %w", err)
				}
				if req.Prices, err = llm.ParsePrices(f, b); err != nil {
					return err
				}
			}
			s, closeS, err := openReader(c)
			if err != nil {
				return err
			}
			defer closeS()
			rep, err := s.Usage(req)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return writeJSON(c, rep)
			}
			printUsage(c.App.Writer, rep)
			return closeS()
		},
	}
}

// sinceIn is parseSince with dates in loc.
func sinceIn(s string, now time.Time, loc *time.Location) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("a negative duration")
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("want a duration (24h) or a date (2026-11-01)")
}

// printUsage writes rep as a table, one line per row and its models
// indented under it: names left-aligned, figures right-aligned.
func printUsage(out io.Writer, rep *api.UsageReport) {
	fmt.Fprintf(out, "usage %s, %s; prices of %s (%s)\n\n", rep.Period, rep.TZ, rep.Prices.Date, rep.Prices.File)
	if len(rep.Rows) == 0 {
		fmt.Fprintln(out, "no model calls with usage recorded (bbengine import, or point an agent at bbengine proxy)")
		return
	}
	head := "PERIOD"
	switch rep.Period {
	case api.PeriodSession:
		head = "SESSION"
	case api.PeriodBlocks:
		head = "BLOCK (UTC)"
	}
	table := [][]string{{head, "CALLS", "INPUT", "OUTPUT", "CACHE WRITE", "CACHE READ", "TOTAL", "COST"}}
	line := func(name string, calls int, t api.UsageTokens, cost string) {
		table = append(table, []string{name, fmt.Sprint(calls), fmt.Sprint(t.Input), fmt.Sprint(t.Output),
			fmt.Sprint(t.CacheCreation), fmt.Sprint(t.CacheRead), fmt.Sprint(t.Total), cost})
	}
	row := func(name string, r *api.UsageRow) {
		line(name, r.Calls, r.UsageTokens, api.CostText(r.CostUSD, len(r.Unpriced) > 0))
		for _, m := range r.Models {
			cost := "unpriced"
			if m.CostUSD != nil {
				cost = api.CostText(*m.CostUSD, false)
			}
			line("  "+m.Model, m.Calls, m.UsageTokens, cost)
		}
	}
	for i := range rep.Rows {
		r := &rep.Rows[i]
		name := r.Key
		switch {
		case rep.Period == api.PeriodSession && r.Agent != "":
			name += " (" + r.Agent + ")"
		case r.Active:
			name += " (active)"
		}
		row(name, r)
	}
	row("total", &rep.Total)
	width := make([]int, len(table[0]))
	for _, cells := range table {
		for i, c := range cells {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for _, cells := range table {
		var b strings.Builder
		for i, c := range cells {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i == 0 {
				b.WriteString(c + pad)
			} else {
				b.WriteString("  " + pad + c)
			}
		}
		fmt.Fprintln(out, b.String())
	}
	if u := rep.Total.Unpriced; len(u) > 0 {
		fmt.Fprintf(out, "\n+? : the cost leaves out models the price table does not know: %s (add them with --prices FILE)\n", strings.Join(u, ", "))
	}
}
