package codex

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/bbengine/bbengine/codec/codex"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
)

// FuzzImportCodex derives a session from arbitrary rollout lines: it
// must not panic, the census of its events must equal the source
// census, and it mints no model call beyond the responses the census
// counts.
func FuzzImportCodex(f *testing.F) {
	if b, err := os.ReadFile(fixture0169); err == nil {
		f.Add(b)
	}
	dir := filepath.Join("..", "..", "..", "shared", "agentlogs-golden", "codex", "madshn-localpush")
	if b, err := os.ReadFile(filepath.Join(dir, "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl")); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file := engine.ImportFile{Path: "/h/.codex/sessions/2026/11/27/rollout-2026-11-27T17-13-55-01a21dff-d575-7003-9b96-4b029ce49315.jsonl"}
		for i, l := range bytes.Split(data, []byte("\n")) {
			if codex.CheckLine(l) != nil {
				continue
			}
			file.Records = append(file.Records, engine.ImportRecord{Import: exchange.Import{Kind: exchange.ImportLine, Line: int64(i + 1), Data: l}, WAL: uint64(i + 1)})
		}
		files := []engine.ImportFile{file}
		im, err := engine.DeriveImport("codex", "codex:x", files)
		if err != nil {
			t.Fatal(err)
		}
		got, want := engine.Census(&im.Session, im.Events), engine.SourceCensus("codex", files)
		if got != want {
			t.Errorf("census of the events %+v, of the source %+v", got, want)
		}
		if int64(im.Session.Requests) != want.Responses {
			t.Errorf("%d model calls for %d responses", im.Session.Requests, want.Responses)
		}
	})
}
