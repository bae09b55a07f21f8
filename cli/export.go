package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/census"
	"github.com/bbengine/bbengine/engine"
	ucli "github.com/urfave/cli/v2"
)

// exportFormats are the --to values.
var exportFormats = api.ExportFormats

func exportFlags() []ucli.Flag {
	return []ucli.Flag{
		&ucli.StringFlag{Name: "to", Usage: "output format: " + strings.Join(exportFormats, ", "), Required: true},
		&ucli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write to `FILE` (default: standard output)"},
		&ucli.BoolFlag{Name: "check", Usage: "read the output back and compare its counts with the source's; exit 1 on a loss"},
		&ucli.IntFlag{Name: "blob-threshold", Value: 1024, Usage: "bbox: `BYTES` above which outputs go to the blob store (-1: never)"},
		&ucli.StringFlag{Name: "repo-sha", Usage: "bbox: repository commit for the header (default: unknown)"},
	}
}

func exportCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "export",
		Usage:     "write a session as ATIF, bbox/1, JSONL, Autopilot trajectory JSON or rlog/1",
		ArgsUsage: "SESSION",
		Description: "Formats: atif (Harbor ATIF-v1.7 JSON), bbox (bbox/1 text), bbox-compact (its compact\n" +
			"form), jsonl (the bbox spec's JSONL alternative), trajectory (Autopilot trajectory\n" +
			"JSON), rlog (rlog/1 text), json (the session and its canonical events). bbox outputs\n" +
			"larger than --blob-threshold go to <dir>/blobs as @blob sha256=…. --check reads the\n" +
			"output back and prints the session's counts side by side with the output's.",
		Flags: exportFlags(),
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("export: need exactly one SESSION")
			}
			to := c.String("to")
			if !slices.Contains(exportFormats, to) {
				return usagef("export --to %q: want one of %s", to, strings.Join(exportFormats, ", "))
			}
			blobs, err := dirBlobs(c)
			if err != nil {
				return err
			}
			r, closeR, err := openReader(c)
			if err != nil {
				return err
			}
			defer closeR()
			ex, err := api.Export(r, exportRequest(c, c.Args().First(), to, blobs))
			if err != nil {
				return err
			}
			if err := writeOutput(c, ex.Data); err != nil {
				return err
			}
			if c.Bool("check") {
				return checkOutput(c, to, "session", engine.Census(&ex.Session, ex.Events), ex.Data)
			}
			return nil
		},
	}
}

func convertCommand() *ucli.Command {
	flags := append([]ucli.Flag{
		&ucli.StringFlag{Name: "from", Usage: "input format: " + orList(convertSources()) + " (bbox/1 text or its JSONL)", Required: true},
	}, exportFlags()...)
	return &ucli.Command{
		Name:      "convert",
		Usage:     "convert an agent log or trajectory file to another format, with no data directory",
		ArgsUsage: "IN",
		Description: "IN is a file (a Claude Code session also brings its subagents/ and tool-results/\n" +
			"folders and the flat agent-*.jsonl files of the same session beside it). The input is\n" +
			"derived exactly as bbengine import would, then written like bbengine export. bbox\n" +
			"outputs larger than --blob-threshold go to a .bbox-blobs/ folder beside the output.\n" +
			"--check prints the source's counts (by the source's own rules) side by side with the\n" +
			"output's, read back, and exits 1 if anything was lost.",
		Flags: flags,
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("convert: need exactly one IN file")
			}
			from, to := c.String("from"), c.String("to")
			if !slices.Contains(convertSources(), from) {
				return usagef("convert --from %q: want %s", from, orList(convertSources()))
			}
			if !slices.Contains(exportFormats, to) {
				return usagef("convert --to %q: want one of %s", to, strings.Join(exportFormats, ", "))
			}
			in := c.Args().First()
			cv, err := api.ReadSession(from, in)
			if cv != nil {
				for _, p := range cv.Problems {
					fmt.Fprintf(c.App.ErrWriter, "convert: %s\n", p)
				}
			}
			if err != nil {
				return err
			}
			blobDir := ".bbox-blobs"
			if o := c.String("output"); o != "" {
				blobDir = filepath.Join(filepath.Dir(o), ".bbox-blobs")
			}
			blobs := engine.NewBlobsAt(blobDir)
			out, err := api.Render(&cv.Session, cv.Events, nil, exportRequest(c, "", to, blobs))
			if err != nil {
				return err
			}
			if err := writeOutput(c, out); err != nil {
				return err
			}
			if c.Bool("check") {
				return checkOutput(c, to, from, engine.SourceCensus(from, cv.Files), out)
			}
			return nil
		},
	}
}

// convertSources are what convert reads.
func convertSources() []string { return api.ConvertSources() }

// orList joins names as "a, b, c or d".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// exportRequest is the request of the export flags.
func exportRequest(c *ucli.Context, session, to string, blobs *engine.Blobs) api.ExportRequest {
	return api.ExportRequest{Session: session, Format: to, BlobThreshold: c.Int("blob-threshold"), RepoSHA: c.String("repo-sha"), Blobs: blobs}
}

func writeOutput(c *ucli.Context, out []byte) error {
	o := c.String("output")
	if o == "" || o == "-" {
		_, err := c.App.Writer.Write(out)
		return err
	}
	// An export holds the session's prompts and outputs: a new file is
	// readable by its owner only.
	if err := os.WriteFile(o, out, 0o600); err != nil {
		return err
	}
	return nil
}

// checkOutput reads out back with its format's importer and compares
// its counts with src. Formats no importer reads (rlog, json) are
// compared on what the session itself derived.
func checkOutput(c *ucli.Context, to, srcTitle string, src census.Counts, out []byte) error {
	w := c.App.ErrWriter
	if c.String("output") != "" {
		w = c.App.Writer
	}
	rows, err := api.CheckExport(to, src, out)
	if errors.Is(err, api.ErrNoReadBack) {
		return &exitError{code: 1, msg: fmt.Sprintf("--check: %s output cannot be read back (it is a report, not a lossless format); check bbox, jsonl, atif or trajectory", to)}
	}
	if err != nil {
		return fmt.Errorf("--check: read the %s output back: %w", to, err)
	}
	if err := census.WriteTable(w, srcTitle, to, rows); err != nil {
		return err
	}
	if !census.Lossless(rows) {
		return &exitError{code: 1, msg: fmt.Sprintf("--check: the %s output lost or changed data (rows marked above)", to)}
	}
	fmt.Fprintf(w, "--check: nothing lost\n")
	return nil
}
