// Command walbench measures one goroutine appending to a WAL against raw
// writes of the same bytes, per sync policy and payload size, and prints
// the ratio (WAL throughput over raw; 1 means as fast as the file
// system allows).
//
//	go run ./bench/cmd/walbench [-sync interval,always] [-sizes 256,4096,65536] [-rounds 10] [-round 200ms] [-cpuprofile FILE]
//
// The baseline (package wal/walbench) writes the frame bytes an append
// writes, as durably as the policy makes an acknowledged append: one
// flushed buffered write per record for interval and none, a write and an
// fdatasync for always. For each policy and size the targets (raw, wal:
// no compression, the same bytes; snappy: the default compression) take
// turns in blocks of 16 records, for about -round each per round,
// -rounds times, the first of them rotating from round to round, so
// drift on a loaded machine (other processes, the disk's queue) spreads
// evenly. Ratios are of total records over total time; "min" and "max"
// are those of single rounds.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bbengine/bbengine/wal"
	"github.com/bbengine/bbengine/wal/walbench"
)

func main() {
	syncs := flag.String("sync", "interval,always", "sync policies, comma-separated: interval, always, none")
	sizes := flag.String("sizes", "256,4096,65536", "payload sizes in bytes, comma-separated")
	rounds := flag.Int("rounds", 10, "rounds per policy and size")
	round := flag.Duration("round", 200*time.Millisecond, "time per target per round")
	only := flag.String("targets", "raw,wal,snappy", "targets, comma-separated: raw (always first), wal, snappy")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	log.SetFlags(0)
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	targets := strings.Split(*only, ",")
	if targets[0] != "raw" {
		targets = append([]string{"raw"}, slices.DeleteFunc(targets, func(s string) bool { return s == "raw" })...)
	}
	fmt.Printf("| sync | size | raw MB/s | %s |\n", strings.Join(targets[1:], " MB/s | ")+" MB/s | "+ratioCols(targets[1:]))
	fmt.Printf("|---|--:|--:|%s\n", strings.Repeat("--:|", 2*(len(targets)-1)))
	for _, s := range strings.Split(*syncs, ",") {
		policy, err := wal.ParseSyncPolicy(s)
		if err != nil {
			log.Fatal(err)
		}
		for _, z := range strings.Split(*sizes, ",") {
			size, err := strconv.Atoi(z)
			if err != nil {
				log.Fatal(err)
			}
			res, err := measure(policy, size, targets, *rounds, *round)
			if err != nil {
				log.Fatal(err)
			}
			row := fmt.Sprintf("| %s | %d |", policy, size)
			for _, r := range res {
				row += fmt.Sprintf(" %.1f |", r.mbps(size))
			}
			for _, r := range res[1:] {
				lo, hi := r.spread(res[0])
				row += fmt.Sprintf(" %.2f (%.2f-%.2f) |", r.mbps(size)/res[0].mbps(size), lo, hi)
			}
			fmt.Println(row)
		}
	}
}

func ratioCols(names []string) string {
	var cols []string
	for _, n := range names {
		cols = append(cols, n+"/raw (min-max)")
	}
	return strings.Join(cols, " | ")
}

// result is one target's records and time, in total and per round.
type result struct {
	n       int
	d       time.Duration
	rounds  []float64 // records per second in each round
	elapsed time.Duration
}

func (r *result) mbps(size int) float64 {
	return float64(r.n) * float64(size) / r.d.Seconds() / 1e6
}

// spread returns the lowest and highest ratio of a round of r to the
// same round of base.
func (r *result) spread(base *result) (lo, hi float64) {
	lo, hi = 1e9, 0
	for i, x := range r.rounds {
		q := x / base.rounds[i]
		lo, hi = min(lo, q), max(hi, q)
	}
	return lo, hi
}

// measure runs the targets interleaved.
func measure(policy wal.SyncPolicy, size int, names []string, rounds int, round time.Duration) ([]*result, error) {
	tmp, err := os.MkdirTemp("", "walbench")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	ts := make([]*walbench.Target, len(names))
	for i, name := range names {
		dir := tmp + "/" + name
		if err := os.Mkdir(dir, 0o700); err != nil {
			return nil, err
		}
		switch name {
		case "raw":
			ts[i], err = walbench.Raw(dir, policy, size)
		case "wal":
			ts[i], err = walbench.Lone(dir, policy, size, false)
		case "snappy":
			ts[i], err = walbench.Lone(dir, policy, size, true)
		default:
			err = fmt.Errorf("unknown target %q", name)
		}
		if err != nil {
			return nil, err
		}
		defer ts[i].Close()
	}
	// Warm up: buffers, free lists, the first pages of each file.
	for _, t := range ts {
		for range 20 {
			if err := t.Op(); err != nil {
				return nil, err
			}
		}
	}
	res := make([]*result, len(ts))
	for i := range res {
		res[i] = &result{}
	}
	for r := range rounds {
		ns, ds, err := run(ts, r, round)
		if err != nil {
			return nil, err
		}
		for i := range ts {
			res[i].n += ns[i]
			res[i].d += ds[i]
			res[i].rounds = append(res[i].rounds, float64(ns[i])/ds[i].Seconds())
		}
	}
	for i, t := range ts {
		if err := t.Close(); err != nil {
			return nil, fmt.Errorf("%s: %w", names[i], err)
		}
		ts[i].Close = func() error { return nil }
	}
	return res, nil
}

// run is one round: it calls each target's Op in blocks of 16, the
// targets taking turns block by block (starting with target first%len),
// for about d per target, and returns how many calls each made in how
// long. Taking turns this often lets the targets share the machine's
// state (other processes, the disk's queue) as evenly as it can be
// shared; it matters most under SyncAlways, where each call waits for
// the disk.
func run(ts []*walbench.Target, first int, d time.Duration) ([]int, []time.Duration, error) {
	ns := make([]int, len(ts))
	ds := make([]time.Duration, len(ts))
	start := time.Now()
	for time.Since(start) < d*time.Duration(len(ts)) {
		for k := range ts {
			i := (k + first) % len(ts)
			t0 := time.Now()
			for range 16 {
				if err := ts[i].Op(); err != nil {
					return nil, nil, err
				}
			}
			ds[i] += time.Since(t0)
			ns[i] += 16
		}
	}
	return ns, ds, nil
}
