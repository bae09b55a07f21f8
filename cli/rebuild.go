package cli

import (
	"fmt"
	"time"

	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/index"
	ucli "github.com/urfave/cli/v2"
)

func rebuildCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "rebuild",
		Usage:     "drop everything derived and derive it again from the WAL",
		ArgsUsage: " ",
		Description: "Sessions, canonical events, the exchange index, memory artifacts and the search index are\n" +
			"rebuilt from <dir>/wal. The result is byte-identical to what incremental derivation wrote.\n" +
			"--derived rebuilds only the memory artifacts (from the canonical events, with this\n" +
			"version's extractors); --index only the search index (from the artifacts). Stop the\n" +
			"proxy first: rebuild needs the data directory to itself.",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "derived", Usage: "rebuild only the memory artifacts"},
			&ucli.BoolFlag{Name: "index", Usage: "rebuild only the search index"},
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
			var out struct {
				Canonical *engine.Progress       `json:"canonical,omitempty"`
				Memory    *engine.MemoryProgress `json:"memory,omitempty"`
				Index     *index.SyncStats       `json:"index,omitempty"`
			}
			w := c.App.Writer
			switch {
			case c.Bool("index"):
				if _, err := e.CatchUp(c.Context); err != nil {
					return err
				}
			case c.Bool("derived"):
				if _, err := e.CatchUp(c.Context); err != nil {
					return err
				}
				mp, err := e.RebuildMemory(c.Context)
				if err != nil {
					return err
				}
				out.Memory = &mp
			default:
				p, err := e.Rebuild(c.Context)
				if err != nil {
					return err
				}
				out.Canonical = &p
			}
			ix, err := index.Open(indexDir(c.String("dir")), nil)
			if err != nil {
				return err
			}
			defer ix.Close()
			if err := ix.Reset(); err != nil {
				return err
			}
			st, err := ix.Sync(e)
			if err != nil {
				return err
			}
			out.Index = &st
			if c.Bool("json") {
				return writeJSON(c, out)
			}
			if p := out.Canonical; p != nil {
				fmt.Fprintf(w, "rebuilt from %d frames (%s): %d exchanges, %d events; applied offset %d\n",
					p.Frames, bytesHuman(p.Bytes), p.Exchanges, p.Events, p.Applied)
			}
			if out.Memory != nil {
				fmt.Fprintf(w, "derived memory again: %d sessions, %d artifacts\n", out.Memory.Sessions, out.Memory.Artifacts)
			}
			fmt.Fprintf(w, "indexed %d artifacts of %d sessions in %s\n", st.Docs, st.Applied, time.Since(start).Round(time.Millisecond))
			if err := ix.Close(); err != nil {
				return err
			}
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
