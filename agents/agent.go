package agents

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Agent is what bbengine knows about one coding agent. An
// implementation holds no state: every method may be called from any
// goroutine.
type Agent interface {
	// Name is the agent's word in commands and session ids: "claude" in
	// `bbengine install claude` and in "claude:<session id>". It is
	// lower case and never changes.
	Name() string

	// Doc describes the agent for the command line.
	Doc() Doc

	// LogDirs returns where the agent writes its session logs by
	// default, honouring its own environment variables (CLAUDE_CONFIG_DIR,
	// CODEX_HOME), with home the user's home directory. A directory in
	// the list need not exist.
	LogDirs(home string) []string

	// IsLog reports whether path, a file found under a log directory or
	// a directory the user named, is one of the agent's logs.
	IsLog(path string) bool

	// SessionHeaders returns the HTTP request headers in which the agent
	// sends its own session id to the provider, most trusted first, so
	// that the proxy files its traffic under that session.
	SessionHeaders() []string

	// Family says how the agent's recorded sessions are known: the name
	// derivation gives them, the User-Agent words of its requests, the
	// import sources of its logs. Families sets Coding.
	Family() Family

	// SessionFiles returns the files one session is read from when the
	// user names one of its log files, path, that exists and is no
	// directory (bbengine convert): path first, then the files of the
	// same session that the agent keeps beside it (Claude Code's folder
	// of subagents and spilled tool outputs), or path alone.
	SessionFiles(path string) ([]string, error)

	// Install returns the edits of the agent's configuration files that
	// set it up to use bbengine (hooks, MCP server, base URL), or with
	// s.Uninstall the edits that take that out again. It writes nothing:
	// the caller shows or applies the changes. An error names the file
	// (and the line when it does not parse) and says what to do.
	Install(s *Setup) ([]*Change, error)

	// ParseHook decodes the hook event the agent writes on the hook
	// command's stdin. The error is the decoder's, unwrapped.
	ParseHook(b []byte) (HookEvent, error)

	// HookAnswer returns what the hook command writes on stdout to put
	// text into the conversation at ev (a SessionStart or
	// UserPromptSubmit event), ending in a newline.
	HookAnswer(ev HookEvent, text string) ([]byte, error)

	// HookMaxChars is the most characters of text the agent takes from
	// one hook answer.
	HookMaxChars() int
}

// Doc is how the command line presents an agent.
type Doc struct {
	// Title is the agent's name for people: "Claude Code".
	Title string
	// InstallUsage and InstallDescription are the usage line and the
	// description of `bbengine install NAME`.
	InstallUsage, InstallDescription string
	// ForceUsage is the usage of install's --force flag, "" when the
	// agent's install has nothing to force.
	ForceUsage string
	// HookUsage is the usage line of `bbengine hook NAME`.
	HookUsage string
	// HookNote is said after an install that added hooks, "" for
	// nothing.
	HookNote string
}

// Setup is what an install puts into an agent's configuration, or for
// an uninstall, where to take it out.
type Setup struct {
	// Exe is the bbengine executable the hooks and the MCP server run,
	// and Dir the data directory they pass with --dir ("" for the
	// default).
	Exe, Dir string
	// BaseURL is the proxy's address, "" to leave the agent's base URL
	// alone.
	BaseURL string
	// MCP and Hooks add the MCP server and the hooks.
	MCP, Hooks bool
	// Force replaces settings of the user's own that bbengine would
	// otherwise refuse to touch.
	Force bool
	// User edits the user's files, else those of ProjectDir.
	User       bool
	ProjectDir string
	// Home is the user's home directory.
	Home string
	// Uninstall takes bbengine's settings out; only the fields above
	// that say where (User, ProjectDir, Home, Exe) count then.
	Uninstall bool
}

// HookEvent is the part of an agent's hook event that bbengine reads.
type HookEvent struct {
	// SessionID is the agent's own session id.
	SessionID      string
	TranscriptPath string
	// Cwd is the directory the agent works in.
	Cwd string
	// Event is the hook's event name: SessionStart, UserPromptSubmit,
	// or another the hook does not answer.
	Event string
	// Source is why a session starts: startup, resume, clear or compact.
	Source string
	// Prompt is what the user submitted (UserPromptSubmit).
	Prompt string
}

var (
	mu     sync.RWMutex
	agents = map[string]Agent{}
)

// Register makes an agent known by its name. It is called from the
// init function of the agent's package, and panics when the name is
// taken or empty.
func Register(a Agent) {
	mu.Lock()
	defer mu.Unlock()
	name := a.Name()
	if name == "" {
		panic("agents: Register of an agent without a name")
	}
	if _, dup := agents[name]; dup {
		panic(fmt.Sprintf("agents: Register called twice for %q", name))
	}
	agents[name] = a
}

// Lookup returns the agent registered under name.
func Lookup(name string) (Agent, bool) {
	mu.RLock()
	defer mu.RUnlock()
	a, ok := agents[name]
	return a, ok
}

// All returns the registered agents in the order of their names.
func All() []Agent {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Agent, 0, len(agents))
	for _, a := range agents {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b Agent) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

// Names returns the names of the registered agents, sorted.
func Names() []string {
	var out []string
	for _, a := range All() {
		out = append(out, a.Name())
	}
	return out
}

// SessionHeaders returns known followed by the session headers of the
// registered agents that it does not hold already (compared without
// regard to case, as HTTP compares names), in the order of All.
func SessionHeaders(known []string) []string {
	out := slices.Clone(known)
	for _, a := range All() {
		for _, h := range a.SessionHeaders() {
			if !slices.ContainsFunc(out, func(k string) bool { return strings.EqualFold(k, h) }) {
				out = append(out, h)
			}
		}
	}
	return out
}

// A Launcher is an Agent that `bbengine run` can hand its hooks on its
// command line, for one run, without touching its settings files. An
// agent that is no Launcher gets the context pack through the {pack}
// placeholder and BBENGINE_PACK_FILE alone.
type Launcher interface {
	Agent

	// LaunchAt returns the index in argv, a command line bbengine run
	// starts, of the agent's program (its executable, or its script
	// after an interpreter), or -1 when argv does not run the agent.
	LaunchAt(argv []string) int

	// LaunchArgs returns the arguments to insert after the agent's
	// program so that it runs bbengine's hooks (exe, with --dir dir when
	// dir is not "") during the run, and the temporary files it wrote for
	// them, which the caller removes when the run ends (also after an
	// error).
	LaunchArgs(exe, dir string) (args, files []string, err error)
}

// A Doctor is an Agent that checks its own setup for `bbengine doctor`:
// the version installed, whether its base URL goes through the running
// proxy, whether bbengine's hooks and MCP server are registered, and
// whether its own cleanup deletes logs before they are imported. An
// agent that is no Doctor gets only the checks every agent shares (its
// logs found and how many are not imported yet).
type Doctor interface {
	Agent

	// Doctor returns one finding per check of the agent's setup on the
	// machine env describes, or a single one of Check "found" saying
	// the agent was not found there. It writes nothing and gives up on the agent's
	// program after env.Timeout.
	Doctor(env *DoctorEnv) []Finding
}

// DoctorEnv is the machine a Doctor checks, as `bbengine doctor` found
// it. Paths come from the user's home directory and the environment, so
// that tests can use a home of their own.
type DoctorEnv struct {
	// Home is the user's home directory, ProjectDir the project's (the
	// directory doctor runs in).
	Home, ProjectDir string
	// Exe is the bbengine executable and Dir the data directory as the
	// installed hooks pass it ("" for the default), as in Setup.
	Exe, Dir string
	// Proxy is the base URL (http://HOST:PORT) of the proxy that owns
	// the data directory, "" when none runs.
	Proxy string
	// IsProxy reports whether the base URL u answers as a bbengine proxy
	// (its /_bb/health); it is only asked of loopback addresses.
	IsProxy func(u string) bool
	// Logs is how many of the agent's logs were found in its default
	// locations; Unimported how many of them are not imported, or only
	// in part, and Oldest the modification time of the oldest of those.
	Logs, Unimported int
	Oldest           time.Time
	// Now is the time the checks are made at.
	Now time.Time
	// Timeout bounds running the agent's program (its --version).
	Timeout time.Duration
}

// DefaultProxy is the base URL of `bbengine proxy` with its default
// --listen.
const DefaultProxy = "http://127.0.0.1:8787"

// ProxyURL is the base URL a fix tells the agent to use: the running
// proxy's, else DefaultProxy.
func (env *DoctorEnv) ProxyURL() string {
	if env.Proxy != "" {
		return env.Proxy
	}
	return DefaultProxy
}

// Severity is how bad a finding is: ok, warn or fail. A fail makes
// `bbengine doctor` exit 1.
type Severity string

// The severities, from good to bad.
const (
	OK   Severity = "ok"
	Warn Severity = "warn"
	Fail Severity = "fail"
)

// Finding is one check's result: one line, and what to do about it.
type Finding struct {
	// Agent is the agent's Name, or "bbengine" for the data directory
	// and the proxy.
	Agent string `json:"agent"`
	// Check names what was checked: version, base-url, hooks, mcp,
	// cleanup, logs, data-dir, encryption, wal, proxy, lag.
	Check    string   `json:"check"`
	Severity Severity `json:"severity"`
	// Message says what was found, naming the file or setting.
	Message string `json:"message"`
	// Fix says what to do, exactly (the setting and the file, or the
	// command); "" when there is nothing to do.
	Fix string `json:"fix,omitempty"`
}
