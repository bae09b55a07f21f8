package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/index"
	"github.com/bbengine/bbengine/internal/bytesize"
	"github.com/bbengine/bbengine/wal"
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
			dir := c.String("dir")
			w := c.App.Writer
			if !c.Bool("index") && !c.Bool("derived") {
				// Rebuilding from a log with a segment missing would
				// quietly derive less: refuse before dropping anything.
				if err := checkGaps(walDir(c)); err != nil {
					return err
				}
			}
			start := time.Now()
			var out struct {
				Canonical *engine.Progress       `json:"canonical,omitempty"`
				Memory    *engine.MemoryProgress `json:"memory,omitempty"`
				Index     *index.SyncStats       `json:"index,omitempty"`
				SetAside  []string               `json:"set_aside,omitempty"`
			}
			var e *engine.Engine
			for attempt := 0; ; attempt++ {
				var err error
				e, err = rebuildStore(c, dir, &out.Canonical, &out.Memory)
				var de *engine.DamagedError
				if attempt > 0 || !errors.As(err, &de) {
					if err != nil {
						return err
					}
					break
				}
				// Everything in the store is derived from the WAL: set
				// the damaged one aside and derive it all again.
				aside, aerr := setAside(de.Path)
				if aerr != nil {
					return fmt.Errorf("%w (and setting it aside failed: %v)", err, aerr)
				}
				out.SetAside = append(out.SetAside, aside)
				fmt.Fprintf(c.App.ErrWriter, "bbengine: the derived state in %s could not be read (%s); set it aside as %s and deriving everything again from the WAL\n",
					de.Path, headLine(de.Err), aside)
				out.Canonical, out.Memory = nil, nil
				c.Set("derived", "false")
				c.Set("index", "false")
			}
			defer e.Close()
			ix, err := index.Open(api.IndexDir(dir), &index.Options{Keys: e.Keys()})
			if err != nil {
				// The index is derived from the store: set it aside too.
				aside, aerr := setAside(api.IndexDir(dir))
				if aerr != nil {
					return fmt.Errorf("%w (and setting it aside failed: %v)", err, aerr)
				}
				out.SetAside = append(out.SetAside, aside)
				fmt.Fprintf(c.App.ErrWriter, "bbengine: the search index in %s could not be read (%s); set it aside as %s and indexing again\n",
					api.IndexDir(dir), headLine(err), aside)
				ix, err = index.Open(api.IndexDir(dir), &index.Options{Keys: e.Keys()})
			}
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
					p.Frames, bytesize.Format(p.Bytes), p.Exchanges, p.Events, p.Applied)
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

// rebuildStore opens the engine and derives what the flags ask for. On a
// *engine.DamagedError the engine is closed.
func rebuildStore(c *ucli.Context, dir string, canon **engine.Progress, mem **engine.MemoryProgress) (*engine.Engine, error) {
	e, err := engine.Open(dir, nil)
	if err != nil {
		return nil, err
	}
	switch {
	case c.Bool("index"):
		_, err = e.CatchUp(c.Context)
	case c.Bool("derived"):
		if _, err = e.CatchUp(c.Context); err == nil {
			var mp engine.MemoryProgress
			if mp, err = e.RebuildMemory(c.Context); err == nil {
				*mem = &mp
			}
		}
	default:
		var p engine.Progress
		if p, err = e.Rebuild(c.Context); err == nil {
			*canon = &p
		}
	}
	if err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// checkGaps returns the first gap between the segments of the log in dir
// that is not accepted, as an error saying what to do.
func checkGaps(dir string) error {
	gaps, err := wal.Gaps(dir)
	if err != nil || len(gaps) == 0 {
		return err
	}
	return &exitError{code: 1, msg: fmt.Sprintf("rebuild: refusing to derive from a log with a segment missing: %v (%d gap(s) in all; `bbengine wal verify` lists them)", gaps[0], len(gaps))}
}

// setAside renames path to path.damaged-<UTC time> and returns the new
// name.
func setAside(path string) (string, error) {
	aside := path + ".damaged-" + time.Now().UTC().Format("20060102T150405Z")
	if err := os.Rename(path, aside); err != nil {
		return "", err
	}
	return aside, nil
}

// headLine returns s up to its first newline.
func headLine(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
