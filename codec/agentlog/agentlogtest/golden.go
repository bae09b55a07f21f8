// Package agentlogtest reads the golden agent logs (../shared/agentlogs-golden)
// into import records, as bbengine import does, for the tests of every
// package that derives from them. It returns codec types only, so that
// any layer's tests can use it; each test wraps the records into its own
// package's import files.
package agentlogtest

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/agentlog"
	"github.com/bbengine/bbengine/codec/claude"
	"github.com/bbengine/bbengine/codec/exchange"
)

// Golden returns the golden logs of agent (claude, codex) seen from a
// package up directories below the module's root.
func Golden(up int, agent string) string {
	parts := make([]string, 0, up+4)
	for range up + 1 {
		parts = append(parts, "..")
	}
	return filepath.Join(append(parts, "shared", "agentlogs-golden", agent)...)
}

// File is one log file's import records.
type File struct {
	Path    string
	Records []exchange.Import
}

// ReadLog reads a log file as import line records of source and session.
// It returns the raw lines too, and where reading ended.
func ReadLog(t testing.TB, path, source, session string) (File, [][]byte, int64) {
	t.Helper()
	f, err := agentlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	file := File{Path: path}
	var lines [][]byte
	sc := agentlog.NewScanner(f, 0, 0)
	for sc.Next() {
		l := sc.Line()
		data := bytes.Clone(l.Data)
		lines = append(lines, data)
		file.Records = append(file.Records, exchange.Import{Source: source, Session: session, File: path,
			Kind: exchange.ImportLine, Offset: l.Offset, Line: l.Number, Data: data})
	}
	if sc.Err() != nil {
		t.Fatal(sc.Err())
	}
	end, _ := sc.End()
	return file, lines, end
}

// ClaudeSession is the files of one golden Claude Code session, as
// bbengine import groups them.
type ClaudeSession struct {
	ID    string
	Files []File
	Lines [][]byte // every line of its .jsonl files
	Metas int
	Size  int64
}

// Claude reads the golden Claude Code logs under dir, grouped by
// session: a session's main file, its subagents directory, and the flat
// agent files whose sessionId names it, with the records' session set.
// It skips t when dir is missing.
func Claude(t testing.TB, dir string) []*ClaudeSession {
	t.Helper()
	if _, err := os.Stat(dir); err != nil {
		t.Skip("golden agent logs not found:", err)
	}
	byID := map[string]*ClaudeSession{}
	var metas []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch {
		case strings.HasSuffix(p, ".meta.json"):
			metas = append(metas, p)
		case strings.HasSuffix(p, ".jsonl"):
			file, lines, size := ReadLog(t, p, "claude", "")
			var first claude.Record
			for _, l := range lines {
				if r, err := claude.ParseLine(l); err == nil && r.SessionID != "" {
					first = r
					break
				}
			}
			id := claude.SessionID(p, first)
			if byID[id] == nil {
				byID[id] = &ClaudeSession{ID: id}
			}
			s := byID[id]
			s.Files = append(s.Files, file)
			s.Lines = append(s.Lines, lines...)
			s.Size += size
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A meta file belongs to the session of the agent file beside it.
	for _, m := range metas {
		sib := strings.TrimSuffix(m, ".meta.json") + ".jsonl"
		for _, s := range byID {
			if slices.ContainsFunc(s.Files, func(f File) bool { return f.Path == sib }) {
				data, err := os.ReadFile(m)
				if err != nil {
					t.Fatal(err)
				}
				s.Files = append(s.Files, File{Path: m, Records: []exchange.Import{{Source: "claude", File: m, Kind: exchange.ImportMeta, Data: data}}})
				s.Metas++
			}
		}
	}
	var out []*ClaudeSession
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		s := byID[id]
		for i := range s.Files {
			for j := range s.Files[i].Records {
				s.Files[i].Records[j].Session = "claude:" + id
			}
		}
		out = append(out, s)
	}
	return out
}

// CodexRollouts returns the golden Codex rollouts under dir, skipping t
// when there are none.
func CodexRollouts(t testing.TB, dir string) []string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(dir, "*", "rollout-*.jsonl"))
	if len(paths) == 0 {
		t.Skipf("no golden Codex rollouts under %s", dir)
	}
	return paths
}
