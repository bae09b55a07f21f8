package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/census"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
	ucli "github.com/urfave/cli/v2"
)

// importSources are the sources import reads: the registered agents'
// logs, then ATIF documents.
func importSources() []string { return append(agents.Names(), "atif") }

// importMemoryLimit is the Go heap an import aims to stay under (unless
// GOMEMLIMIT says otherwise): its live data is a few sessions and the
// chunks in the pipeline, whatever the input's size, so the collector
// need not let the heap grow to twice that between cycles. It is a soft
// limit: a session larger than it still imports, with more collections.
const importMemoryLimit = 96 << 20

func importCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "import",
		Usage:     "import the logs agents write themselves (Claude Code, Codex, ATIF) into the WAL",
		ArgsUsage: "claude|codex|atif [PATH...]",
		Description: "Each record (a JSONL line, a subagent's meta file, a spilled tool output, an ATIF\n" +
			"document) is written to the WAL as an import frame naming its file, byte offset and\n" +
			"line, then derived into a session like captured traffic (\"claude:<session id>\", …),\n" +
			"so rebuild covers it. Importing a file again is idempotent; a file that grew is read\n" +
			"from where the last import stopped; a file that was replaced is imported again as a\n" +
			"new generation. PATH is a file or a directory (searched for the source's files);\n" +
			"--all reads the agent's default locations: ~/.claude/projects (or $CLAUDE_CONFIG_DIR,\n" +
			"comma-separated) with subagents/ and tool-results/, ~/.codex/sessions and\n" +
			"archived_sessions (or $CODEX_HOME) including .jsonl.zst. A line that is not a record\n" +
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
		return usagef("import: name the source: %s", strings.Join(importSources(), ", "))
	}
	source := c.Args().First()
	if !slices.Contains(importSources(), source) {
		return usagef("import: unknown source %q (want %s)", source, strings.Join(importSources(), ", "))
	}
	roots := c.Args().Slice()[1:]
	if c.Bool("all") {
		roots = append(roots, defaultLocations(source)...)
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
	im := &importer{c: c, source: source, sink: sink, seen: map[string]fileStamp{}, sessions: map[string]bool{}, missing: map[string]bool{}}
	if err := im.round(roots, !c.Bool("quiet")); err != nil {
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
			if err := im.round(roots, false); err != nil {
				fmt.Fprintf(c.App.ErrWriter, "import: %v\n", err)
			}
		}
	}
	if c.Bool("check") {
		if err := im.check(); err != nil {
			return err
		}
	}
	if im.problems > 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("import: %d records or files skipped as unreadable (listed above); everything else was imported", im.problems)}
	}
	return nil
}

// defaultLocations returns where the agent writes its logs.
func defaultLocations(source string) []string {
	a, ok := agents.Lookup(source)
	if !ok {
		return nil
	}
	home, _ := os.UserHomeDir()
	return a.LogDirs(home)
}

// sourceFiles lists the files of source under roots, in path order, and
// the errors of the paths it could not read. A missing default location
// is not an error; a missing PATH is.
func sourceFiles(source string, roots []string, defaults bool) ([]string, []error) {
	var (
		out  []string
		errs []error
	)
	for _, root := range roots {
		fi, err := os.Stat(root)
		if err != nil {
			if !defaults || !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
			continue
		}
		if !fi.IsDir() {
			out = append(out, root)
			continue
		}
		filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				errs = append(errs, err)
				return nil // go on with the rest
			}
			if !d.IsDir() && isSourceFile(source, p) {
				out = append(out, p)
			}
			return nil
		})
	}
	slices.Sort(out)
	out = slices.Compact(out)
	// A compressed rollout next to its plain copy (Codex re-opening an
	// archived session) is the same file: read the plain one.
	keep := out[:0]
	for _, p := range out {
		if strings.HasSuffix(p, ".zst") && slices.Contains(out, strings.TrimSuffix(p, ".zst")) {
			continue
		}
		keep = append(keep, p)
	}
	return keep, errs
}

// isSourceFile reports whether p is one of source's files: an agent's
// log, or an ATIF document (*.json).
func isSourceFile(source, p string) bool {
	if a, ok := agents.Lookup(source); ok {
		return a.IsLog(p)
	}
	return source == "atif" && strings.HasSuffix(filepath.Base(p), ".json")
}

// fileStamp is what --follow remembers of a file to skip unchanged ones.
type fileStamp struct {
	size  int64
	mtime time.Time
}

type importer struct {
	c        *ucli.Context
	source   string
	sink     api.ImportSink
	seen     map[string]fileStamp
	sessions map[string]bool
	// missing holds the paths already reported unreadable, so that
	// --follow reports each once; problems counts what was skipped.
	missing  map[string]bool
	problems int64
}

// round imports every file under roots that changed since the last round.
func (im *importer) round(roots []string, verbose bool) error {
	c := im.c
	var problems int64
	defer func() { im.problems += problems }()
	files, errs := sourceFiles(im.source, roots, c.Bool("all"))
	for _, err := range errs {
		if !im.missing[err.Error()] {
			im.missing[err.Error()] = true
			fmt.Fprintf(c.App.ErrWriter, "import: %v (skipped)\n", err)
			problems++
		}
	}
	if err := im.sink.Wait(c.Context); err != nil {
		return err
	}
	start := time.Now()
	bar := newProgress(c.App.ErrWriter, len(files))
	pipe := newImportPipe(c.Context, im.sink)
	defer pipe.close()
	var (
		records, bytesIn             int64
		changed, unchanged, replaced int
		sessions                     = map[string]bool{}
	)
	for i, p := range files {
		bar.update(i, bytesIn)
		st, err := os.Stat(p)
		if err != nil {
			bar.clear()
			fmt.Fprintf(c.App.ErrWriter, "import: %v (skipped)\n", err)
			problems++
			continue
		}
		stamp := fileStamp{st.Size(), st.ModTime()}
		if old, ok := im.seen[p]; ok && old == stamp {
			continue
		}
		im.seen[p] = stamp
		state, err := im.sink.State(strings.TrimSuffix(p, ".zst"))
		if err != nil {
			return err
		}
		var n int64
		fi, err := engine.ScanImport(im.source, p, state, func(recs []exchange.Import) error {
			n += int64(len(recs))
			return pipe.send(recs)
		})
		if perr := pipe.err(); perr != nil {
			return perr
		}
		if cerr := c.Context.Err(); cerr != nil {
			return cerr // stopped (Ctrl-C): not a problem of the file
		}
		if err != nil {
			bar.clear()
			fmt.Fprintf(c.App.ErrWriter, "import: %s: %v (skipped)\n", p, trimPath(err, p))
			problems++
			continue
		}
		if fi.Unreadable > 0 || fi.Empty && verbose {
			bar.clear()
		}
		for _, pr := range fi.Problems {
			fmt.Fprintf(c.App.ErrWriter, "import: %s\n", pr)
		}
		if n := fi.Unreadable - int64(len(fi.Problems)); n > 0 {
			fmt.Fprintf(c.App.ErrWriter, "import: %s: %d more records skipped, not listed\n", p, n)
		}
		problems += fi.Unreadable
		switch {
		case fi.Unreadable > 0 && n == 0 && state == nil:
			fmt.Fprintf(c.App.ErrWriter, "import: %s: no %s record in it; nothing imported, no session\n", p, im.source)
		case fi.Empty && state == nil && verbose:
			fmt.Fprintf(c.App.ErrWriter, "import: %s: empty; nothing to import\n", p)
		}
		if n == 0 {
			if state != nil {
				unchanged++ // imported before, nothing new
			}
			continue
		}
		changed++
		if fi.Replaced {
			replaced++
			bar.clear()
			fmt.Fprintf(c.App.ErrWriter, "import: %s changed since it was imported; importing it again (generation %d)\n", p, fi.Gen)
		}
		sessions[fi.Session] = true
		im.sessions[fi.Session] = true
		records += n
		bytesIn += fi.Bytes
	}
	if err := pipe.close(); err != nil {
		return err
	}
	bar.done(len(files), bytesIn)
	if bar.on && records > 0 {
		fmt.Fprintf(c.App.ErrWriter, "deriving %d sessions…\n", len(sessions))
	}
	if err := im.sink.Wait(c.Context); err != nil {
		return err
	}
	if verbose || records > 0 || problems > 0 {
		d := time.Since(start)
		fmt.Fprintf(c.App.ErrWriter, "imported %d records (%s) from %d files into %d sessions in %s (%s/s); %d unchanged, %d replaced, %d problems\n",
			records, humanBytes(bytesIn), changed, len(sessions), d.Round(time.Millisecond),
			humanBytes(int64(float64(bytesIn)/max(d.Seconds(), 1e-6))), unchanged, replaced, problems)
	}
	return nil
}

// trimPath drops a leading "path: " from err's text, which names path
// already.
func trimPath(err error, path string) string {
	msg := err.Error()
	for _, prefix := range []string{path + ": ", "open " + path + ": "} {
		if strings.HasPrefix(msg, prefix) {
			return strings.TrimPrefix(msg, prefix)
		}
	}
	return msg
}

// check compares every imported session's source counts with its
// derived events.
func (im *importer) check() error {
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range im.sessions {
			if !yield(id) {
				return
			}
		}
	})
	r := im.sink.Reader()
	lost := 0
	for _, id := range ids {
		s, err := r.Session(id)
		if err != nil {
			return err
		}
		events, err := r.Events(s.ID, engine.EventFilter{})
		if err != nil {
			return err
		}
		files, err := readSourceFiles(im.source, s.Import)
		if err != nil {
			return err
		}
		src := engine.SourceCensus(im.source, files)
		res := engine.Census(&s, events)
		rows := census.Compare(src, res)
		fmt.Fprintf(im.c.App.Writer, "%s (%d files)\n", s.ID, len(files))
		if err := census.WriteTable(im.c.App.Writer, "source", "imported", rows); err != nil {
			return err
		}
		if !census.Lossless(rows) {
			lost++
		}
	}
	if lost > 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("import --check: %d of %d sessions lost or changed data", lost, len(ids))}
	}
	fmt.Fprintf(im.c.App.Writer, "import --check: %d sessions, nothing lost\n", len(ids))
	return nil
}

// readSourceFiles reads a session's source files as they are now.
func readSourceFiles(source string, info *engine.ImportInfo) ([]engine.ImportFile, error) {
	if info == nil {
		return nil, nil
	}
	var out []engine.ImportFile
	for _, p := range info.Files {
		real := p
		if _, err := os.Stat(p); err != nil {
			if _, zerr := os.Stat(p + ".zst"); zerr != nil {
				return nil, err
			}
			real = p + ".zst"
		}
		fi, err := engine.ReadImport(source, real, nil)
		if err != nil {
			return nil, err
		}
		f := engine.ImportFile{Path: fi.Path}
		for _, r := range fi.Records {
			f.Records = append(f.Records, engine.ImportRecord{Import: r})
		}
		out = append(out, f)
	}
	return out, nil
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
