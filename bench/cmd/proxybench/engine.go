package main

import (
	"fmt"
	"runtime"
	"time"

	"github.com/bbengine/bbengine/bench"
	"github.com/bbengine/bbengine/wal"
)

// engineKey names the samples of one path, request shape and number of
// concurrent clients.
type engineKey struct {
	clients int
	c       bench.Case
	p       bench.Path
}

// runEngine is the -engine mode: the four paths (direct, bare reverse
// proxy, bbengine's recorder alone, and `bbengine proxy` with the whole
// engine running beside it) at each number of concurrent clients,
// interleaved in rounds. It reports each path's p50 and p99 over direct
// and the goal: bbengine-engine's ratio to direct divided by the bare
// proxy's ratio to direct, at most 1.1, for p50 to first byte and total;
// and process CPU per request.
func runEngine(rounds, n, warmup, events int, clients []int, cases []bench.Case, dir string, policy wal.SyncPolicy, encrypted bool) error {
	rg, err := bench.NewRig(bench.Config{Dir: dir, Events: events, Sync: policy, Engine: true, Encrypted: encrypted})
	if err != nil {
		return err
	}
	defer rg.Close()
	paths := []bench.Path{bench.Direct, bench.ReverseProxy, bench.BBEngine, bench.BBEngineFull}
	if encrypted {
		paths = append(paths, bench.BBEngineFullEncrypted)
	}
	type block struct {
		k       int
		c       bench.Case
		skipped bool
	}
	var blocks []block
	for _, k := range clients {
		for _, c := range cases {
			blocks = append(blocks, block{k: k, c: c, skipped: c == bench.Stream && k > 1})
		}
	}
	for _, b := range blocks {
		if b.skipped {
			continue
		}
		for _, p := range paths {
			if _, failed, err := rg.DoConcurrent(p, b.c, b.k, max(1, warmup/b.k)); failed > warmup/100+1 {
				return fmt.Errorf("warm-up %s %s ×%d: %d failed; last: %w", p, b.c, b.k, failed, err)
			}
		}
	}
	rg.Settle()
	runtime.GC()

	res := map[engineKey]*acc{}
	start := time.Now()
	for r := range rounds {
		for bi, b := range blocks {
			if b.skipped {
				continue
			}
			for i := range paths {
				p := paths[(i+r+bi)%len(paths)]
				k := engineKey{b.k, b.c, p}
				a := res[k]
				if a == nil {
					a = &acc{}
					res[k] = a
				}
				cpu0 := bench.CPUTime()
				samples, failed, err := rg.DoConcurrent(p, b.c, b.k, n)
				rg.Settle() // derivation, memory and the index catch up: their CPU belongs to this block
				a.cpu += bench.CPUTime() - cpu0
				if a.failed += failed; a.failed > rounds*n*b.k/100+1 {
					return fmt.Errorf("%s %s ×%d: %d failed requests; last: %w", p, b.c, b.k, a.failed, err)
				}
				if err != nil {
					a.lastErr = err
				}
				a.samples = append(a.samples, samples...)
				a.rounds = append(a.rounds, bench.Summarize(samples))
			}
		}
	}
	elapsed := time.Since(start)

	us := bench.Micros
	fmt.Printf("proxybench -engine: %s %s/%s, GOMAXPROCS=%d, NumCPU=%d; %d rounds; per round, path, shape and client count: each of the clients sends %d requests at once (%d paths interleaved, order rotated), settled after each block; %s elapsed\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU(), rounds, n, len(paths), elapsed.Round(time.Millisecond))
	fmt.Printf("bbengine: the recorder alone (proxy.New); bbengine-engine: `bbengine proxy` in this process (cli.MainContext) with derivation, memory and the index following the WAL. Both lossless, WAL sync=%s. CPU is the whole process's (client, upstream, proxies) per request, over the block and its settling.\n\n", policy)
	fmt.Println("| clients | case | path | n | failed | ttfb p50 µs | total p50 µs | ttfb p99 µs | total p99 µs | CPU µs/req |")
	fmt.Println("|--:|---|---|--:|--:|--:|--:|--:|--:|--:|")
	stats := map[engineKey]bench.Stats{}
	cpu := map[engineKey]float64{}
	for _, b := range blocks {
		if b.skipped {
			continue
		}
		for _, p := range paths {
			k := engineKey{b.k, b.c, p}
			a := res[k]
			st := bench.Summarize(a.samples)
			stats[k] = st
			cpu[k] = us(a.cpu) / float64(rounds*n*b.k)
			fmt.Printf("| %d | %s | %s | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f |\n", b.k, b.c, p, st.N, a.failed,
				us(st.TTFB50), us(st.Total50), us(st.TTFB99), us(st.Total99), cpu[k])
		}
	}

	fmt.Println()
	fmt.Println("Ratios to direct; the goal is bbengine-engine's ratio ÷ the bare reverse proxy's ≤ 1.1 (per-round: the same from each round's block p50s, median [min, max]).")
	fmt.Println()
	fmt.Println("| clients | case | metric | reverseproxy / direct | bbengine / direct | bbengine-engine / direct | bbengine-engine ÷ reverseproxy | per round | goal ≤ 1.1 |")
	fmt.Println("|--:|---|---|--:|--:|--:|--:|--:|---|")
	type metric struct {
		name string
		get  func(bench.Stats) time.Duration
	}
	for _, b := range blocks {
		if b.skipped {
			continue
		}
		for _, m := range []metric{
			{"ttfb p50", func(s bench.Stats) time.Duration { return s.TTFB50 }},
			{"total p50", func(s bench.Stats) time.Duration { return s.Total50 }},
			{"ttfb p99", func(s bench.Stats) time.Duration { return s.TTFB99 }},
			{"total p99", func(s bench.Stats) time.Duration { return s.Total99 }},
		} {
			get := func(p bench.Path) float64 { return us(m.get(stats[engineKey{b.k, b.c, p}])) }
			d := get(bench.Direct)
			rp, bb, full := get(bench.ReverseProxy)/d, get(bench.BBEngine)/d, get(bench.BBEngineFull)/d
			var per []float64
			goal := "–"
			if m.name == "ttfb p50" || m.name == "total p50" {
				for r := range rounds {
					rs := func(p bench.Path) float64 { return us(m.get(res[engineKey{b.k, b.c, p}].rounds[r])) }
					per = append(per, rs(bench.BBEngineFull)/rs(bench.ReverseProxy))
				}
				goal = verdict(full/rp <= 1.1)
			}
			fmt.Printf("| %d | %s | %s | %.3f | %.3f | %.3f | %.3f | %s | %s |\n", b.k, b.c, m.name, rp, bb, full, full/rp, spread(per, "%.3f"), goal)
		}
	}

	fmt.Println()
	fmt.Println("| clients | case | CPU µs/req: direct | reverseproxy | bbengine | bbengine-engine | bbengine-engine ÷ reverseproxy | bbengine-engine − reverseproxy µs |")
	fmt.Println("|--:|---|--:|--:|--:|--:|--:|--:|")
	for _, b := range blocks {
		if b.skipped {
			continue
		}
		c := func(p bench.Path) float64 { return cpu[engineKey{b.k, b.c, p}] }
		fmt.Printf("| %d | %s | %.1f | %.1f | %.1f | %.1f | %.2f | %+.1f |\n", b.k, b.c, c(bench.Direct), c(bench.ReverseProxy), c(bench.BBEngine), c(bench.BBEngineFull),
			c(bench.BBEngineFull)/c(bench.ReverseProxy), c(bench.BBEngineFull)-c(bench.ReverseProxy))
	}
	if encrypted {
		fmt.Println()
		fmt.Println("Encryption at rest: bbengine-engine-enc (a directory made by `bbengine init --encrypt`) against bbengine-engine (the same in the clear), interleaved in the same rounds.")
		fmt.Println()
		fmt.Println("| clients | case | enc ÷ clear: ttfb p50 | total p50 | total p99 | CPU µs/req | enc ÷ reverseproxy: total p50 | per round enc ÷ clear total p50 |")
		fmt.Println("|--:|---|--:|--:|--:|--:|--:|--:|")
		for _, b := range blocks {
			if b.skipped {
				continue
			}
			st := func(p bench.Path) bench.Stats { return stats[engineKey{b.k, b.c, p}] }
			enc, clr, rp := st(bench.BBEngineFullEncrypted), st(bench.BBEngineFull), st(bench.ReverseProxy)
			var per []float64
			for r := range rounds {
				rs := func(p bench.Path) float64 { return us(res[engineKey{b.k, b.c, p}].rounds[r].Total50) }
				per = append(per, rs(bench.BBEngineFullEncrypted)/rs(bench.BBEngineFull))
			}
			fmt.Printf("| %d | %s | %.3f | %.3f | %.3f | %.1f vs %.1f | %.3f | %s |\n", b.k, b.c,
				us(enc.TTFB50)/us(clr.TTFB50), us(enc.Total50)/us(clr.Total50), us(enc.Total99)/us(clr.Total99),
				cpu[engineKey{b.k, b.c, bench.BBEngineFullEncrypted}], cpu[engineKey{b.k, b.c, bench.BBEngineFull}],
				us(enc.Total50)/us(rp.Total50), spread(per, "%.3f"))
		}
	}
	if m, err := rg.EngineMetrics(); err == nil {
		mean := func(name, labels string) (float64, float64) {
			n := m[name+"_count"+labels]
			return us(time.Duration(m[name+"_sum"+labels] * 1e9 / max(n, 1))), n
		}
		first, n := mean("bbengine_proxy_overhead_seconds", `{stage="first_byte"}`)
		total, _ := mean("bbengine_proxy_overhead_seconds", `{stage="total"}`)
		frame, frames := mean("bbengine_derive_frame_seconds", "")
		fmt.Printf("\nbbengine-engine's own /_bb/metrics over the run, warm-up included: added latency mean %.1f µs to first byte, %.1f µs total over %.0f exchanges; derivation %.1f µs per frame over %.0f frames; lag now %.0f bytes, %.3f s; WAL %.0f bytes, data directory %.0f bytes (%.1f× the WAL; sizes refreshed every 10 s)\n",
			first, total, n, frame, frames, m["bbengine_derive_lag_bytes"], m["bbengine_derive_lag_seconds"],
			m["bbengine_wal_size_bytes"], m["bbengine_data_dir_size_bytes"], m["bbengine_data_dir_size_bytes"]/m["bbengine_wal_size_bytes"])
	}
	for _, b := range blocks {
		if b.skipped {
			fmt.Printf("\n%s at %d clients: skipped (lockstep streams go one at a time; use stream-burst)\n", b.c, b.k)
			continue
		}
		for _, p := range paths {
			if a := res[engineKey{b.k, b.c, p}]; a.failed > 0 {
				fmt.Printf("\n%s %s ×%d: %d failed requests (left out of the percentiles); last: %v\n", p, b.c, b.k, a.failed, a.lastErr)
			}
		}
	}
	return nil
}
