// Command bbengine is a local flight recorder and memory engine for AI coding
// agents. See the README and the cli package for the commands.
//
// BBENGINE_CPUPROFILE=FILE writes a CPU profile of the whole run to FILE
// (go tool pprof FILE), for profiling a real proxy or import; the bench
// drivers use it. BBENGINE_MEMPROFILE=FILE writes a heap profile when the
// run ends (go tool pprof -sample_index=alloc_space FILE shows where the
// run allocated).
package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/bbengine/bbengine/cli"
)

func main() {
	os.Exit(run())
}

func run() int {
	if path := os.Getenv("BBENGINE_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bbengine: BBENGINE_CPUPROFILE: %v\n", err)
			return 2
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "bbengine: BBENGINE_CPUPROFILE: %v\n", err)
			return 2
		}
		defer pprof.StopCPUProfile()
	}
	if path := os.Getenv("BBENGINE_MEMPROFILE"); path != "" {
		defer func() {
			f, err := os.Create(path)
			if err == nil {
				err = pprof.Lookup("allocs").WriteTo(f, 0)
				if cerr := f.Close(); err == nil {
					err = cerr
				}
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "bbengine: BBENGINE_MEMPROFILE: %v\n", err)
			}
		}()
	}
	return cli.Main(os.Args, os.Stdout, os.Stderr)
}
