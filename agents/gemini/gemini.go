package gemini

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/agents/internal/hookjson"
)

func init() { agents.Register(Agent{}) }

// Family is the name of Gemini CLI's sessions.
const Family = "gemini-cli"

// Agent is Google's Gemini CLI. The zero value is ready to use.
type Agent struct{}

// Name returns "gemini".
func (Agent) Name() string { return "gemini" }

// Doc describes Gemini CLI for the command line.
func (Agent) Doc() agents.Doc {
	return agents.Doc{
		Title:        "Gemini CLI",
		InstallUsage: "Gemini CLI: hooks and mcpServers in .gemini/settings.json, GOOGLE_GEMINI_BASE_URL in .gemini/.env",
		InstallDescription: "--project (the default) edits .gemini/settings.json and .gemini/.env in --project-dir\n" +
			"(Gemini CLI reads a project's .gemini/.env only once the folder is trusted); --user edits\n" +
			"them in $GEMINI_CLI_HOME or ~/.gemini. When .gemini/.env does not exist but a .env beside\n" +
			"it does, the base URL goes into that .env, the file Gemini CLI would read. The base URL\n" +
			"is two marked lines; a GOOGLE_GEMINI_BASE_URL set in the shell wins over any .env.",
		ForceUsage: "replace a GOOGLE_GEMINI_BASE_URL of your own in the .env file",
		HookUsage:  "answer a Gemini CLI hook (SessionStart, BeforeAgent)",
		HookNote:   "Gemini CLI runs the hooks of settings.json unless hooksConfig.enabled is false.",
	}
}

// home returns $GEMINI_CLI_HOME, else home: the directory Gemini CLI
// keeps .gemini in.
func geminiHome(home string) string {
	if v := os.Getenv("GEMINI_CLI_HOME"); v != "" {
		return v
	}
	return home
}

// LogDirs returns .gemini/tmp of $GEMINI_CLI_HOME, else of home: the
// project directories whose chats/ hold the session logs.
func (Agent) LogDirs(home string) []string {
	return []string{filepath.Join(geminiHome(home), ".gemini", "tmp")}
}

// IsLog reports whether path is a session log: chats/session-*.jsonl,
// a subagent's chats/<parent id>/<id>.jsonl, an older version's
// chats/session-*.json, or a project's logs.json (the prompts typed in
// it) beside chats/.
func (Agent) IsLog(path string) bool {
	name := filepath.Base(path)
	dir := filepath.Dir(path)
	switch {
	case name == "logs.json":
		return filepath.Base(filepath.Dir(dir)) == "tmp"
	case filepath.Base(dir) == "chats":
		return strings.HasPrefix(name, "session-") && (strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".json"))
	case filepath.Base(filepath.Dir(dir)) == "chats":
		return strings.HasSuffix(name, ".jsonl")
	}
	return false
}

// SessionHeaders returns none: Gemini CLI sends no session id (the proxy
// tells its sessions apart by their conversations).
func (Agent) SessionHeaders() []string { return nil }

// Family returns gemini-cli: requests whose User-Agent says GeminiCLI
// (GeminiCLI/0.61.0/<model> (linux; x64; …)), and the logs of import
// source "gemini". Its sessions join their logs by content: it sends no
// session id its log is named by.
func (Agent) Family() agents.Family {
	return agents.Family{Name: Family, UserAgents: []string{"geminicli", "gemini-cli"}, Sources: []string{Source}, JoinByContent: true}
}

// SessionFiles returns path alone: a log holds its whole session (a
// subagent's log is a session of its own).
func (Agent) SessionFiles(path string) ([]string, error) { return []string{path}, nil }

// ParseHook decodes a hook event: Gemini CLI sends the fields Claude
// Code sends (session_id, transcript_path, cwd, hook_event_name, source,
// prompt). BeforeAgent, which carries the prompt, is reported as
// UserPromptSubmit, the event the hook command answers.
func (Agent) ParseHook(b []byte) (agents.HookEvent, error) {
	ev, err := hookjson.Parse(b)
	if ev.Event == "BeforeAgent" {
		ev.Event = "UserPromptSubmit"
	}
	return ev, err
}

// HookAnswer returns {"hookSpecificOutput": {"hookEventName": …,
// "additionalContext": text}}, which Gemini CLI takes from SessionStart
// and BeforeAgent hooks. Gemini CLI 0.61 ignores hookEventName, escapes
// < and > of the text as &lt; and &gt; and wraps it in <hook_context>.
func (Agent) HookAnswer(ev agents.HookEvent, text string) ([]byte, error) {
	if ev.Event == "UserPromptSubmit" {
		ev.Event = "BeforeAgent"
	}
	return hookjson.Answer(ev, text)
}

// HookMaxChars returns 10,000, the cap of Claude Code's hooks: Gemini
// CLI states none, and a context pack needs no more.
func (Agent) HookMaxChars() int { return hookjson.MaxChars }
