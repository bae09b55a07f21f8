// Package settings edits agents' configuration files for `bbengine
// install` and `uninstall`: JSON settings merged key by key with what is
// there (jsonedit keeps the user's order, numbers and other keys), the
// hook entries that run `bbengine hook AGENT`, the MCP server entry and
// string lists, and the shell command lines those entries hold.
//
// Every function computes an agents.Change and writes nothing. What is
// bbengine's is recognised by its command (this executable, or one named
// bbengine, running `hook AGENT` or `mcp`), so an install replaces an
// earlier one and an uninstall removes only what an install added.
//
// It may import agents and internal/*; it is internal to agents/, shared
// by the agents whose settings look alike (Claude Code's settings.json
// and Codex's hooks.json take the same hooks).
package settings
