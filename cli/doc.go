// Package cli wires bbengine's packages into the `bbengine` command line.
//
// It is the only package that knows about every other one. Each command lives
// in its own file as a *cli.Command whose Action binds flags into a library's
// Options, calls one library function, and writes to the app's writers. It
// holds flags, config and output formatting only: the operations are in api,
// the long-running processes (the proxy with the engine beside it, the MCP
// server) in server, the run of an agent in runner, agents' knowledge in
// agents/<name>.
//
// Exit codes: 0 on success, 1 on a runtime failure (one line on stderr naming
// what failed), 2 on a usage error (unknown command, bad flag, missing
// argument; the usage is printed first). Only Main decides the code; commands
// return errors.
//
// Every flag can also be set by an environment variable BBENGINE_<NAME>
// (upper case, dashes as underscores) and by a key in the YAML file named by
// --config. Precedence: command line, then environment, then config file,
// then the flag's default.
//
// It may import every package of the module (it is the wiring); only main,
// bench and e2e import it.
package cli
