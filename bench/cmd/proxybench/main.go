// Command proxybench measures the bbengine proxy's overhead against a
// direct connection to the same fake upstream and against a bare
// httputil.ReverseProxy, all in one process, interleaved in rounds, and
// prints Markdown tables to paste into an issue note.
//
//	go run ./bench/cmd/proxybench [-rounds 40] [-n 50] [-events 50] [-dir DIR] [-modes privacy,passthrough]
//
// Each round sends, for each request shape, a block of n sequential
// requests along each path over a warm keep-alive connection; the order
// of the paths rotates from round to round so that drift (CPU frequency,
// page cache, GC pacing) is spread evenly. After each block the harness
// waits for the bbengine recorder to drain, so its background work is
// charged to its own block (CPU time and allocations) and the queue never
// gets deep: latencies are those of a proxy that is keeping up. Latency is
// measured by the client: time to the first response body byte and to
// EOF. CPU is the process's user+system time over each block.
//
// Allocations per chunk are reported two ways: amortized (the proxy's
// allocations per request ÷ events, as the Go benchmark does) and
// marginal (the slope between 50- and 500-event streams, which takes out
// per-request costs).
//
// With -engine it measures the proxy with the whole engine on: a fourth
// path, `bbengine proxy` run in this process through cli.MainContext
// (derivation, memory and the index following the WAL as the command
// runs them), beside the recorder alone, the bare reverse proxy and
// direct, at each number of concurrent clients in -clients. Each block
// is settled until derivation and the index have caught up, so their CPU
// is charged to it. It reports bbengine-engine's ratio to direct divided
// by the bare proxy's ratio to direct (goal: at most 1.1) for p50 to
// first byte and total, and process CPU per request:
//
//	go run ./bench/cmd/proxybench -engine [-clients 1,4] [-cases json,stream-burst] [-rounds 20] [-n 50]
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bbengine/bbengine/bench"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/wal"
)

func main() {
	rounds := flag.Int("rounds", 40, "rounds; each sends one block per path and request shape")
	n := flag.Int("n", 50, "sequential requests per block")
	warmup := flag.Int("warmup", 300, "requests per path and shape before measuring")
	events := flag.Int("events", 50, "SSE events per streamed response")
	dir := flag.String("dir", "", "WAL directory (default: a temporary directory, removed afterwards)")
	syncFlag := flag.String("sync", "interval", "WAL sync policy: interval, always or none")
	casesFlag := flag.String("cases", "stream,stream-burst,json", "request shapes: stream (events in lockstep with the client), stream-burst (back to back), json")
	gap := flag.Duration("gap", 0, "pause between requests (0: back to back)")
	marginal := flag.Int("marginal", 500, "also count allocations with streams of this many events, to get the marginal allocations per extra chunk (0: skip)")
	modes := flag.String("modes", "", "also measure bbengine in these capture modes (privacy, passthrough, degrade), to split the cost of capture")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the measured rounds to `file`")
	engineOn := flag.Bool("engine", false, "measure `bbengine proxy` with the whole engine on (derivation, memory, index) beside the recorder alone, the bare proxy and direct, at each -clients count")
	clientsFlag := flag.String("clients", "1,4", "with -engine: numbers of concurrent clients")
	encrypted := flag.Bool("encrypted", false, "with -engine: also measure `bbengine proxy` in a data directory encrypted at rest (init --encrypt), interleaved with the clear one")
	flag.Parse()
	if *engineOn {
		if err := runEngineFlags(*rounds, *n, *warmup, *events, *clientsFlag, *casesFlag, *dir, *syncFlag, *cpuprofile, *encrypted); err != nil {
			fmt.Fprintln(os.Stderr, "proxybench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*rounds, *n, *warmup, *events, *marginal, *dir, *syncFlag, *casesFlag, *modes, *gap, *cpuprofile); err != nil {
		fmt.Fprintln(os.Stderr, "proxybench:", err)
		os.Exit(1)
	}
}

type key struct {
	c bench.Case
	p bench.Path
}

type acc struct {
	failed  int // requests that failed: left out of the samples
	lastErr error
	samples []bench.Sample
	rounds  []bench.Stats // per round, the block's percentiles
	mallocs uint64
	bytes   uint64
	cpu     time.Duration // process CPU time (user+system) over the blocks
}

func run(rounds, n, warmup, events, marginal int, dir, syncName, casesFlag, modesFlag string, gap time.Duration, cpuprofile string) error {
	policy, err := wal.ParseSyncPolicy(syncName)
	if err != nil {
		return err
	}
	var cases []bench.Case
	for _, s := range strings.Split(casesFlag, ",") {
		c := bench.Case(strings.TrimSpace(s))
		if !slices.Contains(bench.Cases, c) {
			return fmt.Errorf("unknown case %q", s)
		}
		cases = append(cases, c)
	}
	var modes []proxy.Mode
	for _, s := range strings.Split(modesFlag, ",") {
		if s = strings.TrimSpace(s); s != "" {
			m, err := proxy.ParseMode(s)
			if err != nil {
				return err
			}
			modes = append(modes, m)
		}
	}
	rounds, n = max(rounds, 1), max(n, 1)
	rg, err := bench.NewRig(bench.Config{Dir: dir, Events: events, Sync: policy, ExtraModes: modes})
	if err != nil {
		return err
	}
	defer rg.Close()
	paths := rg.Paths()

	for _, c := range cases {
		for _, p := range paths {
			failed := 0
			for range warmup {
				if _, err := rg.Do(p, c); err != nil {
					if failed++; failed > warmup/100+1 {
						return err
					}
				}
			}
		}
	}
	rg.Settle()
	runtime.GC()

	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	res := map[key]*acc{}
	for _, c := range cases {
		for _, p := range paths {
			res[key{c, p}] = &acc{samples: make([]bench.Sample, 0, rounds*n)}
		}
	}
	start := time.Now()
	block := make([]bench.Sample, 0, n)
	var m0, m1 runtime.MemStats
	for r := range rounds {
		for ci, c := range cases {
			for i := range paths {
				p := paths[(i+r+ci)%len(paths)]
				a := res[key{c, p}]
				runtime.ReadMemStats(&m0)
				cpu0 := bench.CPUTime()
				block = block[:0]
				for range n {
					s, err := rg.Do(p, c)
					if gap > 0 {
						time.Sleep(gap)
					}
					if err != nil {
						// Counted, reported, never timed. The bare reverse
						// proxy truncates about one lockstep stream in
						// 1000-3000 (golang/go#40747).
						if a.failed++; a.failed > rounds*n/100+1 {
							return fmt.Errorf("%d failed requests; last: %w", a.failed, err)
						}
						a.lastErr = err
						continue
					}
					block = append(block, s)
				}
				rg.Settle() // the recorder's tail belongs to this block
				a.cpu += bench.CPUTime() - cpu0
				runtime.ReadMemStats(&m1)
				a.mallocs += m1.Mallocs - m0.Mallocs // per attempt: failures included
				a.bytes += m1.TotalAlloc - m0.TotalAlloc
				a.samples = append(a.samples, block...)
				a.rounds = append(a.rounds, bench.Summarize(block))
			}
		}
	}
	elapsed := time.Since(start)
	if cpuprofile != "" {
		pprof.StopCPUProfile()
	}

	var marginalNote string
	if marginal > rg.Events() && slices.Contains(cases, bench.Stream) {
		if marginalNote, err = marginalAllocs(rg, marginal, policy); err != nil {
			return err
		}
	}
	walDir := rg.WALDir()
	recs, err := rg.Recorded(false)
	if err != nil {
		return fmt.Errorf("reading the WAL back: %w", err)
	}
	type walStat struct{ exchanges, complete, chunks int64 }
	recorded := map[bench.Case]*walStat{}
	for _, x := range recs {
		ws := recorded[x.Case]
		if ws == nil {
			ws = &walStat{}
			recorded[x.Case] = ws
		}
		ws.exchanges++
		if x.Ended {
			ws.chunks += x.End.Chunks
			if x.End.Complete {
				ws.complete++
			}
		}
	}

	us := bench.Micros
	fmt.Printf("proxybench: %s %s/%s, GOMAXPROCS=%d, NumCPU=%d; %d rounds × %d sequential requests per path and shape (%d paths interleaved, order rotated), %d warm-up each; gap %v; %s elapsed\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0), runtime.NumCPU(), rounds, n, len(paths), warmup, gap, elapsed.Round(time.Millisecond))
	fmt.Printf("stream: %d Anthropic SSE events (%d bytes), each flushed, in lockstep with the client (stream) or back to back (stream-burst); json: %d bytes with Content-Length. bbengine: lossless, WAL sync=%s, snappy, dir %s\n\n",
		rg.Events(), len(rg.Want(bench.Stream)), len(rg.Want(bench.JSON)), policy, walDir)

	fmt.Println("| case | path | n | failed | ttfb p50 µs | ttfb p99 µs | total p50 µs | total p99 µs | total mean µs | CPU µs/req | allocs/req | KiB/req |")
	fmt.Println("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	stats := map[key]bench.Stats{}
	allocs := map[key]float64{}
	cpu := map[key]float64{}
	for _, c := range cases {
		for _, p := range paths {
			k := key{c, p}
			a := res[k]
			st := bench.Summarize(a.samples)
			stats[k] = st
			attempts := float64(rounds * n)
			allocs[k] = float64(a.mallocs) / attempts
			cpu[k] = us(a.cpu) / attempts
			fmt.Printf("| %s | %s | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n", c, p, st.N, a.failed,
				us(st.TTFB50), us(st.TTFB99), us(st.Total50), us(st.Total99), us(st.TotalMean),
				cpu[k], allocs[k], float64(a.bytes)/attempts/1024)
		}
	}

	fmt.Println()
	fmt.Println("| case | metric | bbengine − direct µs | bbengine / reverseproxy | reverseproxy − direct µs | per-round bbengine − direct µs, median [min, max] | per-round bbengine / reverseproxy, median [min, max] |")
	fmt.Println("|---|---|--:|--:|--:|--:|--:|")
	type metric struct {
		name string
		get  func(bench.Stats) time.Duration
	}
	metrics := []metric{
		{"ttfb p50", func(s bench.Stats) time.Duration { return s.TTFB50 }},
		{"total p50", func(s bench.Stats) time.Duration { return s.Total50 }},
		{"ttfb p99", func(s bench.Stats) time.Duration { return s.TTFB99 }},
		{"total p99", func(s bench.Stats) time.Duration { return s.Total99 }},
	}
	for _, c := range cases {
		d, rp, bb := stats[key{c, bench.Direct}], stats[key{c, bench.ReverseProxy}], stats[key{c, bench.BBEngine}]
		for _, m := range metrics {
			var diffs, ratios []float64
			if strings.HasSuffix(m.name, "p50") {
				for r := range rounds {
					rd, rr, rb := res[key{c, bench.Direct}].rounds[r], res[key{c, bench.ReverseProxy}].rounds[r], res[key{c, bench.BBEngine}].rounds[r]
					diffs = append(diffs, us(m.get(rb))-us(m.get(rd)))
					ratios = append(ratios, us(m.get(rb))/us(m.get(rr)))
				}
			}
			fmt.Printf("| %s | %s | %+.1f | %.3f | %+.1f | %s | %s |\n", c, m.name,
				us(m.get(bb))-us(m.get(d)), us(m.get(bb))/us(m.get(rp)), us(m.get(rp))-us(m.get(d)),
				spread(diffs, "%+.1f"), spread(ratios, "%.3f"))
		}
	}

	for _, c := range cases {
		for _, p := range paths {
			if a := res[key{c, p}]; a.failed > 0 {
				fmt.Printf("\n%s %s: %d failed requests (left out of the percentiles); last: %v\n", c, p, a.failed, a.lastErr)
			}
		}
	}
	fmt.Println()
	ev := rg.Events()
	for _, c := range cases {
		bb, d, rp := allocs[key{c, bench.BBEngine}], allocs[key{c, bench.Direct}], allocs[key{c, bench.ReverseProxy}]
		ws := recorded[c]
		if ws == nil || ws.exchanges == 0 {
			continue
		}
		perReq := float64(ws.chunks) / float64(ws.exchanges)
		fmt.Printf("%s: WAL holds %d exchanges (incl. warm-up), %d complete, %.1f response chunks read per exchange; ", c, ws.exchanges, ws.complete, perReq)
		fmt.Printf("process CPU per request vs direct %+.1f µs, vs reverseproxy %+.1f µs; ", cpu[key{c, bench.BBEngine}]-cpu[key{c, bench.Direct}], cpu[key{c, bench.BBEngine}]-cpu[key{c, bench.ReverseProxy}])
		if c.IsStream() {
			fmt.Printf("allocs per event (MemStats.Mallocs/request − baseline's, ÷ %d): vs direct %.2f, vs reverseproxy (capture alone) %.2f; per chunk the proxy read: vs direct %.2f, vs reverseproxy %.2f\n",
				ev, bench.AllocsPerChunk(bb, d, ev), bench.AllocsPerChunk(bb, rp, ev), (bb-d)/perReq, (bb-rp)/perReq)
		} else {
			fmt.Printf("allocs per request vs direct %+.1f, vs reverseproxy %+.1f\n", bb-d, bb-rp)
		}
	}
	if len(paths) > len(bench.Paths) {
		fmt.Println()
		fmt.Println("| case | path | CPU µs/req over reverseproxy | allocs/req over reverseproxy | total p50 / reverseproxy | total p99 / reverseproxy |")
		fmt.Println("|---|---|--:|--:|--:|--:|")
		for _, c := range cases {
			rp := key{c, bench.ReverseProxy}
			for _, p := range paths {
				if !p.IsBBEngine() {
					continue
				}
				k := key{c, p}
				fmt.Printf("| %s | %s | %+.1f | %+.1f | %.3f | %.3f |\n", c, p, cpu[k]-cpu[rp], allocs[k]-allocs[rp],
					us(stats[k].Total50)/us(stats[rp].Total50), us(stats[k].Total99)/us(stats[rp].Total99))
			}
		}
	}
	fmt.Print(marginalNote)
	fmt.Println()
	for _, c := range cases {
		if !c.IsStream() {
			continue
		}
		s := func(p bench.Path) bench.Stats { return stats[key{c, p}] }
		added := us(s(bench.BBEngine).Total50) - us(s(bench.Direct).Total50)
		addedTTFB := us(s(bench.BBEngine).TTFB50) - us(s(bench.Direct).TTFB50)
		ratio := us(s(bench.BBEngine).Total50) / us(s(bench.ReverseProxy).Total50)
		ratioTTFB := us(s(bench.BBEngine).TTFB50) / us(s(bench.ReverseProxy).TTFB50)
		fmt.Printf("goal (%s): added p50 < 150 µs over direct: total %+.1f µs %s, ttfb %+.1f µs %s\n", c, added, verdict(added < 150), addedTTFB, verdict(addedTTFB < 150))
		fmt.Printf("goal (%s): capture-on p50 ≤ 1.1× bare reverse proxy: total %.3f %s, ttfb %.3f %s (process CPU per request %.2f× the reverse proxy's)\n",
			c, ratio, verdict(ratio <= 1.1), ratioTTFB, verdict(ratioTTFB <= 1.1), cpu[key{c, bench.BBEngine}]/cpu[key{c, bench.ReverseProxy}])
	}
	return nil
}

// marginalAllocs counts allocations per request for lockstep streams of
// rg.Events() and of long events along each path; the slope is what one
// more chunk costs, with the per-request costs taken out. Requests go in
// blocks of about 1000 chunks with Settle after each, so the recorder's
// queue never gets deep (a deep queue grows the chunk buffer pool, which
// would be counted as allocations per chunk).
func marginalAllocs(rg *bench.Rig, long int, policy wal.SyncPolicy) (string, error) {
	lr, err := bench.NewRig(bench.Config{Events: long, Sync: policy})
	if err != nil {
		return "", err
	}
	defer lr.Close()
	short := rg.Events()
	var sb strings.Builder
	fmt.Fprintf(&sb, "\nmarginal allocations per extra chunk ((allocs/req at %d events − at %d) ÷ %d, lockstep, blocks of ≤1000 chunks, drained between):", long, short, long-short)
	for _, p := range bench.Paths {
		var a [2]float64
		for i, r := range []*bench.Rig{rg, lr} {
			block := max(1, 1000/r.Events())
			blocks := max(10, 200/block)
			for range block { // warm-up
				r.Do(p, bench.Stream)
			}
			r.Settle()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			for range blocks {
				for range block {
					if _, err := r.Do(p, bench.Stream); err != nil && p != bench.ReverseProxy {
						return "", err
					}
				}
				r.Settle()
			}
			runtime.ReadMemStats(&m1)
			a[i] = float64(m1.Mallocs-m0.Mallocs) / float64(blocks*block)
		}
		fmt.Fprintf(&sb, " %s %+.3f (%.1f → %.1f per request);", p, (a[1]-a[0])/float64(long-short), a[0], a[1])
	}
	sb.WriteString("\n")
	return sb.String(), nil
}

func verdict(ok bool) string {
	if ok {
		return "MET"
	}
	return "NOT MET"
}

func spread(v []float64, f string) string {
	if len(v) == 0 {
		return "–"
	}
	v = slices.Clone(v)
	slices.Sort(v)
	return fmt.Sprintf(f+" ["+f+", "+f+"]", v[len(v)/2], v[0], v[len(v)-1])
}

// runEngineFlags parses the flags of the -engine mode; its -cases
// default is json,stream-burst (lockstep streams cannot run
// concurrently).
func runEngineFlags(rounds, n, warmup, events int, clientsFlag, casesFlag, dir, syncName, cpuprofile string, encrypted bool) error {
	policy, err := wal.ParseSyncPolicy(syncName)
	if err != nil {
		return err
	}
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "cases" })
	if !explicit {
		casesFlag = "json,stream-burst"
	}
	var cases []bench.Case
	for _, s := range strings.Split(casesFlag, ",") {
		c := bench.Case(strings.TrimSpace(s))
		if !slices.Contains(bench.Cases, c) {
			return fmt.Errorf("unknown case %q", s)
		}
		cases = append(cases, c)
	}
	var clients []int
	for _, s := range strings.Split(clientsFlag, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || k < 1 {
			return fmt.Errorf("-clients %q: want positive numbers, e.g. 1,4", clientsFlag)
		}
		clients = append(clients, k)
	}
	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	return runEngine(max(rounds, 1), max(n, 1), warmup, events, clients, cases, dir, policy, encrypted)
}
