package gemini

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
)

// FuzzImportGemini derives a session from arbitrary lines (or an
// arbitrary document): it must not panic, and the census of its events
// must equal the source census.
func FuzzImportGemini(f *testing.F) {
	if b, err := os.ReadFile(fixture); err == nil {
		f.Add(b, false)
	}
	f.Add([]byte(legacyDoc), true)
	f.Add([]byte(`[{"sessionId":"s","messageId":0,"type":"user","message":"hi"}]`), true)
	f.Add([]byte(metaLine+"\n"+`{"id":"a","type":"user","content":"x"}`+"\n"+`{"$rewindTo":"a"}`+"\n"+`{"$set":{"messages":[{"id":"b","type":"gemini","content":[{"text":"t","thought":true}],"toolCalls":[{"id":"ls__1","name":"ls"}]}]}}`), false)
	f.Add([]byte(strings.Join(oddLines, "\n")), false)
	f.Fuzz(func(t *testing.T, data []byte, doc bool) {
		file := engine.ImportFile{Path: "/h/.gemini/tmp/p/chats/session-x.jsonl"}
		if doc {
			file.Path = "/h/.gemini/tmp/p/chats/session-x.json"
			file.Records = []engine.ImportRecord{{Import: exchange.Import{Kind: exchange.ImportDoc, Data: data}}}
		} else {
			for i, l := range bytes.Split(data, []byte("\n")) {
				if CheckLine(l) != nil {
					continue
				}
				file.Records = append(file.Records, engine.ImportRecord{Import: exchange.Import{Kind: exchange.ImportLine, Line: int64(i + 1), Data: l}, WAL: uint64(i + 1)})
			}
		}
		files := []engine.ImportFile{file}
		im, err := engine.DeriveImport(Source, "gemini:x", files)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := engine.Census(&im.Session, im.Events), engine.SourceCensus(Source, files); got != want {
			t.Errorf("census of the events %+v, of the source %+v", got, want)
		}
	})
}
