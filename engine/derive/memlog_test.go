package derive

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/redact"
)

// Helpers the memory tests share with the engine's: copies of those in
// engine/memory_test.go (a test of one package cannot use another's).

// claudeLog writes a Claude Code JSONL transcript line by line.
type claudeLog struct {
	session string
	t       time.Time
	n       int
	lines   []string
	parent  string
	cwd     string // "/repo" when empty
}

func newClaudeLog(session string) *claudeLog {
	return &claudeLog{session: session, t: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
}

func (l *claudeLog) add(m map[string]any) {
	l.n++
	l.t = l.t.Add(3 * time.Second)
	uuid := fmt.Sprintf("00000000-0000-4000-8000-%012d", l.n)
	cwd := l.cwd
	if cwd == "" {
		cwd = "/repo"
	}
	m["uuid"], m["sessionId"], m["timestamp"], m["cwd"], m["version"] = uuid, l.session, l.t.Format(time.RFC3339Nano), cwd, "2.1.39"
	if l.parent != "" {
		m["parentUuid"] = l.parent
	}
	l.parent = uuid
	b, _ := json.Marshal(m)
	l.lines = append(l.lines, string(b))
}

func (l *claudeLog) user(text string) {
	l.add(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
}

func (l *claudeLog) reply(content ...map[string]any) {
	stop := "end_turn"
	for _, c := range content {
		if c["type"] == "tool_use" {
			stop = "tool_use"
		}
	}
	l.add(map[string]any{"type": "assistant", "requestId": fmt.Sprintf("req_%d", l.n), "message": map[string]any{
		"id": fmt.Sprintf("msg_%d", l.n), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
		"content": content, "stop_reason": stop, "usage": map[string]any{"input_tokens": 1000, "output_tokens": 100}}})
}

func textBlock(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func use(id, name string, input map[string]any) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}
}

func (l *claudeLog) result(id, out string, isErr bool) {
	l.add(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": id, "content": out, "is_error": isErr}}}})
}

func (l *claudeLog) data() []byte { return []byte(strings.Join(l.lines, "\n") + "\n") }

// memorySession is a three-task session: a decision and a constraint, an
// edit that leaves a TODO, a failing test; then a decision that replaces
// the first, the TODO removed and the test passing; then a question.
func memorySession() *claudeLog {
	l := newClaudeLog("11111111-2222-4333-8444-555555555555")
	l.user("Add a cache to the session store. The cache must not exceed 64 MiB.")
	l.reply(textBlock("We decided to use an LRU cache for the session store because lookups repeat."),
		use("toolu_1", "Edit", map[string]any{"file_path": "engine/cache.go", "old_string": "package engine\n",
			"new_string": "package engine\n\n// TODO: evict by size, not count\ntype lru struct{}\n"}))
	l.result("toolu_1", "The file engine/cache.go has been updated.", false)
	l.reply(use("toolu_2", "Bash", map[string]any{"command": "go test ./engine"}))
	l.result("toolu_2", "Exit code 1\n--- FAIL: TestCacheEvict (0.00s)\nFAIL\tgithub.com/x/engine\t0.01s", true)
	l.reply(textBlock("The cache is in place; TestCacheEvict still fails."))

	l.user("Fix the failing test, and switch the cache if you must.")
	l.reply(textBlock("We decided to use an ARC cache instead of an LRU cache, since scans evict hot entries."),
		use("toolu_3", "Edit", map[string]any{"file_path": "engine/cache.go", "old_string": "// TODO: evict by size, not count\ntype lru struct{}\n",
			"new_string": "type arc struct{ size int64 }\n"}))
	l.result("toolu_3", "The file engine/cache.go has been updated.", false)
	l.reply(use("toolu_4", "Bash", map[string]any{"command": "go test ./engine"}))
	l.result("toolu_4", "ok  \tgithub.com/x/engine\t0.02s", false)
	l.reply(textBlock("Fixed: the ARC cache passes TestCacheEvict."))

	l.user("Now document the cache.")
	l.reply(use("toolu_5", "Write", map[string]any{"file_path": "docs/cache.md", "content": "# Cache\n\nARC, 64 MiB.\n\n## TODO App notes\n"}))
	l.result("toolu_5", "File created successfully at: docs/cache.md", false)
	l.reply(textBlock("I wrote docs/cache.md. Should I also add a section to the README?"))
	return l
}

func deriveLog(t testing.TB, l *claudeLog) (*Imported, []Artifact) {
	t.Helper()
	path := filepath.Join(t.TempDir(), l.session+".jsonl")
	if err := os.WriteFile(path, l.data(), 0o644); err != nil {
		t.Fatal(err)
	}
	file, _, _ := readLog(t, path, "claude:"+l.session)
	im, err := DeriveImport("claude", "claude:"+l.session, []ImportFile{file})
	if err != nil {
		t.Fatal(err)
	}
	im.Session.ID = "claude:" + l.session
	red, _ := redact.New(nil)
	arts, _ := DeriveMemory(&im.Session, im.Events, red)
	return im, arts
}

func firstDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := range min(len(la), len(lb)) {
		if la[i] != lb[i] {
			return "- " + la[i] + "\n+ " + lb[i]
		}
	}
	return fmt.Sprintf("%d lines vs %d", len(la), len(lb))
}
