package codex

import (
	"encoding/json"
	"path/filepath"
	"strings"

	"github.com/bbengine/bbengine/codec/census"
	"github.com/bbengine/bbengine/codec/codex"
	"github.com/bbengine/bbengine/engine"
)

// The log format of source "codex": a line is a JSON object with a
// string "type", or a pre-envelope "record_type" or "id"
// (codex.CheckLine); the session of a rollout is named as fileSession
// says, and the data-loss check counts each file by codex.Count.
func init() {
	engine.RegisterLogFormat("codex", engine.LogFormat{CheckLine: codex.CheckLine, Session: fileSession, Census: countFiles})
}

// fileSession returns the session id of a rollout: the id of its first
// record when that is the session_meta, else the uuid that ends its name
// (rollout-YYYY-MM-DDThh-mm-ss-<uuid>), else its name.
func fileSession(path string, first []byte) string {
	var v struct {
		Type    string `json:"type"`
		Payload struct {
			ID string `json:"id"`
		} `json:"payload"`
	}
	if first != nil && json.Unmarshal(first, &v) == nil && v.Type == "session_meta" && v.Payload.ID != "" {
		return v.Payload.ID
	}
	stem := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".zst"), ".jsonl"), ".json")
	if len(stem) >= 36 && strings.HasPrefix(stem, "rollout-") {
		return stem[len(stem)-36:]
	}
	return ""
}

// countFiles sums codex.Count over the line records of each file.
func countFiles(files []engine.ImportFile) census.Counts {
	var total census.Counts
	for _, f := range files {
		lines := make([][]byte, 0, len(f.Records))
		for _, r := range f.Records {
			lines = append(lines, r.Data)
		}
		total.Add(codex.Count(lines))
	}
	return total
}
