// Package breaker is the proxy's circuit breaker: it watches each
// session's model calls for an agent loop that makes no progress, or that
// burns through a cap, and refuses the session's next request once it
// does.
//
// What it reads. Every model call request carries the conversation so
// far, so the request for call N tells what call N-1 did (its assistant
// turn: text and tool calls) and what came of it (the tool results after
// it). Admit scans the body, decodes only that tail, and judges the step:
//
//   - progress: a file changed (a successful Edit, Write, apply_patch, …
//     call not made before), a successful tool result unlike every earlier
//     one of the thread, tests passing after they failed;
//   - stagnation (only in a step without progress): the same tool calls
//     with the same arguments as the step before, the same error again,
//     or the same answer again.
//
// Counters are per conversation thread (a session's main agent, its
// subagents and side calls are separate threads, told apart by their
// first message). A new prompt from a person starts a new loop; the same
// prompt sent again does not. A retried request (the same tail) is not
// counted twice.
//
// Rules (thresholds in Config, per project through bbengine.yaml): open
// after NoProgress calls without progress once the thread has made
// progress, after NeverProgress calls of a thread that never has, after
// Stagnation consecutive stagnant calls, or when the session or its run
// reaches a cap (calls, tokens, cost, wall time).
//
// States: closed (calls pass), open (calls are refused until the
// cooldown ends; a manual trip or a cap stays open until reset), and
// half-open (the cooldown ended; one request passes as a probe, and the
// next request of the session says whether it made progress: progress
// closes the breaker, none opens it again). Each change is written as a
// record (codec/exchange.Breaker) through Options.Record; the engine keeps
// them, and Restore brings them back after a restart.
//
// It may import codec/* and internal/* and nothing else of bbengine's: the
// proxy imports it, and it knows nothing of HTTP, the WAL or the engine.
package breaker
