package cli

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/census"
	ucli "github.com/urfave/cli/v2"
)

// importMemoryLimit is the Go heap an import aims to stay under (unless
// GOMEMLIMIT says otherwise): its live data is a pass's sessions and the
// chunks in the pipeline, whatever the input's size, so the collector
// need not let the heap grow to twice that between cycles. It is a soft
// limit: a session larger than it still imports, with more collections.
// A pass's live data peaks at 80-85 MB (the frames it read, its
// sessions' events encoded and decoded): at 96 MiB the collector ran
// nearly back to back then (1,391 cycles at 200 copies of the golden
// corpus, GC and the scavenger 13% of the CPU), at 112 MiB 714 cycles
// for a peak RSS of 158 MiB (at 128 MiB: 536 cycles, 175 MiB).
const importMemoryLimit = 112 << 20

func importCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "import",
		Usage:     "import the logs agents write themselves (Claude Code, Codex, Gemini CLI, ATIF) into the WAL",
		ArgsUsage: "claude|codex|gemini|atif [PATH...]",
		Description: "Each record (a JSONL line, a subagent's meta file, a spilled tool output, an ATIF\n" +
			"document) is written to the WAL as an import frame naming its file, byte offset and\n" +
			"line, then derived into a session like captured traffic (\"claude:<session id>\", …),\n" +
			"so rebuild covers it. Importing a file again is idempotent; a file that grew is read\n" +
			"from where the last import stopped; a file that was replaced is imported again as a\n" +
			"new generation. PATH is a file or a directory (searched for the source's files);\n" +
			"--all reads the agent's default locations: ~/.claude/projects (or $CLAUDE_CONFIG_DIR,\n" +
			"comma-separated) with subagents/ and tool-results/, ~/.codex/sessions and\n" +
			"archived_sessions (or $CODEX_HOME) including .jsonl.zst, ~/.gemini/tmp/*/chats (or\n" +
			"$GEMINI_CLI_HOME/.gemini) with subagents' chats. A line that is not a record\n" +
			"of the agent (not JSON, or JSON of another shape) is skipped and reported as\n" +
			"file:line[:col]; so is the rest of a compressed file that does not decompress, with\n" +
			"its byte offset; the readable records are imported all the same, and a file with\n" +
			"none makes no session. An unterminated last line that is the start of a JSON value\n" +
			"(a file being written) is left for the next run. The exit status is 0 when\n" +
			"everything was read, 1 when anything was skipped or could not be read (or\n" +
			"--check found a loss), 2 on a usage error; --follow reports and goes on. When a\n" +
			"proxy owns the data directory, the records are sent to it.",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "all", Usage: "import everything in the agent's default locations"},
			&ucli.BoolFlag{Name: "follow", Usage: "keep importing as the files grow and new ones appear (Ctrl-C stops)"},
			&ucli.DurationFlag{Name: "interval", Value: time.Second, Usage: "how often --follow looks for changes"},
			&ucli.BoolFlag{Name: "check", Usage: "after importing, compare each session's source counts with what was derived; exit 1 on a loss"},
			&ucli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only problems and the summary"},
		},
		Action: runImport,
	}
}

func runImport(c *ucli.Context) error {
	if c.NArg() < 1 {
		return usagef("import: name the source: %s", strings.Join(api.ImportSources(), ", "))
	}
	source := c.Args().First()
	if !slices.Contains(api.ImportSources(), source) {
		return usagef("import: unknown source %q (want %s)", source, strings.Join(api.ImportSources(), ", "))
	}
	roots := c.Args().Slice()[1:]
	if c.Bool("all") {
		roots = append(roots, api.DefaultLocations(source)...)
	} else if len(roots) == 0 {
		return usagef("import %s: give a PATH or --all", source)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(importMemoryLimit))
	}
	sink, err := openImportSink(c)
	if err != nil {
		return err
	}
	defer sink.Close()
	im := api.NewImporter(sink, source)
	round := func(verbose bool) error {
		rep := &importReport{w: c.App.ErrWriter}
		st, err := im.Round(c.Context, roots, c.Bool("all"), verbose, rep)
		if err != nil {
			return err
		}
		if verbose || st.Records > 0 || st.Problems > 0 {
			fmt.Fprintf(c.App.ErrWriter, "imported %d records (%s) from %d files into %d sessions in %s (%s/s); %d unchanged, %d replaced, %d problems\n",
				st.Records, humanBytes(st.Bytes), st.Files, st.Sessions, st.Took.Round(time.Millisecond),
				humanBytes(int64(float64(st.Bytes)/max(st.Took.Seconds(), 1e-6))), st.Unchanged, st.Replaced, st.Problems)
		}
		return nil
	}
	if err := round(!c.Bool("quiet")); err != nil {
		return err
	}
	if c.Bool("follow") {
		fmt.Fprintf(c.App.ErrWriter, "following %s; Ctrl-C stops\n", strings.Join(roots, ", "))
		tick := time.NewTicker(c.Duration("interval"))
		defer tick.Stop()
		for {
			select {
			case <-c.Context.Done():
				return nil
			case <-tick.C:
			}
			if err := round(false); err != nil {
				fmt.Fprintf(c.App.ErrWriter, "import: %v\n", err)
			}
		}
	}
	if c.Bool("check") {
		if err := importCheck(c, im); err != nil {
			return err
		}
	}
	if n := im.Problems(); n > 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("import: %d records or files skipped as unreadable (listed above); everything else was imported", n)}
	}
	return nil
}

// importCheck prints, for every imported session, its source counts
// beside what was derived.
func importCheck(c *ucli.Context, im *api.Importer) error {
	sessions, err := im.Check()
	if err != nil {
		return err
	}
	lost := 0
	for _, s := range sessions {
		fmt.Fprintf(c.App.Writer, "%s (%d files)\n", s.Session, s.Files)
		if err := census.WriteTable(c.App.Writer, "source", "imported", s.Rows); err != nil {
			return err
		}
		if !census.Lossless(s.Rows) {
			lost++
		}
	}
	if lost > 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("import --check: %d of %d sessions lost or changed data", lost, len(sessions))}
	}
	fmt.Fprintf(c.App.Writer, "import --check: %d sessions, nothing lost\n", len(sessions))
	return nil
}

// importReport shows an import round on w: "import: " lines, and a
// progress bar on a terminal.
type importReport struct {
	w   io.Writer
	bar *progress
}

func (r *importReport) Start(total int)                 { r.bar = newProgress(r.w, total) }
func (r *importReport) Progress(files int, bytes int64) { r.bar.update(files, bytes) }
func (r *importReport) Done(files int, bytes int64)     { r.bar.done(files, bytes) }

func (r *importReport) Say(msg string) {
	if r.bar != nil {
		r.bar.clear()
	}
	fmt.Fprintf(r.w, "import: %s\n", msg)
}

func (r *importReport) Deriving(sessions int) {
	if r.bar.on {
		fmt.Fprintf(r.w, "deriving %d sessions…\n", sessions)
	}
}

func openImportSink(c *ucli.Context) (api.ImportSink, error) {
	return api.OpenImportSink(c.String("dir"))
}

// progress draws a progress bar on a terminal.
type progress struct {
	w     io.Writer
	total int
	on    bool
	last  time.Time
	drawn bool
}

func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, total: total}
	if f, ok := w.(*os.File); ok && total > 1 {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.on = true
		}
	}
	return p
}

func (p *progress) update(i int, bytes int64) {
	if !p.on || time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	p.draw(i, bytes)
}

func (p *progress) draw(i int, bytes int64) {
	const width = 30
	n := width * i / max(p.total, 1)
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d files  %s ", strings.Repeat("=", n), strings.Repeat(" ", width-n), i, p.total, humanBytes(bytes))
	p.drawn = true
}

func (p *progress) clear() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

func (p *progress) done(i int, bytes int64) {
	if p.on {
		p.draw(i, bytes)
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
