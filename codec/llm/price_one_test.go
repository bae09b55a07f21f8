package llm

import "testing"

// TestPriceOfIsTheUsageTable: the circuit breaker's budgets and memory's
// outcome costs (PriceOf) price a call as bbengine usage does (the
// built-in table's Lookup): one price per model, and a model the table
// does not know is unpriced everywhere, not priced by a neighbour's
// prefix.
func TestPriceOfIsTheUsageTable(t *testing.T) {
	for _, m := range []string{"claude-opus-4-7", "gemini-2.5-flash-lite", "o3-pro", "gpt-5.1-codex-max", "claude-sonnet-4-6", "claude-sonnet-4-5-20250929", "anthropic/claude-haiku-4-5"} {
		got, okGot := PriceOf(m, nil)
		want, _, okWant := BuiltinPrices().Lookup(m)
		if okGot != okWant || got != want {
			t.Errorf("%s: PriceOf %v %+v, usage's table %v %+v", m, okGot, got, okWant, want)
		}
	}
	// A configured table still wins, by prefix.
	if p, ok := PriceOf("claude-opus-4-7", map[string]Price{"claude-opus": {Input: 1, Output: 2}}); !ok || p.Input != 1 {
		t.Errorf("configured price not taken: %+v %v", p, ok)
	}
}
