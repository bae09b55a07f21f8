package cli

import (
	"slices"
	"testing"
)

// TestConvertSources: convert reads the logs of the registered agents
// that import them, then the formats read back, named as before.
func TestConvertSources(t *testing.T) {
	if got, want := convertSources(), []string{"claude", "codex", "gemini", "opencode", "atif", "bbox"}; !slices.Equal(got, want) {
		t.Fatalf("convert sources %q, want %q", got, want)
	}
	if got := orList(convertSources()); got != "claude, codex, gemini, opencode, atif or bbox" {
		t.Fatalf("listed as %q", got)
	}
}
