// Package codex is bbengine's knowledge of OpenAI's Codex CLI: where it
// writes its rollouts ($CODEX_HOME or ~/.codex: sessions/ and
// archived_sessions/), how `bbengine install codex` adds marked blocks to
// config.toml (openai_base_url, [mcp_servers.bbengine], codex_hooks),
// hooks to hooks.json and a section to AGENTS.md, the session headers it
// sends, and its hook protocol (Claude Code's). Importing the package
// registers the agent as "codex" (see package agents).
//
// It also registers the importer of source "codex" with the engine
// (import.go: a rollout to events) and its log format (logformat.go: the
// line check, the session of a rollout, the source census); codec/codex
// parses and counts the lines.
//
// It may import agents, agents/internal/*, engine, pack, codec/* and
// internal/*. agents/all imports it to register it; cli and api find it
// through the registry.
package codex
