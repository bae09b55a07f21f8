package claude

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/agents/internal/settings"
	"github.com/bbengine/bbengine/internal/jsonedit"
)

// BaseURLMark is the settings env entry that records the base URL
// install set, so that uninstall removes ANTHROPIC_BASE_URL only while
// it is still the one bbengine put there.
const BaseURLMark = "BBENGINE_INSTALLED_BASE_URL"

// HooksSettings is the fragment of Claude Code's settings that
// runs the hook: SessionStart (every source) and UserPromptSubmit hooks
// calling `exe [--dir dir] hook claude`. dir "" is the default data
// directory. `bbengine run` passes it to claude with --settings; install
// merges the same into settings.json.
func HooksSettings(exe, dir string) map[string]any {
	return jsonedit.ToGo(settings.HooksDoc(exe, dir, "claude")).(map[string]any)
}

// Install computes the edits of Claude Code's files.
func (Agent) Install(s *agents.Setup) ([]*agents.Change, error) {
	settingsFile, mcpFile := files(s.User, s.Home, s.ProjectDir)
	sc, err := settings.EditJSON(settingsFile, 0o644, func(root *jsonedit.Object) error {
		if err := settings.EditHooks(root, settingsFile, s, "claude"); err != nil {
			return err
		}
		if err := editBaseURL(root, settingsFile, s); err != nil {
			return err
		}
		if !s.User {
			// A project's .mcp.json servers wait for the user's approval;
			// approve ours here.
			return settings.EditList(root, settingsFile, "enabledMcpjsonServers", settings.MCPName, s.MCP, s.Uninstall)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	mcpPerm := fs.FileMode(0o644)
	if s.User {
		mcpPerm = 0o600 // ~/.claude.json holds account state
	}
	mc, err := settings.EditJSON(mcpFile, mcpPerm, func(root *jsonedit.Object) error {
		return settings.EditMCP(root, mcpFile, s)
	})
	if err != nil {
		return nil, err
	}
	return []*agents.Change{sc, mc}, nil
}

// files returns the settings file install edits (hooks, env) and the
// file of its MCP server: the user's (in $CLAUDE_CONFIG_DIR, else in
// home) or the project's.
func files(user bool, home, projectDir string) (settingsFile, mcpFile string) {
	config := os.Getenv("CLAUDE_CONFIG_DIR")
	switch {
	case user && config != "":
		return filepath.Join(config, "settings.json"), filepath.Join(config, ".claude.json")
	case user:
		return filepath.Join(home, ".claude", "settings.json"), filepath.Join(home, ".claude.json")
	}
	return filepath.Join(projectDir, ".claude", "settings.json"), filepath.Join(projectDir, ".mcp.json")
}

// editBaseURL sets env.ANTHROPIC_BASE_URL to the proxy, recording that
// it did; uninstall removes it while it is still that value.
func editBaseURL(root *jsonedit.Object, path string, s *agents.Setup) error {
	want := s.BaseURL != "" && !s.Uninstall
	env, err := settings.Object(root, path, "env", want)
	if err != nil || env == nil {
		return err
	}
	curV, hasCur := env.Get("ANTHROPIC_BASE_URL")
	cur, _ := curV.(string)
	markV, hasMark := env.Get(BaseURLMark)
	mark, _ := markV.(string)
	ours := hasCur && hasMark && cur == mark
	if s.Uninstall {
		if ours {
			env.Delete("ANTHROPIC_BASE_URL")
		}
		if hasMark {
			env.Delete(BaseURLMark)
			if env.Len() == 0 {
				root.Delete("env")
			}
		}
		return nil
	}
	if !want {
		return nil
	}
	switch {
	case hasCur && cur == s.BaseURL && !hasMark:
		return nil // the user's own, and already the proxy
	case hasCur && !ours && !s.Force:
		return fmt.Errorf("%s: env.ANTHROPIC_BASE_URL is %q, not bbengine's; to record that endpoint run `bbengine proxy --upstream anthropic=%s` and install with --force, or keep it with --no-base-url", path, cur, cur)
	}
	env.Set("ANTHROPIC_BASE_URL", s.BaseURL)
	env.Set(BaseURLMark, s.BaseURL)
	return nil
}
