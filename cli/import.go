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
	"golang.org/x/term"
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
		Usage:     "import the logs agents write themselves (Claude Code, Codex, Gemini CLI, opencode, ATIF) into the WAL",
		ArgsUsage: "claude|codex|gemini|opencode|atif [PATH...] | --all",
		Description: "Each record (a JSONL line, a subagent's meta file, a spilled tool output, an ATIF\n" +
			"document) is written to the WAL as an import frame naming its file, byte offset and\n" +
			"line, then derived into a session like captured traffic (\"claude:<session id>\", …),\n" +
			"so rebuild covers it. Importing a file again is idempotent; a file that grew is read\n" +
			"from where the last import stopped; a file that was replaced is imported again as a\n" +
			"new generation. PATH is a file or a directory (searched for the source's files);\n" +
			"--all reads the agent's default locations: ~/.claude/projects (or $CLAUDE_CONFIG_DIR,\n" +
			"comma-separated) with subagents/ and tool-results/, ~/.codex/sessions and\n" +
			"archived_sessions (or $CODEX_HOME) including .jsonl.zst, ~/.gemini/tmp/*/chats (or\n" +
			"$GEMINI_CLI_HOME/.gemini) with subagents' chats, opencode's opencode.db (and its\n" +
			"-wal) and storage/ tree in ~/.local/share/opencode (or $XDG_DATA_HOME/opencode,\n" +
			"or $OPENCODE_DB). A line that is not a record\n" +
			"of the agent (not JSON, or JSON of another shape) is skipped and reported as\n" +
			"file:line[:col]; so is the rest of a compressed file that does not decompress, with\n" +
			"its byte offset; the readable records are imported all the same, and a file with\n" +
			"none makes no session. An unterminated last line that is the start of a JSON value\n" +
			"(a file being written) is left for the next run. The exit status is 0 when\n" +
			"everything was read, 1 when anything was skipped or could not be read (or\n" +
			"--check found a loss), 2 on a usage error; --follow reports and goes on. When a\n" +
			"proxy owns the data directory, the records are sent to it.\n\n" +
			"`bbengine import --all` with no source imports every agent's logs found in its default\n" +
			"locations, one agent after the other, with a line per agent (an agent with no logs is\n" +
			"one line saying where it looked). On a terminal a progress bar is drawn on stderr.\n" +
			"--json prints each source's counts (and with --check each session's) as one JSON\n" +
			"document on stdout.",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "all", Usage: "import everything in the agent's default locations (every agent's, when no source is named)"},
			&ucli.BoolFlag{Name: "follow", Usage: "keep importing as the files grow and new ones appear (Ctrl-C stops)"},
			&ucli.DurationFlag{Name: "interval", Value: time.Second, Usage: "how often --follow looks for changes"},
			&ucli.BoolFlag{Name: "check", Usage: "after importing, compare each session's source counts with what was derived; exit 1 on a loss"},
			&ucli.BoolFlag{Name: "quiet", Aliases: []string{"q"}, Usage: "print only problems and the summary"},
			&ucli.BoolFlag{Name: "json", Usage: "print the counts (and --check's) as JSON on stdout"},
		},
		Action: runImport,
	}
}

// importJob is one source an import reads: its importer and the roots
// of its rounds, which are the agent's default locations when defaults.
type importJob struct {
	im       *api.Importer
	roots    []string
	defaults bool
	// label prefixes the job's lines when import --all reads every
	// agent, "" for one source.
	label string
}

func runImport(c *ucli.Context) error {
	if c.NArg() < 1 && !c.Bool("all") {
		return usagef("import: name the source (%s), or give --all for every agent's logs", strings.Join(api.ImportSources(), ", "))
	}
	if c.Bool("json") && c.Bool("follow") {
		return usagef("import: --json prints one report at the end; --follow has none")
	}
	var (
		source string
		roots  []string
	)
	if c.NArg() > 0 {
		source = c.Args().First()
		if !slices.Contains(api.ImportSources(), source) {
			return usagef("import: unknown source %q (want %s)", source, strings.Join(api.ImportSources(), ", "))
		}
		roots = c.Args().Slice()[1:]
		if c.Bool("all") {
			roots = append(roots, api.DefaultLocations(source)...)
		} else if len(roots) == 0 {
			return usagef("import %s: give a PATH or --all", source)
		}
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(importMemoryLimit))
	}
	sink, err := openImportSink(c)
	if err != nil {
		return err
	}
	defer sink.Close()
	var jobs []importJob
	if source != "" {
		jobs = []importJob{{im: api.NewImporter(sink, source), roots: roots, defaults: c.Bool("all")}}
	} else {
		for _, im := range api.AgentImporters(sink) {
			jobs = append(jobs, importJob{im: im, roots: api.DefaultLocations(im.Source()), defaults: true, label: im.Source()})
		}
	}
	report := importJSON{Sources: []importSourceJSON{}}
	round := func(verbose, first bool) error {
		for _, j := range jobs {
			rep := &importReport{w: c.App.ErrWriter, label: j.label}
			st, err := j.im.Round(c.Context, j.roots, j.defaults, verbose, rep)
			if err != nil {
				if j.label != "" {
					return fmt.Errorf("%s: %w", j.label, err)
				}
				return err
			}
			if first {
				report.Sources = append(report.Sources, importSourceJSON{Source: j.im.Source(), Roots: j.roots, ImportStats: st})
			}
			prefix := ""
			if j.label != "" {
				prefix = j.label + ": "
				if st.Found == 0 {
					if first {
						fmt.Fprintf(c.App.ErrWriter, "%sno logs in %s\n", prefix, strings.Join(j.roots, ", "))
					}
					continue
				}
			}
			if verbose || st.Records > 0 || st.Problems > 0 {
				fmt.Fprintf(c.App.ErrWriter, "%simported %d records (%s) from %d files into %d sessions in %s (%s/s); %d unchanged, %d replaced, %d problems\n",
					prefix, st.Records, humanBytes(st.Bytes), st.Files, st.Sessions, st.Took.Round(time.Millisecond),
					humanBytes(int64(float64(st.Bytes)/max(st.Took.Seconds(), 1e-6))), st.Unchanged, st.Replaced, st.Problems)
			}
			if st.Merged > 0 {
				fmt.Fprintf(c.App.ErrWriter, "%smerged %d sessions with proxied ones (bbengine sessions --unmerged lists the sides)\n", prefix, st.Merged)
			}
		}
		return nil
	}
	if err := round(!c.Bool("quiet"), true); err != nil {
		return err
	}
	if c.Bool("follow") {
		var all []string
		for _, j := range jobs {
			all = append(all, j.roots...)
		}
		fmt.Fprintf(c.App.ErrWriter, "following %s; Ctrl-C stops\n", strings.Join(all, ", "))
		tick := time.NewTicker(c.Duration("interval"))
		defer tick.Stop()
		for {
			select {
			case <-c.Context.Done():
				return nil
			case <-tick.C:
			}
			if err := round(false, false); err != nil {
				fmt.Fprintf(c.App.ErrWriter, "import: %v\n", err)
			}
		}
	}
	var checkErr error
	if c.Bool("check") {
		report.Check = []importCheckJSON{}
		lost := 0
		for _, j := range jobs {
			n, err := importCheck(c, j.im, &report)
			if err != nil {
				return err
			}
			lost += n
		}
		switch {
		case lost > 0:
			checkErr = &exitError{code: 1, msg: fmt.Sprintf("import --check: %d of %d sessions lost or changed data", lost, len(report.Check))}
		case !c.Bool("json"):
			fmt.Fprintf(c.App.Writer, "import --check: %d sessions, nothing lost\n", len(report.Check))
		}
	}
	var problems int64
	for _, j := range jobs {
		problems += j.im.Problems()
	}
	report.Problems = problems
	if c.Bool("json") {
		if err := writeJSON(c, report); err != nil {
			return err
		}
	}
	if checkErr != nil {
		return checkErr
	}
	if problems > 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("import: %d records or files skipped as unreadable (listed above); everything else was imported", problems)}
	}
	return nil
}

// importJSON is what import --json prints: each source's first round,
// and with --check each session's counts.
type importJSON struct {
	Sources  []importSourceJSON `json:"sources"`
	Check    []importCheckJSON  `json:"check"` // null without --check
	Problems int64              `json:"problems"`
}

type importSourceJSON struct {
	Source string   `json:"source"`
	Roots  []string `json:"roots"`
	api.ImportStats
}

type importCheckJSON struct {
	Source   string          `json:"source"`
	Session  string          `json:"session"`
	Files    int             `json:"files"`
	Lossless bool            `json:"lossless"`
	Rows     []importRowJSON `json:"rows"`
}

type importRowJSON struct {
	Name     string `json:"name"`
	Source   int64  `json:"source"`
	Imported int64  `json:"imported"`
	Lost     bool   `json:"lost,omitempty"`
	Differs  bool   `json:"differs,omitempty"`
}

// importCheck prints, for every session im imported, its source counts
// beside what was derived (with --json, adds them to report alone), and
// returns how many sessions lost or changed data.
func importCheck(c *ucli.Context, im *api.Importer, report *importJSON) (int, error) {
	sessions, err := im.Check()
	if err != nil {
		return 0, err
	}
	lost := 0
	for _, s := range sessions {
		cj := importCheckJSON{Source: im.Source(), Session: s.Session, Files: s.Files, Lossless: census.Lossless(s.Rows), Rows: []importRowJSON{}}
		for _, r := range s.Rows {
			cj.Rows = append(cj.Rows, importRowJSON{Name: r.Name, Source: r.Source, Imported: r.Result, Lost: r.Lost, Differs: r.Differs})
		}
		report.Check = append(report.Check, cj)
		if !cj.Lossless {
			lost++
		}
		if c.Bool("json") {
			continue
		}
		fmt.Fprintf(c.App.Writer, "%s (%d files)\n", s.Session, s.Files)
		if err := census.WriteTable(c.App.Writer, "source", "imported", s.Rows); err != nil {
			return 0, err
		}
	}
	return lost, nil
}

// importReport shows an import round on w: "import: " lines, and a
// progress bar on a terminal.
type importReport struct {
	w io.Writer
	// label names the agent on the bar and the lines of import --all.
	label string
	bar   *progress
}

func (r *importReport) Start(total int)                 { r.bar = newProgress(r.w, r.label, total) }
func (r *importReport) Progress(files int, bytes int64) { r.bar.update(files, bytes) }
func (r *importReport) Done(files int, bytes int64)     { r.bar.done(files, bytes) }

func (r *importReport) Say(msg string) {
	if r.bar != nil {
		r.bar.clear()
	}
	if r.label != "" {
		fmt.Fprintf(r.w, "import %s: %s\n", r.label, msg)
		return
	}
	fmt.Fprintf(r.w, "import: %s\n", msg)
}

func (r *importReport) Deriving(sessions int) {
	if r.bar.on {
		fmt.Fprintf(r.w, "deriving %d sessions…\n", sessions)
	}
}

// isTerminal reports whether w is a terminal, where progress is drawn.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func openImportSink(c *ucli.Context) (api.ImportSink, error) {
	return api.OpenImportSink(c.String("dir"))
}

// progress draws a progress bar on a terminal, after label when that
// is not "".
type progress struct {
	w     io.Writer
	label string
	total int
	on    bool
	last  time.Time
	drawn bool
}

func newProgress(w io.Writer, label string, total int) *progress {
	return &progress{w: w, label: label, total: total, on: total > 1 && isTerminal(w)}
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
	label := ""
	if p.label != "" {
		label = p.label + " "
	}
	fmt.Fprintf(p.w, "\r%s[%s%s] %d/%d files  %s ", label, strings.Repeat("=", n), strings.Repeat(" ", width-n), i, p.total, humanBytes(bytes))
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
