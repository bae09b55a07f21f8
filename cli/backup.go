package cli

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/internal/bytesize"
	ucli "github.com/urfave/cli/v2"
)

func backupCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "backup",
		Usage:     "copy the data directory, consistently, while the proxy records",
		ArgsUsage: "DEST (a new or empty directory)",
		Description: "Copies the WAL (sealed segments whole, the active one up to its last durable frame),\n" +
			"a Pebble checkpoint of the derived state taken at a whole commit, the blobs (hard links\n" +
			"when on the same file system) and a manifest, written last: a backup cut short has no\n" +
			"manifest and restore refuses it. --raw copies the WAL and the blobs alone; restore then\n" +
			"derives everything again. The search index is never copied: restore builds it.\n" +
			"Works while a proxy records: it asks the running proxy, which owns the directory.",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "raw", Usage: "copy the WAL and blobs only, not the derived state"},
			&ucli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("backup: need exactly one DEST directory")
			}
			dest, err := filepath.Abs(c.Args().First())
			if err != nil {
				return usagef("backup: DEST %q: %v", c.Args().First(), err)
			}
			b, closeB, err := api.OpenBackuper(c.Context, c.String("dir"))
			if err != nil {
				return err
			}
			defer closeB()
			res, err := b.Backup(c.Context, api.BackupRequest{Dest: dest, Raw: c.Bool("raw")})
			if err != nil {
				return err
			}
			if err := closeB(); err != nil {
				return err
			}
			if c.Bool("json") {
				return writeJSON(c, res)
			}
			m := res.Manifest
			what := "WAL only (raw)"
			if d := m.Derived; d != nil {
				what = fmt.Sprintf("derived state up to WAL offset %d (%d files)", d.Applied, len(d.Files))
			}
			fmt.Fprintf(c.App.Writer, "backed up to %s in %s: WAL offsets %d to %d (%d segments), %s, %d blobs (%d linked); %s in all\n",
				res.Dest, res.Took.Round(time.Millisecond), m.WAL.First, m.WAL.End, len(m.WAL.Segments), what, m.Blobs.N, m.Blobs.Linked, bytesize.Format(res.Bytes))
			return nil
		},
	}
}
