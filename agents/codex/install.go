package codex

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/agents/internal/settings"
	"github.com/bbengine/bbengine/internal/jsonedit"
	"github.com/bbengine/bbengine/pack"
)

// The marks around what install adds to Codex's config.toml and to
// AGENTS.md; uninstall removes what lies between them.
const (
	tomlBegin      = "# bbengine:begin (added by `bbengine install codex`; `bbengine uninstall codex` removes it)"
	tomlEnd        = "# bbengine:end"
	tomlHooksLine  = "codex_hooks = true # added by `bbengine install codex`"
	AgentsBegin    = "<!-- bbengine:begin (added by `bbengine install codex`; `bbengine uninstall codex` removes it) -->"
	AgentsEnd      = "<!-- bbengine:end -->"
	agentsMarkHead = "<!-- bbengine:begin"
)

// Install computes the edits of Codex's files.
func (Agent) Install(s *agents.Setup) ([]*agents.Change, error) {
	dir, agentsFile := dirs(s.User, s.Home, s.ProjectDir)
	config := filepath.Join(dir, "config.toml")
	cc, err := editText(config, func(text string) (string, error) { return codexConfig(config, text, s) })
	if err != nil {
		return nil, err
	}
	hooksFile := filepath.Join(dir, "hooks.json")
	hc, err := settings.EditJSON(hooksFile, 0o644, func(root *jsonedit.Object) error {
		return settings.EditHooks(root, hooksFile, s, "codex")
	})
	if err != nil {
		return nil, err
	}
	ac, err := editText(agentsFile, func(text string) (string, error) { return agentsSection(text, s), nil })
	if err != nil {
		return nil, err
	}
	return []*agents.Change{cc, hc, ac}, nil
}

// dirs returns the directory of the config.toml and hooks.json install
// edits, and its AGENTS.md: the user's ($CODEX_HOME, else ~/.codex) or
// the project's.
func dirs(user bool, home, projectDir string) (dir, agentsFile string) {
	if user {
		dir = os.Getenv("CODEX_HOME")
		if dir == "" {
			dir = filepath.Join(home, ".codex")
		}
		return dir, filepath.Join(dir, "AGENTS.md")
	}
	return filepath.Join(projectDir, ".codex"), filepath.Join(projectDir, "AGENTS.md")
}

// editText reads a text file ("" when it does not exist), lets edit
// change it and returns the change; a file edit leaves blank is removed.
func editText(path string, edit func(text string) (string, error)) (*agents.Change, error) {
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var before, after []byte
	if err == nil {
		before = b
	}
	text, err := edit(string(b))
	if err != nil {
		return nil, err
	}
	switch {
	case text == string(b):
		after = before
	case strings.TrimSpace(text) == "":
		after = nil
	default:
		after = []byte(text)
	}
	return agents.NewChange(path, 0o644, before, after), nil
}

// stripMarked removes the lines from each line that starts with begin
// to the next line that starts with end, and the blank line that
// separated the block from the text (after a block at the top, before
// one elsewhere).
func stripMarked(text, begin, end string) string {
	lines := strings.SplitAfter(text, "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], begin) {
			out = append(out, lines[i])
			continue
		}
		j := i
		for j < len(lines) && !strings.HasPrefix(lines[j], end) {
			j++
		}
		if j == len(lines) {
			out = append(out, lines[i]) // no end mark: not ours to cut
			continue
		}
		switch {
		case len(out) == 0 && j+1 < len(lines) && strings.TrimSpace(lines[j+1]) == "":
			j++
		case len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "":
			out = out[:len(out)-1]
		}
		i = j
	}
	return strings.Join(out, "")
}

// tomlFeature matches the header of a [features] table.
var tomlFeature = regexp.MustCompile(`^\s*\[\s*features\s*\]\s*(#.*)?$`)

// codexConfig returns config.toml with bbengine's settings: a marked
// block of top-level keys at the top (openai_base_url), a marked block
// of tables at the end ([mcp_servers.bbengine], [features] when the file
// has none), and a marked codex_hooks line in the user's [features]
// table when it has one. What the user wrote stays; a key the user set
// already is an error naming the line rather than a duplicate.
func codexConfig(path, text string, s *agents.Setup) (string, error) {
	if _, err := toml.Decode(text, new(map[string]any)); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			// The line and column from the offset: the library's own
			// count puts an error at a line's end on the next line.
			start := min(max(pe.Position.Start, 0), len(text))
			line := 1 + strings.Count(text[:start], "\n")
			col := start - strings.LastIndexByte(text[:start], '\n')
			return "", fmt.Errorf("%s:%d:%d: not valid TOML: %s; fix the file, bbengine left it as it is", path, line, col, pe.Message)
		}
		return "", fmt.Errorf("%s: not valid TOML: %v; fix the file, bbengine left it as it is", path, err)
	}
	user := stripMarked(text, tomlBegin, tomlEnd)
	user = strings.ReplaceAll(user, tomlHooksLine+"\n", "")
	var doc map[string]any
	md, err := toml.Decode(user, &doc)
	if err != nil {
		return "", fmt.Errorf("%s: not valid TOML without bbengine's blocks: %v; fix the file, bbengine left it as it is", path, err)
	}
	if s.Uninstall {
		return user, nil
	}
	lines := strings.SplitAfter(user, "\n")
	// lineOf is the line of the file (counted with bbengine's blocks)
	// where the user wrote what re matches.
	lineOf := func(re *regexp.Regexp) int {
		in := false
		for i, l := range strings.SplitAfter(text, "\n") {
			l = strings.TrimRight(l, "\r\n")
			switch {
			case strings.HasPrefix(l, tomlBegin):
				in = true
			case strings.HasPrefix(l, tomlEnd):
				in = false
			case !in && re.MatchString(l):
				return i + 1
			}
		}
		return 0
	}
	featureLine := 0 // the line of the user's [features] header in lines
	for i, l := range lines {
		if tomlFeature.MatchString(strings.TrimRight(l, "\r\n")) {
			featureLine = i + 1
			break
		}
	}
	var top, tables []string
	if s.BaseURL != "" {
		want := s.BaseURL + "/v1"
		if v, ok := doc["openai_base_url"]; ok {
			if v != want {
				return "", fmt.Errorf("%s:%d: openai_base_url is %q already; set it to %q yourself, or install with --no-base-url to keep it", path,
					lineOf(regexp.MustCompile(`^\s*openai_base_url\s*=`)), v, want)
			}
		} else {
			top = append(top, "openai_base_url = "+tomlString(want))
		}
	}
	if s.MCP {
		if md.IsDefined("mcp_servers", settings.MCPName) {
			return "", fmt.Errorf("%s:%d: [mcp_servers.%s] is defined already; remove it, or install with --no-mcp", path,
				lineOf(regexp.MustCompile(`^\s*\[\s*mcp_servers\.`+settings.MCPName+`\s*\]`)), settings.MCPName)
		}
		tables = append(tables, "[mcp_servers."+settings.MCPName+"]", "command = "+tomlString(s.Exe), "args = "+tomlArray(settings.Args(s.Dir, "mcp")))
	}
	addFeature := false
	if s.Hooks {
		switch {
		case md.IsDefined("features", "codex_hooks"):
			// The user's choice stands, on or off.
		case !md.IsDefined("features"):
			if len(tables) > 0 {
				tables = append(tables, "")
			}
			tables = append(tables, "[features]", "codex_hooks = true")
		case featureLine == 0:
			return "", fmt.Errorf("%s: features is defined without a [features] table; add codex_hooks = true to it yourself, or install with --no-hooks", path)
		default:
			addFeature = true
		}
	}
	var b strings.Builder
	if len(top) > 0 {
		b.WriteString(tomlBegin + "\n" + strings.Join(top, "\n") + "\n" + tomlEnd + "\n")
		if user != "" {
			b.WriteString("\n")
		}
	}
	for i, l := range lines {
		b.WriteString(l)
		if addFeature && i+1 == featureLine {
			if !strings.HasSuffix(l, "\n") {
				b.WriteString("\n")
			}
			b.WriteString(tomlHooksLine + "\n")
		}
	}
	if len(tables) > 0 {
		out := b.String()
		if out != "" && !strings.HasSuffix(out, "\n") {
			b.WriteString("\n")
		}
		if out != "" {
			b.WriteString("\n")
		}
		b.WriteString(tomlBegin + "\n" + strings.Join(tables, "\n") + "\n" + tomlEnd + "\n")
	}
	out := b.String()
	if _, err := toml.Decode(out, new(map[string]any)); err != nil {
		return "", fmt.Errorf("%s: the file with bbengine's settings would not be valid TOML (%v); it was left as it is", path, err)
	}
	return out, nil
}

// tomlString quotes s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func tomlArray(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// agentsSection returns AGENTS.md with bbengine's marked section at its
// end (replacing an earlier one), or without it for uninstall.
func agentsSection(text string, s *agents.Setup) string {
	user := stripMarked(text, agentsMarkHead, AgentsEnd)
	if s.Uninstall {
		return user
	}
	bb := agents.ShellQuote(s.Exe)
	for _, a := range settings.Args(s.Dir) {
		bb += " " + agents.ShellQuote(a)
	}
	section := AgentsBegin + "\n" +
		"## Session memory (bbengine)\n\n" +
		"bbengine records this agent's sessions and keeps a memory of each: decisions, constraints,\n" +
		"what earlier tasks did, open threads, each with the id of where it came from.\n\n" +
		"- Before a task, read the session's context pack. A hook puts it in the conversation as a\n" +
		"  `<bbengine-context-pack>` element; when there is none and `BBENGINE_SESSION` is set, run\n" +
		"  `" + bb + " mem context --session \"$BBENGINE_SESSION\" --task \"<the task in a few words>\"`.\n" +
		"- " + pack.Contract + "\n" +
		"- The tools are memory_get, memory_related, memory_search and memory_context_for_task\n" +
		"  (MCP server `bbengine`), or the commands `" + bb + " mem get ID`,\n" +
		"  `" + bb + " mem related ID` and `" + bb + " mem search \"QUERY\" --session ID`.\n" +
		AgentsEnd + "\n"
	switch {
	case user == "":
		return section
	case strings.HasSuffix(user, "\n"):
		return user + "\n" + section
	}
	return user + "\n\n" + section
}
