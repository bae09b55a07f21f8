package claude

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/agents/internal/settings"
	"github.com/bbengine/bbengine/internal/jsonedit"
)

// DefaultCleanupDays is the cleanupPeriodDays Claude Code takes when no
// settings file sets it: at startup it deletes the session logs last
// changed longer ago than that.
const DefaultCleanupDays = 30

// KeepDays is the cleanupPeriodDays doctor proposes: in effect, never.
const KeepDays = 100000

// cleanupMargin is how many days before Claude Code's cleanup a log not
// imported yet makes doctor fail rather than warn.
const cleanupMargin = 7

// Doctor checks Claude Code's setup: its version, ANTHROPIC_BASE_URL
// (in the settings files' env, then the environment), bbengine's hooks
// and MCP server where install puts them, and cleanupPeriodDays against
// the logs not imported yet.
func (a Agent) Doctor(env *agents.DoctorEnv) []agents.Finding {
	userSettings, userMCP := files(true, env.Home, env.ProjectDir)
	projSettings, projMCP := files(false, env.Home, env.ProjectDir)
	localSettings := filepath.Join(filepath.Dir(projSettings), "settings.local.json")
	configDir := filepath.Dir(userSettings)
	_, lookErr := exec.LookPath("claude")
	if lookErr != nil && !exists(configDir) && !exists(userMCP) {
		return []agents.Finding{{Agent: a.Name(), Check: "found", Severity: agents.OK,
			Message: fmt.Sprintf("Claude Code: not found (no claude on PATH, no %s)", configDir)}}
	}
	out := []agents.Finding{agents.VersionFinding(env, a.Name(), "Claude Code", "claude")}
	// The settings files, in Claude Code's order of precedence: the
	// project's local file, the project's, the user's.
	var docs []doc
	for _, p := range slices.Compact([]string{localSettings, projSettings, userSettings}) {
		d, err := inspect(p)
		if err != nil {
			out = append(out, agents.Finding{Agent: a.Name(), Check: "settings", Severity: agents.Fail,
				Message: err.Error(), Fix: "fix the file: Claude Code does not read it either"})
			continue
		}
		docs = append(docs, d)
	}
	out = append(out, a.baseURL(env, docs, userSettings))
	out = append(out, a.hooks(env, docs, userSettings, projSettings)...)
	out = append(out, a.mcp(env, userMCP, projMCP, docs))
	out = append(out, cleanup(env, docs, userSettings))
	return out
}

// doc is a settings file as read; Root is nil when it does not exist.
type doc struct{ settings.Doc }

func inspect(path string) (doc, error) {
	d, err := settings.ReadDoc(path)
	return doc{d}, err
}

func exists(path string) bool { return settings.Exists(path) }

// envValue returns the string env[key] of a settings file.
func (d doc) envValue(key string) (string, bool) {
	if d.Root == nil {
		return "", false
	}
	ev, _ := d.Root.Get("env")
	e, _ := ev.(*jsonedit.Object)
	if e == nil {
		return "", false
	}
	v, ok := e.Get(key)
	s, _ := v.(string)
	return s, ok
}

func (a Agent) baseURL(env *agents.DoctorEnv, docs []doc, userSettings string) agents.Finding {
	where, base := "ANTHROPIC_BASE_URL", ""
	for _, d := range docs {
		if v, ok := d.envValue("ANTHROPIC_BASE_URL"); ok {
			where, base = "env.ANTHROPIC_BASE_URL in "+d.Path, v
			break
		}
	}
	if where == "ANTHROPIC_BASE_URL" {
		if v := os.Getenv("ANTHROPIC_BASE_URL"); v != "" {
			where, base = "ANTHROPIC_BASE_URL in the environment", v
		}
	}
	proxy := env.ProxyURL()
	fix := fmt.Sprintf("run `bbengine install claude --user --base-url %s` (it sets env.ANTHROPIC_BASE_URL in %s), with `bbengine proxy` running", proxy, userSettings)
	return agents.BaseURLFinding(env, a.Name(), where, base, "", fix)
}

func (a Agent) hooks(env *agents.DoctorEnv, docs []doc, userSettings, projSettings string) []agents.Finding {
	var partial []string
	for _, d := range docs {
		if d.Root == nil || (d.Path != userSettings && d.Path != projSettings) {
			continue
		}
		missing := settings.MissingHooks(d.Root, a.Name(), env.Exe)
		if len(missing) == 0 {
			return []agents.Finding{agents.HookDirFinding(env, a.Name(), d.Path, settings.HookDirs(d.Root, a.Name(), env.Exe))}
		}
		if len(missing) < 2 {
			partial = append(partial, fmt.Sprintf("%s lacks the %s hook", d.Path, strings.Join(missing, ", ")))
		}
	}
	msg := fmt.Sprintf("bbengine's hooks are not registered (not in %s): sessions start without their context pack", strings.Join(slices.Compact([]string{userSettings, projSettings}), " nor "))
	if len(partial) > 0 {
		msg = strings.Join(partial, "; ")
	}
	return []agents.Finding{{Agent: a.Name(), Check: "hooks", Severity: agents.Warn, Message: msg,
		Fix: "run `bbengine install claude --user` (or `bbengine install claude` in the project)"}}
}

func (a Agent) mcp(env *agents.DoctorEnv, userMCP, projMCP string, docs []doc) agents.Finding {
	f := agents.Finding{Agent: a.Name(), Check: "mcp"}
	for _, p := range slices.Compact([]string{userMCP, projMCP}) {
		d, err := inspect(p)
		if err != nil {
			f.Severity, f.Message, f.Fix = agents.Fail, err.Error(), "fix the file: Claude Code does not read it either"
			return f
		}
		if d.Root == nil {
			continue
		}
		cmd := settings.OurMCP(d.Root, env.Exe)
		if cmd == "" {
			continue
		}
		if p == projMCP && !approved(docs) {
			f.Severity = agents.Warn
			f.Message = fmt.Sprintf("the bbengine MCP server is in %s but not approved (enabledMcpjsonServers)", p)
			f.Fix = "run `bbengine install claude` in the project, or approve it when Claude Code asks"
			return f
		}
		f.Severity, f.Message = agents.OK, fmt.Sprintf("the bbengine MCP server is registered in %s (%s)", p, cmd)
		return f
	}
	f.Severity = agents.Warn
	f.Message = fmt.Sprintf("the bbengine MCP server is not registered (not in %s nor %s): no memory tools", userMCP, projMCP)
	f.Fix = "run `bbengine install claude --user` (or `bbengine install claude` in the project)"
	return f
}

// approved reports whether a settings file lists bbengine's server in
// enabledMcpjsonServers.
func approved(docs []doc) bool {
	for _, d := range docs {
		if d.Root == nil {
			continue
		}
		v, _ := d.Root.Get("enabledMcpjsonServers")
		list, _ := v.([]any)
		for _, e := range list {
			if e == settings.MCPName {
				return true
			}
		}
	}
	return false
}

// cleanup compares cleanupPeriodDays with the logs not imported yet.
func cleanup(env *agents.DoctorEnv, docs []doc, userSettings string) agents.Finding {
	f := agents.Finding{Agent: "claude", Check: "cleanup"}
	days, file, set := DefaultCleanupDays, userSettings, false
	for _, d := range docs {
		if d.Root == nil {
			continue
		}
		v, ok := d.Root.Get("cleanupPeriodDays")
		if !ok {
			continue
		}
		n, isNum := v.(json.Number)
		i, err := n.Int64()
		if !isNum || err != nil {
			f.Severity = agents.Fail
			f.Message = fmt.Sprintf("cleanupPeriodDays in %s is %s, not a whole number of days: Claude Code rejects the setting", d.Path, settings.JSONText(v))
			f.Fix = fmt.Sprintf(`set "cleanupPeriodDays": %d in %s`, KeepDays, d.Path)
			return f
		}
		days, file, set = int(min(max(i, -1), 1<<30)), d.Path, true
		break
	}
	f.Fix = fmt.Sprintf(`set "cleanupPeriodDays": %d in %s`, KeepDays, file)
	setting := fmt.Sprintf("cleanupPeriodDays is %d in %s", days, file)
	if !set {
		setting = fmt.Sprintf("cleanupPeriodDays is not set (in %s or the project's settings): Claude Code deletes session logs %d days after their last change, its default", userSettings, DefaultCleanupDays)
	}
	var pending string
	risk := false
	if env.Unimported > 0 {
		age := int(env.Now.Sub(env.Oldest).Hours() / 24)
		pending = fmt.Sprintf("; %d of %d logs are not imported yet, the oldest last changed %d days ago", env.Unimported, env.Logs, age)
		if age >= days-cleanupMargin {
			risk = true
			pending += fmt.Sprintf(" (Claude Code deletes logs after %d days)", days)
		}
	}
	switch {
	case set && days <= 0:
		f.Severity = agents.Fail
		f.Message = setting + ": Claude Code takes 1 or more (it rejects the setting and pauses its cleanup; versions before that deleted every session log at startup)"
	case risk:
		f.Severity = agents.Fail
		f.Message = setting + pending
		f.Fix = "run `bbengine import claude --all` now, and " + f.Fix
	case !set:
		f.Severity = agents.Warn
		f.Message = setting + pending
	case days < 365 && env.Unimported > 0:
		f.Severity = agents.Warn
		f.Message = setting + pending + "; import them before Claude Code deletes them"
		f.Fix = "run `bbengine import claude --all` (or keep `bbengine import claude --all --follow` running), or " + f.Fix
	default:
		f.Severity, f.Message, f.Fix = agents.OK, setting+pending, ""
	}
	return f
}

var _ agents.Doctor = Agent{}
