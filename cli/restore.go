package cli

import (
	"fmt"
	"time"

	"github.com/bbengine/bbengine/api"
	ucli "github.com/urfave/cli/v2"
)

func restoreCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "restore",
		Usage:     "bring a backup back into a new or empty data directory",
		ArgsUsage: "SRC (a directory bbengine backup wrote)",
		Description: "Checks the backup against its manifest (every WAL frame, every file of the\n" +
			"checkpoint, every blob), copies it into a temporary directory beside --dir, derives\n" +
			"what the checkpoint does not cover (everything, for a raw backup), builds the search\n" +
			"index, and only then moves it to --dir. --dir must not exist or be empty; a damaged\n" +
			"backup is reported with the file and offset, and nothing is restored.",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("restore: need exactly one SRC backup directory")
			}
			res, err := api.Restore(c.Context, api.RestoreRequest{Src: c.Args().First(), Dir: c.String("dir")})
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return writeJSON(c, res)
			}
			m := res.Manifest
			from := "derived everything from the WAL (a raw backup)"
			if d := m.Derived; d != nil {
				from = fmt.Sprintf("resumed from the checkpoint at WAL offset %d", d.Applied)
			}
			fmt.Fprintf(c.App.Writer, "restored %s into %s in %s: WAL offsets %d to %d; %s (%d frames, %d events); indexed %d artifacts\n",
				c.Args().First(), res.Dir, res.Took.Round(time.Millisecond), m.WAL.First, m.WAL.End, from, res.Derived.Frames, res.Derived.Events, res.Indexed.Docs)
			return nil
		},
	}
}
