// Package all registers every agent bbengine knows: a program that
// imports it for its side effect (import _ ".../agents/all") finds them
// all through agents.Lookup and agents.All, the engine finds their log
// importers, and derivation knows their sessions: its init function
// registers agents.Families with engine.RegisterFamily, so that the
// engine tells a claude-code session from a codex one without naming
// either.
//
// Adding an agent is its directory under agents/ and one line here.
//
// It imports the agents' packages, the agents registry and the engine.
package all
