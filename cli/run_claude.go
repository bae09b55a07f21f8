package cli

// claudeHooksSettings is replaced by the hook branch's version.
func claudeHooksSettings(exe, dir string) map[string]any {
	h := []any{map[string]any{"hooks": []any{map[string]any{"type": "command", "command": exe + " --dir " + dir + " hook claude", "timeout": 10}}}}
	return map[string]any{"hooks": map[string]any{"SessionStart": h, "UserPromptSubmit": h}}
}
