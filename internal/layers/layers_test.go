package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// TestImportsPointDown lists the module's packages with the go tool and
// checks their imports against Table.
func TestImportsPointDown(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-e", "-json=ImportPath,Imports,Error", Module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []Package
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			Package
			Error *struct{ Err string }
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p.Package)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; is this the module?", len(pkgs))
	}
	for _, line := range Check(pkgs) {
		t.Error(line)
	}
	t.Logf("%d packages checked", len(pkgs))
}

// TestCheck shows what Check reports, on made-up packages.
func TestCheck(t *testing.T) {
	m := func(p string) string {
		if p == "" {
			return Module
		}
		return Module + "/" + p
	}
	pkg := func(from string, imports ...string) Package {
		p := Package{ImportPath: m(from)}
		for _, i := range imports {
			p.Imports = append(p.Imports, m(i))
		}
		return p
	}
	for _, c := range []struct {
		name string
		pkg  Package
		want string // "" for no report
	}{
		{"down", pkg("cli", "engine", "agents/claude", "codec/frame"), ""},
		{"main", pkg("", "cli"), ""},
		{"others' packages", Package{ImportPath: m("engine"), Imports: []string{"fmt", "github.com/cockroachdb/pebble/v2"}}, ""},
		{"own family", pkg("codec/claude", "codec/agentlog"), ""},
		{"agents among themselves", pkg("agents/all", "agents/claude"), ""},
		{"agents root is low", pkg("proxy", "agents"), ""},
		{"up", pkg("engine", "index"), Module + "/engine (layer 4: engine) imports " + Module + "/index (layer 6: index): imports only point down"},
		{"proxy up to an agent", pkg("proxy", "agents/claude"), "imports only point down"},
		{"agents root up to an agent", pkg("agents", "agents/claude"), "imports only point down"},
		{"peer", pkg("proxy", "pack"), Module + "/proxy imports " + Module + "/pack of its own layer (6) but another family"},
		{"engine over its schema", pkg("engine", "engine/schema"), ""},
		{"schema up to the engine", pkg("engine/schema", "engine"), "imports only point down"},
		{"engine over the pipeline", pkg("engine", "engine/derive", "engine/schema"), ""},
		{"pipeline up to the engine", pkg("engine/derive", "engine"), "imports only point down"},
		{"codec to internal", pkg("codec/frame", "internal/private"), "another family"},
		{"cli over server and runner", pkg("cli", "server", "runner", "api"), ""},
		{"runner beside server", pkg("runner", "server"), "another family"},
		{"server up to cli", pkg("server", "cli"), "imports only point down"},
		{"unplaced", pkg("newthing", "engine"), Module + "/newthing: no layer in the table"},
		{"unplaced import", pkg("cli", "newthing"), "which has no layer in the table"},
	} {
		got := strings.Join(Check([]Package{c.pkg}), "\n")
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("%s: Check = %q, want %q", c.name, got, c.want)
		}
	}
}
