package derive

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/agentlog"
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

// TestScanImportStreams checks that ScanImport hands over the records
// ReadImport returns, in order, in chunks of bounded size, whatever the
// file's size, and stops at an error of its emit function.
func TestScanImportStreams(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "s.jsonl")
	var b bytes.Buffer
	for i := range 6000 {
		switch {
		case i%1000 == 7:
			b.WriteString("{not json\n")
		case i == 3000:
			fmt.Fprintf(&b, `{"type":"user","sessionId":"s","big":"%s"}`+"\n", strings.Repeat("b", 3<<20))
		default:
			fmt.Fprintf(&b, `{"type":"user","sessionId":"s","n":%d,"pad":"%s"}`+"\n", i, strings.Repeat("p", 1000))
		}
	}
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := ReadImport("claude", p, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []exchange.Import
	chunks := 0
	fi, err := ScanImport("claude", p, nil, func(recs []exchange.Import) error {
		chunks++
		size := 0
		for _, r := range recs {
			size += len(r.Data)
			if r.Session != "claude:s" {
				t.Fatalf("record at byte %d has session %q, want claude:s", r.Offset, r.Session)
			}
		}
		if size > importChunk+3<<20+100 {
			t.Errorf("a chunk of %d bytes", size)
		}
		got = append(got, recs...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(fi.Records) != 0 {
		t.Errorf("ScanImport kept %d records", len(fi.Records))
	}
	if chunks < 6 {
		t.Errorf("%d chunks for %d MiB", chunks, b.Len()>>20)
	}
	if len(got) != len(want.Records) || len(got) != 6000-6 {
		t.Fatalf("%d records streamed, ReadImport read %d, want %d", len(got), len(want.Records), 6000-6)
	}
	for i := range got {
		if got[i].Offset != want.Records[i].Offset || got[i].Line != want.Records[i].Line || !bytes.Equal(got[i].Data, want.Records[i].Data) {
			t.Fatalf("record %d differs: line %d vs %d", i, got[i].Line, want.Records[i].Line)
		}
	}
	if fi.Unreadable != 6 || want.Unreadable != 6 || fi.Bytes != want.Bytes || fi.Session != want.Session {
		t.Errorf("ScanImport: %d unreadable, %d bytes, session %s; ReadImport: %d, %d, %s", fi.Unreadable, fi.Bytes, fi.Session, want.Unreadable, want.Bytes, want.Session)
	}
	stop := errors.New("stop")
	n := 0
	if _, err := ScanImport("claude", p, nil, func(recs []exchange.Import) error { n++; return stop }); !errors.Is(err, stop) || n != 1 {
		t.Errorf("emit's error: got %v after %d chunks, want stop after 1", err, n)
	}
}

// TestScanImportLineTooLong checks that a line longer than the scanner
// reads is a problem naming the file and the line, and that the records
// around it are imported.
func TestScanImportLineTooLong(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 64 MiB line")
	}
	p := filepath.Join(t.TempDir(), "s.jsonl")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, `{"type":"user","sessionId":"s","n":1}`)
	fmt.Fprintf(f, `{"type":"user","big":"%s"}`+"\n", strings.Repeat("x", agentlog.MaxLine))
	fmt.Fprintln(f, `{"type":"user","sessionId":"s","n":3}`)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	var lines []int64
	fi, err := ScanImport("claude", p, nil, func(recs []exchange.Import) error {
		for _, r := range recs {
			lines = append(lines, r.Line)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(lines, []int64{1, 3}) {
		t.Errorf("imported lines %v, want [1 3]", lines)
	}
	if fi.Unreadable != 1 || len(fi.Problems) != 1 {
		t.Fatalf("%d unreadable, problems %v; want the long line", fi.Unreadable, fi.Problems)
	}
	msg := fi.Problems[0].String()
	if !strings.HasPrefix(msg, p+":2: ") || !strings.Contains(msg, "longer than 64 MiB") {
		t.Errorf("problem %q, want %s:2: … longer than 64 MiB", msg, p)
	}
}
