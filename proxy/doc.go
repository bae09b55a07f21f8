// Package proxy is the recording reverse proxy: agents point their base
// URL at it, it forwards each request to the provider's upstream and
// streams the response back untouched and unbuffered, while a recorder
// tees every chunk, redacted, into the WAL (record.go). In lossless mode
// nothing of a response reaches the client before its request's frames
// are written, and the end of a response only after every frame of the
// exchange is. A large request goes upstream while the recorder's
// goroutine writes its frames; a small one (64 KiB at most) the handler
// writes itself when the recorder is idle (under wal.SyncAlways it too
// goes upstream while its frames are synced), as it does the end of an
// exchange, with the head and chunks of a small sized reply it held back:
// a write, not a handoff to another goroutine and back.
//
// Each request is filed under a session: the id its headers or body
// name (identity.go), else, for a client that sends none (Gemini CLI),
// the session whose conversation it continues, found by the recorder
// from exact hashes of the resent conversation and the previous reply
// (continued.go), else a new one.
//
// Before a model call is forwarded, the circuit breaker (package
// proxy/breaker) judges it: a session stuck in a loop that makes no
// progress, or past a cap, is refused with the provider's own 429
// (breaker_glue.go). A response already streaming is never cut.
//
// Three timeouts bound a slow peer, each for its own exchange only and
// each recorded as the exchange's error frame (timeout.go): the wait for
// the upstream's response headers (Options.HeaderTimeout, 504), a
// response stream that stops (IdleTimeout: the response is cut) and a
// client that stops sending its body (BodyTimeout, 408).
//
// A web page is not an agent: a request carrying an Origin header, or
// Sec-Fetch-Site: cross-site, is refused (403) before it is forwarded
// or recorded unless Options.AllowOrigins names its origin, and the
// /_bb/ endpoints answer only loopback Host names (package
// internal/guard).
//
// /_bb/metrics serves Prometheus text (metrics.go). Its
// bbengine_proxy_overhead_seconds{stage} is the latency the proxy adds
// over the upstream's own round trip, to the first response byte and in
// total, timed on every exchange without allocating (package
// internal/metric); Proxy.Register adds what the process around the
// proxy measures (derivation, retrieval, sizes: package cli).
//
// # Imports
//
// It may import wal, proxy/breaker, codec/*, internal/* and the agents
// registry (package agents: the session headers of the registered
// agents), and never engine's derivation, index, pack, export, the
// agents' directories, api or cli. The process around it (cli) wires it
// to the engine.
package proxy
