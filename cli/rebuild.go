package cli

import (
	"fmt"
	"time"

	"github.com/bbengine/bbengine/engine"
	ucli "github.com/urfave/cli/v2"
)

func rebuildCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "rebuild",
		Usage:     "drop everything derived and derive it again from the WAL",
		ArgsUsage: " ",
		Description: "Sessions, canonical events and the exchange index are rebuilt from <dir>/wal.\n" +
			"The result is byte-identical to what incremental canonicalization wrote. Stop the\n" +
			"proxy first: rebuild needs the data directory to itself.",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("rebuild: takes no arguments")
			}
			e, err := engine.Open(c.String("dir"), nil)
			if err != nil {
				return err
			}
			defer e.Close()
			start := time.Now()
			p, err := e.Rebuild(c.Context)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return writeJSON(c, p)
			}
			fmt.Fprintf(c.App.Writer, "rebuilt from %d frames (%s) in %s: %d exchanges, %d events; applied offset %d\n",
				p.Frames, bytesHuman(p.Bytes), time.Since(start).Round(time.Millisecond), p.Exchanges, p.Events, p.Applied)
			return e.Close()
		},
	}
}

func bytesHuman(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
