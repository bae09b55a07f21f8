package index

import (
	"testing"

	"github.com/bbengine/bbengine/engine"
)

// TestIntentOf: a question's form names the type it asks for; a
// question about a choice or a rule names none.
func TestIntentOf(t *testing.T) {
	for q, want := range map[string]engine.ArtifactType{
		"how did we fix the flaky upload test?":             engine.ArtifactOutcome,
		"Does the migration test pass now?":                 engine.ArtifactOutcome,
		"How long does the nightly export take now?":        engine.ArtifactOutcome,
		"Where is the retry policy configured?":             engine.ArtifactOutcome,
		"which config file holds the model settings?":       engine.ArtifactOutcome,
		"The upload test timed out — fixed?":                engine.ArtifactThread,
		"the deploy job keeps failing — what's the status?": engine.ArtifactThread,
		"Which queue library do we use?":                    "",
		"What are the rules for editing invoices?":          "",
	} {
		if got := intentOf(q); got != want {
			t.Errorf("intentOf(%q) = %q, want %q", q, got, want)
		}
	}
}
