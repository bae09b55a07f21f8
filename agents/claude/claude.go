package claude

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/agents/internal/hookjson"
)

func init() { agents.Register(Agent{}) }

// Agent is Claude Code. The zero value is ready to use.
type Agent struct{}

// Name returns "claude".
func (Agent) Name() string { return "claude" }

// Doc describes Claude Code for the command line.
func (Agent) Doc() agents.Doc {
	return agents.Doc{
		Title:        "Claude Code",
		InstallUsage: "Claude Code: SessionStart and UserPromptSubmit hooks, the bbengine MCP server, env.ANTHROPIC_BASE_URL",
		InstallDescription: "--project (the default) writes .claude/settings.json and .mcp.json in --project-dir\n" +
			"(and approves the server there with enabledMcpjsonServers); --user writes\n" +
			"$CLAUDE_CONFIG_DIR/settings.json (or ~/.claude/settings.json) and the mcpServers of\n" +
			"$CLAUDE_CONFIG_DIR/.claude.json (or ~/.claude.json), where `claude mcp add --scope user`\n" +
			"puts them. The hooks run this executable (`bbengine hook claude`), with --dir when the\n" +
			"data directory is not the default. An ANTHROPIC_BASE_URL that is not bbengine's is kept\n" +
			"unless --force.",
		ForceUsage: "replace an ANTHROPIC_BASE_URL that is not bbengine's",
		HookUsage:  "answer a Claude Code hook (settings.json hooks: SessionStart, UserPromptSubmit)",
	}
}

// LogDirs returns the projects directory of each Claude Code
// configuration directory: those $CLAUDE_CONFIG_DIR names
// (comma-separated), else ~/.claude and ~/.config/claude.
func (Agent) LogDirs(home string) []string {
	dirs := []string{filepath.Join(home, ".claude"), filepath.Join(home, ".config", "claude")}
	if v := os.Getenv("CLAUDE_CONFIG_DIR"); v != "" {
		dirs = strings.Split(v, ",")
	}
	var out []string
	for _, d := range dirs {
		out = append(out, filepath.Join(strings.TrimSpace(d), "projects"))
	}
	return out
}

// IsLog reports whether path is a transcript (*.jsonl), a subagent's
// transcript or meta file (subagents/*.jsonl, subagents/*.meta.json) or
// a spilled tool output (tool-results/*). The journals under
// subagents/workflows/ are not transcripts.
func (Agent) IsLog(path string) bool {
	name := filepath.Base(path)
	dir := filepath.Base(filepath.Dir(path))
	switch {
	case dir == "tool-results":
		return true
	case dir == "subagents":
		return strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".meta.json")
	case filepath.Base(filepath.Dir(filepath.Dir(path))) == "subagents":
		return false
	}
	return strings.HasSuffix(name, ".jsonl")
}

// SessionHeaders returns X-Claude-Code-Session-Id, which Claude Code
// sends since 2.1.86. Before it the session id is only in the body's
// metadata.user_id, which the proxy reads itself.
func (Agent) SessionHeaders() []string { return []string{"X-Claude-Code-Session-Id"} }

// Family returns claude-code: requests whose User-Agent says claude-cli
// (or claude-code), and the logs of import source "claude".
func (Agent) Family() agents.Family {
	return agents.Family{Name: "claude-code", UserAgents: []string{"claude-cli", "claude-code"}, Sources: []string{"claude"}, JoinByID: true}
}

// SessionFiles returns path and what belongs to its session beside it:
// the logs in the folder named like a main session file (<sid>.jsonl
// brings <sid>/subagents/ and <sid>/tool-results/), in path order, and
// the flat agent-*.jsonl files of its directory whose first record names
// the session (older versions kept subagents there).
func (a Agent) SessionFiles(path string) ([]string, error) {
	paths := []string{path}
	stem := strings.TrimSuffix(path, ".jsonl")
	if sub, err := os.Stat(stem); err == nil && sub.IsDir() {
		var more []string
		var errs []error
		filepath.WalkDir(stem, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				errs = append(errs, err)
				return nil // go on with the rest
			}
			if !d.IsDir() && a.IsLog(p) {
				more = append(more, p)
			}
			return nil
		})
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		slices.Sort(more)
		paths = append(paths, more...)
	}
	if !strings.HasPrefix(filepath.Base(path), "agent-") {
		id := filepath.Base(stem)
		flat, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "agent-*.jsonl"))
		for _, p := range flat {
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(firstLine(b), []byte(`"sessionId":"`+id+`"`)) {
				paths = append(paths, p)
			}
		}
	}
	return paths, nil
}

func firstLine(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return b[:i]
	}
	return b
}

// ParseHook decodes a hook event of settings.json's hooks.
func (Agent) ParseHook(b []byte) (agents.HookEvent, error) { return hookjson.Parse(b) }

// HookAnswer returns {"hookSpecificOutput":{"hookEventName":EVENT,
// "additionalContext":TEXT}}.
func (Agent) HookAnswer(ev agents.HookEvent, text string) ([]byte, error) {
	return hookjson.Answer(ev, text)
}

// HookMaxChars is Claude Code's cap on one hook's additionalContext.
const HookMaxChars = hookjson.MaxChars

// HookMaxChars returns Claude Code's cap on one hook's
// additionalContext, 10,000 characters.
func (Agent) HookMaxChars() int { return HookMaxChars }

// HookOutput is the answer Claude Code takes from a SessionStart or
// UserPromptSubmit hook.
type HookOutput = hookjson.Output
