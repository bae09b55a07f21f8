// Package claudelog writes Claude Code JSONL transcripts line by line,
// the way Claude Code 2.1 writes them (typed prompts as string content,
// assistant messages with text and tool_use blocks, tool results as user
// lines), for the tests of the packages that read such logs.
//
// It imports only the standard library.
package claudelog

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Log is a transcript being written. Session is its session id; T the
// time of the last line (each line is 3 seconds after the one before);
// Parent the uuid the next line points back to (clear it to start a
// branch); Cwd the working directory on every line, "/repo" when empty.
type Log struct {
	Session string
	T       time.Time
	N       int
	Lines   []string
	Parent  string
	Cwd     string
}

// New starts the transcript of session at 2026-11-01 09:00 UTC.
func New(session string) *Log {
	return &Log{Session: session, T: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
}

// Add appends a line, with its uuid, session, time, working directory,
// version and parent filled in.
func (l *Log) Add(m map[string]any) {
	l.N++
	l.T = l.T.Add(3 * time.Second)
	uuid := fmt.Sprintf("00000000-0000-4000-8000-%012d", l.N)
	cwd := l.Cwd
	if cwd == "" {
		cwd = "/repo"
	}
	m["uuid"], m["sessionId"], m["timestamp"], m["cwd"], m["version"] = uuid, l.Session, l.T.Format(time.RFC3339Nano), cwd, "2.1.39"
	if l.Parent != "" {
		m["parentUuid"] = l.Parent
	}
	l.Parent = uuid
	b, _ := json.Marshal(m)
	l.Lines = append(l.Lines, string(b))
}

// User appends a prompt the person typed.
func (l *Log) User(text string) {
	l.Add(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
}

// Reply appends an assistant message of the content blocks given (Text,
// Use); it stops for a tool when one of them is a tool use.
func (l *Log) Reply(content ...map[string]any) {
	stop := "end_turn"
	for _, c := range content {
		if c["type"] == "tool_use" {
			stop = "tool_use"
		}
	}
	l.Add(map[string]any{"type": "assistant", "requestId": fmt.Sprintf("req_%d", l.N), "message": map[string]any{
		"id": fmt.Sprintf("msg_%d", l.N), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
		"content": content, "stop_reason": stop, "usage": map[string]any{"input_tokens": 1000, "output_tokens": 100}}})
}

// Result appends the result of tool use id.
func (l *Log) Result(id, out string, isErr bool) {
	l.Add(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": id, "content": out, "is_error": isErr}}}})
}

// Data is the transcript as a file holds it.
func (l *Log) Data() []byte { return []byte(strings.Join(l.Lines, "\n") + "\n") }

// Text is a text content block.
func Text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

// Use is a tool_use content block.
func Use(id, name string, input map[string]any) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}
}

// CacheSession is a three-task session the memory tests derive: a
// decision and a constraint, an edit that leaves a TODO, a failing test;
// then a decision that replaces the first, the TODO removed and the test
// passing; then a question.
func CacheSession() *Log {
	l := New("11111111-2222-4333-8444-555555555555")
	l.User("Add a cache to the session store. The cache must not exceed 64 MiB.")
	l.Reply(Text("We decided to use an LRU cache for the session store because lookups repeat."),
		Use("toolu_1", "Edit", map[string]any{"file_path": "engine/cache.go", "old_string": "package engine\n",
			"new_string": "package engine\n\n// TODO: evict by size, not count\ntype lru struct{}\n"}))
	l.Result("toolu_1", "The file engine/cache.go has been updated.", false)
	l.Reply(Use("toolu_2", "Bash", map[string]any{"command": "go test ./engine"}))
	l.Result("toolu_2", "Exit code 1\n--- FAIL: TestCacheEvict (0.00s)\nFAIL\tgithub.com/x/engine\t0.01s", true)
	l.Reply(Text("The cache is in place; TestCacheEvict still fails."))

	l.User("Fix the failing test, and switch the cache if you must.")
	l.Reply(Text("We decided to use an ARC cache instead of an LRU cache, since scans evict hot entries."),
		Use("toolu_3", "Edit", map[string]any{"file_path": "engine/cache.go", "old_string": "// TODO: evict by size, not count\ntype lru struct{}\n",
			"new_string": "type arc struct{ size int64 }\n"}))
	l.Result("toolu_3", "The file engine/cache.go has been updated.", false)
	l.Reply(Use("toolu_4", "Bash", map[string]any{"command": "go test ./engine"}))
	l.Result("toolu_4", "ok  \tgithub.com/x/engine\t0.02s", false)
	l.Reply(Text("Fixed: the ARC cache passes TestCacheEvict."))

	l.User("Now document the cache.")
	l.Reply(Use("toolu_5", "Write", map[string]any{"file_path": "docs/cache.md", "content": "# Cache\n\nARC, 64 MiB.\n\n## TODO App notes\n"}))
	l.Result("toolu_5", "File created successfully at: docs/cache.md", false)
	l.Reply(Text("I wrote docs/cache.md. Should I also add a section to the README?"))
	return l
}
