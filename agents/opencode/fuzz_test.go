package opencode

import (
	"bytes"
	"testing"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
)

// FuzzImportOpencode derives a session from arbitrary records, one per
// line (rows, or a file of the JSON tree when tree is set): it must not
// panic, and the census of its events must equal the source census.
func FuzzImportOpencode(f *testing.F) {
	f.Add([]byte(`{"table":"db","created":1,"migration":"m"}
{"table":"session","id":"ses_1","title":"t","children":[{"id":"ses_2","agent":"general"}],"message_ids":["msg_1","msg_2"]}
{"table":"message","id":"msg_1","session_id":"ses_1","time_created":1,"data":{"role":"user","time":{"created":1}}}
{"table":"part","id":"prt_1","message_id":"msg_1","data":{"type":"text","text":"hi"}}
{"table":"part","id":"prt_2","message_id":"msg_1","data":{"type":"file","mime":"image/png","url":"data:x"}}
{"table":"message","id":"msg_2","session_id":"ses_1","time_created":2,"data":{"role":"assistant","time":{"created":2},"tokens":{"input":1},"error":{"name":"APIError","data":{"statusCode":500}}}}
{"table":"part","id":"prt_3","message_id":"msg_2","data":{"type":"tool","callID":"c","tool":"task","state":{"status":"completed","metadata":{"sessionId":"ses_2"}}}}
{"table":"part","id":"prt_4","message_id":"msg_2","data":{"type":"retry","error":{"name":"APIError"}}}
{"table":"message","id":"msg_3","session_id":"ses_1","time_created":3,"data":{"role":"user"}}
{"table":"session_message","id":"msg_4","type":"assistant","seq":3,"data":{"content":[{"type":"tool","id":"c2","state":{"status":"error"}},{"type":"x"}],"tokens":{"output":2}}}
{"table":"session_message","id":"msg_5","type":"user","seq":2,"data":{"text":"go"}}
{"table":"part","id":"prt_5","message_id":"msg_9","data":"not an object"}`), false)
	f.Add([]byte(`{"id":"ses_1","title":"t","time":{"created":1}}`), true)
	f.Add([]byte(`{"role":"assistant","summary":true,"time":{"created":1,"completed":2}}`), true)
	f.Fuzz(func(t *testing.T, data []byte, tree bool) {
		var files []engine.ImportFile
		if tree {
			for i, p := range []string{"/d/storage/session/p/ses_1.json", "/d/storage/message/ses_1/msg_1.json", "/d/storage/part/msg_1/prt_1.json"} {
				files = append(files, engine.ImportFile{Path: p, Records: []engine.ImportRecord{{Import: exchange.Import{File: p, Kind: exchange.ImportDoc, Data: data}, WAL: uint64(i + 1)}}})
			}
		} else {
			f := engine.ImportFile{Path: "/d/opencode.db#ses_1"}
			for i, l := range bytes.Split(data, []byte("\n")) {
				f.Records = append(f.Records, engine.ImportRecord{Import: exchange.Import{File: f.Path, Kind: exchange.ImportRow, Data: l}, WAL: uint64(i + 1)})
			}
			files = append(files, f)
		}
		im, err := engine.DeriveImport(Source, "opencode:ses_1", files)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := engine.Census(&im.Session, im.Events), engine.SourceCensus(Source, files); got != want {
			t.Errorf("census of the events %+v, of the source %+v", got, want)
		}
	})
}
