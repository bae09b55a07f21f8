package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/api/tools"
	"github.com/bbengine/bbengine/engine"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolsSchema checks that both formats list the tools in order with
// the input schemas the MCP server lists for them.
func TestToolsSchema(t *testing.T) {
	s, closeMem := NewMCPServer(t.TempDir(), t.Logf)
	defer closeMem()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs := connectMCP(t, ct)
	defer cs.Close()
	listed, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	mcpSchema := map[string]any{}
	mcpDesc := map[string]string{}
	for _, tl := range listed.Tools {
		mcpSchema[tl.Name], mcpDesc[tl.Name] = tl.InputSchema, tl.Description
	}

	type def struct {
		Name, Description string
		Schema            any
	}
	check := func(format string, defs []def) {
		t.Helper()
		if len(defs) != len(tools.All) {
			t.Fatalf("%s: %d definitions, want %d", format, len(defs), len(tools.All))
		}
		for i, d := range defs {
			if d.Name != tools.All[i].Name {
				t.Errorf("%s: definition %d is %q, want %q", format, i, d.Name, tools.All[i].Name)
			}
			if !reflect.DeepEqual(d.Schema, mcpSchema[d.Name]) || d.Schema == nil {
				t.Errorf("%s: %s parameters %v, the MCP server lists %v", format, d.Name, d.Schema, mcpSchema[d.Name])
			}
			if d.Description != mcpDesc[d.Name] || d.Description == "" {
				t.Errorf("%s: %s description %q, the MCP server's %q", format, d.Name, d.Description, mcpDesc[d.Name])
			}
		}
	}

	for _, args := range [][]string{{"tools", "schema"}, {"tools", "schema", "--format", "openai"}} {
		out, errs, code := run(t, args...)
		if code != 0 {
			t.Fatalf("%v: %d %s", args, code, errs)
		}
		var fns []struct {
			Type     string `json:"type"`
			Function struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				Parameters  any    `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal([]byte(out), &fns); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
		var defs []def
		for _, f := range fns {
			if f.Type != "function" {
				t.Errorf("openai: type %q", f.Type)
			}
			defs = append(defs, def{f.Function.Name, f.Function.Description, f.Function.Parameters})
		}
		check("openai", defs)
	}

	out, errs, code := run(t, "tools", "schema", "--format", "anthropic")
	if code != 0 {
		t.Fatalf("anthropic: %d %s", code, errs)
	}
	var ants []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		InputSchema any    `json:"input_schema"`
	}
	if err := json.Unmarshal([]byte(out), &ants); err != nil {
		t.Fatalf("anthropic: %v\n%s", err, out)
	}
	var defs []def
	for _, a := range ants {
		defs = append(defs, def{a.Name, a.Description, a.InputSchema})
	}
	check("anthropic", defs)

	if _, errs, code := run(t, "tools", "schema", "--format", "gemini"); code != 2 || !strings.Contains(errs, `--format "gemini": want openai or anthropic`) {
		t.Errorf("bad format: %d %s", code, errs)
	}
}

// TestToolsCall runs the tools from the command line: search, then get
// of the id found, context and related; and bad calls.
func TestToolsCall(t *testing.T) {
	dir := memoryDir(t)
	call := func(name, args string) string {
		t.Helper()
		out, errs, code := run(t, "--dir", dir, "tools", "call", name, args)
		if code != 0 {
			t.Fatalf("tools call %s %s: %d\n%s", name, args, code, errs)
		}
		return out
	}
	var found tools.SearchOut
	if err := json.Unmarshal([]byte(call("memory_search", `{"query":"which cache did we choose","types":["decision"],"k":1}`)), &found); err != nil {
		t.Fatal(err)
	}
	if len(found.Cards) != 1 || !strings.Contains(found.Cards[0].Title, "ARC") {
		t.Fatalf("memory_search: %+v", found.Cards)
	}
	var got tools.GetOut
	if err := json.Unmarshal([]byte(call("memory_get", `{"id":"`+found.Cards[0].ID+`"}`)), &got); err != nil {
		t.Fatal(err)
	}
	if got.Artifact.ID != found.Cards[0].ID || len(got.Artifact.Evidence) == 0 || got.Artifact.Evidence[0].Prov.First == 0 {
		t.Fatalf("memory_get: %+v", got)
	}
	var p tools.ContextOut
	if err := json.Unmarshal([]byte(call("memory_context_for_task", `{"session":"`+memSession[:8]+`","task":"cache eviction","budget":600}`)), &p); err != nil {
		t.Fatal(err)
	}
	if p.Budget.Total != 600 || len(p.Decisions) == 0 || !strings.Contains(p.Markdown, p.Decisions[0].ID) {
		t.Fatalf("memory_context_for_task: %+v", p)
	}
	var rel tools.RelatedOut
	if err := json.Unmarshal([]byte(call("memory_related", `{"id":"`+found.Cards[0].ID+`"}`)), &rel); err != nil {
		t.Fatal(err)
	}
	if len(rel.Supersedes) != 1 {
		t.Fatalf("memory_related: %+v", rel)
	}

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"memory_find", `{}`}, 2, `unknown tool "memory_find" (the tools are memory_search, memory_get, memory_context_for_task, memory_related)`},
		{[]string{"memory_search", `{"query":`}, 2, "memory_search: the arguments are not a JSON object"},
		{[]string{"memory_search", `{"query":"x","limit":3}`}, 2, `memory_search: unknown field "limit" (its fields are k, query, session, task, types)`},
		{[]string{"memory_search", `{"k":3}`}, 2, `memory_search: field "query" is required`},
		{[]string{"memory_search", `{"query":"x","k":0.5}`}, 2, `memory_search: field "k": 0.5 is not an integer`},
		{[]string{"memory_search", `{"query":"x","k":21}`}, 2, `memory_search: field "k": 21 is out of range: want 1 to 20`},
		{[]string{"memory_search", `{"query":"x","types":["thread"]}`}, 2, `memory_search: field "types": "thread" is not one of`},
		{[]string{"memory_get", `{"id":7}`}, 2, `memory_get: field "id": 7 is not a string`},
		{[]string{"memory_get", `{"id":"ffffffffffff"}`}, 1, `memory_get ffffffffffff: engine: not found`},
		{[]string{"memory_context_for_task", `{"session":"x","task":"y","budget":100000}`}, 2, `field "budget": 100000 is out of range: want 120 to 8000`},
		{[]string{}, 2, "give a tool name and its JSON arguments"},
		{[]string{"memory_get", "{}", "{}"}, 2, "give a tool name and its JSON arguments"},
	} {
		_, errs, code := run(t, append([]string{"--dir", dir, "tools", "call"}, c.args...)...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("tools call %v: exit %d, want %d and %q:\n%s", c.args, code, c.code, c.want, errs)
		}
	}

	// The arguments from stdin, with the binary as an agent runs it.
	cmd := exec.Command(os.Args[0], "--dir", dir, "tools", "call", "memory_search", "-")
	cmd.Env = append(os.Environ(), asMainEnv+"=1", "HOME="+t.TempDir())
	cmd.Stdin = strings.NewReader(`{"query": "TestSessionStoreEviction", "types": ["open_thread"]}`)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tools call - : %v", err)
	}
	var fromStdin tools.SearchOut
	if err := json.Unmarshal(out, &fromStdin); err != nil || len(fromStdin.Cards) != 1 || fromStdin.Cards[0].Type != engine.ArtifactThread {
		t.Fatalf("tools call with stdin: %v %s", err, out)
	}
}
