package layers

import (
	"fmt"
	"path"
	"strings"
)

// Module is the module path the table speaks of.
const Module = "github.com/bbengine/bbengine"

// Layer is one row of the map: the packages it holds, by path relative
// to the module ("" is the module root, "codec/..." a directory and
// everything under it), and why they sit there.
type Layer struct {
	Packages []string
	Why      string
}

// Table is the import map, lowest layer first. A package may import the
// packages of lower layers, and those of its own layer in its own family
// (the first element of its path: codec/claude may import codec/agentlog,
// proxy may not import pack). The most specific pattern places a
// package: "agents" is the root package, "agents/..." its
// sub-directories.
var Table = []Layer{
	{[]string{"codec/...", "internal/..."}, "pure formats and private helpers: nothing of ours above them"},
	{[]string{"wal", "proxy/breaker"}, "the log; the breaker's pure state machine"},
	{[]string{"engine/schema"}, "the domain types: the records of derived state and their keys"},
	{[]string{"engine/derive"}, "the derivation pipeline: WAL frames in, events and artifacts out"},
	{[]string{"engine", "wal/walbench"}, "the store and its queries; runs the pipeline"},
	{[]string{"agents"}, "the Agent interface and registry, low so the proxy can read it"},
	{[]string{"export", "index", "pack", "proxy"}, "formats, search, the context pack, capture: peers that never import each other"},
	{[]string{"agents/..."}, "one directory per agent, and their shared internals"},
	{[]string{"api", "api/..."}, "the service layer: every operation once, and its adapters"},
	{[]string{"server", "runner"}, "the long-running processes (the proxy with the engine following its WAL, the MCP server) and an agent's run: peers"},
	{[]string{"cli", "cli/..."}, "commands: flags, config, output"},
	{[]string{"", "bench", "bench/...", "e2e", "e2e/...", "fuzz", "fuzz/...", "examples/..."}, "main and the cross-package harnesses"},
}

// Package is a package of the module and the packages it imports, as
// `go list` reports them (full import paths; others' packages are
// ignored).
type Package struct {
	ImportPath string
	Imports    []string
}

// rel returns p relative to the module, and false for a package that is
// not the module's.
func rel(p string) (string, bool) {
	if p == Module {
		return "", true
	}
	if r, ok := strings.CutPrefix(p, Module+"/"); ok {
		return r, true
	}
	return "", false
}

// LayerOf returns the index in Table of the layer that holds p (relative
// to the module), or -1 when no row names it.
func LayerOf(p string) int {
	best, bestLen := -1, -1
	for i, l := range Table {
		for _, pat := range l.Packages {
			n := -1
			switch {
			case pat == p:
				n = len(pat) + 1 // an exact name beats a directory
			case strings.HasSuffix(pat, "/..."):
				dir := strings.TrimSuffix(pat, "/...")
				if strings.HasPrefix(p, dir+"/") {
					n = len(dir)
				}
			}
			if n > bestLen {
				best, bestLen = i, n
			}
		}
	}
	return best
}

// family is the first element of a relative path.
func family(p string) string {
	f, _, _ := strings.Cut(p, "/")
	return f
}

// Check returns one line per import that does not point down the
// table, and per package the table does not place, in the order of pkgs.
func Check(pkgs []Package) []string {
	var bad []string
	for _, pkg := range pkgs {
		from, ok := rel(pkg.ImportPath)
		if !ok {
			continue
		}
		fl := LayerOf(from)
		if fl < 0 {
			bad = append(bad, fmt.Sprintf("%s: no layer in the table (internal/layers); add the package to its row", pkg.ImportPath))
			continue
		}
		for _, imp := range pkg.Imports {
			to, ok := rel(imp)
			if !ok {
				continue
			}
			tl := LayerOf(to)
			switch {
			case tl < 0:
				bad = append(bad, fmt.Sprintf("%s imports %s, which has no layer in the table", pkg.ImportPath, imp))
			case tl > fl:
				bad = append(bad, fmt.Sprintf("%s (layer %d: %s) imports %s (layer %d: %s): imports only point down", pkg.ImportPath, fl, name(from), imp, tl, name(to)))
			case tl == fl && family(to) != family(from):
				bad = append(bad, fmt.Sprintf("%s imports %s of its own layer (%d) but another family: peers do not import each other", pkg.ImportPath, imp, fl))
			}
		}
	}
	return bad
}

// name is a package's name for messages: its last path element, "main"
// for the module root.
func name(p string) string {
	if p == "" {
		return "main"
	}
	return path.Base(p)
}
