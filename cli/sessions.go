package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/bbengine/bbengine/engine"
	ucli "github.com/urfave/cli/v2"
)

func sessionsCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "sessions",
		Usage:     "list recorded sessions: agent, start, duration, requests, tokens, models, tasks",
		ArgsUsage: " ",
		Description: "Works while a proxy records: it asks the running proxy. Otherwise it opens the\n" +
			"data directory and first derives whatever the WAL holds that is not derived yet.",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "since", Usage: "only sessions active since `WHEN`: a duration ago (24h, 90m) or a date (2026-11-01, RFC 3339)"},
			&ucli.StringFlag{Name: "agent", Usage: "only sessions of this `AGENT` (claude-code, codex, gemini-cli, …)"},
			&ucli.BoolFlag{Name: "json", Usage: "print as JSON (one array)"},
			&ucli.BoolFlag{Name: "unmerged", Usage: "list the proxied and the imported side of a merged session apart, as derived"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("sessions: takes no arguments")
			}
			var f engine.SessionFilter
			if s := c.String("since"); s != "" {
				t, err := parseSince(s, time.Now())
				if err != nil {
					return usagef("--since %q: %v", s, err)
				}
				f.Since = t.UnixNano()
			}
			f.Agent = c.String("agent")
			f.Unmerged = c.Bool("unmerged")
			r, closeR, err := openReader(c)
			if err != nil {
				return err
			}
			defer closeR()
			list, err := r.Sessions(f)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				if list == nil {
					list = []engine.Session{}
				}
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				return enc.Encode(list)
			}
			printSessions(c.App.Writer, list)
			return nil
		},
	}
}

// parseSince reads a duration ago or an absolute date.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("a negative duration")
		}
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("want a duration (24h) or a date (2026-11-01)")
}

func printSessions(w io.Writer, list []engine.Session) {
	if len(list) == 0 {
		fmt.Fprintln(w, "no sessions recorded yet (point an agent at bbengine proxy)")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tAGENT\tSTARTED\tDURATION\tREQUESTS\tIN\tOUT\tCACHED\tMODELS\tTASKS")
	for _, s := range list {
		var models []string
		for _, m := range s.Models {
			models = append(models, m.Model)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%d\n", s.ID, orDash(s.Agent),
			started(s.First), sessionDuration(s.First, s.Last),
			s.Requests, tokens(s.Usage.Input), tokens(s.Usage.Output), tokens(s.Usage.CacheRead),
			orDash(strings.Join(models, ",")), len(s.Tasks))
	}
	tw.Flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// started prints a session's start, "-" when no record of it had a time.
func started(first int64) string {
	if first <= 0 {
		return "-"
	}
	return time.Unix(0, first).Local().Format("2006-01-02 15:04:05")
}

// sessionDuration prints how long a session ran, "-" when its times are
// not known.
func sessionDuration(first, last int64) string {
	if first <= 0 || last < first {
		return "-"
	}
	return duration(last - first)
}

func duration(ns int64) string {
	d := time.Duration(ns).Round(time.Second)
	if d < time.Second {
		return "<1s"
	}
	return d.String()
}

// tokens prints a count the way people read them: 950, 12.3k, 4.1M.
func tokens(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprint(n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1e6)
}
