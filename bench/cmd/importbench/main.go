// Command importbench times `bbengine import claude` against ccusage
// 18.0.11 (npm), the log reader people already use, on the same files in
// the same run, and prints wall time and peak RSS of both and their
// ratios, as Markdown.
//
//	go run ./bench/cmd/importbench                       # 20 and 200 copies, 3 rounds each
//	go run ./bench/cmd/importbench -copies 20 -rounds 1  # a quick run
//	go run ./bench/cmd/importbench -bin ./bbengine -cpuprofile /tmp/import.pprof
//
// For each -copies N it writes N copies of the golden Claude Code corpus
// (../shared/agentlogs-golden/claude) into a temporary CLAUDE_CONFIG_DIR,
// each copy with session and request ids of its own (bench.ClaudeCorpus),
// reads every file once to warm the page cache, and then runs, in
// alternating order each round, `bbengine --dir FRESH import claude
// --quiet DIR/projects` and `ccusage daily --json --offline` with
// CLAUDE_CONFIG_DIR=DIR (ccusage reads every .jsonl under
// DIR/projects). Each run is a subprocess; its wall time is measured by
// this driver and its peak RSS is the rusage Maxrss wait4 returns. The
// figures are medians over the rounds. bbengine must exit 0.
//
// ccusage is installed with `npm install --prefix CACHE ccusage@18.0.11`
// into -cache (default: the user cache directory) the first time; node
// and npm must be on PATH. Linux (rusage Maxrss in KiB).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bbengine/bbengine/bench"
)

const ccusageVersion = bench.CCUsageVersion

func main() {
	copiesFlag := flag.String("copies", "20,200", "numbers of copies of the golden Claude corpus, comma-separated")
	rounds := flag.Int("rounds", 3, "runs of each tool per number of copies, alternating which goes first")
	bin := flag.String("bin", "", "bbengine binary (default: go build it into a temporary directory)")
	cache := flag.String("cache", "", "where ccusage is installed (default: $XDG_CACHE_HOME/bbengine-bench/ccusage-"+ccusageVersion+")")
	golden := flag.String("golden", bench.GoldenClaude, "the golden Claude Code corpus")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of bbengine's last run to this file (BBENGINE_CPUPROFILE)")
	check := flag.Bool("check", false, "also run `import --check` once per number of copies (not timed) and fail on a loss")
	timeout := flag.Duration("timeout", time.Hour, "give up after this long")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	var copies []int
	for _, s := range strings.Split(*copiesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "importbench: bad -copies %q\n", s)
			os.Exit(2)
		}
		copies = append(copies, n)
	}
	cfg := config{copies: copies, rounds: max(*rounds, 1), bin: *bin, cache: *cache, golden: *golden, cpuprofile: *cpuprofile, check: *check}
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "importbench:", err)
		os.Exit(1)
	}
}

type config struct {
	copies                         []int
	rounds                         int
	bin, cache, golden, cpuprofile string
	check                          bool
}

// sample is one run of one tool.
type sample struct {
	wall time.Duration
	peak int64 // bytes
}

func run(ctx context.Context, cfg config) error {
	tmp, err := os.MkdirTemp("", "importbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := cfg.bin
	if bin == "" {
		bin = filepath.Join(tmp, "bbengine")
		fmt.Fprintln(os.Stderr, "building bbengine…")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build (run from the repository's root): %w", err)
		}
	}
	ccusage, err := bench.InstallCCUsage(ctx, cfg.cache)
	if err != nil {
		return err
	}
	fmt.Printf("bbengine import vs ccusage %s, same files, same run; medians of %d rounds (%s)\n\n", ccusageVersion, cfg.rounds, time.Now().UTC().Format(time.RFC3339))
	fmt.Println("| copies | files | MB | bbengine time | ccusage time | time ratio | bbengine peak RSS | ccusage peak RSS | RSS ratio |")
	fmt.Println("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, n := range cfg.copies {
		corpus := filepath.Join(tmp, fmt.Sprintf("corpus-%d", n))
		st, err := bench.ClaudeCorpus(corpus, cfg.golden, n)
		if err != nil {
			return err
		}
		if err := warm(corpus); err != nil {
			return err
		}
		var bb, cc []sample
		for r := range cfg.rounds {
			bbFirst := r%2 == 0
			for k := range 2 {
				if (k == 0) == bbFirst {
					prof := ""
					if r == cfg.rounds-1 {
						prof = cfg.cpuprofile
					}
					s, err := runBBEngine(ctx, bin, corpus, tmp, prof, false)
					if err != nil {
						return err
					}
					bb = append(bb, s)
				} else {
					s, err := runCCUsage(ctx, ccusage, corpus)
					if err != nil {
						return err
					}
					cc = append(cc, s)
				}
			}
			fmt.Fprintf(os.Stderr, "copies %d round %d: bbengine %s %s, ccusage %s %s\n", n, r+1,
				bb[len(bb)-1].wall.Round(time.Millisecond), mib(bb[len(bb)-1].peak), cc[len(cc)-1].wall.Round(time.Millisecond), mib(cc[len(cc)-1].peak))
		}
		b, c := median(bb), median(cc)
		fmt.Printf("| %d | %d | %.1f | %s | %s | %.2f | %s | %s | %.2f |\n", n, st.Files, float64(st.Bytes)/1e6,
			b.wall.Round(time.Millisecond), c.wall.Round(time.Millisecond), b.wall.Seconds()/c.wall.Seconds(),
			mib(b.peak), mib(c.peak), float64(b.peak)/float64(c.peak))
		if cfg.check {
			if _, err := runBBEngine(ctx, bin, corpus, tmp, "", true); err != nil {
				return fmt.Errorf("import --check at %d copies: %w", n, err)
			}
			fmt.Fprintf(os.Stderr, "copies %d: import --check found nothing lost\n", n)
		}
		if err := os.RemoveAll(corpus); err != nil {
			return err
		}
	}
	fmt.Println()
	fmt.Println("time ratio and RSS ratio are bbengine / ccusage (goal: time at most 0.7; bbengine peak RSS under 200 MiB at every size).")
	return nil
}

// warm reads every file under dir once, so that neither tool pays for
// the first read from disk.
func warm(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(io.Discard, f)
		return err
	})
}

// runBBEngine imports corpus into a fresh data directory under tmp,
// which it removes afterwards.
func runBBEngine(ctx context.Context, bin, corpus, tmp, cpuprofile string, check bool) (sample, error) {
	data, err := os.MkdirTemp(tmp, "data-")
	if err != nil {
		return sample{}, err
	}
	defer os.RemoveAll(data)
	args := []string{"--dir", data, "import", "claude", "--quiet"}
	if check {
		args = append(args, "--check")
	}
	cmd := exec.CommandContext(ctx, bin, append(args, filepath.Join(corpus, "projects"))...)
	if cpuprofile != "" {
		cmd.Env = append(os.Environ(), "BBENGINE_CPUPROFILE="+cpuprofile)
	}
	return measure(cmd)
}

func runCCUsage(ctx context.Context, entry, corpus string) (sample, error) {
	cmd := exec.CommandContext(ctx, "node", entry, "daily", "--json", "--offline")
	cmd.Env = append(os.Environ(), "CLAUDE_CONFIG_DIR="+corpus)
	return measure(cmd)
}

// measure runs cmd, its output discarded (the last of its standard error
// kept for a failure), and returns its wall time and peak RSS.
func measure(cmd *exec.Cmd) (sample, error) {
	var stderr tail
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return sample{}, fmt.Errorf("%s: %w: %s", filepath.Base(cmd.Args[0]), err, strings.TrimSpace(string(stderr.b)))
		}
		return sample{}, err
	}
	s := sample{wall: wall}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		s.peak = ru.Maxrss << 10 // KiB on Linux
	}
	return s, nil
}

// tail keeps the last 4 KiB written to it.
type tail struct{ b []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func median(s []sample) sample {
	walls := make([]time.Duration, len(s))
	peaks := make([]int64, len(s))
	for i := range s {
		walls[i], peaks[i] = s[i].wall, s[i].peak
	}
	slices.Sort(walls)
	slices.Sort(peaks)
	return sample{wall: walls[len(walls)/2], peak: peaks[len(peaks)/2]}
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }
