// Command bbengine is a local flight recorder and memory engine for AI coding
// agents. See the README and the cli package for the commands.
package main

import (
	"os"

	"github.com/bbengine/bbengine/cli"
)

func main() {
	os.Exit(cli.Main(os.Args, os.Stdout, os.Stderr))
}
