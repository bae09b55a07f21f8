// Package claude is bbengine's knowledge of Claude Code: where it writes
// its transcripts (~/.claude/projects, $CLAUDE_CONFIG_DIR), how `bbengine
// install claude` merges hooks, the MCP server and ANTHROPIC_BASE_URL
// into its settings.json, .mcp.json or ~/.claude.json, the session
// header it sends, and its hook protocol. Importing the package
// registers the agent as "claude" (see package agents).
//
// It also registers the importer of source "claude" with the engine
// (import.go: a session's transcripts, subagent files, .meta.json and
// spilled tool outputs to events) and its log format (logformat.go: the
// line check, the session of a file, the source census); codec/claude
// parses and counts the lines.
//
// It may import agents, agents/internal/*, engine, pack, codec/* and
// internal/*. agents/all imports it to register it; cli and api find it
// through the registry.
package claude
