package opencode

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/agents/internal/hookjson"
)

func init() { agents.Register(Agent{}) }

// Family is the name of opencode's sessions.
const Family = "opencode"

// Agent is opencode (sst/opencode, npm opencode-ai). The zero value is
// ready to use.
type Agent struct{}

// Name returns "opencode".
func (Agent) Name() string { return "opencode" }

// Doc describes opencode for the command line.
func (Agent) Doc() agents.Doc {
	return agents.Doc{
		Title:        "opencode",
		InstallUsage: "opencode: the bbengine provider and MCP server in opencode.json",
		InstallDescription: "--project (the default) edits opencode.json in --project-dir; --user edits\n" +
			"~/.config/opencode/opencode.json ($XDG_CONFIG_HOME/opencode). With --base-url, install adds the\n" +
			"provider \"bbengine\" (@ai-sdk/openai-compatible, options.baseURL <proxy>/v1; give it your\n" +
			"models and pick one with --model bbengine/<model>). opencode has no hook commands (its hooks\n" +
			"are JavaScript plugins): the context pack reaches it through the MCP server.",
		HookUsage: "opencode runs no hook commands (its hooks are JavaScript plugins); this answers with an error",
		HookNote: "opencode runs no hook commands: the MCP server gives it bbengine's memory. To send its calls through the\n" +
			"proxy, list your models under provider.bbengine.models in opencode.json and pick one as bbengine/<model>.",
	}
}

// dataDir returns opencode's data directory: $XDG_DATA_HOME/opencode,
// else home/.local/share/opencode (opencode has no per-OS paths).
func dataDir(home string) string {
	if v := os.Getenv("XDG_DATA_HOME"); v != "" {
		return filepath.Join(v, "opencode")
	}
	return filepath.Join(home, ".local", "share", "opencode")
}

// configDir returns opencode's global config directory.
func configDir(home string) string {
	if v := os.Getenv("XDG_CONFIG_HOME"); v != "" {
		return filepath.Join(v, "opencode")
	}
	return filepath.Join(home, ".config", "opencode")
}

// LogDirs returns opencode's data directory, and the directory of
// $OPENCODE_DB when that names a database elsewhere.
func (Agent) LogDirs(home string) []string {
	out := []string{dataDir(home)}
	if db := os.Getenv("OPENCODE_DB"); db != "" && db != ":memory:" && filepath.IsAbs(db) {
		if d := filepath.Dir(db); !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// IsLog reports whether path is opencode's storage: a database
// (opencode.db, opencode-<channel>.db; not its -wal or -shm), or a
// session, message or part file of the JSON tree of 1.1 and earlier
// (storage/session/<project>/<id>.json, storage/message/<session>/<id>.json,
// storage/part/<message>/<id>.json).
func (Agent) IsLog(path string) bool {
	name := filepath.Base(path)
	if strings.HasSuffix(name, ".db") {
		return name == "opencode.db" || strings.HasPrefix(name, "opencode-") || filepath.Base(path) == filepath.Base(os.Getenv("OPENCODE_DB"))
	}
	if !strings.HasSuffix(name, ".json") {
		return false
	}
	kind := filepath.Base(filepath.Dir(filepath.Dir(path)))
	return (kind == "session" || kind == "message" || kind == "part") && filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(path)))) == "storage"
}

// SessionHeaders returns x-session-affinity and x-session-id, in which
// opencode 1.18 sends its session id (ses_…) with every model call to a
// provider of the user's own.
func (Agent) SessionHeaders() []string { return []string{"x-session-affinity", "x-session-id"} }

// Family returns opencode: requests whose User-Agent starts
// opencode/1.18.33, and the storage of import source "opencode".
func (Agent) Family() agents.Family {
	return agents.Family{Name: Family, UserAgents: []string{"opencode"}, Sources: []string{Source}, JoinByID: true}
}

// SessionFiles returns path alone for a database (every session of it is
// read), and for a file of the JSON tree the session's files: its session
// file, its messages' files and their parts' files.
func (Agent) SessionFiles(path string) ([]string, error) {
	return treeSessionFiles(path)
}

// errNoHooks says opencode runs no hook commands.
var errNoHooks = errors.New("opencode has no hook commands: its hooks are JavaScript plugins; bbengine reaches it through its MCP server")

// ParseHook returns an error: opencode runs no hook commands.
func (Agent) ParseHook([]byte) (agents.HookEvent, error) { return agents.HookEvent{}, errNoHooks }

// HookAnswer returns an error: opencode runs no hook commands.
func (Agent) HookAnswer(agents.HookEvent, string) ([]byte, error) { return nil, errNoHooks }

// HookMaxChars returns hookjson.MaxChars, the cap of the other agents'
// hook answers, though opencode takes none.
func (Agent) HookMaxChars() int { return hookjson.MaxChars }
