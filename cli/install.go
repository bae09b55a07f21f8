package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bbengine/bbengine/internal/jsonedit"
	ucli "github.com/urfave/cli/v2"
)

// defaultBaseURL is the address of `bbengine proxy` with its default
// --listen.
const defaultBaseURL = "http://127.0.0.1:8787"

// baseURLMark is the settings env entry that records the base URL
// install set, so that uninstall removes ANTHROPIC_BASE_URL only while
// it is still the one bbengine put there.
const baseURLMark = "BBENGINE_INSTALLED_BASE_URL"

// mcpName is the name of bbengine's MCP server in the agents' configs.
const mcpName = "bbengine"

func installCommand() *ucli.Command {
	return &ucli.Command{
		Name:  "install",
		Usage: "set up an agent to use bbengine: hooks that inject the context pack, the MCP server, the proxy's base URL",
		Description: "Edits the agent's own configuration files, merging with what is there: keys, hooks and\n" +
			"servers of others stay as they are, and running it twice changes nothing. Each file it\n" +
			"changes is first copied to FILE.bak-<time>. A file that does not parse is left alone and\n" +
			"named with the line and column of the problem. `bbengine uninstall` removes what it added.",
		Subcommands: []*ucli.Command{
			{
				Name:  "claude",
				Usage: "Claude Code: SessionStart and UserPromptSubmit hooks, the bbengine MCP server, env.ANTHROPIC_BASE_URL",
				Description: "--project (the default) writes .claude/settings.json and .mcp.json in --project-dir\n" +
					"(and approves the server there with enabledMcpjsonServers); --user writes\n" +
					"$CLAUDE_CONFIG_DIR/settings.json (or ~/.claude/settings.json) and the mcpServers of\n" +
					"$CLAUDE_CONFIG_DIR/.claude.json (or ~/.claude.json), where `claude mcp add --scope user`\n" +
					"puts them. The hooks run this executable (`bbengine hook claude`), with --dir when the\n" +
					"data directory is not the default. An ANTHROPIC_BASE_URL that is not bbengine's is kept\n" +
					"unless --force.",
				Flags:  installFlags(true),
				Action: func(c *ucli.Context) error { return install(c, "claude", false) },
			},
			{
				Name:  "codex",
				Usage: "Codex: openai_base_url, [mcp_servers.bbengine], hooks.json with codex_hooks, and an AGENTS.md section",
				Description: "--project (the default) writes .codex/config.toml, .codex/hooks.json and AGENTS.md in\n" +
					"--project-dir (Codex reads a project's .codex/ only once the project is trusted); --user\n" +
					"writes config.toml, hooks.json and AGENTS.md in $CODEX_HOME (or ~/.codex). In config.toml\n" +
					"it adds marked blocks (the user's lines and comments stay as they are) and, when the\n" +
					"file has a [features] table, one marked line in it. The AGENTS.md section tells the\n" +
					"agent how to get the context pack and use the memory tools.",
				Flags:  installFlags(false),
				Action: func(c *ucli.Context) error { return install(c, "codex", false) },
			},
		},
	}
}

func uninstallCommand() *ucli.Command {
	flags := func() []ucli.Flag {
		return []ucli.Flag{
			&ucli.BoolFlag{Name: "project", Usage: "the project's files (the default)"},
			&ucli.BoolFlag{Name: "user", Usage: "the user's files"},
			&ucli.StringFlag{Name: "project-dir", Value: ".", Usage: "the project directory"},
			&ucli.BoolFlag{Name: "dry-run", Usage: "print the changes as a diff and write nothing"},
			&ucli.BoolFlag{Name: "json", Usage: "print what changed as JSON"},
		}
	}
	return &ucli.Command{
		Name:  "uninstall",
		Usage: "remove what `bbengine install` added to an agent's configuration",
		Description: "Removes bbengine's hooks, its MCP server entry and marked sections, and the base URL\n" +
			"only while it is still the one install set. Everything else stays; each changed file is\n" +
			"first copied to FILE.bak-<time>.",
		Subcommands: []*ucli.Command{
			{Name: "claude", Usage: "Claude Code", Flags: flags(), Action: func(c *ucli.Context) error { return install(c, "claude", true) }},
			{Name: "codex", Usage: "Codex", Flags: flags(), Action: func(c *ucli.Context) error { return install(c, "codex", true) }},
		},
	}
}

func installFlags(claude bool) []ucli.Flag {
	fs := []ucli.Flag{
		&ucli.BoolFlag{Name: "project", Usage: "the project's files (the default)"},
		&ucli.BoolFlag{Name: "user", Usage: "the user's files"},
		&ucli.StringFlag{Name: "project-dir", Value: ".", Usage: "the project directory"},
		&ucli.StringFlag{Name: "base-url", Value: defaultBaseURL, Usage: "the proxy's address (bbengine proxy --listen)"},
		&ucli.BoolFlag{Name: "no-base-url", Usage: "leave the agent's base URL alone (nothing is recorded unless the agent goes through the proxy)"},
		&ucli.BoolFlag{Name: "no-mcp", Usage: "do not add the MCP server"},
		&ucli.BoolFlag{Name: "no-hooks", Usage: "do not add the hooks"},
		&ucli.BoolFlag{Name: "dry-run", Usage: "print the changes as a diff and write nothing"},
		&ucli.BoolFlag{Name: "json", Usage: "print what changed as JSON"},
	}
	if claude {
		fs = append(fs, &ucli.BoolFlag{Name: "force", Usage: "replace an ANTHROPIC_BASE_URL that is not bbengine's"})
	}
	return fs
}

// setup is what install puts into an agent's configuration.
type setup struct {
	// exe is this executable and dir the data directory to pass with
	// --dir ("" for the default).
	exe, dir string
	// baseURL is the proxy's address, "" to leave the base URL alone.
	baseURL    string
	mcp, hooks bool
	force      bool
	user       bool
	projectDir string
	uninstall  bool
	home       string
}

// fileChange is one file install writes: its content before (nil when
// it does not exist) and after (nil to remove it).
type fileChange struct {
	File   string `json:"file"`
	Action string `json:"action"` // created, updated, removed or unchanged
	Backup string `json:"backup,omitempty"`
	before []byte
	after  []byte
	perm   fs.FileMode
}

func install(c *ucli.Context, agent string, uninstall bool) error {
	verb := "install"
	if uninstall {
		verb = "uninstall"
	}
	if c.NArg() > 0 {
		return usagef("%s %s: unexpected argument %q", verb, agent, c.Args().First())
	}
	if c.Bool("project") && c.Bool("user") {
		return usagef("%s %s: --project and --user exclude each other", verb, agent)
	}
	s := setup{user: c.Bool("user"), uninstall: uninstall}
	var err error
	if s.projectDir, err = filepath.Abs(c.String("project-dir")); err != nil {
		return err
	}
	if !uninstall {
		s.mcp, s.hooks, s.force = !c.Bool("no-mcp"), !c.Bool("no-hooks"), c.Bool("force")
		if !c.Bool("no-base-url") {
			s.baseURL = strings.TrimRight(c.String("base-url"), "/")
			if !strings.HasPrefix(s.baseURL, "http://") && !strings.HasPrefix(s.baseURL, "https://") {
				return usagef("%s %s: --base-url %q: want http://HOST:PORT, the address bbengine proxy listens on", verb, agent, c.String("base-url"))
			}
		}
		if s.dir, err = hookDir(c.String("dir")); err != nil {
			return err
		}
	}
	if s.exe, err = os.Executable(); err != nil {
		return fmt.Errorf("find this executable for the hook command: %w", err)
	}
	if s.home, err = os.UserHomeDir(); err != nil && s.user {
		return fmt.Errorf("find the home directory: %w", err)
	}
	var changes []*fileChange
	switch agent {
	case "claude":
		changes, err = claudeChanges(s)
	case "codex":
		changes, err = codexChanges(s)
	}
	if err != nil {
		return err
	}
	w := c.App.Writer
	if c.Bool("dry-run") {
		for _, ch := range changes {
			if ch.Action != "unchanged" {
				fmt.Fprint(w, unifiedDiff(ch.File, ch.before, ch.after))
			}
		}
		if c.Bool("json") {
			return writeJSON(c, changes)
		}
		return nil
	}
	stamp := time.Now().UTC().Format("20060102T150405Z")
	for _, ch := range changes {
		if err := ch.apply(stamp); err != nil {
			return err
		}
	}
	if c.Bool("json") {
		return writeJSON(c, changes)
	}
	for _, ch := range changes {
		fmt.Fprintf(w, "%-9s %s", ch.Action, ch.File)
		if ch.Backup != "" {
			fmt.Fprintf(w, " (backup %s)", ch.Backup)
		}
		fmt.Fprintln(w)
	}
	if !uninstall {
		if s.baseURL != "" {
			fmt.Fprintf(w, "The agent now talks to %s: keep `bbengine proxy` running (or install with --no-base-url).\n", s.baseURL)
		}
		if agent == "codex" && s.hooks {
			fmt.Fprintln(w, "Codex asks you to review new hooks before it runs them.")
		}
	}
	return nil
}

// hookDir is the --dir the installed commands pass: "" for the default
// data directory, else dir made absolute (hooks run in any directory).
func hookDir(dir string) (string, error) {
	if dir == "" || dir == DefaultDir() {
		return "", nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if abs == DefaultDir() {
		return "", nil
	}
	return abs, nil
}

// bbArgs is the command line of a bbengine subcommand for a config file.
func bbArgs(dir string, args ...string) []string {
	if dir != "" {
		args = append([]string{"--dir", dir}, args...)
	}
	return args
}

// hookCommandLine is the shell command an agent runs for its hook.
func hookCommandLine(exe, dir, agent string) string {
	parts := []string{shellQuote(exe)}
	for _, a := range bbArgs(dir, "hook", agent) {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// claudeHooksSettings is the fragment of Claude Code's settings that
// runs the hook: SessionStart (every source) and UserPromptSubmit hooks
// calling `exe [--dir dir] hook claude`. dir "" is the default data
// directory. `bbengine run` passes it to claude with --settings; install
// merges the same into settings.json.
func claudeHooksSettings(exe, dir string) map[string]any {
	return jsonedit.ToGo(hooksDoc(exe, dir, "claude")).(map[string]any)
}

// hooksDoc is the settings fragment with an agent's hooks: {"hooks":
// {EVENT: [{"hooks": [{"type": "command", "command": ..., "timeout":
// ...}]}]}}, the same for Claude Code's settings.json and Codex's
// hooks.json.
func hooksDoc(exe, dir, agent string) *jsonedit.Object {
	group := func() []any {
		return []any{jsonedit.NewObject("hooks", []any{jsonedit.NewObject(
			"type", "command", "command", hookCommandLine(exe, dir, agent), "timeout", json.Number(strconv.Itoa(hookTimeout)))})}
	}
	return jsonedit.NewObject("hooks", jsonedit.NewObject("SessionStart", group(), "UserPromptSubmit", group()))
}

// isOurHook reports whether a hook command runs `bbengine hook AGENT`,
// this executable or one named bbengine anywhere, with any data
// directory.
func isOurHook(command, agent, exe string) bool {
	args := shellFields(command)
	if len(args) < 3 || !isOurExe(args[0], exe) {
		return false
	}
	for i := 1; i+1 < len(args); i++ {
		if args[i] == "hook" && args[i+1] == agent {
			return true
		}
	}
	return false
}

// isOurExe reports whether path is this executable or a bbengine
// installed elsewhere.
func isOurExe(path, exe string) bool {
	return path == exe || strings.HasPrefix(filepath.Base(path), "bbengine")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:=@%,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// shellFields splits a command line as a POSIX shell would split plain
// words and quoted strings (no expansions).
func shellFields(s string) []string {
	var out []string
	var cur strings.Builder
	in := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				j = len(s) - i - 1
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			in = true
		case ch == '"':
			i++
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				cur.WriteByte(s[i])
			}
			in = true
		case ch == '\\' && i+1 < len(s):
			i++
			cur.WriteByte(s[i])
			in = true
		case ch == ' ' || ch == '\t' || ch == '\n':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// claudeChanges computes the edits of Claude Code's files.
func claudeChanges(s setup) ([]*fileChange, error) {
	config := os.Getenv("CLAUDE_CONFIG_DIR")
	var settings, mcpFile string
	switch {
	case s.user && config != "":
		settings, mcpFile = filepath.Join(config, "settings.json"), filepath.Join(config, ".claude.json")
	case s.user:
		settings, mcpFile = filepath.Join(s.home, ".claude", "settings.json"), filepath.Join(s.home, ".claude.json")
	default:
		settings, mcpFile = filepath.Join(s.projectDir, ".claude", "settings.json"), filepath.Join(s.projectDir, ".mcp.json")
	}
	sc, err := editJSON(settings, 0o644, func(root *jsonedit.Object) error {
		if err := editHooks(root, settings, s, "claude"); err != nil {
			return err
		}
		if err := editBaseURL(root, settings, s); err != nil {
			return err
		}
		if !s.user {
			// A project's .mcp.json servers wait for the user's approval;
			// approve ours here.
			return editList(root, settings, "enabledMcpjsonServers", mcpName, s.mcp, s.uninstall)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	mcpPerm := fs.FileMode(0o644)
	if s.user {
		mcpPerm = 0o600 // ~/.claude.json holds account state
	}
	mc, err := editJSON(mcpFile, mcpPerm, func(root *jsonedit.Object) error {
		return editMCP(root, mcpFile, s)
	})
	if err != nil {
		return nil, err
	}
	return []*fileChange{sc, mc}, nil
}

// editJSON reads a JSON file (an empty object when it does not exist),
// lets edit change it and returns the change. A file that edit leaves
// equal to what it was (key order aside) stays byte for byte; one left
// empty by an uninstall is removed.
func editJSON(path string, perm fs.FileMode, edit func(root *jsonedit.Object) error) (*fileChange, error) {
	ch := &fileChange{File: path, perm: perm}
	root := jsonedit.NewObject()
	var before any
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		ch.before = b
		if len(bytes.TrimSpace(b)) > 0 {
			v, err := jsonedit.Parse(b)
			if err != nil {
				var se *jsonedit.SyntaxError
				if errors.As(err, &se) {
					return nil, fmt.Errorf("%s:%d:%d: not valid JSON: %s (near %q); fix the file, bbengine left it as it is", path, se.Line, se.Col, se.Msg, jsonedit.Line(b, se.Line))
				}
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			o, ok := v.(*jsonedit.Object)
			if !ok {
				return nil, fmt.Errorf("%s: the file holds a JSON %s, not an object; bbengine left it as it is", path, jsonKindOf(v))
			}
			root = o
			before, _ = jsonedit.Parse(b) // a copy edit does not touch
		}
	case errors.Is(err, fs.ErrNotExist):
	default:
		return nil, err
	}
	if err := edit(root); err != nil {
		return nil, err
	}
	switch {
	case ch.before != nil && before != nil && jsonedit.Equal(before, root):
		ch.after = ch.before
	case ch.before != nil && before == nil && root.Len() == 0:
		ch.after = ch.before // an empty file stays empty
	case ch.before != nil && root.Len() == 0:
		ch.after = nil
	case ch.before == nil && root.Len() == 0:
		ch.after = nil
	default:
		ch.after = jsonedit.Format(root)
	}
	ch.setAction()
	return ch, nil
}

// jsonKindOf names the JSON kind of a decoded value, for errors.
func jsonKindOf(v any) string {
	switch v.(type) {
	case []any:
		return "array"
	case string:
		return "string"
	case nil:
		return "null"
	case bool:
		return "boolean"
	}
	return "number"
}

func (ch *fileChange) setAction() {
	switch {
	case ch.before == nil && ch.after == nil, ch.before != nil && ch.after != nil && bytes.Equal(ch.before, ch.after):
		ch.Action = "unchanged"
	case ch.before == nil:
		ch.Action = "created"
	case ch.after == nil:
		ch.Action = "removed"
	default:
		ch.Action = "updated"
	}
}

// object returns root[key] as an object, creating it when create is
// set; a value of another kind is an error naming the file.
func object(root *jsonedit.Object, path, key string, create bool) (*jsonedit.Object, error) {
	v, ok := root.Get(key)
	if !ok {
		if !create {
			return nil, nil
		}
		o := jsonedit.NewObject()
		root.Set(key, o)
		return o, nil
	}
	o, isObj := v.(*jsonedit.Object)
	if !isObj {
		return nil, fmt.Errorf("%s: %q is a JSON %s, not an object; fix the file, bbengine left it as it is", path, key, jsonKindOf(v))
	}
	return o, nil
}

// editHooks puts our handler on each of our events in root["hooks"] (or
// takes it out for uninstall): it replaces our handler where it is,
// removes copies, and adds a group of its own where it is not. Hooks of
// others stay where they are.
func editHooks(root *jsonedit.Object, path string, s setup, agent string) error {
	want := s.hooks && !s.uninstall
	hooks, err := object(root, path, "hooks", want)
	if err != nil || hooks == nil {
		return err
	}
	oursV, _ := hooksDoc(s.exe, s.dir, agent).Get("hooks")
	ours := oursV.(*jsonedit.Object)
	removed := false
	for _, event := range ours.Keys() {
		groupsV, ok := hooks.Get(event)
		var groups []any
		if ok {
			if groups, ok = groupsV.([]any); !ok {
				return fmt.Errorf("%s: hooks.%s is a JSON %s, not an array; fix the file, bbengine left it as it is", path, event, jsonKindOf(groupsV))
			}
		}
		ev, _ := ours.Get(event)
		ourGroup := ev.([]any)[0].(*jsonedit.Object)
		hv, _ := ourGroup.Get("hooks")
		handler := hv.([]any)[0]
		placed := false
		var kept []any
		for _, g := range groups {
			gobj, ok := g.(*jsonedit.Object)
			hsV, _ := gobj.Get("hooks")
			hs, isArr := hsV.([]any)
			if !ok || !isArr {
				kept = append(kept, g)
				continue
			}
			var hkept []any
			changed := false
			for _, h := range hs {
				hobj, ok := h.(*jsonedit.Object)
				var cmd string
				if ok {
					cv, _ := hobj.Get("command")
					cmd, _ = cv.(string)
				}
				if !ok || !isOurHook(cmd, agent, s.exe) {
					hkept = append(hkept, h)
					continue
				}
				changed = true
				if want && !placed {
					hkept = append(hkept, handler)
					placed = true
				}
			}
			if !changed {
				kept = append(kept, g)
				continue
			}
			removed = true
			if len(hkept) == 0 {
				continue // the group held only our handler
			}
			gobj.Set("hooks", hkept)
			kept = append(kept, g)
		}
		if want && !placed {
			kept = append(kept, ourGroup)
		}
		switch {
		case len(kept) > 0:
			hooks.Set(event, kept)
		case ok:
			hooks.Delete(event)
		}
	}
	if removed && hooks.Len() == 0 {
		root.Delete("hooks")
	}
	return nil
}

// editBaseURL sets env.ANTHROPIC_BASE_URL to the proxy, recording that
// it did; uninstall removes it while it is still that value.
func editBaseURL(root *jsonedit.Object, path string, s setup) error {
	want := s.baseURL != "" && !s.uninstall
	env, err := object(root, path, "env", want)
	if err != nil || env == nil {
		return err
	}
	curV, hasCur := env.Get("ANTHROPIC_BASE_URL")
	cur, _ := curV.(string)
	markV, hasMark := env.Get(baseURLMark)
	mark, _ := markV.(string)
	ours := hasCur && hasMark && cur == mark
	if s.uninstall {
		if ours {
			env.Delete("ANTHROPIC_BASE_URL")
		}
		if hasMark {
			env.Delete(baseURLMark)
			if env.Len() == 0 {
				root.Delete("env")
			}
		}
		return nil
	}
	if !want {
		return nil
	}
	switch {
	case hasCur && cur == s.baseURL && !hasMark:
		return nil // the user's own, and already the proxy
	case hasCur && !ours && !s.force:
		return fmt.Errorf("%s: env.ANTHROPIC_BASE_URL is %q, not bbengine's; to record that endpoint run `bbengine proxy --upstream anthropic=%s` and install with --force, or keep it with --no-base-url", path, cur, cur)
	}
	env.Set("ANTHROPIC_BASE_URL", s.baseURL)
	env.Set(baseURLMark, s.baseURL)
	return nil
}

// editList adds value to the string array root[key] (or removes it).
func editList(root *jsonedit.Object, path, key, value string, add, uninstall bool) error {
	v, ok := root.Get(key)
	var list []any
	if ok {
		if list, ok = v.([]any); !ok {
			return fmt.Errorf("%s: %q is a JSON %s, not an array; fix the file, bbengine left it as it is", path, key, jsonKindOf(v))
		}
	}
	has := slices.Contains(list, any(value))
	switch {
	case uninstall && has:
		list = slices.DeleteFunc(list, func(e any) bool { return e == any(value) })
		if len(list) == 0 {
			root.Delete(key)
		} else {
			root.Set(key, list)
		}
	case add && !uninstall && !has:
		root.Set(key, append(list, value))
	}
	return nil
}

// editMCP adds our server to root["mcpServers"] (or removes it).
func editMCP(root *jsonedit.Object, path string, s setup) error {
	want := s.mcp && !s.uninstall
	servers, err := object(root, path, "mcpServers", want)
	if err != nil || servers == nil {
		return err
	}
	if !want {
		v, ok := servers.Get(mcpName)
		if o, isObj := v.(*jsonedit.Object); ok && isObj {
			cv, _ := o.Get("command")
			if cmd, _ := cv.(string); isOurExe(cmd, s.exe) {
				servers.Delete(mcpName)
				if servers.Len() == 0 {
					root.Delete("mcpServers")
				}
			}
		}
		return nil
	}
	servers.Set(mcpName, jsonedit.NewObject("type", "stdio", "command", s.exe, "args", jsonedit.FromGo(bbArgs(s.dir, "mcp"))))
	return nil
}

// apply writes the change: the old file is copied to FILE.bak-stamp
// first, the new content replaces it atomically (through a symbolic
// link to its target), with the old file's permissions.
func (ch *fileChange) apply(stamp string) error {
	if ch.Action == "unchanged" {
		return nil
	}
	path := ch.File
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	perm := ch.perm
	if info, err := os.Stat(path); err == nil {
		perm = info.Mode().Perm()
	}
	if ch.before != nil {
		if err := ch.backup(stamp, perm); err != nil {
			return err
		}
	}
	if ch.after == nil {
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("remove %s: %w", ch.File, err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return writeAtomic(path, ch.after, perm)
}

// backup copies the old content to FILE.bak-stamp, or FILE.bak-stamp-N
// when that exists (an install and an uninstall in the same second),
// never over an earlier backup.
func (ch *fileChange) backup(stamp string, perm fs.FileMode) error {
	for n := 0; ; n++ {
		name := ch.File + ".bak-" + stamp
		if n > 0 {
			name += fmt.Sprintf("-%d", n)
		}
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("back up %s: %w", ch.File, err)
		}
		_, err = f.Write(ch.before)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(name)
			return fmt.Errorf("back up %s: %w", ch.File, err)
		}
		ch.Backup = name
		return nil
	}
}

// unifiedDiff shows how after differs from before, line by line with
// three lines of context.
func unifiedDiff(name string, before, after []byte) string {
	a, b := splitLines(before), splitLines(after)
	from, to := name, name
	if before == nil {
		from = "/dev/null"
	}
	if after == nil {
		to = "/dev/null"
	}
	// The common head and tail are skipped before the quadratic part.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	am, bm := a[pre:len(a)-suf], b[pre:len(b)-suf]
	lcs := make([][]int32, len(am)+1)
	// maxCells bounds the table; past it (a file rewritten from end to
	// end) the middle shows as all removed, then all added.
	const maxCells = 4 << 20
	small := len(am)*len(bm) <= maxCells
	for i := range lcs {
		if small {
			lcs[i] = make([]int32, len(bm)+1)
		} else {
			lcs[i] = make([]int32, 1)
		}
	}
	for i := len(am) - 1; i >= 0 && small; i-- {
		for j := len(bm) - 1; j >= 0; j-- {
			if am[i] == bm[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		kind byte // ' ', '-', '+'
		text string
		ai   int // line index in a (for ' ' and '-') or where it goes
		bi   int
	}
	var ops []op
	for i := 0; i < pre; i++ {
		ops = append(ops, op{' ', a[i], i, i})
	}
	i, j := 0, 0
	for i < len(am) || j < len(bm) {
		switch {
		case small && i < len(am) && j < len(bm) && am[i] == bm[j]:
			ops = append(ops, op{' ', am[i], pre + i, pre + j})
			i, j = i+1, j+1
		case i < len(am) && (j == len(bm) || !small || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', am[i], pre + i, pre + j})
			i++
		default:
			ops = append(ops, op{'+', bm[j], pre + i, pre + j})
			j++
		}
	}
	for k := 0; k < suf; k++ {
		ops = append(ops, op{' ', a[len(a)-suf+k], len(a) - suf + k, len(b) - suf + k})
	}
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
	const context = 3
	var changed []int
	for k, o := range ops {
		if o.kind != ' ' {
			changed = append(changed, k)
		}
	}
	for c := 0; c < len(changed); {
		// A hunk runs from a change to the last one less than two
		// contexts after the one before it.
		d := c
		for d+1 < len(changed) && changed[d+1]-changed[d] <= 2*context+1 {
			d++
		}
		start, end := max(0, changed[c]-context), min(len(ops), changed[d]+context+1)
		an, bn := 0, 0
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				an++
			}
			if o.kind != '-' {
				bn++
			}
		}
		// A side with no lines names the line before the hunk.
		as, bs := ops[start].ai+1, ops[start].bi+1
		if an == 0 {
			as--
		}
		if bn == 0 {
			bs--
		}
		fmt.Fprintf(&out, "@@ -%d,%d +%d,%d @@\n", as, an, bs, bn)
		for _, o := range ops[start:end] {
			out.WriteByte(o.kind)
			out.WriteString(o.text)
			out.WriteByte('\n')
		}
		c = d + 1
	}
	return out.String()
}

func splitLines(b []byte) []string {
	if len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}
