package cli

import (
	"github.com/bbengine/bbengine/api"
	ucli "github.com/urfave/cli/v2"
)

func showCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "show",
		Usage:     "print a session's canonical timeline as bbox/1 text or JSON",
		ArgsUsage: "SESSION (an id, or a unique prefix of one)",
		Description: "bbox output: a header (format, id, repo_sha, model, client_version), @start, u:/a:/th:\n" +
			"messages, t: tool calls with their results (o: for results that came later), a\n" +
			"# metrics line per model call, @end. Outputs over --blob-threshold bytes go to\n" +
			"<dir>/blobs and appear as @blob sha256=… bytes=…. The circuit breaker's changes show\n" +
			"as @escalate (it opened) and @notify (half-open, closed, reset) lines. JSON output: the session and its\n" +
			"events, each with its provenance (exchange, request id, WAL offsets).",
		Flags: []ucli.Flag{
			&ucli.StringFlag{Name: "format", Value: "bbox", Usage: "bbox or json"},
			&ucli.StringFlag{Name: "task", Usage: "only the events of task `ID`"},
			&ucli.IntFlag{Name: "blob-threshold", Value: 1024, Usage: "`BYTES` above which outputs go to the blob store (-1: never)"},
			&ucli.StringFlag{Name: "repo-sha", Usage: "repository commit for the header (default: unknown)"},
			&ucli.BoolFlag{Name: "raw", Usage: "of a merged session, show the named side (the proxied id or the imported one) as derived"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("show: need exactly one SESSION")
			}
			format := c.String("format")
			if format != "bbox" && format != "json" {
				return usagef("--format %q: want bbox or json", format)
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
			ex, err := api.Export(r, api.ExportRequest{Session: c.Args().First(), Format: format, Task: c.String("task"), Breakers: true,
				BlobThreshold: c.Int("blob-threshold"), RepoSHA: c.String("repo-sha"), Blobs: blobs, Raw: c.Bool("raw")})
			if err != nil {
				return err
			}
			_, err = c.App.Writer.Write(ex.Data)
			return err
		},
	}
}
