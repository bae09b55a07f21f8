// Package agentlog reads the logs coding agents write themselves (Claude
// Code and Codex JSONL, zstd-compressed Codex rollouts): line by line,
// with each line's byte offset and number, a large line limit, and the
// rule for files still being written (an unterminated last line is not
// read; the next import picks it up), and a one-pass check of a line's
// JSON envelope (Fields) that names the column of a syntax error.
//
// A read error of a compressed file (a truncated or corrupt .zst) is a
// *CorruptError naming the offsets where decompression failed.
//
// It imports nothing of bbengine's, like every codec package.
package agentlog
