package claude

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// LaunchAt finds Claude Code in a command line: its executable (claude,
// claude-code), or its script run by node (…/@anthropic-ai/claude-code/…).
func (Agent) LaunchAt(argv []string) int {
	if len(argv) == 0 {
		return -1
	}
	if b := strings.TrimSuffix(filepath.Base(argv[0]), ".exe"); b == "claude" || b == "claude-code" {
		return 0
	}
	if len(argv) > 1 && strings.TrimSuffix(filepath.Base(argv[0]), ".exe") == "node" &&
		strings.Contains(filepath.ToSlash(argv[1]), "claude-code/") {
		return 1
	}
	return -1
}

// LaunchArgs writes the hooks' settings (HooksSettings) to a temporary
// file and returns --settings FILE.
func (Agent) LaunchArgs(exe, dir string) (args, files []string, err error) {
	b, err := json.Marshal(HooksSettings(exe, dir))
	if err != nil {
		return nil, nil, err
	}
	s, err := os.CreateTemp("", "bbengine-claude-settings-*.json")
	if err != nil {
		return nil, nil, fmt.Errorf("Claude Code settings: %w", err)
	}
	files = []string{s.Name()}
	_, err = s.Write(b)
	if err = errors.Join(err, s.Close()); err != nil {
		return nil, files, fmt.Errorf("Claude Code settings: %w", err)
	}
	return []string{"--settings", s.Name()}, files, nil
}
