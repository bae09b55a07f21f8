package cli

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	ucli "github.com/urfave/cli/v2"
)

func versionCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "version",
		Usage:     "print the bbengine version",
		ArgsUsage: " ",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "json", Usage: "print as JSON"},
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() > 0 {
				return usagef("version: takes no arguments")
			}
			v := struct {
				Version string `json:"version"`
				Go      string `json:"go"`
				OS      string `json:"os"`
				Arch    string `json:"arch"`
				Module  string `json:"module,omitempty"`
			}{Version: Version, Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
			if bi, ok := debug.ReadBuildInfo(); ok {
				v.Module = bi.Main.Path
				if Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
					v.Version = bi.Main.Version
				}
			}
			if c.Bool("json") {
				return json.NewEncoder(c.App.Writer).Encode(v)
			}
			_, err := fmt.Fprintf(c.App.Writer, "bbengine %s (%s %s/%s)\n", v.Version, v.Go, v.OS, v.Arch)
			return err
		},
	}
}
