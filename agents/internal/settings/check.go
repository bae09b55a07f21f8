package settings

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/internal/jsonedit"
)

// Inspect reads the JSON file at path as EditJSON does (an empty object
// when it does not exist; an error naming the line when it does not
// parse) and hands its root to look. It writes nothing.
func Inspect(path string, look func(root *jsonedit.Object) error) error {
	_, err := EditJSON(path, 0o644, look)
	return err
}

// MissingHooks returns the events install hooks (SessionStart,
// UserPromptSubmit) on which root["hooks"] has no handler running
// `bbengine hook agent` (this executable, exe, or one named bbengine);
// none when every one has it.
func MissingHooks(root *jsonedit.Object, agent, exe string) []string {
	return MissingHooksOf(root, HooksDoc(exe, "", agent), agent, exe)
}

// MissingHooksOf is MissingHooks for an agent whose install hooks the
// events of ours, the hooks document it writes (Gemini CLI's
// SessionStart and BeforeAgent).
func MissingHooksOf(root, ours *jsonedit.Object, agent, exe string) []string {
	oursV, _ := ours.Get("hooks")
	var missing []string
	hooks, _ := root.Get("hooks")
	hobj, _ := hooks.(*jsonedit.Object)
	for _, event := range oursV.(*jsonedit.Object).Keys() {
		if hobj == nil || !hasOurHook(hobj, event, agent, exe) {
			missing = append(missing, event)
		}
	}
	return missing
}

func hasOurHook(hooks *jsonedit.Object, event, agent, exe string) bool {
	found := false
	hookCommands(hooks, event, func(cmd string) {
		found = found || IsOurHook(cmd, agent, exe)
	})
	return found
}

// hookCommands calls fn with the command of every hook handler of event
// in hooks (settings' "hooks": event → [{hooks: [{command}]}]).
func hookCommands(hooks *jsonedit.Object, event string, fn func(cmd string)) {
	groupsV, _ := hooks.Get(event)
	groups, _ := groupsV.([]any)
	for _, g := range groups {
		gobj, _ := g.(*jsonedit.Object)
		if gobj == nil {
			continue
		}
		hsV, _ := gobj.Get("hooks")
		hs, _ := hsV.([]any)
		for _, h := range hs {
			if hobj, _ := h.(*jsonedit.Object); hobj != nil {
				cv, _ := hobj.Get("command")
				cmd, _ := cv.(string)
				fn(cmd)
			}
		}
	}
}

// OurMCP returns the command of bbengine's server in root["mcpServers"]
// when it runs this executable (exe) or one named bbengine, else "".
func OurMCP(root *jsonedit.Object, exe string) string {
	sv, _ := root.Get("mcpServers")
	servers, _ := sv.(*jsonedit.Object)
	if servers == nil {
		return ""
	}
	v, _ := servers.Get(MCPName)
	o, _ := v.(*jsonedit.Object)
	if o == nil {
		return ""
	}
	cv, _ := o.Get("command")
	if cmd, _ := cv.(string); IsOurExe(cmd, exe) {
		return cmd
	}
	return ""
}

// HookDirs returns the data directory each of bbengine's hook handlers
// for agent in root["hooks"] passes with --dir, "" for one that passes
// none (the default data directory), without repeats.
func HookDirs(root *jsonedit.Object, agent, exe string) []string {
	var out []string
	hooks, _ := root.Get("hooks")
	hobj, _ := hooks.(*jsonedit.Object)
	if hobj == nil {
		return nil
	}
	for _, event := range hobj.Keys() {
		hookCommands(hobj, event, func(cmd string) {
			if !IsOurHook(cmd, agent, exe) {
				return
			}
			dir := ""
			args := agents.ShellFields(cmd)
			for i := 1; i+1 < len(args) && args[i] != "hook"; i++ {
				if args[i] == "--dir" {
					dir = args[i+1]
				} else if v, ok := strings.CutPrefix(args[i], "--dir="); ok {
					dir = v
				}
			}
			if !slices.Contains(out, dir) {
				out = append(out, dir)
			}
		})
	}
	return out
}

// Doc is a settings file as a check read it: Root is nil when the file
// does not exist.
type Doc struct {
	Path string
	Root *jsonedit.Object
}

// ReadDoc reads the settings file path for a check, changing nothing; a
// missing file is a Doc with a nil Root.
func ReadDoc(path string) (Doc, error) {
	d := Doc{Path: path}
	if !Exists(path) {
		return d, nil
	}
	err := Inspect(path, func(root *jsonedit.Object) error {
		d.Root = root
		return nil
	})
	return d, err
}

// Exists reports whether path exists (or cannot be told not to).
func Exists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, fs.ErrNotExist)
}
