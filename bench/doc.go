// Package bench holds system benchmarks that drive whole components.
//
// The proxy benchmark compares three paths to the same fake Anthropic
// upstream, all on 127.0.0.1 in one process: direct, a bare
// httputil.ReverseProxy (FlushInterval -1) and bbengine's recording proxy
// (lossless, WAL sync=interval). Requests are sequential over keep-alive
// connections after a warm-up, so client, proxy and upstream contend for
// the cores as little as they can on a small machine; latency is measured
// by the client (first body byte, EOF). Request shapes: a 50-event SSE
// stream sent in lockstep with the client (every event crosses the proxy
// as a chunk of its own), the same stream written back to back (the events
// coalesce on loopback), and a non-streaming JSON response.
//
//	go test -run '^$' -bench . ./bench        # Go benchmark format, per path
//	go run ./bench/cmd/proxybench             # paths interleaved in rounds, Markdown tables and ratios
//	go run ./bench/cmd/proxybench -modes privacy,passthrough   # split the cost of capture by mode
//
// With -engine the driver adds the path that matters most: `bbengine
// proxy` with the whole engine on (derivation, memory and the index
// following the WAL, run in-process with cli.MainContext), at 1 and 4
// concurrent clients, and reports its ratio to direct divided by the bare
// proxy's (goal: at most 1.1) and process CPU per request:
//
//	go run ./bench/cmd/proxybench -engine -clients 1,4   # json and stream-burst
//
// Only the interleaved driver gives ratios that drift cannot skew; the
// benchmarks run paths one after another, back to back, so they also show
// what happens when the recorder cannot keep up (lossless mode makes the
// stream wait once its queue is full). The driver drains the recorder
// after each block and reports process CPU per request as well as
// latency: on a small machine a busy recorder costs little latency but
// all the CPU it takes. Allocation figures are runtime.MemStats deltas
// over many requests, for the whole process; the proxy's share is the
// difference from the direct path in the same run, per event (amortized)
// and per extra event (the slope between 50- and 500-event streams).
//
// BenchmarkCanonicalLag and BenchmarkMemoryLag measure how long after
// the client's EOF an exchange is derived, and its memory searchable
// through the running `bbengine proxy` (run in-process with
// cli.MainContext); BenchmarkDeriveMemory runs the memory extractors over
// the golden Claude Code sessions.
//
// The big-body driver measures memory, not time: it starts `bbengine
// proxy` in a subprocess against a fake Anthropic upstream, streams one
// 200 MB response (text_delta events) and sends one 50 MB request through
// it, waits until derivation has caught up, and then runs trace, show,
// every export format and rebuild as subprocesses on the same data
// directory, printing each one's peak RSS (the proxy's VmHWM, the
// commands' rusage Maxrss) against the idle proxy:
//
//	go run ./bench/cmd/bigbody                                  # 200MB response, 50MB request
//	go run ./bench/cmd/bigbody -response 20MB -request 5MB      # a quick run
//	go run ./bench/cmd/bigbody -bin ./bbengine -dir /tmp/bb     # a given binary, keep the data
//
// engine's TestBigStreamBoundedMemory and TestBigRequestBoundedMemory keep
// the canonicalizer's share bounded in CI, on the live heap.
//
// The import driver times `bbengine import claude` against ccusage
// 18.0.11 (installed from npm into a cache directory by the driver, never
// by the tests) on N copies of the golden Claude corpus, each with ids of
// its own (ClaudeCorpus), alternating the two tools each round, and
// prints wall time and peak RSS (rusage Maxrss) of both and the ratios:
//
//	go run ./bench/cmd/importbench                          # -copies 20,200 -rounds 3
//	go run ./bench/cmd/importbench -copies 20 -rounds 1 -bin ./bbengine -check
//
// BenchmarkImport runs the import command in process on 1 and 4 copies
// (MB/s, allocations):
//
//	go test -run '^$' -bench 'BenchmarkImport$' -benchtime 3x ./bench
//
// The long-session driver plays one growing Claude Code-like session
// (history resent every turn, tool calls, about 700 KB by turn 300)
// through `bbengine proxy` with derivation on and through a bare
// httputil.ReverseProxy, both subprocesses, alternating turn by turn,
// and prints p50, p99 and process CPU per 50-turn bucket, failed streams
// and data directory against WAL size, each as a ratio:
//
//	go run ./bench/cmd/longsession                  # 300 turns
//	go run ./bench/cmd/longsession -turns 150 -cpuprofile /tmp/bb.pprof
//
// The WAL driver measures one goroutine appending (the proxy's lone
// recorder) against raw writes of the same bytes, per sync policy and
// payload size (package wal/walbench is the baseline):
//
//	go run ./bench/cmd/walbench                     # interval and always; 256 B, 4 KiB, 64 KiB
//
// The derivation and search benchmarks live beside their code:
//
//	go test -run '^$' -bench DeriveTurn -benchtime 3x ./engine   # turn 10, 100, 300 of a growing session
//	go test -run '^$' -bench Search100k ./index                  # p50 and p99 of one search at 100k artifacts
//
// docs/performance.md has every figure and the command that made it.
//
// Per-package benchmarks live beside their code:
// go test -bench . ./codec/bbox ./codec/frame ./wal
//
// # Imports
//
// It may import every package of the module, cli included: it drives the
// real commands. Nothing imports it but its own commands (bench/cmd/*).
package bench
