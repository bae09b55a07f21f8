package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/bbengine/bbengine/codec/bbox"
	ucli "github.com/urfave/cli/v2"
)

// diagnose validates one file. A Markdown file (.md) has each fenced
// bbox example validated, with lines numbered as in the Markdown file.
func diagnose(c *ucli.Context, path string) ([]bbox.Diagnostic, error) {
	if !strings.HasSuffix(path, ".md") {
		doc, err := readDoc(c, path)
		if err != nil {
			return nil, err
		}
		return bbox.Validate(doc, path), nil
	}
	md, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	blocks := bbox.MarkdownBlocks(string(md))
	if len(blocks) == 0 {
		return nil, fmt.Errorf("%s: no fenced bbox examples found (blocks marked bbox, unmarked, or yaml holding format: bbox/)", path)
	}
	var all []bbox.Diagnostic
	for _, b := range blocks {
		doc, err := bbox.Parse(strings.NewReader(b.Text))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, b.Line, err)
		}
		for _, d := range bbox.Validate(doc, path) {
			d.Line += b.Line
			all = append(all, d)
		}
	}
	return all, nil
}

func validateCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "validate",
		Usage:     "check bbox/1 files and report errors and warnings as file:line:col",
		ArgsUsage: "FILE... (- for stdin; .jsonl files are read as the JSONL form; .md files have every fenced bbox example checked)",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "json", Usage: "print one JSON object per file"},
			&ucli.BoolFlag{Name: "strict", Usage: "treat warnings as errors"},
			&ucli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print errors only"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() == 0 {
				return usagef("validate: need at least one FILE")
			}
			w := c.App.Writer
			failed := 0
			for _, path := range c.Args().Slice() {
				diags, err := diagnose(c, path)
				if err != nil {
					return err
				}
				errs, warns := 0, 0
				for _, d := range diags {
					if d.Severity == bbox.Error {
						errs++
					} else {
						warns++
					}
				}
				bad := errs > 0 || c.Bool("strict") && warns > 0
				if bad {
					failed++
				}
				if c.Bool("json") {
					if diags == nil {
						diags = []bbox.Diagnostic{}
					}
					out := struct {
						File        string            `json:"file"`
						Valid       bool              `json:"valid"`
						Errors      int               `json:"errors"`
						Warnings    int               `json:"warnings"`
						Diagnostics []bbox.Diagnostic `json:"diagnostics"`
					}{path, !bad, errs, warns, diags}
					if err := json.NewEncoder(w).Encode(out); err != nil {
						return err
					}
					continue
				}
				for _, d := range diags {
					if c.Bool("quiet") && d.Severity != bbox.Error {
						continue
					}
					fmt.Fprintln(w, d)
				}
				if !c.Bool("quiet") {
					status := "ok"
					if bad {
						status = "invalid"
					}
					fmt.Fprintf(w, "%s: %s (%d errors, %d warnings)\n", path, status, errs, warns)
				}
			}
			if failed > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("validate: %d of %d files invalid", failed, c.NArg())}
			}
			return nil
		},
	}
}
