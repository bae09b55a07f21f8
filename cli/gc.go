package cli

import (
	"fmt"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/internal/bytesize"
	ucli "github.com/urfave/cli/v2"
)

func gcCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "gc",
		Usage:     "remove what nothing in the data directory needs any more",
		ArgsUsage: " ",
		Description: "Applies the retention you set (retention: in --config, BBENGINE_RETENTION_*, --retention-*):\n" +
			"the WAL segments it selects go after a snapshot of what was derived from them, and the\n" +
			"memory of sessions older than memory_days is forgotten. --blobs removes the blobs no event\n" +
			"names (and temporary files interrupted writes left), once they are an hour old. --dry-run\n" +
			"shows what would go and what it frees. Works while the proxy runs.",
		Flags: append([]ucli.Flag{
			&ucli.BoolFlag{Name: "blobs", Usage: "remove the blobs no event names"},
			&ucli.BoolFlag{Name: "dry-run", Usage: "show what would go and remove nothing"},
			&ucli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
		}, retentionFlags()...),
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("gc: takes no arguments")
			}
			ret, err := retentionOf(c)
			if err != nil {
				return err
			}
			req := api.GCRequest{Retention: ret, Blobs: c.Bool("blobs"), DryRun: c.Bool("dry-run")}
			if !req.Blobs && ret.Off() {
				return usagef("gc: say what to remove: a retention (retention: in --config, BBENGINE_RETENTION_*, --retention-*), or --blobs")
			}
			st, closeS, err := api.OpenStorage(c.Context, c.String("dir"), true)
			if err != nil {
				return err
			}
			defer closeS()
			res, err := st.GC(req)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return writeJSON(c, res)
			}
			w := c.App.Writer
			verb := "removed"
			if res.DryRun {
				verb = "would remove"
			}
			if r := res.Retained; r != nil {
				printRetained(w, r, verb)
			}
			if b := res.Blobs; b != nil {
				for _, r := range b.Removed {
					fmt.Fprintf(w, "%s %s (%s)\n", verb, r.Path, bytesize.Format(r.Bytes))
				}
				for _, bad := range b.Bad {
					fmt.Fprintf(c.App.ErrWriter, "bbengine: gc: %s: %s; kept (move it out of the blob store)\n", bad.Path, bad.Reason)
				}
				fmt.Fprintf(w, "blobs: %s %d files, %s; kept %d (%d named by events", verb, len(b.Removed), bytesize.Format(b.Bytes), b.Kept, b.Referenced)
				if b.Young > 0 {
					fmt.Fprintf(w, ", %d unnamed but younger than an hour", b.Young)
				}
				fmt.Fprintln(w, ")")
			}
			return closeS()
		},
	}
}
