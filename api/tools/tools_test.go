package tools

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/engine"
)

// TestBoundArtifact checks the caps memory_get applies to a big
// artifact.
func TestBoundArtifact(t *testing.T) {
	a := engine.Artifact{ID: "abc", Text: strings.Repeat("é", maxArtifactText), Outcome: &engine.Outcome{}}
	for i := range 40 {
		a.Evidence = append(a.Evidence, engine.Evidence{Seq: uint64(i + 1)})
		a.Files = append(a.Files, fmt.Sprintf("f%d.go", i))
		a.Outcome.Summary = append(a.Outcome.Summary, "did a thing")
	}
	b, cut := BoundArtifact(a)
	if len(b.Text) > maxArtifactText || !strings.HasSuffix(b.Text, "…[cut]") || !strings.HasPrefix(b.Text, "éé") {
		t.Errorf("text: %d bytes, ends %q", len(b.Text), b.Text[len(b.Text)-12:])
	}
	if len(b.Evidence) != maxEvidence || b.Evidence[0].Seq != 1 || b.Evidence[maxEvidence-1].Seq != 40 {
		t.Errorf("evidence: %d entries, %d to %d", len(b.Evidence), b.Evidence[0].Seq, b.Evidence[len(b.Evidence)-1].Seq)
	}
	if len(b.Files) != maxListed || len(b.Outcome.Summary) != maxListed || len(a.Outcome.Summary) != 40 || len(a.Evidence) != 40 {
		t.Errorf("lists: files %d summary %d (original %d, %d)", len(b.Files), len(b.Outcome.Summary), len(a.Outcome.Summary), len(a.Evidence))
	}
	want := []string{"text: the first 8192 of 16384 bytes", "evidence: the first 6 and the last 6 of 40 events", "files: the first 30 of 40",
		"outcome.summary: the first 30 of 40", "bbengine mem get abc --json prints the whole artifact"}
	if !slices.Equal(cut, want) {
		t.Errorf("truncated:\n%q\nwant\n%q", cut, want)
	}
	if _, cut := BoundArtifact(engine.Artifact{ID: "x", Text: "small"}); cut != nil {
		t.Errorf("a small artifact was cut: %v", cut)
	}
}
