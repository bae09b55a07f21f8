package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/server"
	ucli "github.com/urfave/cli/v2"
)

// Version is the bbengine version, set at build time with
// -ldflags "-X github.com/bbengine/bbengine/cli.Version=v1.2.3".
var Version = "dev"

// usageError marks an error caused by how the command was invoked; Main
// prints usage for it and exits with status 2.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// exitError carries an exit status other than 1 for a failure that has
// already been reported (validate prints its diagnostics, then exits 1).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// Main runs the bbengine command line with args (args[0] is the program
// name) and returns the process exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	return MainContext(context.Background(), args, stdout, stderr)
}

// MainContext is Main with a context: a long-running command (bbengine
// proxy, import --follow) stops when ctx ends as it does on SIGINT, so
// that tests and benchmarks can run and stop it in their own process.
func MainContext(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		// Pebble panics on a damaged file it meets while reading (the
		// engine's logger turns its Fatalf into a panic): one line, not
		// a stack trace.
		if r := recover(); r != nil {
			msg := fmt.Sprint(r)
			if !strings.HasPrefix(msg, "pebble: ") {
				panic(r)
			}
			fmt.Fprintf(stderr, "bbengine: the derived state cannot be read (%s); run `bbengine rebuild` to set it aside and derive it again from the WAL\n", headLine(errors.New(msg)))
			code = 1
		}
	}()
	app := NewApp(stdout, stderr)
	err := app.RunContext(ctx, flagsFirst(app, args))
	if err == nil {
		return 0
	}
	var ue *usageError
	var ce *server.ConfigError
	if errors.As(err, &ue) || errors.As(err, &ce) {
		fmt.Fprintf(stderr, "bbengine: %v\n", err)
		return 2
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintf(stderr, "bbengine: %s\n", ee.msg)
		}
		return ee.code
	}
	var de *engine.DamagedError
	if engine.IsDamaged(err) && !errors.As(err, &de) {
		fmt.Fprintf(stderr, "bbengine: the derived state cannot be read (%s); run `bbengine rebuild` to set it aside and derive it again from the WAL\n", headLine(err))
		return 1
	}
	fmt.Fprintf(stderr, "bbengine: %s\n", oneLine(err.Error()))
	return 1
}

// flagsFirst moves a command's flags ahead of its arguments, so that
// "bbengine show SESSION --format json" works like "show --format json
// SESSION": urfave/cli v2 stops reading flags at the first argument.
// The same holds for a subcommand's flags ("mem search QUERY --json").
// Global flags before the command, commands whose subcommand is not
// named, and everything after "--" are left as they are.
func flagsFirst(app *ucli.App, args []string) []string {
	i := 1
	for i < len(args) && strings.HasPrefix(args[i], "-") && args[i] != "-" {
		name := strings.TrimLeft(args[i], "-")
		i++
		if !strings.Contains(name, "=") && !isBool(app.Flags, name) && i < len(args) {
			i++ // its value
		}
	}
	if i >= len(args) {
		return args
	}
	cmd := app.Command(args[i])
	if cmd != nil && len(cmd.Subcommands) > 0 && i+1 < len(args) {
		// "mem search QUERY --json": the same, one level down.
		if sub := cmd.Command(args[i+1]); sub != nil {
			cmd = sub
			i++
		}
	}
	if cmd == nil || len(cmd.Subcommands) > 0 {
		return args
	}
	var flags, rest []string
	tail := args[i+1:]
	for j := 0; j < len(tail); j++ {
		a := tail[j]
		if a == "--" {
			rest = append(rest, tail[j:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			rest = append(rest, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if !strings.Contains(name, "=") && !isBool(cmd.Flags, name) && j+1 < len(tail) {
			j++
			flags = append(flags, tail[j])
		}
	}
	out := append(append([]string{}, args[:i+1]...), flags...)
	return append(out, rest...)
}

// isBool reports whether name is a boolean flag among flags (which takes
// no separate value).
func isBool(flags []ucli.Flag, name string) bool {
	for _, f := range flags {
		for _, n := range f.Names() {
			if n == name {
				_, ok := f.(*ucli.BoolFlag)
				return ok
			}
		}
	}
	return false
}

// oneLine folds a multi-line error message into one line.
func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

// NewApp builds the bbengine application writing to stdout and stderr.
func NewApp(stdout, stderr io.Writer) *ucli.App {
	app := &ucli.App{
		Name:      "bbengine",
		Usage:     "flight recorder and memory engine for AI coding agents",
		Version:   Version,
		Writer:    stdout,
		ErrWriter: stderr,
		Flags: append([]ucli.Flag{
			&ucli.StringFlag{
				Name:  "dir",
				Usage: "data directory",
				Value: DefaultDir(),
			},
			&ucli.StringFlag{
				Name:  "config",
				Usage: "YAML file with flag values (keys are flag names; a map per command is also read)",
			},
		}, unlockFlags()...),
		Commands: []*ucli.Command{
			proxyCommand(),
			versionCommand(),
			validateCommand(),
			fmtCommand(),
			statsCommand(),
			replayCommand(),
			walCommand(),
			sessionsCommand(),
			showCommand(),
			traceCommand(),
			uiCommand(),
			rebuildCommand(),
			backupCommand(),
			restoreCommand(),
			importCommand(),
			exportCommand(),
			convertCommand(),
			memCommand(),
			hookCommand(),
			installCommand(),
			uninstallCommand(),
			mcpCommand(),
			toolsCommand(),
			runCommand(),
			breakerCommand(),
			duCommand(),
			usageCommand(),
			doctorCommand(),
			gcCommand(),
			initCommand(),
			keyCommand(),
		},
		HideVersion:          true,
		EnableBashCompletion: false,
		OnUsageError: func(c *ucli.Context, err error, _ bool) error {
			_ = ucli.ShowAppHelp(c)
			return &usageError{err}
		},
		CommandNotFound: func(c *ucli.Context, name string) {
			// Reported by the app Action below; urfave/cli calls this only
			// for unknown subcommands of a command with subcommands.
		},
		Action: func(c *ucli.Context) error {
			if c.NArg() == 0 {
				return ucli.ShowAppHelp(c)
			}
			_ = ucli.ShowAppHelp(c)
			return usagef("unknown command %q", c.Args().First())
		},
		Before: func(c *ucli.Context) error {
			if err := applyConfig(c, nil); err != nil {
				return err
			}
			setUnlock(c)
			return nil
		},
		ExitErrHandler: func(*ucli.Context, error) {},
	}
	prepare(app)
	return app
}

// prepare gives every flag of app its BBENGINE_* environment variable and
// makes every command read the config file, report usage errors with
// status 2, and reject stray arguments where it takes none.
func prepare(app *ucli.App) {
	for _, f := range app.Flags {
		addEnv(f)
	}
	var walk func(cmds []*ucli.Command, path []string)
	walk = func(cmds []*ucli.Command, path []string) {
		for _, cmd := range cmds {
			cmd := cmd
			p := append(append([]string(nil), path...), cmd.Name)
			for _, f := range cmd.Flags {
				addEnv(f)
			}
			cmd.OnUsageError = func(c *ucli.Context, err error, _ bool) error {
				_ = ucli.ShowCommandHelp(c, cmd.Name)
				return &usageError{fmt.Errorf("%s: %w", strings.Join(p, " "), err)}
			}
			before := cmd.Before
			cmd.Before = func(c *ucli.Context) error {
				if err := applyConfig(c, p); err != nil {
					return err
				}
				if before != nil {
					return before(c)
				}
				return nil
			}
			if len(cmd.Subcommands) > 0 && cmd.Action == nil {
				cmd.Action = func(c *ucli.Context) error {
					_ = ucli.ShowSubcommandHelp(c)
					if c.NArg() == 0 {
						return usagef("%s: missing subcommand", strings.Join(p, " "))
					}
					return usagef("%s: unknown subcommand %q", strings.Join(p, " "), c.Args().First())
				}
			}
			walk(cmd.Subcommands, p)
		}
	}
	walk(app.Commands, nil)
}

// envName is the environment variable that sets flag name.
func envName(name string) string {
	return "BBENGINE_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

func addEnv(f ucli.Flag) {
	name := f.Names()[0]
	switch f := f.(type) {
	case *ucli.StringFlag:
		f.EnvVars = append(f.EnvVars, envName(name))
	case *ucli.BoolFlag:
		f.EnvVars = append(f.EnvVars, envName(name))
	case *ucli.IntFlag:
		f.EnvVars = append(f.EnvVars, envName(name))
	case *ucli.Int64Flag:
		f.EnvVars = append(f.EnvVars, envName(name))
	case *ucli.Uint64Flag:
		f.EnvVars = append(f.EnvVars, envName(name))
	case *ucli.Float64Flag:
		f.EnvVars = append(f.EnvVars, envName(name))
	case *ucli.DurationFlag:
		f.EnvVars = append(f.EnvVars, envName(name))
	case *ucli.StringSliceFlag:
		f.EnvVars = append(f.EnvVars, envName(name))
	}
}

// DefaultDir is the data directory used when --dir is not given:
// $XDG_DATA_HOME/bbengine, else ~/.local/share/bbengine (on macOS
// ~/Library/Application Support/bbengine, on Windows %LocalAppData%\bbengine).
func DefaultDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "bbengine")
	}
	switch runtime.GOOS {
	case "windows":
		if d := os.Getenv("LocalAppData"); d != "" {
			return filepath.Join(d, "bbengine")
		}
	case "darwin":
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, "Library", "Application Support", "bbengine")
		}
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "share", "bbengine")
	}
	return filepath.Join(os.TempDir(), "bbengine")
}
