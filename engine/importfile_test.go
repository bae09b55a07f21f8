package engine

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/exchange"
)

// FuzzReadImport checks that reading any file for import never panics,
// imports only records CheckRecord passes, in file order, and accounts
// for every line it does not import.
func FuzzReadImport(f *testing.F) {
	for _, s := range []string{
		`{"type":"user","sessionId":"s"}` + "\n" + `{oops` + "\n[1]\n" + `{"type":"assistant"}`,
		`{"timestamp":"t","type":"session_meta","payload":{"id":"x"}}` + "\n" + `{"record_type":"state"}` + "\n" + `{"id":"h"}` + "\n\x00\x01\n",
		`{"schema_version":"ATIF-v1.6","steps":[]}`,
		strings.Repeat("[", 20000),
		"",
		"\n\n",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, src := range []struct{ source, name string }{{"claude", "s.jsonl"}, {"codex", "rollout-x.jsonl"}, {"atif", "t.json"}, {"claude", "subagents/agent-a.meta.json"}} {
			p := filepath.Join(dir, src.name)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			fi, err := ReadImport(src.source, p, nil)
			if err != nil {
				t.Fatalf("%s: %v", src.source, err)
			}
			if int64(len(fi.Problems)) > fi.Unreadable || len(fi.Problems) > maxProblems {
				t.Fatalf("%s: %d problems listed, %d counted", src.source, len(fi.Problems), fi.Unreadable)
			}
			last := int64(-1)
			for _, r := range fi.Records {
				if err := CheckRecord(src.source, fi.Kind, r.Data); err != nil {
					t.Fatalf("%s: imported %q: %v", src.source, r.Data, err)
				}
				if r.Offset <= last && fi.Kind == exchange.ImportLine {
					t.Fatalf("%s: records out of order", src.source)
				}
				last = r.Offset
			}
			if fi.Kind != exchange.ImportLine {
				continue
			}
			lines := int64(0)
			for _, l := range bytes.Split(data, []byte("\n")) {
				if len(bytes.TrimSpace(l)) > 0 {
					lines++
				}
			}
			if got := int64(len(fi.Records)) + fi.Unreadable; got > lines || fi.Tail == 0 && got != lines {
				t.Fatalf("%s: %d records + %d skipped for %d lines (tail %d)", src.source, len(fi.Records), fi.Unreadable, lines, fi.Tail)
			}
		}
	})
}
