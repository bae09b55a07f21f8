package settings

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

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/internal/jsonedit"
)

// HookTimeout is the time limit, in seconds, the installed hooks give the
// hook command. The command gives up well before it (its --timeout).
const HookTimeout = 5

// MCPName is the name of bbengine's MCP server in the agents' configs.
const MCPName = "bbengine"

// Args is the command line of a bbengine subcommand for a config file.
func Args(dir string, args ...string) []string {
	if dir != "" {
		args = append([]string{"--dir", dir}, args...)
	}
	return args
}

// HookCommandLine is the shell command an agent runs for its hook.
func HookCommandLine(exe, dir, agent string) string {
	parts := []string{agents.ShellQuote(exe)}
	for _, a := range Args(dir, "hook", agent) {
		parts = append(parts, agents.ShellQuote(a))
	}
	return strings.Join(parts, " ")
}

// HooksDoc is the settings fragment with an agent's hooks: {"hooks":
// {EVENT: [{"hooks": [{"type": "command", "command": ..., "timeout":
// ...}]}]}}, the same for Claude Code's settings.json and Codex's
// hooks.json.
func HooksDoc(exe, dir, agent string) *jsonedit.Object {
	return HooksDocFor(exe, dir, agent, HookTimeout, "SessionStart", "UserPromptSubmit")
}

// HooksDocFor is HooksDoc for an agent whose events have other names or
// whose timeout counts in another unit (Gemini CLI: BeforeAgent for
// UserPromptSubmit, milliseconds): a group calling the hook with timeout
// on each of events.
func HooksDocFor(exe, dir, agent string, timeout int, events ...string) *jsonedit.Object {
	group := func() []any {
		return []any{jsonedit.NewObject("hooks", []any{jsonedit.NewObject(
			"type", "command", "command", HookCommandLine(exe, dir, agent), "timeout", json.Number(strconv.Itoa(timeout)))})}
	}
	hooks := jsonedit.NewObject()
	for _, ev := range events {
		hooks.Set(ev, group())
	}
	return jsonedit.NewObject("hooks", hooks)
}

// IsOurHook reports whether a hook command runs `bbengine hook AGENT`,
// this executable or one named bbengine anywhere, with any data
// directory.
func IsOurHook(command, agent, exe string) bool {
	args := agents.ShellFields(command)
	if len(args) < 3 || !IsOurExe(args[0], exe) {
		return false
	}
	for i := 1; i+1 < len(args); i++ {
		if args[i] == "hook" && args[i+1] == agent {
			return true
		}
	}
	return false
}

// IsOurExe reports whether path is this executable or a bbengine
// installed elsewhere.
func IsOurExe(path, exe string) bool {
	return path == exe || strings.HasPrefix(filepath.Base(path), "bbengine")
}

// EditJSON reads a JSON file (an empty object when it does not exist),
// lets edit change it and returns the change. A file that edit leaves
// equal to what it was (key order aside) stays byte for byte; one left
// equal to one of its backups (an uninstall after an install) gets that
// backup's bytes; one left empty by an uninstall is removed.
func EditJSON(path string, perm fs.FileMode, edit func(root *jsonedit.Object) error) (*agents.Change, error) {
	root := jsonedit.NewObject()
	var (
		prev   []byte // the file, nil when there is none
		before any
	)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		prev = b
		if len(bytes.TrimSpace(b)) > 0 {
			v, err := jsonedit.Parse(b)
			if err != nil {
				var se *jsonedit.SyntaxError
				if errors.As(err, &se) {
					// Line and column only: the line may hold an API key.
					return nil, fmt.Errorf("%s:%d:%d: not valid JSON: %s; fix the file, bbengine left it as it is", path, se.Line, se.Col, se.Msg)
				}
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			o, ok := v.(*jsonedit.Object)
			if !ok {
				return nil, fmt.Errorf("%s: the file holds a JSON %s, not an object; bbengine left it as it is", path, JSONKind(v))
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
	var after []byte
	switch {
	case prev != nil && before != nil && jsonedit.Equal(before, root):
		after = prev
	case prev != nil && before == nil && root.Len() == 0:
		after = prev // an empty file stays empty
	case prev != nil && root.Len() == 0:
		after = nil
	case prev == nil && root.Len() == 0:
		after = nil
	default:
		after = backupOf(path, root)
		if after == nil {
			after = jsonedit.Format(root)
		}
	}
	return agents.NewChange(path, perm, prev, after), nil
}

// maxBackups is how many of a file's backups backupOf reads.
const maxBackups = 20

// backupOf returns the bytes of the newest backup of path
// (agents.Change's path.bak-STAMP) that holds the tree root, or nil: an
// uninstall that leaves the file as it was before install gives back the
// user's own bytes (their indentation, their layout), not ours.
func backupOf(path string, root *jsonedit.Object) []byte {
	names, _ := filepath.Glob(path + ".bak-*")
	// Newest first: the stamps sort by time, a -N suffix after its stamp.
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(b, a) })
	for i, name := range names {
		if i == maxBackups {
			break
		}
		b, err := os.ReadFile(name)
		if err != nil {
			continue
		}
		if v, err := jsonedit.Parse(b); err == nil && jsonedit.Equal(v, root) {
			return b
		}
	}
	return nil
}

// JSONText writes a settings value as it would be written in the file.
func JSONText(v any) string {
	if b, err := json.Marshal(jsonedit.ToGo(v)); err == nil {
		return string(b)
	}
	return fmt.Sprint(v)
}

// JSONKind names the JSON kind of a decoded value, for errors.
func JSONKind(v any) string {
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

// Object returns root[key] as an object, creating it when create is
// set; a value of another kind is an error naming the file.
func Object(root *jsonedit.Object, path, key string, create bool) (*jsonedit.Object, error) {
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
		return nil, fmt.Errorf("%s: %q is a JSON %s, not an object; fix the file, bbengine left it as it is", path, key, JSONKind(v))
	}
	return o, nil
}

// EditHooks puts our handler on each of our events in root["hooks"] (or
// takes it out for uninstall): it replaces our handler where it is,
// removes copies, and adds a group of its own where it is not. Hooks of
// others stay where they are.
func EditHooks(root *jsonedit.Object, path string, s *agents.Setup, agent string) error {
	return EditHooksDoc(root, path, s, agent, HooksDoc(s.Exe, s.Dir, agent))
}

// EditHooksDoc is EditHooks with the hooks of doc, a fragment made by
// HooksDocFor.
func EditHooksDoc(root *jsonedit.Object, path string, s *agents.Setup, agent string, doc *jsonedit.Object) error {
	want := s.Hooks && !s.Uninstall
	hooks, err := Object(root, path, "hooks", want)
	if err != nil || hooks == nil {
		return err
	}
	oursV, _ := doc.Get("hooks")
	ours := oursV.(*jsonedit.Object)
	removed := false
	for _, event := range ours.Keys() {
		groupsV, ok := hooks.Get(event)
		var groups []any
		if ok {
			if groups, ok = groupsV.([]any); !ok {
				return fmt.Errorf("%s: hooks.%s is a JSON %s, not an array; fix the file, bbengine left it as it is", path, event, JSONKind(groupsV))
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
				if !ok || !IsOurHook(cmd, agent, s.Exe) {
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

// EditList adds value to the string array root[key] (or removes it).
func EditList(root *jsonedit.Object, path, key, value string, add, uninstall bool) error {
	v, ok := root.Get(key)
	var list []any
	if ok {
		if list, ok = v.([]any); !ok {
			return fmt.Errorf("%s: %q is a JSON %s, not an array; fix the file, bbengine left it as it is", path, key, JSONKind(v))
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

// EditMCP adds our server to root["mcpServers"] (or removes it).
func EditMCP(root *jsonedit.Object, path string, s *agents.Setup) error {
	want := s.MCP && !s.Uninstall
	servers, err := Object(root, path, "mcpServers", want)
	if err != nil || servers == nil {
		return err
	}
	if !want {
		v, ok := servers.Get(MCPName)
		if o, isObj := v.(*jsonedit.Object); ok && isObj {
			cv, _ := o.Get("command")
			if cmd, _ := cv.(string); IsOurExe(cmd, s.Exe) {
				servers.Delete(MCPName)
				if servers.Len() == 0 {
					root.Delete("mcpServers")
				}
			}
		}
		return nil
	}
	servers.Set(MCPName, jsonedit.NewObject("type", "stdio", "command", s.Exe, "args", jsonedit.FromGo(Args(s.Dir, "mcp"))))
	return nil
}
