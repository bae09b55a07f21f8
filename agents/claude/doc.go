// Package claude is bbengine's knowledge of Claude Code: where it writes
// its transcripts (~/.claude/projects, $CLAUDE_CONFIG_DIR), how `bbengine
// install claude` merges hooks, the MCP server and ANTHROPIC_BASE_URL
// into its settings.json, .mcp.json or ~/.claude.json, the session
// header it sends, and its hook protocol. Importing the package
// registers the agent as "claude" (see package agents).
//
// Reading transcripts into import records and canonicalizing them
// still live in codec/claude and engine; they move here behind methods of
// agents.Agent (see the plan in package agents).
//
// It may import agents, agents/internal/*, engine, pack, codec/* and
// internal/*. agents/all imports it to register it; cli and api find it
// through the registry.
package claude
