// Package claude decodes the lines of Claude Code's own session logs
// (~/.claude/projects/<project>/<session>.jsonl, the subagent files beside
// them) into Records, and computes a file's source census by the rules the
// data-loss check uses (see Count).
//
// A Record decodes the envelope every line shares and the fields an
// importer reads; everything else stays in the line (an importer keeps
// the line verbatim). Fields that hold large structured data an importer
// only passes on (toolUseResult, compactMetadata, a tool call's input, an
// image's source) are kept as raw JSON. Content blocks of a type this
// package does not know keep their raw JSON too.
//
// ParseLine is safe for concurrent use. A Record owns its memory: it
// shares nothing with the line it came from.
//
// It may import other codec packages (agentlog, census) and nothing else of
// bbengine's.
package claude
