package gemini

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/agents/internal/settings"
	"github.com/bbengine/bbengine/internal/jsonedit"
)

// DefaultMaxAge is general.sessionRetention.maxAge when no settings file
// sets it: Gemini CLI 0.61's schema default, with enabled true, so that
// at startup it deletes a project's chats last updated longer ago.
const DefaultMaxAge = "30d"

// cleanupMargin is how long before Gemini CLI's cleanup a log not
// imported yet makes doctor fail rather than warn.
const cleanupMargin = 7 * 24 * time.Hour

// Doctor checks Gemini CLI's setup: its version, GOOGLE_GEMINI_BASE_URL
// (the environment, then the .env file Gemini CLI reads), bbengine's
// hooks and MCP server in the settings.json files install writes, and
// general.sessionRetention against the logs not imported yet.
func (a Agent) Doctor(env *agents.DoctorEnv) []agents.Finding {
	gemHome := geminiHome(env.Home)
	userSettings := filepath.Join(gemHome, ".gemini", "settings.json")
	projSettings := filepath.Join(env.ProjectDir, ".gemini", "settings.json")
	_, lookErr := exec.LookPath("gemini")
	if lookErr != nil && !exists(filepath.Dir(userSettings)) {
		return []agents.Finding{{Agent: a.Name(), Check: "found", Severity: agents.OK,
			Message: fmt.Sprintf("Gemini CLI: not found (no gemini on PATH, no %s)", filepath.Dir(userSettings))}}
	}
	out := []agents.Finding{agents.VersionFinding(env, a.Name(), "Gemini CLI", "gemini")}
	// The settings files, highest precedence first, as Gemini CLI merges
	// them: the system's, the project's (not read when the project is
	// the home directory), the user's, the system defaults.
	sys := systemSettingsPath()
	var docs []doc
	for _, p := range slices.Compact([]string{sys, projSettings, userSettings, filepath.Join(filepath.Dir(sys), "system-defaults.json")}) {
		if p == projSettings && filepath.Clean(env.ProjectDir) == filepath.Clean(gemHome) {
			continue
		}
		d, err := inspect(p)
		if err != nil {
			out = append(out, agents.Finding{Agent: a.Name(), Check: "settings", Severity: agents.Fail,
				Message: err.Error(), Fix: "fix the file: Gemini CLI does not read it either"})
			continue
		}
		docs = append(docs, d)
	}
	out = append(out, a.baseURL(env, gemHome))
	out = append(out, a.hooks(env, docs, userSettings, projSettings), a.mcp(env, docs, userSettings, projSettings))
	out = append(out, retention(env, docs, userSettings))
	return out
}

// systemSettingsPath is Gemini CLI's system settings file:
// $GEMINI_CLI_SYSTEM_SETTINGS_PATH, else the platform's.
func systemSettingsPath() string {
	if v := os.Getenv("GEMINI_CLI_SYSTEM_SETTINGS_PATH"); v != "" {
		return v
	}
	switch runtime.GOOS {
	case "darwin":
		return "/Library/Application Support/GeminiCli/settings.json"
	case "windows":
		return `C:\ProgramData\gemini-cli\settings.json`
	}
	return "/etc/gemini-cli/settings.json"
}

// doc is a settings file as read; Root is nil when it does not exist.
type doc struct{ settings.Doc }

func inspect(path string) (doc, error) {
	d, err := settings.ReadDoc(path)
	return doc{d}, err
}

func exists(path string) bool { return settings.Exists(path) }

// get returns the value at the dotted path of keys in d, when set.
func (d doc) get(keys ...string) (any, bool) {
	if d.Root == nil {
		return nil, false
	}
	o := d.Root
	for i, k := range keys {
		v, ok := o.Get(k)
		if !ok {
			return nil, false
		}
		if i == len(keys)-1 {
			return v, true
		}
		if o, ok = v.(*jsonedit.Object); !ok {
			return nil, false
		}
	}
	return nil, false
}

// lookup returns the value of keys in the first of docs that sets it,
// and that file.
func lookup(docs []doc, keys ...string) (any, string, bool) {
	for _, d := range docs {
		if v, ok := d.get(keys...); ok {
			return v, d.Path, true
		}
	}
	return nil, "", false
}

// envFile returns the .env file Gemini CLI reads for the project dir:
// walking up from dir, the first directory holding .gemini/.env or .env
// (envFileIn), then the Gemini home's; "" when there is none. It
// assumes a trusted folder: Gemini CLI reads only the auth variables of
// an untrusted one's.
func envFile(dir, gemHome string) (string, error) {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		p, found, err := envFileIn(d)
		if err != nil || found {
			return p, err
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	p, _, err := envFileIn(gemHome)
	return p, err
}

func (a Agent) baseURL(env *agents.DoctorEnv, gemHome string) agents.Finding {
	where, base := EnvVar, ""
	if v, ok := os.LookupEnv(EnvVar); ok && v != "" {
		// Gemini CLI takes no value from a .env file that the
		// environment sets already.
		where, base = EnvVar+" in the environment", v
	} else if p, err := envFile(env.ProjectDir, gemHome); err != nil {
		return agents.Finding{Agent: a.Name(), Check: "base-url", Severity: agents.Warn, Message: err.Error(),
			Fix: "make the .env file readable: Gemini CLI does not read it either"}
	} else if p != "" {
		where = fmt.Sprintf("%s (not in %s, the .env file Gemini CLI reads)", EnvVar, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return agents.Finding{Agent: a.Name(), Check: "base-url", Severity: agents.Warn, Message: err.Error(),
				Fix: "make the .env file readable: Gemini CLI does not read it either"}
		}
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := envLine(l); ok {
				where, base = EnvVar+" in "+p, v
			}
		}
	}
	proxy := env.ProxyURL()
	file, _ := envPath(gemHome)
	fix := fmt.Sprintf("run `bbengine install gemini --user --base-url %s` (it sets %s in %s), with `bbengine proxy` running", proxy, EnvVar, file)
	return agents.BaseURLFinding(env, a.Name(), where, base, "", fix)
}

func (a Agent) hooks(env *agents.DoctorEnv, docs []doc, userSettings, projSettings string) agents.Finding {
	f := agents.Finding{Agent: a.Name(), Check: "hooks", Severity: agents.Warn,
		Fix: "run `bbengine install gemini --user` (or `bbengine install gemini` in the project)"}
	ours := HooksSettings(env.Exe, "")
	var partial []string
	for _, d := range docs {
		if d.Root == nil || (d.Path != userSettings && d.Path != projSettings) {
			continue
		}
		missing := settings.MissingHooksOf(d.Root, ours, a.Name(), env.Exe)
		if len(missing) > 0 {
			if len(missing) < 2 {
				partial = append(partial, fmt.Sprintf("%s lacks the %s hook", d.Path, strings.Join(missing, ", ")))
			}
			continue
		}
		if v, file, ok := lookup(docs, "hooksConfig", "enabled"); ok && v == false {
			f.Message = fmt.Sprintf("bbengine's hooks are in %s, but hooksConfig.enabled is false in %s: Gemini CLI runs no hooks", d.Path, file)
			f.Fix = fmt.Sprintf(`set "hooksConfig": {"enabled": true} in %s`, file)
			return f
		}
		f = agents.HookDirFinding(env, a.Name(), d.Path, settings.HookDirs(d.Root, a.Name(), env.Exe))
		if f.Severity == agents.OK {
			f.Message = "bbengine's SessionStart and BeforeAgent hooks are registered in " + d.Path
		}
		return f
	}
	f.Message = fmt.Sprintf("bbengine's hooks are not registered (not in %s nor %s): sessions start without their context pack", userSettings, projSettings)
	if len(partial) > 0 {
		f.Message = strings.Join(partial, "; ")
	}
	return f
}

func (a Agent) mcp(env *agents.DoctorEnv, docs []doc, userSettings, projSettings string) agents.Finding {
	for _, d := range docs {
		if d.Root == nil || (d.Path != userSettings && d.Path != projSettings) {
			continue
		}
		if cmd := settings.OurMCP(d.Root, env.Exe); cmd != "" {
			return agents.Finding{Agent: a.Name(), Check: "mcp", Severity: agents.OK,
				Message: fmt.Sprintf("the bbengine MCP server is registered in %s (%s)", d.Path, cmd)}
		}
	}
	return agents.Finding{Agent: a.Name(), Check: "mcp", Severity: agents.Warn,
		Message: fmt.Sprintf("the bbengine MCP server is not registered (not in %s nor %s): no memory tools", userSettings, projSettings),
		Fix:     "run `bbengine install gemini --user` (or `bbengine install gemini` in the project)"}
}

// retentionPeriod matches a period of Gemini CLI's session retention.
var retentionPeriod = regexp.MustCompile(`^(\d+)([dhwm])$`)

// parsePeriod reads a retention period as Gemini CLI 0.61 does: a
// whole number above 0 of hours, days, weeks or months of 30 days.
func parsePeriod(s string) (time.Duration, bool) {
	m := retentionPeriod.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || n == 0 || n > 1e6 {
		return 0, false
	}
	unit := map[string]time.Duration{"h": time.Hour, "d": 24 * time.Hour, "w": 7 * 24 * time.Hour, "m": 30 * 24 * time.Hour}[m[2]]
	return time.Duration(n) * unit, true
}

// retention compares general.sessionRetention, merged over the settings
// files as Gemini CLI merges it, with the logs not imported yet. Gemini
// CLI 0.61 runs its cleanup at startup, in the project it starts in:
// when enabled (the default) and valid, it deletes the chats whose
// lastUpdated is older than maxAge (default "30d"), and beyond the
// maxCount newest when that is set.
func retention(env *agents.DoctorEnv, docs []doc, userSettings string) agents.Finding {
	f := agents.Finding{Agent: "gemini", Check: "cleanup"}
	const key = "general.sessionRetention"
	// The file to change: the one of highest precedence that sets the
	// retention (a setting there wins over the user's), else the user's.
	file := userSettings
	if _, p, ok := lookup(docs, "general", "sessionRetention"); ok {
		file = p
	}
	off := fmt.Sprintf(`set "general": {"sessionRetention": {"enabled": false}} in %s`, file)
	enabled, enabledIn, enabledSet := lookup(docs, "general", "sessionRetention", "enabled")
	if enabledSet && enabled != true {
		// Gemini CLI skips its cleanup unless enabled is true.
		f.Severity, f.Message = agents.OK, fmt.Sprintf("%s.enabled is %s in %s: Gemini CLI deletes no chats", key, settings.JSONText(enabled), enabledIn)
		return f
	}
	maxAge, ageIn, ageSet := lookup(docs, "general", "sessionRetention", "maxAge")
	if !ageSet {
		maxAge = DefaultMaxAge
	}
	// Gemini CLI applies maxAge when it is truthy, as JavaScript says.
	ageOn := maxAge != nil && maxAge != "" && maxAge != false && maxAge != json.Number("0")
	ageText, _ := maxAge.(string)
	age, ageOK := parsePeriod(ageText)
	minRet, _, _ := lookup(docs, "general", "sessionRetention", "minRetention")
	minText, _ := minRet.(string)
	minAge, minOK := parsePeriod(minText)
	if !minOK {
		minAge = 24 * time.Hour
	}
	count, countIn, countSet := lookup(docs, "general", "sessionRetention", "maxCount")
	n, _ := count.(json.Number)
	maxCount, countErr := n.Int64()
	// An invalid setting turns Gemini CLI's cleanup off, with a warning
	// only its debug log shows: say so, since a fix of it turns it on.
	var invalid string
	switch {
	case ageOn && !ageOK:
		invalid = fmt.Sprintf("%s.maxAge is %s in %s, not a period like \"30d\"", key, settings.JSONText(maxAge), ageIn)
	case ageOn && age < minAge:
		invalid = fmt.Sprintf("%s.maxAge is %q in %s, below minRetention (%v)", key, ageText, ageIn, minAge)
	case countSet && (countErr != nil || maxCount < 1):
		invalid = fmt.Sprintf("%s.maxCount is %s in %s, not a whole number of 1 or more", key, settings.JSONText(count), countIn)
	case !ageOn && !countSet:
		invalid = fmt.Sprintf("%s.maxAge is %s in %s, and maxCount is not set", key, settings.JSONText(maxAge), ageIn)
	}
	if invalid != "" {
		f.Severity = agents.Warn
		f.Message = invalid + ": Gemini CLI turns its cleanup off, and would delete chats once that is fixed"
		f.Fix = off
		return f
	}
	var setting string
	switch {
	case !ageSet && !enabledSet:
		setting = fmt.Sprintf("%s is not set (in %s or the project's settings): Gemini CLI deletes chats %s after their last update, its default", key, userSettings, DefaultMaxAge)
	case !ageSet:
		setting = fmt.Sprintf("%s.enabled is true in %s and maxAge is not set: Gemini CLI deletes chats %s after their last update, its default", key, enabledIn, DefaultMaxAge)
	case ageOn:
		setting = fmt.Sprintf("%s.maxAge is %q in %s", key, ageText, ageIn)
	default:
		setting = fmt.Sprintf("%s.maxAge is %s in %s", key, settings.JSONText(maxAge), ageIn)
	}
	if countSet {
		setting += fmt.Sprintf("; maxCount is %d in %s: Gemini CLI keeps only the %d newest chats of each project", maxCount, countIn, maxCount)
	}
	var pending string
	risk := false
	if env.Unimported > 0 {
		old := env.Now.Sub(env.Oldest)
		pending = fmt.Sprintf("; %d of %d logs are not imported yet, the oldest last changed %d days ago", env.Unimported, env.Logs, int(old.Hours()/24))
		if ageOn && old >= age-cleanupMargin {
			risk = true
			pending += fmt.Sprintf(" (Gemini CLI deletes chats after %s)", ageText)
		}
		if most, project := mostChats(env.Home); countSet && int64(most) > maxCount {
			// The next start deletes all but the newest maxCount of a
			// project: the oldest, the likeliest not imported.
			risk = true
			pending += fmt.Sprintf(" (Gemini CLI keeps %d chats of a project; %s has %d)", maxCount, project, most)
		}
	}
	f.Fix = off
	switch {
	case risk:
		f.Severity = agents.Fail
		f.Message = setting + pending
		f.Fix = "run `bbengine import gemini --all` now, and " + off
	case countSet || !ageSet:
		f.Severity = agents.Warn
		f.Message = setting + pending
	case ageOn && age < 365*24*time.Hour && env.Unimported > 0:
		f.Severity = agents.Warn
		f.Message = setting + pending + "; import them before Gemini CLI deletes them"
		f.Fix = "run `bbengine import gemini --all` (or keep `bbengine import gemini --all --follow` running), or " + off
	case ageOn && age < 365*24*time.Hour:
		f.Severity = agents.Warn
		f.Message = setting + ": chats not imported by then are lost"
	default:
		f.Severity, f.Message, f.Fix = agents.OK, setting+pending, ""
	}
	return f
}

var _ agents.Doctor = Agent{}

// mostChats returns the largest number of chats (session logs in
// chats/, a session-X.json and its X.jsonl being one) of a project
// directory under the log directory (.gemini/tmp/<project>), and that
// directory: maxCount is per project, so only a project with more
// chats than it loses any.
func mostChats(home string) (int, string) {
	most, which := 0, ""
	for _, tmp := range (Agent{}).LogDirs(home) {
		projects, _ := os.ReadDir(tmp)
		for _, p := range projects {
			dir := filepath.Join(tmp, p.Name(), "chats")
			files, _ := os.ReadDir(dir)
			chats := map[string]bool{}
			for _, f := range files {
				if n := f.Name(); !f.IsDir() && (Agent{}).IsLog(filepath.Join(dir, n)) {
					chats[strings.TrimSuffix(n, "l")] = true
				}
			}
			if len(chats) > most {
				most, which = len(chats), filepath.Join(tmp, p.Name())
			}
		}
	}
	return most, which
}
