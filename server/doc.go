// Package server runs bbengine's long-lived processes: the recording
// proxy with the engine following its WAL beside it (Run, and StartRun
// for the proxy of one `bbengine run`), and the MCP server of the memory
// tools on stdio or loopback HTTP (ServeMCP).
//
// Run owns the data directory while it serves:
//
//	ctx ──▶ Run ──▶ proxy (HTTP, hot path) ──▶ wal ◀── follows ── engine
//	                 │ /_bb/health, /_bb/metrics           │ (its own goroutine,
//	                 │                                     │  nice 19, yields to
//	                 ▼                                     ▼  exchanges)
//	            harness API (httpapi)  ◀── query ──  api.Local + index
//
// The proxy records whether or not the engine is open or running: the
// engine opens in its own goroutine (waiting while a command holds the
// directory), restores the circuit breaker's recorded state, serves the
// query endpoint that api.Remote asks, and follows the WAL, restarting
// after an error. A panic in derivation stops only derivation (the next
// start derives the rest from the WAL), and so does a WAL that could not
// be written (a full disk). Derivation and the index syncer run on
// threads of their own at the lowest CPU priority, and pause between
// frames while the proxy has exchanges in progress, so that they take
// the CPU the requests leave. Run adds derivation's time per frame and
// lag, retrieval latency and the sizes of the WAL and the data directory
// to the proxy's /_bb/metrics; a background goroutine computes the
// costly ones.
//
// Errors in a Config (a bad redaction pattern, origin, address or token)
// are *ConfigError, which the command line reports as usage errors.
//
// It may import every package below it in the map (api and its
// adapters, engine, index, proxy, wal, codec, internal); only cli and
// the harnesses above it import it.
package server
