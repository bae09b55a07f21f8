// Package e2e holds end-to-end tests that drive the official provider
// clients through the recording proxy (proxy.New behind an httptest
// server) to fake upstreams on loopback, then read the WAL back:
//
//   - Claude Code (@anthropic-ai/claude-code) runs `claude -p` for a whole
//     tool-using session (Bash, then Read, then final text) against a fake
//     Messages API;
//   - Claude Code runs a two-prompt session (the second run --resume's
//     the first) through `bbengine proxy` itself, started in-process with
//     cli.MainContext, and `bbengine mem` checks the memory the running
//     proxy derived: decisions and supersession, the constraint, the
//     open threads closed, the outcomes, forget, and rebuild
//     (memory_test.go);
//   - Claude Code is driven into a loop that repeats the same failing
//     Bash call until `bbengine proxy`'s circuit breaker refuses it; the
//     session stays open across a restart, `bbengine breaker reset` lets
//     it go on, a project's bbengine.yaml changes the threshold, and 50
//     calls that make progress never trip it (breaker_test.go);
//   - `bbengine run` runs three `claude -p` tasks of one session, each
//     given the context pack of the tasks before it (run_test.go); Claude
//     Code's hooks and MCP client talk to bbengine (hook_test.go,
//     mcp_test.go);
//   - Gemini CLI (@google/gemini-cli 0.61.0) runs `gemini -p --yolo`
//     tasks with several tool calls through `bbengine proxy`, which gets
//     no session id from it: each run is one session, two runs at once
//     are two, a retry after a 503 and calls sent without ids stay whole
//     (gemini_live_test.go); its own log is imported, checked and exported
//     to ATIF, and its hooks and MCP server, as install writes them, are
//     run by it (gemini_import_test.go);
//   - Codex CLI (@openai/codex 0.169.0, its native binary from the
//     platform package npm picks) runs `codex exec` through `bbengine
//     proxy` to a fake Responses API: an exec_command call, its output
//     and a text answer; its config.toml names a provider of its own
//     with supports_websockets = false (Codex ignores OPENAI_BASE_URL
//     and its built-in provider tries a WebSocket first), analytics and
//     plugins off. The rollout it writes is imported into the recorded
//     directory and merged with the proxied session, checked with
//     import --check, ATIF export --check and rebuild
//     (codex_test.go);
//   - `bbengine proxy` is killed with SIGKILL again and again while
//     clients stream, in the clear and in an encrypted directory, and
//     every exchange a client got whole is in the WAL (fault_kill_test.go);
//   - @anthropic-ai/sdk streams a Messages request (node/anthropic.mjs);
//   - openai streams a chat completion with include_usage and a Responses
//     request (node/openai.mjs).
//
// The clients are npm packages pinned in node/package-lock.json; install
// them with
//
//	npm ci --prefix e2e/node
//
// The tests skip when node/node_modules is missing. Nothing leaves the
// machine: every server is an httptest server on 127.0.0.1; the agents'
// HTTP(S)_PROXY points at a local tripwire that refuses, and the test
// reports, any request for another host; the node scripts give the SDKs a
// fetch that refuses any URL not on loopback.
//
// It runs the built binary; it imports of bbengine's only the WAL and the
// formats it reads back (wal, codec/*, internal/crypt). Nothing imports it.
package e2e
