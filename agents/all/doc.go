// Package all registers every agent bbengine knows: a program that
// imports it for its side effect (import _ ".../agents/all") finds them
// all through agents.Lookup and agents.All, and the engine finds their
// log importers.
//
// Adding an agent is its directory under agents/ and one line here.
//
// It imports the agents' packages and nothing else.
package all
