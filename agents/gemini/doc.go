// Package gemini is bbengine's knowledge of Google's Gemini CLI: where
// it writes its session logs ($GEMINI_CLI_HOME or the home directory,
// then .gemini/tmp/<project>/chats/), how `bbengine install gemini` adds
// hooks (SessionStart, BeforeAgent) and the MCP server to
// .gemini/settings.json and GOOGLE_GEMINI_BASE_URL to .gemini/.env, and
// its hook protocol. Gemini CLI sends no session id of its own. Importing
// the package registers the agent as "gemini" (see package agents).
//
// It also registers the importer of source "gemini" with the engine
// (import.go: a session log to events) and its log format (logformat.go:
// the line check, the session of a log, the source census); log.go
// reads the lines and applies them as the CLI's own reader does.
//
//	~/.gemini/
//	├── settings.json                       hooks, mcpServers (install --user)
//	├── .env                                GOOGLE_GEMINI_BASE_URL (install --user)
//	└── tmp/<project>/                      <project>: a slug (0.61) or sha256 of the path
//	    ├── .project_root                   the project's path (slug directories)
//	    ├── logs.json                       the prompts typed (not imported)
//	    └── chats/
//	        ├── session-<time>-<id8>.jsonl  one session
//	        ├── session-<time>-<id8>.json   one session, before 0.43 (not imported)
//	        └── <session id>/<id>.jsonl     its subagents' sessions
//
// It may import agents, agents/internal/*, engine, codec/* and
// internal/*. agents/all imports it to register it; cli and api find it
// through the registry.
package gemini
