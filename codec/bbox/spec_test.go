package bbox

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// sharedDir is the team's shared folder of specs and data, next to the
// repository. Tests that read it skip when it is missing.
func sharedDir(t testing.TB) string {
	t.Helper()
	d := filepath.Join("..", "..", "..", "shared")
	if _, err := os.Stat(filepath.Join(d, "spec", "bbox-format.md")); err != nil {
		t.Skipf("shared specs not found at %s: %v", d, err)
	}
	return d
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden file:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

// report renders a document's diagnostics, canonical and compact forms
// and JSONL, for golden files.
func report(t *testing.T, name string, doc *Document) []byte {
	t.Helper()
	var out bytes.Buffer
	out.WriteString("## diagnostics\n")
	for _, d := range Validate(doc, name) {
		fmt.Fprintln(&out, d)
	}
	out.WriteString("## canonical\n")
	if err := Write(&out, doc, Canonical); err != nil {
		t.Fatalf("%s: write: %v", name, err)
	}
	out.WriteString("## compact\n")
	if err := Write(&out, doc, Compact); err != nil {
		t.Fatalf("%s: write compact: %v", name, err)
	}
	out.WriteString("## jsonl\n")
	if err := WriteJSONL(&out, doc); err != nil {
		t.Fatalf("%s: write jsonl: %v", name, err)
	}
	return out.Bytes()
}

// roundTrip checks every lossless property on a parsed document: canonical,
// compact (minus blank lines) and JSONL forms all read back equal.
func roundTrip(t *testing.T, name string, doc *Document) {
	t.Helper()
	var canon bytes.Buffer
	if err := Write(&canon, doc, Canonical); err != nil {
		t.Fatalf("%s: Write: %v", name, err)
	}
	back, err := Parse(bytes.NewReader(canon.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(doc) {
		t.Fatalf("%s: Parse(Write(doc)) != doc\ncanonical:\n%s", name, canon.String())
	}
	var again bytes.Buffer
	if err := Write(&again, back, Canonical); err != nil {
		t.Fatal(err)
	}
	if again.String() != canon.String() {
		t.Fatalf("%s: canonical form not stable:\n%s\n---\n%s", name, canon.String(), again.String())
	}
	var compact bytes.Buffer
	if err := Write(&compact, doc, Compact); err != nil {
		t.Fatal(err)
	}
	cdoc, err := Parse(bytes.NewReader(compact.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !cdoc.Equal(withoutBlanks(doc)) {
		t.Fatalf("%s: compact form loses content:\n%s", name, compact.String())
	}
	var jl bytes.Buffer
	if err := WriteJSONL(&jl, doc); err != nil {
		t.Fatal(err)
	}
	jdoc, err := ReadJSONL(bytes.NewReader(jl.Bytes()), name)
	if err != nil {
		t.Fatalf("%s: ReadJSONL: %v\n%s", name, err, jl.String())
	}
	if !jdoc.Equal(doc) {
		t.Fatalf("%s: JSONL round trip differs:\n%s", name, jl.String())
	}
}

func withoutBlanks(d *Document) *Document {
	out := &Document{}
	if d.Header != nil {
		h := &Header{Closed: d.Header.Closed}
		for _, l := range d.Header.Lines {
			if l.Kind != HeaderBlank {
				h.Lines = append(h.Lines, l)
			}
		}
		out.Header = h
	}
	for i, l := range d.Lines {
		if l.Kind != KindBlank || keepBlank(d, i) {
			out.Lines = append(out.Lines, l)
		}
	}
	return out
}

// TestSpecExamples parses every bbox example of the spec and the converter
// plan: none has a validation error, all round-trip, and the diagnostics
// and outputs match the golden files.
func TestSpecExamples(t *testing.T) {
	dir := sharedDir(t)
	for _, spec := range []string{"bbox-format.md", "claude-code-converter-plan.md"} {
		md, err := os.ReadFile(filepath.Join(dir, "spec", spec))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, b := range MarkdownBlocks(string(md)) {
			n++
			name := fmt.Sprintf("%s@%d", spec, b.Line)
			t.Run(fmt.Sprintf("%s/line=%d", strings.TrimSuffix(spec, ".md"), b.Line), func(t *testing.T) {
				doc, err := Parse(strings.NewReader(b.Text))
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range Validate(doc, name) {
					if d.Severity == Error {
						t.Errorf("spec example has an error: %v", d)
					}
				}
				roundTrip(t, name, doc)
				golden(t, fmt.Sprintf("spec/%s-%04d.golden", strings.TrimSuffix(spec, ".md"), b.Line), report(t, name, doc))
			})
		}
		if n == 0 {
			t.Fatalf("%s: found no bbox examples", spec)
		}
	}
}

// TestSpecJSONL reads the spec's JSONL example.
func TestSpecJSONL(t *testing.T) {
	dir := sharedDir(t)
	md, err := os.ReadFile(filepath.Join(dir, "spec", "bbox-format.md"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, b := range strings.Split(string(md), "```jsonl\n")[1:] {
		b = b[:strings.Index(b, "```")]
		found = true
		doc, err := ReadJSONL(strings.NewReader(b), "spec.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(doc.Lines), strings.Count(strings.TrimSpace(b), "\n")+1; got != want {
			t.Fatalf("got %d lines, want %d", got, want)
		}
		for _, d := range Validate(doc, "spec.jsonl") {
			if d.Severity == Error {
				t.Errorf("error: %v", d)
			}
		}
		roundTrip(t, "spec.jsonl", doc)
		golden(t, "spec/jsonl-example.golden", report(t, "spec.jsonl", doc))
	}
	if !found {
		t.Fatal("no jsonl example in the spec")
	}
}
