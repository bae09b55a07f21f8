package bbox

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// seedFuzz adds the spec examples (when the shared folder is present) and
// a few tricky documents to f's corpus; testdata/fuzz holds more.
func seedFuzz(f *testing.F) {
	for _, s := range []string{
		hdr + "u: hi\nt:read id=c1 a.go → [ok]\n  line\no: id=c1 → done\n",
		"t:echo \"a → b\" -> c\n\n  orphan\n# t=00:00:01\n",
		"---\nformat: bbox/1\n  nested\njunk\n",
		"u:x\r\n\tcont\r\n  \r\n",
	} {
		f.Add([]byte(s))
	}
	md, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "spec", "bbox-format.md"))
	if err != nil {
		return
	}
	for _, b := range MarkdownBlocks(string(md)) {
		f.Add([]byte(b.Text))
	}
}

// FuzzParse: arbitrary input never panics; parse → write → parse gives an
// equal document and a stable canonical form; validation never panics.
func FuzzParse(f *testing.F) {
	seedFuzz(f)
	f.Fuzz(func(t *testing.T, in []byte) {
		doc, err := ParseBytes(in)
		if err != nil {
			t.Fatal(err)
		}
		Validate(doc, "fuzz")
		ComputeStats(doc)
		var out bytes.Buffer
		if err := Write(&out, doc, Canonical); err != nil {
			t.Fatalf("Write of a parsed document failed: %v", err)
		}
		back, err := ParseBytes(out.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if !back.Equal(doc) {
			t.Fatalf("Parse(Write(Parse(x))) != Parse(x)\ninput %q\ncanonical %q", in, out.String())
		}
		var again bytes.Buffer
		if err := Write(&again, back, Canonical); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again.Bytes(), out.Bytes()) {
			t.Fatalf("canonical form not stable: %q vs %q", out.String(), again.String())
		}
		var compact bytes.Buffer
		if err := Write(&compact, doc, Compact); err != nil {
			t.Fatalf("compact: %v", err)
		}
		cdoc, _ := ParseBytes(compact.Bytes())
		if !cdoc.Equal(withoutBlanks(doc)) {
			t.Fatalf("compact form loses content: %q", compact.String())
		}
		if utf8.Valid(in) {
			var jl bytes.Buffer
			if err := WriteJSONL(&jl, doc); err != nil {
				t.Fatal(err)
			}
			jdoc, err := ReadJSONL(&jl, "fuzz")
			if err != nil {
				t.Fatalf("ReadJSONL of WriteJSONL output: %v", err)
			}
			if !jdoc.Equal(doc) {
				t.Fatalf("JSONL round trip differs for %q", in)
			}
		}
	})
}

// FuzzRoundTrip builds a document from arbitrary parts, not from text: a
// well-formed one (Check passes) must read back equal from all three
// forms, and Write must refuse exactly the ones Check refuses.
func FuzzRoundTrip(f *testing.F) {
	f.Add(uint8(3), "read", `a.go x="1 2"`, true, "[ok] → more", "cont\x00two", "id", "s1")
	f.Add(uint8(1), "", "hello step=1", false, "", "", "format", "bbox/1")
	f.Add(uint8(17), "", "  orphan", false, "", "", "extra.k", "v")
	f.Add(uint8(16), "", "metrics step=3 prompt=5", false, "", "", "", "")
	f.Fuzz(func(t *testing.T, kind uint8, name, body string, arrow bool, result, more, hkey, hval string) {
		l := Line{Kind: Kind(kind % uint8(kindN)), Name: name, Body: body, Arrow: arrow, Result: result}
		if more != "" {
			l.More = strings.Split(more, "\x00")
		}
		doc := &Document{Lines: []Line{l, {Kind: KindUser, Body: "after"}}}
		if hkey != "" {
			doc.Header = &Header{Closed: true, Lines: []HeaderLine{{Kind: HeaderPair, Key: hkey, Value: hval}}}
		}
		var out bytes.Buffer
		checkErr := doc.Check()
		writeErr := Write(&out, doc, Canonical)
		if (checkErr == nil) != (writeErr == nil) {
			t.Fatalf("Check = %v but Write = %v", checkErr, writeErr)
		}
		if checkErr != nil {
			return
		}
		back, err := ParseBytes(out.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if !back.Equal(doc) {
			t.Fatalf("Parse(Write(doc)) != doc\ndoc  %+v\ntext %q\nback %+v", doc.Lines, out.String(), back.Lines)
		}
		var compact bytes.Buffer
		if err := Write(&compact, doc, Compact); err != nil {
			t.Fatal(err)
		}
		if cdoc, _ := ParseBytes(compact.Bytes()); !cdoc.Equal(withoutBlanks(doc)) {
			t.Fatalf("compact differs: %q", compact.String())
		}
		valid := true
		for _, s := range []string{name, body, result, more, hkey, hval} {
			valid = valid && utf8.ValidString(s) && !strings.ContainsRune(s, utf8.RuneError)
		}
		if valid {
			var jl bytes.Buffer
			if err := WriteJSONL(&jl, doc); err != nil {
				t.Fatal(err)
			}
			jdoc, err := ReadJSONL(&jl, "fuzz")
			if err != nil {
				t.Fatal(err)
			}
			if !jdoc.Equal(doc) {
				t.Fatalf("JSONL differs: %q", jl.String())
			}
		}
	})
}
