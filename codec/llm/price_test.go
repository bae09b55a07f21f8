package llm_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/llm"
)

func TestBuiltinPrices(t *testing.T) {
	p := llm.BuiltinPrices()
	if p.Date == "" || len(p.Models) < 20 || p.File == "" {
		t.Fatalf("built-in table: date %q, %d models, file %q", p.Date, len(p.Models), p.File)
	}
	for name, pr := range p.Models {
		if pr.Input <= 0 || pr.Output <= 0 {
			t.Errorf("%s: input %v, output %v: a list price is never free", name, pr.Input, pr.Output)
		}
	}
}

func TestPricesLookup(t *testing.T) {
	p := llm.BuiltinPrices()
	tests := []struct {
		model, entry string // entry "" = unpriced
	}{
		{"claude-opus-4-7", "claude-opus-4-7"},
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"claude-sonnet-4-20250514", "claude-sonnet-4"},
		{"Claude-Sonnet-4-20250514", "claude-sonnet-4"},
		{"anthropic/claude-haiku-4-5", "claude-haiku-4-5"},
		{"claude-opus-4-6[1m]", "claude-opus-4-6"},
		{"claude-3-5-sonnet-latest", "claude-3-5-sonnet"},
		{"claude-opus-4@20250514", "claude-opus-4"},
		{"gpt-5-2025-08-07", "gpt-5"},
		{"gpt-5", "gpt-5"},
		// Never priced as a neighbour.
		{"claude-opus-4-9", ""},
		{"claude-sonnet-4-5-foo", ""},
		{"gpt-5.3-codex", "gpt-5.3-codex"},
		{"gpt-5.3", ""},
		{"gpt-5.6-codex", ""},
		{"gpt-5-turbo", ""},
		{"<synthetic>", ""},
		{"unknown", ""},
		{"", ""},
	}
	for _, tt := range tests {
		_, entry, ok := p.Lookup(tt.model)
		if entry != tt.entry || ok != (tt.entry != "") {
			t.Errorf("Lookup(%q) = %q, %v; want %q", tt.model, entry, ok, tt.entry)
		}
	}
}

// TestCostCountsCacheOnce: llm.Usage.Input includes cache reads and
// writes; each token is priced once, at its own rate.
func TestCostCountsCacheOnce(t *testing.T) {
	p := llm.Price{Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25, CacheWrite1h: 10}
	tests := []struct {
		name string
		u    llm.Usage
		want float64 // dollars
	}{
		{"plain", llm.Usage{Input: 1e6, Output: 1e6}, 5 + 25},
		{"reads", llm.Usage{Input: 1e6, CacheRead: 1e6}, 0.5},
		{"writes", llm.Usage{Input: 2e6, CacheCreation: 1e6}, 5 + 6.25},
		{"1h writes", llm.Usage{Input: 2e6, CacheCreation: 2e6, CacheCreation1h: 1e6, CacheCreation5m: 1e6}, 6.25 + 10},
		{"all", llm.Usage{Input: 4e6, CacheRead: 2e6, CacheCreation: 1e6, Output: 1e6}, 5 + 1 + 6.25 + 25},
		// A provider that reports more cache than input (inconsistent):
		// plain input is never negative.
		{"clamped", llm.Usage{Input: 1, CacheRead: 1e6}, 0.5},
	}
	for _, tt := range tests {
		if got := p.Cost(tt.u); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: Cost = %v, want %v", tt.name, got, tt.want)
		}
	}
	// No 1-hour price: 1-hour writes at the write price; no write price:
	// writes at the input price.
	q := llm.Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	if got := q.Cost(llm.Usage{Input: 1e6, CacheCreation: 1e6, CacheCreation1h: 1e6}); math.Abs(got-3.75) > 1e-9 {
		t.Errorf("1h writes without a 1h price: %v, want 3.75", got)
	}
	r := llm.Price{Input: 2, Output: 8}
	if got := r.Cost(llm.Usage{Input: 1e6, CacheCreation: 1e6}); math.Abs(got-2) > 1e-9 {
		t.Errorf("writes without a write price: %v, want 2", got)
	}
}

// TestCostMissingCacheRead: a --prices table with no cache_read for a
// model prices its cache reads at the input price, as it does cache
// writes with no cache_write: never at $0. A table that names the read
// price uses it.
func TestCostMissingCacheRead(t *testing.T) {
	table, err := llm.ParsePrices("mine.json", []byte(`{"date": "2026-12-01", "models": {
  "no-cache": {"input": 2, "output": 8},
  "zero-cache": {"input": 2, "output": 8, "cache_read": 0},
  "cached": {"input": 2, "output": 8, "cache_read": 0.2}
}}`))
	if err != nil {
		t.Fatal(err)
	}
	reads := llm.Usage{Input: 1e6, CacheRead: 1e6}
	writes := llm.Usage{Input: 1e6, CacheCreation: 1e6}
	for _, tt := range []struct {
		model       string
		read, write float64
	}{{"no-cache", 2, 2}, {"zero-cache", 2, 2}, {"cached", 0.2, 2}} {
		p, _, ok := table.Lookup(tt.model)
		if !ok {
			t.Fatalf("%s not in the table", tt.model)
		}
		if got := p.Cost(reads); math.Abs(got-tt.read) > 1e-9 {
			t.Errorf("%s: a million cache reads cost %v, want %v", tt.model, got, tt.read)
		}
		if got := p.Cost(writes); math.Abs(got-tt.write) > 1e-9 {
			t.Errorf("%s: a million cache writes cost %v, want %v", tt.model, got, tt.write)
		}
	}
}

func TestParsePricesOverride(t *testing.T) {
	p, err := llm.ParsePrices("mine.json", []byte(`{"date": "2026-12-01", "models": {
  "Claude-Opus-4-7": {"input": 1, "output": 2},
  "my-model": {"input": 0, "output": 0.5, "cache_read": 0.01}
}}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Date != "2026-12-01" || p.File != "mine.json" {
		t.Errorf("date %q file %q", p.Date, p.File)
	}
	if pr, _, ok := p.Lookup("claude-opus-4-7-20260101"); !ok || pr.Input != 1 || pr.Output != 2 {
		t.Errorf("override: %+v %v", pr, ok)
	}
	if pr, _, ok := p.Lookup("my-model"); !ok || pr.Output != 0.5 || pr.CacheRead != 0.01 {
		t.Errorf("my-model: %+v %v", pr, ok)
	}
	// A table replaces the built-in one: what it does not name is unpriced.
	if _, _, ok := p.Lookup("gpt-5"); ok {
		t.Error("gpt-5 priced by a table that does not name it")
	}
}

func TestParsePricesBad(t *testing.T) {
	tests := []struct {
		name, file string
		want       []string // in the error
	}{
		{"not JSON", "{\n  \"date\": \"2026-01-01\",\n  \"models\": {\n    \"m\": {\"input\": 1,, \"output\": 2}\n  }\n}", []string{"bad.json:4:", "not JSON"}},
		{"wrong type", "{\n  \"date\": \"2026-01-01\",\n  \"models\": {\n    \"m\": {\"input\": \"cheap\", \"output\": 2}\n  }\n}", []string{"bad.json:4:", `model "m"`, `field "input"`}},
		{"unknown field", "{\n  \"date\": \"2026-01-01\",\n  \"models\": {\n    \"m\": {\"input\": 1, \"output\": 2,\n      \"cache_wirte\": 3}\n  }\n}", []string{"bad.json:5:", `"cache_wirte"`}},
		{"unknown field at a line's start", "{\n  \"date\": \"2026-01-01\",\n  \"models\": {\n    \"m\":\n{\"input\": 1, \"output\": 2,\n\"cache_wirte\": 3}\n  }\n}", []string{"bad.json:6:", `"cache_wirte"`}},
		{"unknown top field", "{\n  \"date\": \"2026-01-01\",\n  \"modles\": {}\n}", []string{"bad.json:3:", `"modles"`}},
		{"no date", `{"models": {"m": {"input": 1, "output": 2}}}`, []string{"bad.json:1:", `no "date"`}},
		{"bad date", "{\n\"date\": \"last week\",\n\"models\": {\"m\": {\"input\": 1, \"output\": 2}}}", []string{"bad.json:2:", "not a day"}},
		{"no models", `{"date": "2026-01-01", "models": {}}`, []string{"bad.json:1:", "at least one model"}},
		{"no output", "{\"date\": \"2026-01-01\", \"models\": {\n\"a\": {\"input\": 1, \"output\": 1},\n\"m\": {\"input\": 1}}}", []string{"bad.json:3:", `model "m"`, `no "output"`}},
		{"negative", "{\"date\": \"2026-01-01\", \"models\": {\n\"m\": {\"input\": 1, \"output\": -2}}}", []string{"bad.json:2:", "negative"}},
		{"twice", "{\"date\": \"2026-01-01\", \"models\": {\n\"m\": {\"input\": 1, \"output\": 2},\n\"M\": {\"input\": 1, \"output\": 2}}}", []string{"bad.json:", "listed twice"}},
		{"truncated", "{\"date\": \"2026-01-01\", \"models\": {\n\"m\": {\"input\": 1", []string{"bad.json:2:"}},
		{"two values", `{"date": "2026-01-01", "models": {"m": {"input": 1, "output": 2}}} {}`, []string{"bad.json:1:", "more than one"}},
	}
	for _, tt := range tests {
		_, err := llm.ParsePrices("bad.json", []byte(tt.file))
		if !errors.Is(err, llm.ErrBadPrices) {
			t.Errorf("%s: err %v, want ErrBadPrices", tt.name, err)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", tt.name, err, w)
			}
		}
	}
}
