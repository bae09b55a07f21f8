// Package opencode is bbengine's knowledge of opencode (npm opencode-ai):
// where it keeps its sessions ($XDG_DATA_HOME/opencode, else
// ~/.local/share/opencode; $OPENCODE_DB), how `bbengine install opencode`
// adds the provider "bbengine" (its base URL the proxy's /v1) and the MCP
// server to opencode.json, and how doctor checks that. opencode sends its
// session id (ses_…) as x-session-affinity and x-session-id; it runs no
// hook commands (its hooks are JavaScript plugins). Importing the package
// registers the agent as "opencode" (see package agents).
//
// It also registers the importer of source "opencode" with the engine
// (import.go: a session's rows to events) and its log format
// (logformat.go: the census; store.go: the database read row by row,
// engine.LogFormat.Rows; tree.go: the JSON tree of 1.1 and earlier, read
// file by file). The database is opened read-only with
// modernc.org/sqlite (mode=ro, never immutable=1), so the rows still
// only in its -wal are read, and reading is safe while opencode writes.
//
//	~/.config/opencode/opencode.json         provider.bbengine, mcp.bbengine (install --user)
//	~/.local/share/opencode/
//	├── opencode.db                          1.2 and later: session, message, part,
//	├── opencode.db-wal                        session_message (read); account, credential,
//	├── opencode.db-shm                        session_share… (never read: they hold tokens)
//	├── opencode-<channel>.db                another channel's database
//	└── storage/                             1.1 and earlier, one JSON file each:
//	    ├── session/<project id>/<session id>.json
//	    ├── message/<session id>/<message id>.json
//	    ├── part/<message id>/<part id>.json
//	    └── session_share/<session id>.json  (never read: it holds a secret)
//
// docs/design/opencode.md has the facts behind all of it, with their
// sources. The package may import agents, agents/internal/*, engine,
// codec/* and internal/*. agents/all imports it to register it; cli and
// api find it through the registry.
package opencode
