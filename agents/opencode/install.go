package opencode

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/agents/internal/settings"
	"github.com/bbengine/bbengine/internal/jsonedit"
)

// ProviderName is the provider install adds to opencode.json: an
// OpenAI-compatible one whose base URL is the proxy's /v1.
const ProviderName = "bbengine"

// providerNPM is the AI SDK package opencode runs the provider with; it
// is bundled in opencode, not downloaded.
const providerNPM = "@ai-sdk/openai-compatible"

// configFile returns the opencode.json install edits: the user's global
// one, or the project's.
func configFile(s *agents.Setup) string {
	if s.User {
		return filepath.Join(configDir(s.Home), "opencode.json")
	}
	return filepath.Join(s.ProjectDir, "opencode.json")
}

// ProxyBaseURL returns the base URL opencode's provider is given for a
// proxy at base: its OpenAI route, base/v1.
func ProxyBaseURL(base string) string { return strings.TrimRight(base, "/") + "/v1" }

// Install computes the edit of opencode.json: the provider "bbengine"
// (npm @ai-sdk/openai-compatible, options.baseURL the proxy's /v1; the
// models the user lists in it are kept) when s.BaseURL is set, and the
// MCP server mcp.bbengine ({"type": "local", "command": [exe, …, "mcp"]})
// when s.MCP is. Uninstall removes the provider "bbengine" (models and
// all: it is bbengine's) and an MCP entry that runs bbengine, and
// nothing else.
func (Agent) Install(s *agents.Setup) ([]*agents.Change, error) {
	path := configFile(s)
	ch, err := settings.EditJSON(path, 0o644, func(root *jsonedit.Object) error {
		if err := editProvider(root, path, s); err != nil {
			return err
		}
		return editMCP(root, path, s)
	})
	if err != nil {
		return nil, jsoncErr(path, err)
	}
	return []*agents.Change{ch}, nil
}

// jsoncErr explains err, EditJSON's refusal of path, when path is JSONC
// that opencode reads (comments, trailing commas) but bbengine does not
// rewrite, as it would lose them.
func jsoncErr(path string, err error) error {
	b, rerr := os.ReadFile(path)
	if rerr != nil || !strings.Contains(err.Error(), "not valid JSON") {
		return err
	}
	if _, perr := jsonedit.Parse(settings.JSONC(b)); perr != nil {
		return err
	}
	return fmt.Errorf("%w (the file is JSONC, comments or trailing commas, which opencode reads but bbengine does not rewrite: it would lose them; add the settings by hand, or remove the comments and trailing commas and run install again)", err)
}

// editProvider adds, updates or removes provider.bbengine.
func editProvider(root *jsonedit.Object, path string, s *agents.Setup) error {
	want := s.BaseURL != "" && !s.Uninstall
	if !want && !s.Uninstall {
		return nil
	}
	providers, err := settings.Object(root, path, "provider", want)
	if err != nil || providers == nil {
		return err
	}
	if s.Uninstall {
		if providers.Delete(ProviderName) && providers.Len() == 0 {
			root.Delete("provider")
		}
		return nil
	}
	p, err := settings.Object(providers, path+": provider", ProviderName, true)
	if err != nil {
		return err
	}
	if v, ok := p.Get("npm"); ok && v != providerNPM && !s.Force {
		return fmt.Errorf("%s: provider %q runs %s, not %s; rename yours or pass --force", path, ProviderName, settings.JSONText(v), providerNPM)
	}
	p.Set("npm", providerNPM)
	if _, ok := p.Get("name"); !ok {
		p.Set("name", "bbengine proxy")
	}
	opts, err := settings.Object(p, path+": provider."+ProviderName, "options", true)
	if err != nil {
		return err
	}
	opts.Set("baseURL", ProxyBaseURL(s.BaseURL))
	return nil
}

// editMCP adds or removes mcp.bbengine, opencode's local MCP server entry.
func editMCP(root *jsonedit.Object, path string, s *agents.Setup) error {
	want := s.MCP && !s.Uninstall
	servers, err := settings.Object(root, path, "mcp", want)
	if err != nil || servers == nil {
		return err
	}
	if !want {
		if ourMCP(servers, s.Exe) != "" {
			servers.Delete(settings.MCPName)
			if servers.Len() == 0 {
				root.Delete("mcp")
			}
		}
		return nil
	}
	cmd := append([]string{s.Exe}, settings.Args(s.Dir, "mcp")...)
	servers.Set(settings.MCPName, jsonedit.NewObject("type", "local", "command", jsonedit.FromGo(cmd), "enabled", true))
	return nil
}

// ourMCP returns the executable of mcp.bbengine when it runs bbengine,
// else "".
func ourMCP(servers *jsonedit.Object, exe string) string {
	v, _ := servers.Get(settings.MCPName)
	o, _ := v.(*jsonedit.Object)
	if o == nil {
		return ""
	}
	cv, _ := o.Get("command")
	list, _ := cv.([]any)
	if len(list) == 0 {
		return ""
	}
	if cmd, _ := list[0].(string); settings.IsOurExe(cmd, exe) {
		return cmd
	}
	return ""
}
