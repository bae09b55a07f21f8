package derive

// Helpers that read the golden agent logs into import files, for the
// pipeline's tests that derive sessions from them: a copy of the
// engine's (engine/agentlogs_test.go; a test of one package cannot use
// another's), one directory deeper. The importers themselves
// and their own tests live in agents/claude and agents/codex;
// importers_test.go links them into this test binary.

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/agentlog"
	"github.com/bbengine/bbengine/codec/claude"
	"github.com/bbengine/bbengine/codec/codex"
	"github.com/bbengine/bbengine/codec/exchange"
)

var claudeGolden = filepath.Join("..", "..", "..", "shared", "agentlogs-golden", "claude")

// claudeSession is the files of one golden session, as bbengine import
// groups them.
type claudeSession struct {
	id    string
	files []ImportFile
	lines [][]byte // every line of its .jsonl files
	metas int
	size  int64
}

// readLog reads a log file as import line records.
func readLog(t testing.TB, path, session string) (ImportFile, [][]byte, int64) {
	t.Helper()
	f, err := agentlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	file := ImportFile{Path: path}
	var lines [][]byte
	sc := agentlog.NewScanner(f, 0, 0)
	for sc.Next() {
		l := sc.Line()
		data := bytes.Clone(l.Data)
		lines = append(lines, data)
		file.Records = append(file.Records, ImportRecord{Import: exchange.Import{Source: "claude", Session: session, File: path,
			Kind: exchange.ImportLine, Offset: l.Offset, Line: l.Number, Data: data}})
	}
	if sc.Err() != nil {
		t.Fatal(sc.Err())
	}
	end, _ := sc.End()
	return file, lines, end
}

// goldenClaude groups the golden Claude Code files into sessions: a main
// file, its subagents directory, and the flat agent files whose sessionId
// names it.
func goldenClaude(t testing.TB) []*claudeSession {
	t.Helper()
	if _, err := os.Stat(claudeGolden); err != nil {
		t.Skip("golden agent logs not found:", err)
	}
	byID := map[string]*claudeSession{}
	get := func(id string) *claudeSession {
		if byID[id] == nil {
			byID[id] = &claudeSession{id: id}
		}
		return byID[id]
	}
	var metas []string
	err := filepath.WalkDir(claudeGolden, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch {
		case strings.HasSuffix(p, ".meta.json"):
			metas = append(metas, p)
		case strings.HasSuffix(p, ".jsonl"):
			file, lines, size := readLog(t, p, "")
			var first claude.Record
			for _, l := range lines {
				if r, err := claude.ParseLine(l); err == nil && r.SessionID != "" {
					first = r
					break
				}
			}
			s := get(claude.SessionID(p, first))
			s.files = append(s.files, file)
			s.lines = append(s.lines, lines...)
			s.size += size
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
			if slices.ContainsFunc(s.files, func(f ImportFile) bool { return f.Path == sib }) {
				data, err := os.ReadFile(m)
				if err != nil {
					t.Fatal(err)
				}
				s.files = append(s.files, ImportFile{Path: m, Records: []ImportRecord{{Import: exchange.Import{Source: "claude",
					File: m, Kind: exchange.ImportMeta, Data: data}}}})
				s.metas++
			}
		}
	}
	var out []*claudeSession
	for _, id := range sortedKeys(byID) {
		s := byID[id]
		for i := range s.files {
			for j := range s.files[i].Records {
				s.files[i].Records[j].Session = "claude:" + id
			}
		}
		out = append(out, s)
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func codexGolden(t testing.TB) []string {
	dir := filepath.Join("..", "..", "..", "shared", "agentlogs-golden", "codex")
	paths, _ := filepath.Glob(filepath.Join(dir, "*", "rollout-*.jsonl"))
	if len(paths) == 0 {
		t.Skipf("no golden Codex rollouts under %s", dir)
	}
	return paths
}

// readRollout reads a rollout through codec/agentlog, as the import
// does, into import records and raw lines.
func readRollout(t testing.TB, path string) (ImportFile, [][]byte) {
	f, err := agentlog.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := agentlog.NewScanner(f, 0, 0)
	file := ImportFile{Path: path}
	var lines [][]byte
	for sc.Next() {
		l := sc.Line()
		data := bytes.Clone(l.Data)
		lines = append(lines, data)
		file.Records = append(file.Records, ImportRecord{Import: exchange.Import{
			Source: "codex", File: path, Kind: exchange.ImportLine, Offset: l.Offset, Line: l.Number, Data: data,
		}, WAL: uint64(l.Number)})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return file, lines
}

func deriveRollout(t testing.TB, file ImportFile) *Imported {
	first, _ := codex.ParseLine(file.Records[0].Data)
	id := codex.SessionID(file.Path, first)
	im, err := DeriveImport("codex", "codex:"+id, []ImportFile{file})
	if err != nil {
		t.Fatal(err)
	}
	return im
}
