package gemini

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/agents/internal/settings"
	"github.com/bbengine/bbengine/internal/jsonedit"
)

// HookTimeout is the installed hooks' time limit in milliseconds, the
// unit of Gemini CLI's hook timeout: settings.HookTimeout seconds.
const HookTimeout = settings.HookTimeout * 1000

// EnvVar is the variable that points Gemini CLI at the proxy.
const EnvVar = "GOOGLE_GEMINI_BASE_URL"

// envMark starts the comment line install writes above EnvVar in a .env
// file; the URL after it is the value install set, so that uninstall
// removes the variable only while it is still that value.
const envMark = "# bbengine install gemini: "

// HooksSettings is the fragment of Gemini CLI's settings that runs the
// hook: SessionStart and BeforeAgent hooks calling `exe [--dir dir] hook
// gemini`, with a timeout in milliseconds.
func HooksSettings(exe, dir string) *jsonedit.Object {
	return settings.HooksDocFor(exe, dir, "gemini", HookTimeout, "SessionStart", "BeforeAgent")
}

// Install computes the edits of Gemini CLI's files: hooks and
// mcpServers in .gemini/settings.json, and the base URL in the .env
// file Gemini CLI reads.
func (Agent) Install(s *agents.Setup) ([]*agents.Change, error) {
	dir := s.ProjectDir
	if s.User {
		dir = geminiHome(s.Home)
	}
	settingsFile := filepath.Join(dir, ".gemini", "settings.json")
	sc, err := settings.EditJSON(settingsFile, 0o644, func(root *jsonedit.Object) error {
		if err := settings.EditHooksDoc(root, settingsFile, s, "gemini", HooksSettings(s.Exe, s.Dir)); err != nil {
			return err
		}
		return settings.EditMCP(root, settingsFile, s)
	})
	if err != nil {
		return nil, err
	}
	changes := []*agents.Change{sc}
	if s.BaseURL == "" && !s.Uninstall {
		return changes, nil
	}
	envFile, err := envPath(dir)
	if err != nil {
		return nil, err
	}
	ec, err := editEnv(envFile, s)
	if err != nil {
		return nil, err
	}
	return append(changes, ec), nil
}

// envPath returns the .env file of dir to put EnvVar in. Gemini CLI
// (0.61: findEnvFile and loadEnvironment in the bundle) reads one .env
// file only, the first it finds walking up from the workspace, looking
// in each directory at .gemini/.env (in a trusted workspace) before
// .env, then at ~/.gemini/.env and ~/.env. So:
//
//   - .gemini/.env when it exists: Gemini CLI reads it first.
//   - Else .gemini/.env is created, rather than editing the project's own
//     .env, which the application reads too (a Google GenAI SDK there
//     would send its own calls to the proxy), unless that .env sets
//     variables Gemini CLI takes from it: a new .gemini/.env would
//     shadow it, and Gemini CLI would lose them (its GEMINI_API_KEY,
//     say). Then that .env, the one Gemini CLI reads, gets EnvVar.
//
// (An untrusted workspace takes only GEMINI_API_KEY and three more auth
// variables from any .env, never EnvVar: no file would do there.)
func envPath(dir string) (string, error) {
	gem, dot := filepath.Join(dir, ".gemini", ".env"), filepath.Join(dir, ".env")
	for _, p := range []string{gem, dot} {
		b, err := os.ReadFile(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return "", err
		case p == gem || shadowed(string(b)):
			return p, nil
		}
	}
	return gem, nil
}

// envFileIn returns the .env file of dir that Gemini CLI reads when it
// looks in dir, .gemini/.env before .env, and whether there is one.
func envFileIn(dir string) (path string, found bool, err error) {
	for _, p := range []string{filepath.Join(dir, ".gemini", ".env"), filepath.Join(dir, ".env")} {
		_, err := os.Stat(p)
		switch {
		case err == nil:
			return p, true, nil
		case !errors.Is(err, fs.ErrNotExist):
			return "", false, err
		}
	}
	return "", false, nil
}

// excludedEnv are the variables Gemini CLI does not take from a
// project's .env (DEFAULT_EXCLUDED_ENV_VARS).
var excludedEnv = []string{"DEBUG", "DEBUG_MODE", "GEMINI_CLI_IDE_SERVER_STDIO_COMMAND", "GEMINI_CLI_IDE_SERVER_STDIO_ARGS"}

// shadowed reports whether the .env content b sets a variable Gemini CLI
// takes from it, which a .gemini/.env beside it would hide.
func shadowed(b string) bool {
	for _, l := range strings.Split(b, "\n") {
		if k, _, ok := dotenvLine(l); ok && !slices.Contains(excludedEnv, k) {
			return true
		}
	}
	return false
}

// dotenvLine parses the line l of a .env file as Gemini CLI's dotenv
// (17) does: optional "export ", a name of letters, digits, _, . and -,
// then "=" or ": ", then a value quoted with ', " or ` (a \n or \r in a
// "-quoted one is a line ending) or up to a "#" (a comment), trimmed. A
// quoted value that runs on over lines is not followed (its first line
// is taken as it stands).
func dotenvLine(l string) (key, val string, ok bool) {
	l = strings.TrimRight(l, "\r")
	m := dotenvRE.FindStringSubmatch(l)
	if m == nil {
		return "", "", false
	}
	v := strings.TrimSpace(m[2])
	if len(v) >= 2 && strings.ContainsRune("'\"`", rune(v[0])) && v[len(v)-1] == v[0] {
		q := v[0]
		v = v[1 : len(v)-1]
		if q == '"' {
			v = strings.NewReplacer(`\n`, "\n", `\r`, "\r").Replace(v)
		}
	}
	return m[1], v, true
}

// dotenvRE is dotenv's LINE, for one line.
var dotenvRE = regexp.MustCompile(`^\s*(?:export\s+)?([\w.-]+)(?:\s*=\s*|:\s+)('(?:\\'|[^'])*'|"(?:\\"|[^"])*"|` + "`(?:\\\\`|[^`])*`" + `|[^#\r\n]+)?\s*(?:#.*)?$`)

// envLine returns the value of the line l of a .env file when l sets
// EnvVar, as Gemini CLI reads it (dotenvLine).
func envLine(l string) (string, bool) {
	k, v, ok := dotenvLine(l)
	if !ok || k != EnvVar {
		return "", false
	}
	return v, true
}

// editEnv sets EnvVar in the .env file path to s.BaseURL under a marked
// comment line, or for uninstall removes the two lines (the variable
// only while it is still what the mark says). Every other line stays
// byte for byte.
func editEnv(path string, s *agents.Setup) (*agents.Change, error) {
	prev, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		prev = nil
	}
	lines := strings.SplitAfter(string(prev), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	mark, varAt := -1, -1
	var cur, marked string
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if v, ok := strings.CutPrefix(t, envMark); ok && mark < 0 {
			mark, marked = i, v
			continue
		}
		if v, ok := envLine(t); ok {
			varAt, cur = i, v
		}
	}
	ours := mark >= 0 && varAt >= 0 && cur == marked
	var out []string
	switch {
	case s.Uninstall:
		for i, l := range lines {
			if i == mark || (i == varAt && ours) {
				continue
			}
			out = append(out, l)
		}
	case varAt >= 0 && cur == s.BaseURL && mark < 0:
		return agents.NewChange(path, 0o600, prev, prev), nil // the user's own, and already the proxy
	case varAt >= 0 && !ours && !s.Force:
		return nil, fmt.Errorf("%s:%d: %s is %q, not bbengine's; to record that endpoint run `bbengine proxy --upstream gemini=%s` and install with --force, or keep it with --no-base-url",
			path, varAt+1, EnvVar, cur, cur)
	default:
		for i, l := range lines {
			if i == mark || i == varAt {
				continue
			}
			out = append(out, l)
		}
		if len(out) > 0 && !strings.HasSuffix(out[len(out)-1], "\n") {
			out[len(out)-1] += "\n"
		}
		out = append(out, envMark+s.BaseURL+"\n", EnvVar+"="+s.BaseURL+"\n")
	}
	after := []byte(strings.Join(out, ""))
	switch {
	case prev == nil && len(after) == 0:
		after = nil
	case prev != nil && len(bytes.TrimSpace(after)) == 0 && len(bytes.TrimSpace(prev)) > 0:
		after = nil // only ours was in it
	}
	return agents.NewChange(path, 0o600, prev, after), nil
}
