package cli

import (
	"bytes"
	"fmt"
	"os"

	"github.com/bbengine/bbengine/internal/safefile"

	"github.com/bbengine/bbengine/codec/bbox"
	ucli "github.com/urfave/cli/v2"
)

func fmtCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "fmt",
		Usage:     "print a bbox/1 file in canonical form (or --compact, --jsonl)",
		ArgsUsage: "FILE (- for stdin; a .jsonl file is read as the JSONL form)",
		Description: "A file that validate finds errors in is refused: fmt prints the errors as\n" +
			"file:line:col, writes nothing (with -w the file is left as it is) and exits 1.",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "compact", Usage: "compact form: no blank lines, no optional spaces"},
			&ucli.BoolFlag{Name: "jsonl", Usage: "the JSONL alternative, one object per line"},
			&ucli.BoolFlag{Name: "write", Aliases: []string{"w"}, Usage: "rewrite FILE in place instead of printing"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("fmt: need exactly one FILE")
			}
			if c.Bool("compact") && c.Bool("jsonl") {
				return usagef("fmt: --compact and --jsonl exclude each other")
			}
			path := c.Args().First()
			doc, err := readDoc(c, path)
			if err != nil {
				return err
			}
			// Formatting rewrites what it parsed: an error validate
			// finds would be rewritten away or made worse, so refuse.
			name := path
			if path == "-" {
				name = ""
			}
			errs := 0
			for _, d := range bbox.Validate(doc, name) {
				if d.Severity == bbox.Error {
					fmt.Fprintln(c.App.ErrWriter, d)
					errs++
				}
			}
			if errs > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("fmt: %s is not valid bbox (%d errors above); nothing written", path, errs)}
			}
			var buf bytes.Buffer
			switch {
			case c.Bool("jsonl"):
				err = bbox.WriteJSONL(&buf, doc)
			case c.Bool("compact"):
				err = bbox.Write(&buf, doc, bbox.Compact)
			default:
				err = bbox.Write(&buf, doc, bbox.Canonical)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if c.Bool("write") {
				if path == "-" {
					return usagef("fmt: --write needs a file, not stdin")
				}
				return writeFileAtomic(path, buf.Bytes())
			}
			_, err = c.App.Writer.Write(buf.Bytes())
			return err
		},
	}
}

// writeFileAtomic replaces path with data through a temporary file in the
// same directory, keeping the file's mode.
func writeFileAtomic(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	return safefile.WriteFile(path, data, mode)
}
