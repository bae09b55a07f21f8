package codex

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/agents/internal/hookjson"
)

func init() { agents.Register(Agent{}) }

// Agent is OpenAI's Codex CLI. The zero value is ready to use.
type Agent struct{}

// Name returns "codex".
func (Agent) Name() string { return "codex" }

// Doc describes Codex for the command line.
func (Agent) Doc() agents.Doc {
	return agents.Doc{
		Title:        "Codex",
		InstallUsage: "Codex: openai_base_url, [mcp_servers.bbengine], hooks.json with codex_hooks, and an AGENTS.md section",
		InstallDescription: "--project (the default) writes .codex/config.toml, .codex/hooks.json and AGENTS.md in\n" +
			"--project-dir (Codex reads a project's .codex/ only once the project is trusted); --user\n" +
			"writes config.toml, hooks.json and AGENTS.md in $CODEX_HOME (or ~/.codex). In config.toml\n" +
			"it adds marked blocks (the user's lines and comments stay as they are) and, when the\n" +
			"file has a [features] table, one marked line in it. The AGENTS.md section tells the\n" +
			"agent how to get the context pack and use the memory tools.",
		HookUsage: "answer a Codex hook (hooks.json with [features] codex_hooks = true: SessionStart, UserPromptSubmit)",
		HookNote:  "Codex asks you to review new hooks before it runs them.",
	}
}

// LogDirs returns the sessions and archived_sessions directories of
// $CODEX_HOME, else of ~/.codex.
func (Agent) LogDirs(home string) []string {
	d := filepath.Join(home, ".codex")
	if v := os.Getenv("CODEX_HOME"); v != "" {
		d = v
	}
	return []string{filepath.Join(d, "sessions"), filepath.Join(d, "archived_sessions")}
}

// IsLog reports whether path is a rollout, plain or compressed
// (rollout-*.jsonl, rollout-*.jsonl.zst).
func (Agent) IsLog(path string) bool {
	name := filepath.Base(path)
	return strings.HasPrefix(name, "rollout-") && (strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".jsonl.zst"))
}

// SessionHeaders returns session-id, and session_id as older versions
// spell it. Codex also sends thread-id and x-codex-turn-metadata.
func (Agent) SessionHeaders() []string { return []string{"Session-Id", "Session_id"} }

// Family returns codex: requests whose User-Agent or Originator header
// says codex, and the logs of import source "codex".
func (Agent) Family() agents.Family {
	return agents.Family{Name: "codex", UserAgents: []string{"codex"}, Sources: []string{"codex"}, JoinByID: true}
}

// SessionFiles returns path alone: a rollout holds its whole session.
func (Agent) SessionFiles(path string) ([]string, error) { return []string{path}, nil }

// ParseHook decodes a hook event of hooks.json's hooks: Codex sends the
// fields Claude Code sends.
func (Agent) ParseHook(b []byte) (agents.HookEvent, error) { return hookjson.Parse(b) }

// HookAnswer returns the answer Claude Code's hooks give, which Codex
// takes too.
func (Agent) HookAnswer(ev agents.HookEvent, text string) ([]byte, error) {
	return hookjson.Answer(ev, text)
}

// HookMaxChars returns 10,000, Claude Code's cap, which Codex's hooks
// keep to as well.
func (Agent) HookMaxChars() int { return hookjson.MaxChars }
