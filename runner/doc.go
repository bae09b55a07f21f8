// Package runner runs a coding agent for one task of a session, as
// `bbengine run` does: it gives the agent the session's context pack
// before it starts, runs it with the terminal as it is, its requests
// sent through a proxy under the session's, task's and run's ids, and
// records how the task ended and what it changed in the repository.
//
// Run takes the service of a running proxy (the caller dials it, or
// starts one with server.StartRun) and:
//
//  1. settles the task id (task-N+1 of the session's tasks) and records
//     the session's goal, when one is given;
//  2. builds the context pack of the task and hands it to the agent: in
//     the file BBENGINE_PACK_FILE names, in place of {pack} in its
//     arguments, and through the hooks of an agent that is an
//     agents.Launcher (Claude Code: --settings with bbengine's hooks);
//  3. notes the repository's changed files (by git, with a hash of each
//     one's content), runs the agent with ANTHROPIC_BASE_URL,
//     OPENAI_BASE_URL and GOOGLE_GEMINI_BASE_URL pointing at the proxy,
//     and notes them again;
//  4. records the outcome (success on exit status 0) with the files the
//     task changed: only paths, line counts and hashes, never a diff.
//
// It names no agent: what an agent needs on its command line comes from
// the agents registry.
//
// It may import api, agents and everything below them; it must not
// import server or cli (cli wires the two together).
package runner
