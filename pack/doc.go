// Package pack owns the session context pack: what an agent is told,
// before a task starts, about the earlier tasks of its session.
//
// Build is a pure, deterministic function of its Input (the session's
// artifacts, the goal, the task description and a token budget): the same
// input gives the same Pack, byte for byte, in Markdown and JSON. It does
// no I/O; the caller loads the artifacts and caches packs by Key.
//
// A pack holds, in this order: the agent usage contract, the session goal
// (and the latest checkpoint), the decisions in force, the constraints,
// what the last tasks implemented (one to three bullets each), the open
// threads, and pointers (artifact ids) for expansion with memory_get.
// Superseded decisions and constraints, closed threads and forgotten
// artifacts never appear. Items are ranked by keyword overlap with the
// task, file and symbol affinity, type weight and recency.
//
// Budgets are counted in cl100k_base tokens (github.com/tiktoken-go/
// tokenizer, vocabulary embedded): each section stays within its own
// budget, and the whole Markdown within Budget.Total and Budget.MaxChars
// (Claude Code caps hook-injected context at 10,000 characters).
//
// The Markdown is wrapped in a <bbengine-context-pack> element so that
// memory derivation can recognise a pack it sees again in a later prompt
// and not mine it a second time (engine.StripPacks).
//
// Build is safe for concurrent use.
//
// It may import engine (its types), codec/* and internal/*; it never
// imports index, export or proxy, its peers. The agents' directories,
// api and cli import it.
package pack
