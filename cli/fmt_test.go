package cli

import (
	"os"
	"strings"
	"testing"
)

// TestFmtRefusesMalformed checks that fmt refuses what validate finds
// errors in: it names each error as file:line:col, prints nothing, and
// with -w leaves the file as it was.
func TestFmtRefusesMalformed(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, body string
		diags      []string
	}{
		{"bad header line", "---\nformat: bbox/1\nid x\nrepo_sha: abcdef1\n---\nu: hello\nt!: bad id=1\n",
			[]string{`FILE:3:1: error E102: header line is not "key: value": "id x"`, `FILE:5:1: error E103: header is missing required key "id"`}},
		{"unclosed header", "---\nformat: bbox/1\nid: s\nu: hi\n", []string{"FILE:1:1: error E101"}},
		{"unknown call id", "---\nformat: bbox/1\nid: s\nrepo_sha: abcdef1\n---\no: id=x → y\n", []string{"FILE:6:", "error E201"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, dir, strings.ReplaceAll(tt.name, " ", "_")+".bbox", tt.body)
			for _, args := range [][]string{{"fmt", p}, {"fmt", "--compact", p}, {"fmt", "--jsonl", p}, {"fmt", "-w", p}} {
				out, errs, code := run(t, args...)
				if code != 1 || out != "" {
					t.Fatalf("%v: exit %d, stdout %q; want 1 and nothing\n%s", args, code, out, errs)
				}
				for _, d := range tt.diags {
					if d = strings.ReplaceAll(d, "FILE", p); !strings.Contains(errs, d) {
						t.Errorf("%v: no %q in\n%s", args, d, errs)
					}
				}
				if !strings.Contains(errs, "bbengine: fmt: "+p+" is not valid bbox") {
					t.Errorf("%v: no summary in\n%s", args, errs)
				}
				if b, err := os.ReadFile(p); err != nil || string(b) != tt.body {
					t.Fatalf("%v changed the file: %q, %v", args, b, err)
				}
			}
		})
	}
	// Warnings (a fragment, an unknown prefix) are no reason to refuse.
	p := writeFile(t, dir, "frag.bbox", "u: hi\nzz: what\n")
	if out, errs, code := run(t, "fmt", p); code != 0 || !strings.Contains(out, "u: hi") {
		t.Fatalf("fragment: exit %d\n%s%s", code, out, errs)
	}
}
