// Package jsonedit edits JSON documents that people and other programs
// own, such as an agent's settings file: it keeps the order of every
// object's keys and the text of every number, so that a change touches
// only what it changes.
//
// A document is a tree of *Object, []any, string, json.Number, bool and
// nil. Format writes it as JavaScript's JSON.stringify(v, null, 2) does
// (two-space indent, "{}" and "[]" when empty) followed by a newline,
// which is how Claude Code writes its own files, so a file it wrote comes
// back byte for byte unless something in it changed.
//
// Nothing here is safe for concurrent use.
//
// It imports nothing of bbengine's, like every internal package.
package jsonedit
