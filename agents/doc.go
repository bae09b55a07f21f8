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
//   - where its logs live (LogDirs, IsLog), and which files make one
//     session when the user names one of them (SessionFiles, for
//     bbengine convert);
//   - how its recorded sessions are known (Family): the name derivation
//     gives them ("claude-code"), the User-Agent words of its requests,
//     its import sources. agents/all hands Families (every agent's, then
//     those of the clients bbengine knows without a directory) to the
//     engine with engine.RegisterFamily, so that the engine names no
//     agent;
//   - installing and uninstalling bbengine in its settings: hooks, the
//     MCP server, the base URL (Install returns Changes, which the caller
//     shows as a diff or applies with a backup);
//   - the session identity it sends through the proxy (SessionHeaders);
//   - its hook protocol: the event it writes on the hook's stdin
//     (ParseHook) and the answer that adds the context pack to the
//     conversation (HookAnswer, HookMaxChars);
//   - optionally, how bbengine run gives it its hooks on the command line
//     for one run (Launcher: Claude Code's --settings).
//
// Its log import is not a method of Agent: the agent's package registers
// it with the engine from the same init function, or another of its
// files (agents/claude/import.go, logformat.go):
//
//	func init() {
//		engine.RegisterImporter("gemini", importGemini)
//		engine.RegisterLogFormat("gemini", engine.LogFormat{...})
//	}
//
// The engine.Importer derives a session's events from the records of
// its files (a pure function: rebuild derives the same bytes); the
// engine.LogFormat says which lines are records, which session a file
// belongs to, and how the data-loss check counts them. So the Claude
// Code and Codex importers live in agents/claude and agents/codex, and
// the engine's import code names no agent. The generic import (reading
// files line by line, canonicalizing records, the WAL) stays in the
// engine. Every program that opens an engine holding imported sessions
// links agents/all (cli and api do), as it links export for the session
// formats.
//
// Register is called from init functions only; Lookup, All, Names,
// Families and SessionHeaders are safe for concurrent use.
//
// Imports: the package is low in the map so that everything can use it:
// it may import internal/* and codec/*; it must not import proxy, pack,
// index, export, api or cli, and the proxy may import it. The agents'
// own packages (agents/<name>) sit above pack and proxy and may import
// engine, pack and codec; only cli, api and main import them (and tests
// of lower packages, to link the importers).
package agents
