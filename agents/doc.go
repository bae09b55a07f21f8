// Package agents defines what bbengine knows about a coding agent (Claude
// Code, Codex, and next Gemini CLI or opencode) as one small interface,
// Agent, and keeps the registry of the agents that implement it.
//
// Each agent lives in its own directory, agents/<name>, which implements
// Agent and registers it from an init function:
//
//	func init() { agents.Register(Agent{}) }
//
// and agents/all imports every such directory, so that a program that
// imports agents/all (the command line does) finds them with Lookup and
// All. Adding an agent is its directory and one line in agents/all: the
// command line builds `bbengine install NAME`, `uninstall NAME`, `hook
// NAME` and `import NAME` from the registry, and the proxy adds the
// agent's SessionHeaders to those it reads a session id from.
//
// An Agent covers, for its agent:
//
//   - where its logs live (LogDirs, IsLog);
//   - installing and uninstalling bbengine in its settings: hooks, the
//     MCP server, the base URL (Install returns Changes, which the caller
//     shows as a diff or applies with a backup);
//   - the session identity it sends through the proxy (SessionHeaders);
//   - its hook protocol: the event it writes on the hook's stdin
//     (ParseHook) and the answer that adds the context pack to the
//     conversation (HookAnswer, HookMaxChars).
//
// The plan for what is still outside: reading an agent's log into
// import records and canonicalizing those records live today in
// codec/claude, codec/codex and engine (import_claude.go,
// import_codex.go, importcanon.go, importfile.go). They become methods of
// Agent, in the same directories:
//
//	// Importer derives a session from its import records: today's
//	// engine.Importer of the source, registered with
//	// engine.RegisterImporter when the agent registers.
//	Importer() engine.Importer
//	// ReadLog reads the records of one log file from where the last
//	// import stopped, as cli's readSourceFiles does now.
//	ReadLog(path string, info *engine.ImportInfo) ([]engine.ImportFile, error)
//
// so that no source name is spelled out in engine or cli, and the
// versions an agent knows (the log formats its reader accepts) are its
// reader's to state. That step waits for the rewrite of those files for
// speed to land.
//
// Register is called from init functions only; Lookup, All, Names and
// SessionHeaders are safe for concurrent use.
//
// Imports: the package is low in the map so that everything can use it:
// it may import internal/* and codec/* (and engine types once the import
// methods land); it must not import proxy, pack, index, export, api or
// cli, and the proxy may import it. The agents' own packages
// (agents/<name>) sit above pack and proxy and may import engine, pack
// and codec; only cli, api and main import them.
package agents
