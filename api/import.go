package api

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/codec/census"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
)

// ImportSources are the sources Importer reads: the registered agents'
// logs, then ATIF documents.
func ImportSources() []string { return append(agents.Names(), "atif") }

// DefaultLocations returns where the agent writes its logs.
func DefaultLocations(source string) []string {
	a, ok := agents.Lookup(source)
	if !ok {
		return nil
	}
	home, _ := os.UserHomeDir()
	return a.LogDirs(home)
}

// SourceFiles lists the files of source under roots, in path order, and
// the errors of the paths it could not read. A missing default location
// is not an error; a missing PATH is.
func SourceFiles(source string, roots []string, defaults bool) ([]string, []error) {
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

// fileStamp is what a follow remembers of a file to skip unchanged ones.
type fileStamp struct {
	size  int64
	mtime time.Time
	// walSize and walMtime stamp a database's -wal.
	walSize  int64
	walMtime time.Time
}

// Importer imports the logs of one source into a sink, round after
// round: a round reads only the files that changed since the last (bbengine
// import --follow). It is not safe for concurrent use.
type Importer struct {
	source   string
	sink     ImportSink
	seen     map[string]fileStamp
	sessions map[string]bool
	// missing holds the paths already reported unreadable, so that
	// follow rounds report each once; problems counts what was skipped.
	missing  map[string]bool
	problems int64
}

// NewImporter returns an importer of source's logs (one of
// ImportSources) into sink.
func NewImporter(sink ImportSink, source string) *Importer {
	return &Importer{source: source, sink: sink, seen: map[string]fileStamp{}, sessions: map[string]bool{}, missing: map[string]bool{}}
}

// AgentImporters returns an importer into sink of each registered
// agent's logs, in name order: what `bbengine import --all` without an
// agent runs, one after the other, each over its agent's
// DefaultLocations.
func AgentImporters(sink ImportSink) []*Importer {
	var out []*Importer
	for _, name := range agents.Names() {
		out = append(out, NewImporter(sink, name))
	}
	return out
}

// Source returns the source the importer reads, one of ImportSources.
func (im *Importer) Source() string { return im.source }

// Problems counts the records and files skipped as unreadable in every
// round so far.
func (im *Importer) Problems() int64 { return im.problems }

// ImportReporter hears how an import round goes, to show it.
type ImportReporter interface {
	// Start says the round reads total files.
	Start(total int)
	// Progress says files are done and bytes read so far.
	Progress(files int, bytes int64)
	// Say reports what was skipped, or a file worth a line of its own.
	Say(msg string)
	// Done says every file was read: files of them, bytes in all.
	Done(files int, bytes int64)
	// Deriving says the round waits for the engine to derive the
	// sessions it wrote to.
	Deriving(sessions int)
}

// ImportStats count what one round imported.
type ImportStats struct {
	// Found counts the source's files under the round's roots, changed
	// or not.
	Found int `json:"found"`
	// Records and Bytes are what was read from Files changed files into
	// Sessions sessions.
	Records  int64 `json:"records"`
	Bytes    int64 `json:"bytes"`
	Files    int   `json:"files"`
	Sessions int   `json:"sessions"`
	// Unchanged counts files imported before with nothing new; Replaced
	// the files that changed since they were imported.
	Unchanged int `json:"unchanged"`
	Replaced  int `json:"replaced"`
	// Problems counts the records and files skipped as unreadable.
	Problems int64 `json:"problems"`
	// Merged counts the round's sessions that are one merged session
	// with a proxied one (the same agent session recorded both ways).
	Merged int `json:"merged"`
	// Took is how long the round took, in nanoseconds in JSON.
	Took time.Duration `json:"took_ns"`
}

// Round imports every file under roots that changed since the last
// round; defaults says roots are the source's default locations, which
// may be missing. verbose reports empty files too.
func (im *Importer) Round(ctx context.Context, roots []string, defaults, verbose bool, rep ImportReporter) (ImportStats, error) {
	var st ImportStats
	var problems int64
	defer func() { im.problems += problems }()
	files, errs := SourceFiles(im.source, roots, defaults)
	for _, err := range errs {
		if !im.missing[err.Error()] {
			im.missing[err.Error()] = true
			rep.Say(fmt.Sprintf("%v (skipped)", err))
			problems++
		}
	}
	if err := im.sink.Wait(ctx); err != nil {
		return st, err
	}
	start := time.Now()
	rep.Start(len(files))
	pipe := newImportPipe(ctx, im.sink)
	defer pipe.close()
	var (
		records, bytesIn             int64
		changed, unchanged, replaced int
		sessions                     = map[string]bool{}
	)
	for i, p := range files {
		rep.Progress(i, bytesIn)
		fst, err := os.Stat(p)
		if err != nil {
			rep.Say(fmt.Sprintf("%v (skipped)", err))
			problems++
			continue
		}
		stamp := fileStamp{size: fst.Size(), mtime: fst.ModTime()}
		if engine.IsRows(im.source, p) {
			// A database's new rows are in its -wal until a
			// checkpoint.
			if wst, err := os.Stat(p + "-wal"); err == nil {
				stamp.walSize, stamp.walMtime = wst.Size(), wst.ModTime()
			}
		}
		if old, ok := im.seen[p]; ok && old == stamp {
			continue
		}
		im.seen[p] = stamp
		if engine.IsRows(im.source, p) {
			// Each session's rows as they are read, in chunks of at
			// most about 1 MiB, as ScanImport hands a log's over
			// (a chunk is of one session: the pipe places its
			// derivation marks between sessions).
			fi, err := engine.ScanRows(ctx, im.source, p, func(unit string) (*engine.ImportFileState, error) { return im.sink.State(unit) },
				func(recs []exchange.Import) error {
					for len(recs) > 0 {
						n, size := 0, 0
						for n < len(recs) && size < 1<<20 {
							size += len(recs[n].Data)
							n++
						}
						if err := pipe.send(recs[:n:n]); err != nil {
							return err
						}
						records += int64(n)
						recs = recs[n:]
					}
					return nil
				})
			if perr := pipe.err(); perr != nil {
				return st, perr
			}
			if err != nil {
				// Read again next round, though the database did
				// not change: the error may pass (a busy database).
				delete(im.seen, p)
			}
			if cerr := ctx.Err(); cerr != nil {
				return st, cerr // stopped (Ctrl-C): not a problem of the database
			}
			if err != nil {
				rep.Say(fmt.Sprintf("%s: %v (skipped)", p, trimPath(err, p)))
				problems++
				continue
			}
			problems += sayProblems(rep, p, fi)
			if len(fi.Sessions) == 0 {
				unchanged++
				continue
			}
			changed++
			if fi.Replaced {
				replaced++
				rep.Say(fmt.Sprintf("%s was replaced since it was imported; importing its sessions again", p))
			}
			for _, id := range fi.Sessions {
				sessions[id] = true
				im.sessions[id] = true
			}
			bytesIn += fi.Bytes
			continue
		}
		state, err := im.sink.State(strings.TrimSuffix(p, ".zst"))
		if err != nil {
			return st, err
		}
		var n int64
		fi, err := engine.ScanImport(im.source, p, state, func(recs []exchange.Import) error {
			n += int64(len(recs))
			return pipe.send(recs)
		})
		if perr := pipe.err(); perr != nil {
			return st, perr
		}
		if cerr := ctx.Err(); cerr != nil {
			return st, cerr // stopped (Ctrl-C): not a problem of the file
		}
		if err != nil {
			rep.Say(fmt.Sprintf("%s: %v (skipped)", p, trimPath(err, p)))
			problems++
			continue
		}
		problems += sayProblems(rep, p, fi)
		switch {
		case fi.Unreadable > 0 && n == 0 && state == nil:
			rep.Say(fmt.Sprintf("%s: no %s record in it; nothing imported, no session", p, im.source))
		case fi.Empty && state == nil && verbose:
			rep.Say(fmt.Sprintf("%s: empty; nothing to import", p))
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
			rep.Say(fmt.Sprintf("%s changed since it was imported; importing it again (generation %d)", p, fi.Gen))
		}
		sessions[fi.Session] = true
		im.sessions[fi.Session] = true
		records += n
		bytesIn += fi.Bytes
	}
	if err := pipe.close(); err != nil {
		return st, err
	}
	rep.Done(len(files), bytesIn)
	if records > 0 {
		rep.Deriving(len(sessions))
	}
	if err := im.sink.Wait(ctx); err != nil {
		return st, err
	}
	merged := 0
	if len(sessions) > 0 {
		r := im.sink.Reader()
		for id := range sessions {
			s, err := r.Session(id)
			if err != nil {
				return st, err
			}
			if s.Merged != nil {
				merged++
			}
		}
	}
	return ImportStats{Found: len(files), Records: records, Bytes: bytesIn, Files: changed, Sessions: len(sessions), Unchanged: unchanged, Replaced: replaced,
		Problems: problems, Merged: merged, Took: time.Since(start)}, nil
}

// sayProblems reports the records of path that fi could not read, each
// listed one and how many more were left unlisted, and returns how many
// there were.
func sayProblems(rep ImportReporter, path string, fi *engine.FileImport) int64 {
	for _, pr := range fi.Problems {
		rep.Say(fmt.Sprint(pr))
	}
	if n := fi.Unreadable - int64(len(fi.Problems)); n > 0 {
		rep.Say(fmt.Sprintf("%s: %d more records skipped, not listed", path, n))
	}
	return fi.Unreadable
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

// SessionCensus compares what an imported session's source files hold
// with what was derived from them (package census).
type SessionCensus struct {
	Session string
	// Files is how many source files the session was read from.
	Files int
	Rows  []census.Row
}

// Check compares every session the rounds imported into with its source
// files as they are now, in session order.
func (im *Importer) Check() ([]SessionCensus, error) {
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range im.sessions {
			if !yield(id) {
				return
			}
		}
	})
	r := im.sink.Reader()
	var out []SessionCensus
	for _, id := range ids {
		s, err := r.Session(id)
		if err != nil {
			return nil, err
		}
		// The import side alone: a merged session's view holds what
		// only the proxy recorded too.
		events, err := r.Events(id, engine.EventFilter{Raw: true})
		if err != nil {
			return nil, err
		}
		files, err := readSourceFiles(im.source, s.Import)
		if err != nil {
			return nil, err
		}
		src := engine.SourceCensus(im.source, files)
		res := engine.Census(&s, events)
		out = append(out, SessionCensus{Session: id, Files: len(files), Rows: census.Compare(src, res)})
	}
	return out, nil
}

// readSourceFiles reads a session's source files as they are now.
func readSourceFiles(source string, info *engine.ImportInfo) ([]engine.ImportFile, error) {
	if info == nil {
		return nil, nil
	}
	var out []engine.ImportFile
	for _, p := range info.Files {
		real := p
		if engine.IsRows(source, p) {
			// p is a database's unit, "<database>#<session id>": its
			// session's rows, every version of them.
		} else if _, err := os.Stat(p); err != nil {
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
