package api

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/engine"
)

// ConvertSources are what ReadSession reads: the logs of every
// registered agent that imports its logs, then the formats read back
// (atif, bbox).
func ConvertSources() []string {
	imports := engine.ImportSources()
	var out []string
	for _, n := range agents.Names() {
		if slices.Contains(imports, n) {
			out = append(out, n)
		}
	}
	return append(out, "atif", "bbox")
}

// Converted is one session read from files, outside any data directory
// (bbengine convert).
type Converted struct {
	// Imported is the session and its events, derived exactly as
	// bbengine import would.
	*engine.Imported
	// Files are its files' records, for the source's own census.
	Files []engine.ImportFile
	// Problems are the lines that were not records (skipped).
	Problems []engine.Problem
}

// ReadSession reads the session of in, a file of source from (one of
// ConvertSources), and derives it: in alone, or for an agent's log with
// what the agent keeps of the session beside it
// (agents.Agent.SessionFiles).
func ReadSession(from, in string) (*Converted, error) {
	paths, err := sessionInputs(from, in)
	if err != nil {
		return nil, err
	}
	files, session, problems, err := readFiles(from, paths)
	if err != nil {
		return nil, err
	}
	im, err := engine.DeriveImport(from, session, files)
	if err != nil {
		return &Converted{Problems: problems}, fmt.Errorf("convert %s: %w", in, err)
	}
	return &Converted{Imported: im, Files: files, Problems: problems}, nil
}

// sessionInputs lists the files one converted session is read from.
func sessionInputs(from, in string) ([]string, error) {
	if engine.IsRows(from, in) {
		// A database, or one session's rows of it ("<db>#<id>").
		if _, err := os.Stat(in); err != nil {
			if i := strings.LastIndex(in, "#"); i > 0 {
				if _, derr := os.Stat(in[:i]); derr == nil {
					return []string{in}, nil
				}
			}
			return nil, err
		}
	}
	fi, err := os.Stat(in)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("%s is a directory: convert takes one session file (bbengine import reads folders)", in)
	}
	if a, ok := agents.Lookup(from); ok {
		return a.SessionFiles(in)
	}
	return []string{in}, nil
}

// readFiles reads files for a conversion: all of one session.
func readFiles(from string, paths []string) ([]engine.ImportFile, string, []engine.Problem, error) {
	var (
		files    []engine.ImportFile
		session  string
		problems []engine.Problem
	)
	for _, p := range paths {
		fi, err := engine.ReadImport(from, p, nil)
		if err != nil {
			return nil, "", nil, err
		}
		problems = append(problems, fi.Problems...)
		if len(fi.Sessions) > 1 {
			return nil, "", nil, fmt.Errorf("%s holds %d sessions: name one as %s#<session id>, e.g. %s#%s", p, len(fi.Sessions), p, p,
				strings.TrimPrefix(fi.Sessions[0], from+":"))
		}
		if session == "" && len(fi.Records) > 0 {
			session = fi.Session
		}
		f := engine.ImportFile{Path: fi.Path}
		for _, r := range fi.Records {
			f.Records = append(f.Records, engine.ImportRecord{Import: r})
		}
		files = append(files, f)
	}
	if session == "" {
		return nil, "", problems, fmt.Errorf("%s holds no records", paths[0])
	}
	return files, session, problems, nil
}
