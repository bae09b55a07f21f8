package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/bbengine/bbengine/codec/bbox"
	ucli "github.com/urfave/cli/v2"
)

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
