package derive

// Helpers that read the golden agent logs into import files, for the
// pipeline's tests that derive sessions from them: a copy of the
// engine's (engine/agentlogs_test.go; a test of one package cannot use
// another's), one directory deeper. The importers themselves
// and their own tests live in agents/claude and agents/codex;
// importers_test.go links them into this test binary.

import (
	"testing"

	"github.com/bbengine/bbengine/codec/agentlog/agentlogtest"
	"github.com/bbengine/bbengine/codec/codex"
)

var claudeGolden = agentlogtest.Golden(2, "claude")

// claudeSession is the files of one golden session, as bbengine import
// groups them (codec/agentlog/agentlogtest reads them).
type claudeSession struct {
	id    string
	files []ImportFile
	lines [][]byte // every line of its .jsonl files
	metas int
	size  int64
}

// importFile wraps a golden file's records into an import file; with
// lineWAL the records' WAL offsets are their line numbers.
func importFile(f agentlogtest.File, lineWAL bool) ImportFile {
	file := ImportFile{Path: f.Path}
	for _, r := range f.Records {
		rec := ImportRecord{Import: r}
		if lineWAL {
			rec.WAL = uint64(r.Line)
		}
		file.Records = append(file.Records, rec)
	}
	return file
}

// readLog reads a Claude Code log file as import line records.
func readLog(t testing.TB, path, session string) (ImportFile, [][]byte, int64) {
	t.Helper()
	f, lines, end := agentlogtest.ReadLog(t, path, "claude", session)
	return importFile(f, false), lines, end
}

// goldenClaude reads the golden Claude Code logs, grouped by session.
func goldenClaude(t testing.TB) []*claudeSession {
	t.Helper()
	var out []*claudeSession
	for _, g := range agentlogtest.Claude(t, claudeGolden) {
		s := &claudeSession{id: g.ID, lines: g.Lines, metas: g.Metas, size: g.Size}
		for _, f := range g.Files {
			s.files = append(s.files, importFile(f, false))
		}
		out = append(out, s)
	}
	return out
}

func codexGolden(t testing.TB) []string {
	return agentlogtest.CodexRollouts(t, agentlogtest.Golden(2, "codex"))
}

// readRollout reads a rollout as the import does, into import records
// and raw lines.
func readRollout(t testing.TB, path string) (ImportFile, [][]byte) {
	t.Helper()
	f, lines, _ := agentlogtest.ReadLog(t, path, "codex", "")
	return importFile(f, true), lines
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
