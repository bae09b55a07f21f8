// Package pack will own the context pack: a pure, deterministic function
// of session state, task and token budget. It holds no code yet: it
// arrives with the context-pack issue.
package pack
