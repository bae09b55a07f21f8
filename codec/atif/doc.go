// Package atif reads, writes and validates ATIF, the Agent Trajectory
// Interchange Format of Harbor (RFC 0001), versions ATIF-v1.0 to
// ATIF-v1.8: one JSON document per trajectory, whose steps are the system
// prompts, user messages and agent turns (reasoning, tool calls, their
// observations, token metrics) of one agent run, with embedded subagent
// trajectories since v1.7.
//
// The Go types mirror Harbor's pydantic models field for field: the JSON
// names, the key order (Encode writes keys in model field order, as
// Harbor's to_json_dict does) and the optional fields (a nil pointer,
// slice or raw object is absent and never written as null; an empty
// non-nil slice is written as []). Free-form objects (every extra,
// tool-call arguments, tool definitions) are kept as compact raw JSON, so
// their key order and numbers survive a round trip byte for byte.
//
// Decode is as strict as Harbor (every object is closed: an unknown key is
// an error naming its JSON path) but never stops at the first problem: it
// returns what it could decode together with every problem it found.
// Validate checks the rules Harbor's validator and models enforce beyond
// types, plus the version gates of the RFC's additive history.
//
// The package holds no state; its functions are safe for concurrent use.
//
// It imports nothing of bbengine's, like every codec package.
package atif
