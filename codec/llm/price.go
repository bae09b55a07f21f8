package llm

import "strings"

// Price is a model's list price in US dollars per million tokens.
type Price struct {
	Input      float64 `json:"input" yaml:"input"`
	Output     float64 `json:"output" yaml:"output"`
	CacheRead  float64 `json:"cache_read,omitempty" yaml:"cache_read"`
	CacheWrite float64 `json:"cache_write,omitempty" yaml:"cache_write"`
}

// prices are list prices per million tokens, as the providers published
// them (Anthropic and OpenAI pricing pages, 2025–2026). A model matches
// the longest prefix of its name; a dated suffix ("-20250929") or a
// context tag ("[1m]") does not matter.
var prices = []struct {
	prefix string
	p      Price
}{
	{"claude-opus-4-5", Price{5, 25, 0.5, 6.25}},
	{"claude-opus-4-6", Price{5, 25, 0.5, 6.25}},
	{"claude-opus-4-1", Price{15, 75, 1.5, 18.75}},
	{"claude-opus-4", Price{15, 75, 1.5, 18.75}},
	{"claude-3-opus", Price{15, 75, 1.5, 18.75}},
	{"claude-sonnet-4", Price{3, 15, 0.3, 3.75}},
	{"claude-3-7-sonnet", Price{3, 15, 0.3, 3.75}},
	{"claude-3-5-sonnet", Price{3, 15, 0.3, 3.75}},
	{"claude-haiku-4-5", Price{1, 5, 0.1, 1.25}},
	{"claude-3-5-haiku", Price{0.8, 4, 0.08, 1}},
	{"claude-3-haiku", Price{0.25, 1.25, 0.03, 0.3}},
	{"gpt-5-mini", Price{0.25, 2, 0.025, 0}},
	{"gpt-5-nano", Price{0.05, 0.4, 0.005, 0}},
	{"gpt-5", Price{1.25, 10, 0.125, 0}},
	{"gpt-4.1-mini", Price{0.4, 1.6, 0.1, 0}},
	{"gpt-4.1-nano", Price{0.1, 0.4, 0.025, 0}},
	{"gpt-4.1", Price{2, 8, 0.5, 0}},
	{"gpt-4o-mini", Price{0.15, 0.6, 0.075, 0}},
	{"gpt-4o", Price{2.5, 10, 1.25, 0}},
	{"o4-mini", Price{1.1, 4.4, 0.275, 0}},
	{"o3-mini", Price{1.1, 4.4, 0.55, 0}},
	{"o3", Price{2, 8, 0.5, 0}},
	{"gemini-2.5-pro", Price{1.25, 10, 0.31, 0}},
	{"gemini-2.5-flash", Price{0.3, 2.5, 0.075, 0}},
}

// PriceOf returns the price of model, and false when neither table nor
// the built-in list prices know it. table maps model name prefixes to
// prices (a configured price table; nil for none); its entries win over
// the built-in ones.
func PriceOf(model string, table map[string]Price) (Price, bool) {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:] // "anthropic/claude-sonnet-4"
	}
	best, found := -1, false
	var p Price
	for prefix, tp := range table {
		if strings.HasPrefix(m, strings.ToLower(prefix)) && len(prefix) > best {
			best, p, found = len(prefix), tp, true
		}
	}
	if found {
		return p, true
	}
	for _, e := range prices {
		if strings.HasPrefix(m, e.prefix) && len(e.prefix) > best {
			best, p, found = len(e.prefix), e.p, true
		}
	}
	return p, found
}

// Cost returns the price of u at p in US dollars. Input in u includes
// cache reads and writes (see codec/llm.Usage).
func (p Price) Cost(u Usage) float64 {
	plain := u.Input - u.CacheRead - u.CacheCreation
	if plain < 0 {
		plain = 0
	}
	write := p.CacheWrite
	if write == 0 {
		write = p.Input
	}
	return (float64(plain)*p.Input + float64(u.CacheRead)*p.CacheRead +
		float64(u.CacheCreation)*write + float64(u.Output)*p.Output) / 1e6
}
