// Package hookjson is the hook protocol Claude Code defined and Codex
// follows: the hook event as a JSON object on the command's stdin, and
// {"hookSpecificOutput":{"hookEventName":EVENT,"additionalContext":TEXT}}
// on its stdout to add TEXT to the conversation.
//
// It may import agents and nothing else of bbengine's.
package hookjson
