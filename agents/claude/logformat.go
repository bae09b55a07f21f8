package claude

import (
	"bytes"
	"encoding/json"
	"path"
	"path/filepath"

	"github.com/bbengine/bbengine/codec/census"
	"github.com/bbengine/bbengine/codec/claude"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
)

// The log format of source "claude": a line is a JSON object with a
// string "type" (claude.CheckLine), the session of a file is named as
// fileSession says, and the data-loss check counts by countFiles.
func init() {
	engine.RegisterLogFormat("claude", engine.LogFormat{CheckLine: claude.CheckLine, Session: fileSession, Census: countFiles})
}

// fileSession returns the session id of a Claude Code file: a file under
// <sid>/subagents/ or <sid>/tool-results/ is of <sid>; any other of the
// sessionId of its first record, else of its name.
func fileSession(p string, first []byte) string {
	dir := filepath.Base(filepath.Dir(p))
	if dir == "subagents" || dir == "tool-results" {
		return filepath.Base(filepath.Dir(filepath.Dir(p)))
	}
	var v struct {
		SessionID string `json:"sessionId"`
	}
	if first != nil && json.Unmarshal(first, &v) == nil && v.SessionID != "" {
		return v.SessionID
	}
	return ""
}

// countFiles counts a Claude Code session's files: its JSONL files by
// claude.Count; a subagent's .meta.json is one kept record, and so is a
// spilled tool output no result names in its persistedOutputPath (one
// that is named becomes that result's text).
func countFiles(files []engine.ImportFile) census.Counts {
	var lineFiles []engine.ImportFile
	var total census.Counts
	for _, f := range files {
		if len(f.Records) > 0 && f.Records[0].Kind == exchange.ImportLine {
			lineFiles = append(lineFiles, f)
		}
	}
	total.Add(countLines(lineFiles))
	for _, f := range files {
		for _, r := range f.Records {
			switch r.Kind {
			case exchange.ImportMeta:
				total.Records++
				total.Kept++
			case exchange.ImportSpill:
				total.Records++
				if !spillNamed(lineFiles, filepath.Base(f.Path)) {
					total.Kept++
				}
			}
		}
	}
	return total
}

func spillNamed(files []engine.ImportFile, name string) bool {
	for _, f := range files {
		for _, r := range f.Records {
			if i := bytes.Index(r.Data, []byte(`"persistedOutputPath":"`)); i >= 0 {
				rest := r.Data[i+len(`"persistedOutputPath":"`):]
				if j := bytes.IndexByte(rest, '"'); j >= 0 && path.Base(string(rest[:j])) == name {
					return true
				}
			}
		}
	}
	return false
}

// countLines sums claude.Count over the line records of each file.
func countLines(files []engine.ImportFile) census.Counts {
	var total census.Counts
	for _, f := range files {
		lines := make([][]byte, 0, len(f.Records))
		for _, r := range f.Records {
			lines = append(lines, r.Data)
		}
		total.Add(claude.Count(lines))
	}
	return total
}
