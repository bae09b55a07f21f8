package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bbengine/bbengine/codec/bbox"
	ucli "github.com/urfave/cli/v2"
)

// readDoc reads a bbox document from path ("-" for stdin). A path ending in
// .jsonl is read as the JSONL alternative.
func readDoc(c *ucli.Context, path string) (*bbox.Document, error) {
	var r io.Reader
	if path == "-" {
		r = c.App.Reader
		if r == nil {
			r = os.Stdin
		}
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	if strings.HasSuffix(path, ".jsonl") {
		return bbox.ReadJSONL(r, path)
	}
	doc, err := bbox.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return doc, nil
}

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

func fmtCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "fmt",
		Usage:     "print a bbox/1 file in canonical form (or --compact, --jsonl)",
		ArgsUsage: "FILE (- for stdin; a .jsonl file is read as the JSONL form)",
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
	tmp, err := os.CreateTemp(dirOf(path), ".bbengine-fmt-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func dirOf(path string) string {
	if i := strings.LastIndexByte(path, os.PathSeparator); i >= 0 {
		return path[:i+1]
	}
	return "."
}

func statsCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "stats",
		Usage:     "count lines per prefix, tools used, tokens and cost of a bbox/1 file",
		ArgsUsage: "FILE (- for stdin)",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "json", Usage: "print as JSON"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("stats: need exactly one FILE")
			}
			path := c.Args().First()
			doc, err := readDoc(c, path)
			if err != nil {
				return err
			}
			st := bbox.ComputeStats(doc)
			w := c.App.Writer
			if c.Bool("json") {
				out := struct {
					File string `json:"file"`
					ID   string `json:"id,omitempty"`
					bbox.Stats
				}{File: path, Stats: st}
				if doc.Header != nil {
					out.ID = doc.Header.Get("id")
				}
				return json.NewEncoder(w).Encode(out)
			}
			printStats(w, path, doc, &st)
			return nil
		},
	}
}

func printStats(w io.Writer, path string, doc *bbox.Document, st *bbox.Stats) {
	fmt.Fprintf(w, "file     %s\n", path)
	if h := doc.Header; h != nil {
		for _, k := range []string{"id", "model", "repo", "repo_sha", "branch"} {
			if v := h.Get(k); v != "" {
				fmt.Fprintf(w, "%-8s %s\n", k, v)
			}
		}
	}
	fmt.Fprintf(w, "lines    %d (%d events)\n", st.Lines, st.Events)
	order := []string{"u", "a", "th", "td", "t", "t!", "t~", "o", "c", "x", "s", "p", "q", "r", "m", "@", "#", "?"}
	var parts []string
	for _, k := range order {
		if n := st.ByKind[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", k, n))
		}
	}
	fmt.Fprintf(w, "prefixes %s\n", strings.Join(parts, " "))
	list := func(label string, nc []bbox.NameCount) {
		if len(nc) == 0 {
			return
		}
		parts := make([]string, len(nc))
		for i, x := range nc {
			parts[i] = fmt.Sprintf("%s×%d", x.Name, x.Count)
		}
		fmt.Fprintf(w, "%-8s %s\n", label, strings.Join(parts, " "))
	}
	list("tools", st.Tools)
	list("mcp", st.MCP)
	list("agents", st.Subagents)
	list("skills", st.Skills)
	fmt.Fprintf(w, "call ids %d, blobs %d, redacted %d, max step %d\n", st.CallIDs, st.Blobs, st.Redacted, st.MaxStep)
	u := st.Metrics
	if u.Lines > 0 {
		fmt.Fprintf(w, "metrics  %d lines: prompt=%d completion=%d cached=%d total=%d cost=$%.6g\n",
			u.Lines, u.Prompt, u.Completion, u.Cached, u.Total, u.CostUSD)
	}
	if s := st.Summary; s != nil {
		fmt.Fprintf(w, "summary  prompt=%d completion=%d cached=%d total=%d cost=$%.6g\n",
			s.Prompt, s.Completion, s.Cached, s.Total, s.CostUSD)
	}
}
