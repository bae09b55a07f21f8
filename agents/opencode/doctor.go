package opencode

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/agents/internal/settings"
	"github.com/bbengine/bbengine/internal/jsonedit"
)

// Doctor checks opencode's setup: its version, the base URL of the
// provider "bbengine" in the config files (configFiles, read as JSONC as
// opencode reads them), bbengine's MCP server there, and its database: where it
// is ($OPENCODE_DB) and how much of it waits in its -wal. opencode runs
// no hook commands and deletes no session on its own, so there is no
// hook or cleanup check.
func (a Agent) Doctor(env *agents.DoctorEnv) []agents.Finding {
	userFile := filepath.Join(configDir(env.Home), "opencode.json")
	projFile := filepath.Join(env.ProjectDir, "opencode.json")
	_, lookErr := exec.LookPath("opencode")
	if lookErr != nil && !settings.Exists(filepath.Dir(userFile)) && !settings.Exists(dataDir(env.Home)) {
		return []agents.Finding{{Agent: a.Name(), Check: "found", Severity: agents.OK,
			Message: fmt.Sprintf("opencode: not found (no opencode on PATH, no %s)", filepath.Dir(userFile))}}
	}
	out := []agents.Finding{agents.VersionFinding(env, a.Name(), "opencode", "opencode")}
	var docs []settings.Doc
	for _, p := range configFiles(env.ProjectDir, filepath.Dir(userFile)) {
		d, err := settings.ReadDocJSONC(p)
		if err != nil {
			out = append(out, agents.Finding{Agent: a.Name(), Check: "settings", Severity: agents.Fail,
				Message: err.Error(), Fix: "fix the file: opencode does not read it either"})
			continue
		}
		docs = append(docs, d)
	}
	out = append(out, a.baseURL(env, docs, userFile), a.mcp(env, docs, userFile, projFile), a.database(env))
	return out
}

// configFiles returns the config files opencode reads, the one that
// wins first: the project's opencode.json and opencode.jsonc, then the
// user's opencode.jsonc, opencode.json and config.json (opencode merges
// them in the opposite order, a later file's values winning). opencode
// reads each as JSONC.
func configFiles(project, user string) []string {
	var out []string
	if filepath.Clean(project) != filepath.Clean(user) {
		out = append(out, filepath.Join(project, "opencode.json"), filepath.Join(project, "opencode.jsonc"))
	}
	return append(out, filepath.Join(user, "opencode.jsonc"), filepath.Join(user, "opencode.json"), filepath.Join(user, "config.json"))
}

// get returns the value at keys in the first of docs that sets it, and
// that file.
func get(docs []settings.Doc, keys ...string) (any, string, bool) {
	for _, d := range docs {
		o := d.Root
		for i, k := range keys {
			if o == nil {
				break
			}
			v, ok := o.Get(k)
			if !ok {
				break
			}
			if i == len(keys)-1 {
				return v, d.Path, true
			}
			o, _ = v.(*jsonedit.Object)
		}
	}
	return nil, "", false
}

func (a Agent) baseURL(env *agents.DoctorEnv, docs []settings.Doc, userFile string) agents.Finding {
	fix := fmt.Sprintf("run `bbengine install opencode --user --base-url %s` (it adds the provider %q to %s), list your models in it, and pick one as %s/<model>",
		env.ProxyURL(), ProviderName, userFile, ProviderName)
	where, base := fmt.Sprintf("provider.%s.options.baseURL", ProviderName), ""
	if v, file, ok := get(docs, "provider", ProviderName, "options", "baseURL"); ok {
		base, _ = v.(string)
		where += " in " + file
	}
	f := agents.BaseURLFinding(env, a.Name(), where, base, "/v1", fix)
	if f.Severity == agents.OK {
		if m, file, ok := get(docs, "model"); ok {
			if s, _ := m.(string); !strings.HasPrefix(s, ProviderName+"/") {
				f.Severity = agents.Warn
				f.Message += fmt.Sprintf("; but the model of %s is %s, not one of the provider %q: opencode does not use it unless you pick it", file, settings.JSONText(m), ProviderName)
				f.Fix = fmt.Sprintf(`set "model": "%s/<model>" in %s, or pick the model in opencode`, ProviderName, file)
			}
		}
	}
	return f
}

func (a Agent) mcp(env *agents.DoctorEnv, docs []settings.Doc, userFile, projFile string) agents.Finding {
	for _, d := range docs {
		if d.Root == nil {
			continue
		}
		v, _ := d.Root.Get("mcp")
		if servers, _ := v.(*jsonedit.Object); servers != nil {
			if cmd := ourMCP(servers, env.Exe); cmd != "" {
				return agents.Finding{Agent: a.Name(), Check: "mcp", Severity: agents.OK,
					Message: fmt.Sprintf("the bbengine MCP server is registered in %s (%s)", d.Path, cmd)}
			}
		}
	}
	return agents.Finding{Agent: a.Name(), Check: "mcp", Severity: agents.Warn,
		Message: fmt.Sprintf("the bbengine MCP server is not registered (not in %s nor %s): no memory tools, and no context pack (opencode runs no hook commands)", userFile, projFile),
		Fix:     "run `bbengine install opencode --user` (or `bbengine install opencode` in the project)"}
}

// databasePath returns the database opencode uses: $OPENCODE_DB (an
// absolute path, or one relative to the data directory), else
// opencode.db in the data directory; "" for an in-memory one.
func databasePath(home string) string {
	switch db := os.Getenv("OPENCODE_DB"); {
	case db == ":memory:":
		return ""
	case db == "":
		return filepath.Join(dataDir(home), "opencode.db")
	case filepath.IsAbs(db):
		return db
	default:
		return filepath.Join(dataDir(home), db)
	}
}

// database reports where opencode's database is and the size of its
// -wal, which holds the rows written since opencode last checkpointed
// (it does so when it starts); bbengine reads them there.
func (a Agent) database(env *agents.DoctorEnv) agents.Finding {
	f := agents.Finding{Agent: a.Name(), Check: "database", Severity: agents.OK}
	db := databasePath(env.Home)
	switch {
	case db == "":
		f.Severity = agents.Warn
		f.Message = "OPENCODE_DB is :memory:: opencode keeps its sessions in memory only, and nothing is left to import"
		f.Fix = "unset OPENCODE_DB, and record opencode through `bbengine proxy`"
		return f
	case !settings.Exists(db):
		tree := filepath.Join(dataDir(env.Home), "storage")
		f.Message = fmt.Sprintf("no database at %s yet", db)
		if settings.Exists(tree) {
			f.Message += fmt.Sprintf(" (the JSON tree of opencode 1.1 and earlier is in %s)", tree)
		}
		return f
	}
	info, err := os.Stat(db + "-wal")
	wal := int64(0)
	if err == nil {
		wal = info.Size()
	}
	f.Message = fmt.Sprintf("database %s, %.1f MB in its -wal (bbengine reads it there, read-only)", db, float64(wal)/(1<<20))
	if os.Getenv("OPENCODE_DB") != "" {
		f.Message += "; OPENCODE_DB names it, so `bbengine import opencode --all` must run with the same OPENCODE_DB"
	}
	return f
}
