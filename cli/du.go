package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/internal/bytesize"
	ucli "github.com/urfave/cli/v2"
)

func duCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "du",
		Usage:     "show how much disk the data directory takes, per part, agent and project",
		ArgsUsage: " ",
		Description: "Parts are the WAL, the derived state in Pebble (split by what it holds), the search\n" +
			"index, the blobs and any other entry of the directory. Agents and projects are the bytes of\n" +
			"WAL frames of their sessions. Works while the proxy runs (it is asked over loopback).",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("du: takes no arguments")
			}
			st, closeS, err := api.OpenStorage(c.Context, c.String("dir"), false)
			if err != nil {
				return err
			}
			defer closeS()
			du, err := st.DU(api.DURequest{})
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return writeJSON(c, du)
			}
			printDU(c.App.Writer, du)
			return closeS()
		},
	}
}

// printDU writes du as tables.
func printDU(out io.Writer, du *api.DU) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(out, "%s: %s\n\n", du.Dir, bytesize.Format(du.Total))
	fmt.Fprintf(w, "part\t%10s\t%6s\t%8s\n", "size", "files", "keys")
	for _, p := range du.Parts {
		name := p.Name
		if p.Other {
			name = "other: " + name
		}
		fmt.Fprintf(w, "%s\t%10s\t%6d\t%8s\n", name, bytesize.Format(p.Bytes), p.Files, "")
		if p.Name == "db" {
			for _, g := range du.Store {
				fmt.Fprintf(w, "  %s (live)\t%10s\t%6s\t%8d\n", g.Name, bytesize.Format(g.Bytes), "", g.Keys)
			}
		}
	}
	w.Flush()
	fmt.Fprintf(out, "\nderived (db, index, blobs, snapshot) %s = %.2f × the WAL (%s)\n", bytesize.Format(du.Derived), du.Ratio, bytesize.Format(du.WAL))
	fmt.Fprintf(out, "db's parts (live %s) are %s; db's size is its files'\n", bytesize.Format(du.StoreLive), du.StoreMethod)
	share := func(title string, ss []api.DUShare) {
		fmt.Fprintln(out)
		w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintf(w, "%s\t%8s\t%10s\n", title, "sessions", "WAL frames")
		for _, s := range ss {
			fmt.Fprintf(w, "%s\t%8d\t%10s\n", s.Name, s.Sessions, bytesize.Format(s.Bytes))
		}
		fmt.Fprintf(w, "(no session)\t%8s\t%10s\n", "", bytesize.Format(du.Unattributed))
		w.Flush()
	}
	share("agent", du.Agents)
	share("project", du.Projects)
	fmt.Fprintf(out, "\n%d WAL frames, %s\n", du.WALFrameN, bytesize.Format(du.WALFrames))
}
