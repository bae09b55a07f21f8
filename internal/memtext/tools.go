package memtext

import "strings"

// ShellCommand returns the command line of a call of shell tool tool
// with arguments args, or "" when tool is not a shell.
func ShellCommand(tool string, args map[string]any) string {
	name := strings.ToLower(tool)
	switch name {
	case "bash", "shell", "exec_command", "local_shell", "run_shell_command", "run_terminal_cmd", "execute_command", "container.exec", "terminal":
	default:
		return ""
	}
	if c := argString(args, "command", "cmd"); c != "" {
		return c
	}
	var argv []string
	switch v := args["command"].(type) {
	case []any:
		for _, a := range v {
			if s, ok := a.(string); ok {
				argv = append(argv, s)
			}
		}
	}
	if a, ok := args["action"].(map[string]any); ok { // local_shell
		if v, ok := a["command"].([]any); ok {
			for _, x := range v {
				if s, ok := x.(string); ok {
					argv = append(argv, s)
				}
			}
		}
	}
	if len(argv) >= 3 && (strings.HasSuffix(argv[0], "sh") && (argv[1] == "-lc" || argv[1] == "-c")) {
		return argv[2]
	}
	return strings.Join(argv, " ")
}

// FileEdit is one file a tool call changes: Op is create, edit, write,
// delete or move; Added is the text it writes into the file, Remove the
// text it takes out; Whole says Added is the file's whole new content.
type FileEdit struct {
	Path, Op      string
	Added, Remove string
	Whole         bool
}

// FileEdits returns the files a call of tool with arguments args changes
// (Edit, MultiEdit, Write, NotebookEdit, apply_patch, str_replace tools,
// write_file, …); text is the call's raw input when it has no JSON
// arguments (a custom apply_patch tool).
func FileEdits(tool string, args map[string]any, text string) []FileEdit {
	name := tool
	switch strings.ToLower(name) {
	case "edit", "str_replace", "str_replace_editor", "str_replace_based_edit_tool", "replace", "edit_file", "search_replace":
		p := argString(args, "file_path", "path", "filePath", "target_file")
		if p == "" {
			return nil
		}
		if c := argString(args, "command"); c == "create" {
			return []FileEdit{{Path: p, Op: "create", Added: argString(args, "file_text", "content"), Whole: true}}
		}
		return []FileEdit{{Path: p, Op: "edit", Added: argString(args, "new_string", "new_str", "newString"), Remove: argString(args, "old_string", "old_str", "oldString")}}
	case "multiedit":
		p := argString(args, "file_path", "path")
		if p == "" {
			return nil
		}
		fe := FileEdit{Path: p, Op: "edit"}
		if edits, ok := args["edits"].([]any); ok {
			for _, e := range edits {
				if em, ok := e.(map[string]any); ok {
					fe.Added += argString(em, "new_string") + "\n"
					fe.Remove += argString(em, "old_string") + "\n"
				}
			}
		}
		return []FileEdit{fe}
	case "write", "write_file", "create_file":
		p := argString(args, "file_path", "path", "filePath", "target_file")
		if p == "" {
			return nil
		}
		return []FileEdit{{Path: p, Op: "write", Added: argString(args, "content", "file_text", "contents"), Whole: true}}
	case "notebookedit":
		if p := argString(args, "notebook_path"); p != "" {
			return []FileEdit{{Path: p, Op: "edit", Added: argString(args, "new_source")}}
		}
	case "apply_patch":
		patch := argString(args, "input", "patch")
		if patch == "" && text != "" {
			patch = text
		}
		return patchFiles(patch)
	}
	return nil
}

// patchFiles reads the files of an apply_patch envelope ("*** Update
// File: p", "*** Add File: p", "*** Delete File: p", "*** Move to: p").
func patchFiles(patch string) []FileEdit {
	var out []FileEdit
	var cur *FileEdit
	for _, l := range strings.Split(patch, "\n") {
		switch {
		case strings.HasPrefix(l, "*** Update File: "):
			out = append(out, FileEdit{Path: strings.TrimSpace(l[len("*** Update File: "):]), Op: "edit"})
			cur = &out[len(out)-1]
		case strings.HasPrefix(l, "*** Add File: "):
			out = append(out, FileEdit{Path: strings.TrimSpace(l[len("*** Add File: "):]), Op: "create", Whole: true})
			cur = &out[len(out)-1]
		case strings.HasPrefix(l, "*** Delete File: "):
			out = append(out, FileEdit{Path: strings.TrimSpace(l[len("*** Delete File: "):]), Op: "delete"})
			cur = nil
		case strings.HasPrefix(l, "*** Move to: ") && cur != nil:
			out = append(out, FileEdit{Path: strings.TrimSpace(l[len("*** Move to: "):]), Op: "move"})
		case cur != nil && strings.HasPrefix(l, "+"):
			cur.Added += l[1:] + "\n"
		case cur != nil && strings.HasPrefix(l, "-"):
			cur.Remove += l[1:] + "\n"
		}
	}
	return out
}

// argString returns the first of keys that args holds as a non-empty
// string.
func argString(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if v, ok := m[k].(string); ok && v != "" {
			return v
		}
	}
	return ""
}
