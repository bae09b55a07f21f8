package breaker

import (
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/bbengine/bbengine/codec/llm"
	"gopkg.in/yaml.v3"
)

// Section is the key of the breaker's settings in a config file, global
// (--config) or a project's bbengine.yaml.
const Section = "circuit_breaker"

// ProjectFile is the name of a project's own config file, looked up from
// the session's working directory towards the root.
const ProjectFile = "bbengine.yaml"

// Config are a breaker's thresholds. A zero cap means no cap.
type Config struct {
	// Enabled turns the breaker on; off, every call passes and nothing is
	// counted.
	Enabled bool `yaml:"enabled" json:"enabled"`
	// NoProgress opens the breaker after that many model calls of a
	// thread without progress, once the thread has made progress.
	NoProgress int64 `yaml:"max_loops_no_progress" json:"max_loops_no_progress"`
	// NeverProgress opens it after that many calls of a thread that never
	// made progress at all.
	NeverProgress int64 `yaml:"max_loops_never_progress" json:"max_loops_never_progress"`
	// Stagnation opens it after that many consecutive stagnant calls: the
	// same tool call with the same arguments, the same error, or the same
	// output as the call before.
	Stagnation int64 `yaml:"stagnation_threshold" json:"stagnation_threshold"`
	// Cooldown is how long (seconds) the breaker stays open before it
	// lets one request through as a probe.
	Cooldown int64 `yaml:"cooldown_period_seconds" json:"cooldown_period_seconds"`
	// Caps bound a whole session; Run bounds each run (X-Bb-Run-Id).
	Caps `yaml:",inline"`
	Run  Caps `yaml:"run" json:"run"`
	// Pricing maps model name prefixes to prices in US dollars per
	// million tokens; it wins over the built-in list prices.
	Pricing map[string]llm.Price `yaml:"pricing" json:"pricing,omitempty"`
}

// Caps are absolute limits. Zero means none.
type Caps struct {
	MaxCalls       int64   `yaml:"max_calls" json:"max_calls,omitempty"`
	MaxTokens      int64   `yaml:"max_tokens" json:"max_tokens,omitempty"`
	MaxCostUSD     float64 `yaml:"max_cost_usd" json:"max_cost_usd,omitempty"`
	MaxWallSeconds int64   `yaml:"max_wall_seconds" json:"max_wall_seconds,omitempty"`
}

// Defaults are the thresholds without configuration: open after 10 calls
// without progress, after 3 consecutive stagnant calls, or at 20 calls of
// a thread that never made progress; cool down for 5 minutes; no caps.
func Defaults() Config {
	return Config{Enabled: true, NoProgress: 10, NeverProgress: 20, Stagnation: 3, Cooldown: 300}
}

// CooldownDuration returns the cooldown as a duration.
func (c Config) CooldownDuration() time.Duration { return time.Duration(c.Cooldown) * time.Second }

// Overlay returns base with the settings of a circuit_breaker mapping
// read from r (a YAML document whose top level holds it) laid over it:
// keys the document sets win, the others keep base's values. name names
// the source in errors ("bbengine.yaml:4: ..."). With onlySection, any
// other top-level key is an error (a project file holds only this
// section); without, other keys are left to their owner. A document
// without the section returns base unchanged, with found false.
func Overlay(base Config, name string, r io.Reader, onlySection bool) (cfg Config, found bool, err error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return base, false, fmt.Errorf("%s: %w", name, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return base, false, fmt.Errorf("%s: %v", name, err)
	}
	if len(doc.Content) == 0 {
		return base, false, nil
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return base, false, fmt.Errorf("%s:%d: the top level must be a mapping", name, root.Line)
	}
	var sec *yaml.Node
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		if k.Value == Section {
			sec = root.Content[i+1]
			continue
		}
		if onlySection {
			return base, false, fmt.Errorf("%s:%d: unknown key %q (a project's %s holds only %s:)", name, k.Line, k.Value, ProjectFile, Section)
		}
	}
	if sec == nil {
		return base, false, nil
	}
	if sec.Kind != yaml.MappingNode {
		return base, false, fmt.Errorf("%s:%d: %s must be a mapping of settings", name, sec.Line, Section)
	}
	if err := checkKeys(sec, name, Section, sectionKeys); err != nil {
		return base, false, err
	}
	cfg = base
	cfg.Pricing = maps.Clone(base.Pricing)
	if err := sec.Decode(&cfg); err != nil {
		return base, false, fmt.Errorf("%s: %s: %v", name, Section, err)
	}
	if err := cfg.Validate(); err != nil {
		return base, false, fmt.Errorf("%s:%d: %s: %v", name, sec.Line, Section, err)
	}
	return cfg, true, nil
}

// The keys of each mapping of the section; nil values are free-form
// mappings whose values are of the given shape.
var (
	capKeys     = map[string]any{"max_calls": nil, "max_tokens": nil, "max_cost_usd": nil, "max_wall_seconds": nil}
	priceKeys   = map[string]any{"input": nil, "output": nil, "cache_read": nil, "cache_write": nil}
	sectionKeys = map[string]any{"enabled": nil, "max_loops_no_progress": nil, "max_loops_never_progress": nil,
		"stagnation_threshold": nil, "cooldown_period_seconds": nil, "max_calls": nil, "max_tokens": nil,
		"max_cost_usd": nil, "max_wall_seconds": nil, "run": capKeys, "pricing": anyKey{priceKeys}}
)

// anyKey is a mapping whose keys are free (model names) and whose values
// have keys of their own.
type anyKey struct{ each map[string]any }

// checkKeys reports the first key of m that keys does not know, with its
// line, so a misspelt threshold is an error rather than a silent default.
func checkKeys(m *yaml.Node, file, where string, keys map[string]any) error {
	if m.Kind != yaml.MappingNode {
		return fmt.Errorf("%s:%d: %s must be a mapping", file, m.Line, where)
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		sub, ok := keys[k.Value]
		if !ok {
			return fmt.Errorf("%s:%d: unknown setting %s.%s", file, k.Line, where, k.Value)
		}
		switch sub := sub.(type) {
		case map[string]any:
			if err := checkKeys(v, file, where+"."+k.Value, sub); err != nil {
				return err
			}
		case anyKey:
			if v.Kind != yaml.MappingNode {
				return fmt.Errorf("%s:%d: %s.%s must be a mapping", file, v.Line, where, k.Value)
			}
			for j := 0; j+1 < len(v.Content); j += 2 {
				if err := checkKeys(v.Content[j+1], file, where+"."+k.Value+"."+v.Content[j].Value, sub.each); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Validate checks that no threshold is negative and every price is a
// finite amount.
func (c Config) Validate() error {
	for name, n := range map[string]int64{"max_loops_no_progress": c.NoProgress, "max_loops_never_progress": c.NeverProgress,
		"stagnation_threshold": c.Stagnation, "cooldown_period_seconds": c.Cooldown,
		"max_calls": c.MaxCalls, "max_tokens": c.MaxTokens, "max_wall_seconds": c.MaxWallSeconds,
		"run.max_calls": c.Run.MaxCalls, "run.max_tokens": c.Run.MaxTokens, "run.max_wall_seconds": c.Run.MaxWallSeconds} {
		if n < 0 {
			return fmt.Errorf("%s is %d (want 0 or more; 0 turns the rule off)", name, n)
		}
	}
	for name, f := range map[string]float64{"max_cost_usd": c.MaxCostUSD, "run.max_cost_usd": c.Run.MaxCostUSD} {
		if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%s is %v (want an amount of 0 or more)", name, f)
		}
	}
	for model, p := range c.Pricing {
		for _, f := range []float64{p.Input, p.Output, p.CacheRead, p.CacheWrite} {
			if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
				return fmt.Errorf("pricing %q: prices are US dollars per million tokens, 0 or more", model)
			}
		}
	}
	return nil
}

// FindProject returns the bbengine.yaml that governs dir: dir's own, or
// the nearest one above it; "" when there is none.
func FindProject(dir string) string {
	if dir == "" || !filepath.IsAbs(dir) {
		return ""
	}
	dir = filepath.Clean(dir)
	for {
		f := filepath.Join(dir, ProjectFile)
		if st, err := os.Stat(f); err == nil && st.Mode().IsRegular() {
			return f
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}
