package cli

import (
	"fmt"
	"os"
	"strconv"

	"github.com/bbengine/bbengine/proxy/breaker"
	ucli "github.com/urfave/cli/v2"
	"gopkg.in/yaml.v3"
)

// config is a parsed --config file: flag values at the top level, and a map
// per command (by command name, nested for subcommands) for values that
// apply to that command only.
//
//	dir: /srv/bbengine
//	proxy:
//	  listen: 127.0.0.1:9000
type config struct {
	file string
	root *yaml.Node // the document's top mapping
}

func loadConfig(file string) (*config, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("config %s: %v", file, err)
	}
	cfg := &config{file: file}
	if len(doc.Content) == 0 {
		return cfg, nil // empty file
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("config %s:%d: top level must be a mapping of flag names to values", file, root.Line)
	}
	cfg.root = root
	return cfg, nil
}

// mapping returns the value node of key in m, or nil.
func mapping(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// check reports the first key of the config that names neither a flag nor
// a command of app, so a misspelt key is an error, not a silent default.
func (cfg *config) check(app *ucli.App) error {
	if cfg.root == nil {
		return nil
	}
	var walk func(m *yaml.Node, flags []ucli.Flag, cmds []*ucli.Command, where string) error
	walk = func(m *yaml.Node, flags []ucli.Flag, cmds []*ucli.Command, where string) error {
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			if findFlag(flags, k.Value) != nil {
				continue
			}
			if where == "" && k.Value == breaker.Section {
				continue // the circuit breaker's thresholds (breakerOptions)
			}
			if where == "" && k.Value == retentionSection {
				if err := cfg.checkRetention(v); err != nil {
					return err
				}
				continue // the retention a user sets (retentionFlags)
			}
			if cmd := findCommand(cmds, k.Value); cmd != nil && v.Kind == yaml.MappingNode {
				if err := walk(v, cmd.Flags, cmd.Subcommands, where+k.Value+"."); err != nil {
					return err
				}
				continue
			}
			return fmt.Errorf("config %s:%d: unknown key %q (keys are flag names, or a command name holding its flags)", cfg.file, k.Line, where+k.Value)
		}
		return nil
	}
	// Any command's flag may also sit at the top level.
	all := append([]ucli.Flag(nil), app.Flags...)
	var collect func(cmds []*ucli.Command)
	collect = func(cmds []*ucli.Command) {
		for _, c := range cmds {
			all = append(all, c.Flags...)
			collect(c.Subcommands)
		}
	}
	collect(app.Commands)
	return walk(cfg.root, all, app.Commands, "")
}

func findFlag(flags []ucli.Flag, name string) ucli.Flag {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

func findCommand(cmds []*ucli.Command, name string) *ucli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// lookup finds the value for flag name of the command at path: the most
// specific command map wins, then the top level.
func (cfg *config) lookup(path []string, name string) *yaml.Node {
	if cfg.root == nil {
		return nil
	}
	nodes := []*yaml.Node{cfg.root}
	m := cfg.root
	for _, p := range path {
		m = mapping(m, p)
		if m == nil {
			break
		}
		nodes = append(nodes, m)
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		if v := mapping(nodes[i], name); v != nil {
			return v
		}
	}
	return cfg.retentionValue(name)
}

// applyConfig sets every flag of the current command (or of the app when
// path is empty) that was given neither on the command line nor in the
// environment from the config file named by --config.
func applyConfig(c *ucli.Context, path []string) error {
	file := c.String("config")
	if file == "" {
		return nil
	}
	cfg, err := loadConfig(file)
	if err != nil {
		return err
	}
	flags := c.App.Flags
	if len(path) > 0 {
		if err := cfg.check(c.App); err != nil {
			return err
		}
		flags = c.Command.Flags
	}
	for _, f := range flags {
		name := f.Names()[0]
		if name == "config" || c.IsSet(name) {
			continue
		}
		v := cfg.lookup(path, name)
		if v == nil {
			continue
		}
		var vals []string
		switch v.Kind {
		case yaml.ScalarNode:
			vals = []string{v.Value}
		case yaml.SequenceNode:
			for _, e := range v.Content {
				if e.Kind != yaml.ScalarNode {
					return fmt.Errorf("config %s:%d: %s: list items must be plain values", file, e.Line, name)
				}
				vals = append(vals, e.Value)
			}
		default:
			return fmt.Errorf("config %s:%d: %s: expected a value or a list, got a mapping", file, v.Line, name)
		}
		for _, s := range vals {
			if err := c.Set(name, s); err != nil {
				return fmt.Errorf("config %s:%d: %s: invalid value %s: %v", file, v.Line, name, strconv.Quote(s), err)
			}
		}
	}
	return nil
}
