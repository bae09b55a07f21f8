// Command bbengine is a local flight recorder and memory engine for AI coding
// agents. See the README and the cli package for the commands.
//
// BBENGINE_CPUPROFILE=FILE writes a CPU profile of the whole run to FILE
// (go tool pprof FILE), for profiling a real proxy or import; the bench
// drivers use it.
package main

import (
	"fmt"
	"os"
	"runtime/pprof"

	"github.com/bbengine/bbengine/cli"
)

func main() {
	if path := os.Getenv("BBENGINE_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bbengine: BBENGINE_CPUPROFILE: %v\n", err)
			os.Exit(2)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "bbengine: BBENGINE_CPUPROFILE: %v\n", err)
			os.Exit(2)
		}
		code := cli.Main(os.Args, os.Stdout, os.Stderr)
		pprof.StopCPUProfile()
		f.Close()
		os.Exit(code)
	}
	os.Exit(cli.Main(os.Args, os.Stdout, os.Stderr))
}
