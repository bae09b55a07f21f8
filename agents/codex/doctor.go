package codex

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/BurntSushi/toml"
	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/agents/internal/settings"
	"github.com/bbengine/bbengine/internal/jsonedit"
)

// Doctor checks Codex's setup: its version, openai_base_url in
// config.toml (the project's, the user's) or OPENAI_BASE_URL, bbengine's
// hooks in hooks.json with codex_hooks on, and the MCP server in
// config.toml, where install puts them.
func (a Agent) Doctor(env *agents.DoctorEnv) []agents.Finding {
	userDir, _ := dirs(true, env.Home, env.ProjectDir)
	projDir, _ := dirs(false, env.Home, env.ProjectDir)
	_, lookErr := exec.LookPath("codex")
	if lookErr != nil && !exists(userDir) {
		return []agents.Finding{{Agent: a.Name(), Check: "found", Severity: agents.OK,
			Message: fmt.Sprintf("Codex: not found (no codex on PATH, no %s)", userDir)}}
	}
	out := []agents.Finding{agents.VersionFinding(env, a.Name(), "Codex", "codex")}
	// The scopes, the project's first: Codex lets it override the user's.
	var scopes []scope
	for _, d := range []string{projDir, userDir} {
		sc, err := readScope(d)
		if err != nil {
			out = append(out, agents.Finding{Agent: a.Name(), Check: "settings", Severity: agents.Fail,
				Message: err.Error(), Fix: "fix the file: Codex does not read it either"})
			continue
		}
		scopes = append(scopes, sc)
	}
	out = append(out, a.baseURL(env, scopes, userDir), a.hooks(env, scopes, userDir, projDir), a.mcp(env, scopes, userDir, projDir))
	return out
}

// scope is one directory of Codex's settings as read.
type scope struct {
	dir    string
	config map[string]any   // config.toml, nil when there is none
	hooks  *jsonedit.Object // hooks.json, nil when there is none
}

func (s scope) configFile() string { return filepath.Join(s.dir, "config.toml") }
func (s scope) hooksFile() string  { return filepath.Join(s.dir, "hooks.json") }

func readScope(dir string) (scope, error) {
	s := scope{dir: dir}
	if b, err := os.ReadFile(s.configFile()); err == nil {
		if _, err := toml.Decode(string(b), &s.config); err != nil {
			return s, fmt.Errorf("%s: not valid TOML: %v", s.configFile(), err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return s, err
	}
	if exists(s.hooksFile()) {
		err := settings.Inspect(s.hooksFile(), func(root *jsonedit.Object) error {
			s.hooks = root
			return nil
		})
		if err != nil {
			return s, err
		}
	}
	return s, nil
}

func exists(path string) bool { return settings.Exists(path) }

// table returns the TOML table config[key], nil when there is none.
func table(config map[string]any, key string) map[string]any {
	t, _ := config[key].(map[string]any)
	return t
}

func (a Agent) baseURL(env *agents.DoctorEnv, scopes []scope, userDir string) agents.Finding {
	where, base := "openai_base_url", ""
	for _, s := range scopes {
		if v, ok := s.config["openai_base_url"].(string); ok {
			where, base = "openai_base_url in "+s.configFile(), v
			break
		}
	}
	if base == "" {
		if v := os.Getenv("OPENAI_BASE_URL"); v != "" {
			where, base = "OPENAI_BASE_URL in the environment", v
		}
	}
	proxy := env.ProxyURL()
	fix := fmt.Sprintf("run `bbengine install codex --user --base-url %s` (it sets openai_base_url in %s), with `bbengine proxy` running",
		proxy, filepath.Join(userDir, "config.toml"))
	return agents.BaseURLFinding(env, a.Name(), where, base, "/v1", fix)
}

func (a Agent) hooks(env *agents.DoctorEnv, scopes []scope, userDir, projDir string) agents.Finding {
	f := agents.Finding{Agent: a.Name(), Check: "hooks", Fix: "run `bbengine install codex --user` (or `bbengine install codex` in the project)"}
	for _, s := range scopes {
		if s.hooks == nil || len(settings.MissingHooks(s.hooks, a.Name(), env.Exe)) > 0 {
			continue
		}
		on, set := table(s.config, "features")["codex_hooks"].(bool)
		if !on || !set {
			f.Severity = agents.Warn
			f.Message = fmt.Sprintf("bbengine's hooks are in %s, but %s does not turn on [features] codex_hooks: Codex runs no hooks", s.hooksFile(), s.configFile())
			f.Fix = fmt.Sprintf("add codex_hooks = true to the [features] table of %s, or run `bbengine install codex` again", s.configFile())
			return f
		}
		f = agents.HookDirFinding(env, a.Name(), s.hooksFile(), settings.HookDirs(s.hooks, a.Name(), env.Exe))
		if f.Severity == agents.OK {
			f.Message += ", with codex_hooks on"
		}
		return f
	}
	f.Severity = agents.Warn
	f.Message = fmt.Sprintf("bbengine's hooks are not registered (not in %s nor %s): sessions start without their context pack",
		filepath.Join(userDir, "hooks.json"), filepath.Join(projDir, "hooks.json"))
	return f
}

func (a Agent) mcp(env *agents.DoctorEnv, scopes []scope, userDir, projDir string) agents.Finding {
	for _, s := range scopes {
		srv := table(table(s.config, "mcp_servers"), settings.MCPName)
		if cmd, _ := srv["command"].(string); cmd != "" && settings.IsOurExe(cmd, env.Exe) {
			return agents.Finding{Agent: a.Name(), Check: "mcp", Severity: agents.OK,
				Message: fmt.Sprintf("the bbengine MCP server is registered in %s (%s)", s.configFile(), cmd)}
		}
	}
	return agents.Finding{Agent: a.Name(), Check: "mcp", Severity: agents.Warn,
		Message: fmt.Sprintf("the bbengine MCP server is not registered (no [mcp_servers.%s] in %s nor %s): no memory tools", settings.MCPName,
			filepath.Join(userDir, "config.toml"), filepath.Join(projDir, "config.toml")),
		Fix: "run `bbengine install codex --user` (or `bbengine install codex` in the project)"}
}

var _ agents.Doctor = Agent{}
