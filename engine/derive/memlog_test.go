package derive

import (
	"fmt"
	"github.com/bbengine/bbengine/internal/claudelog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/redact"
)

// Helpers the memory tests share with the engine's: copies of those in
// engine/memory_test.go (a test of one package cannot use another's).

// claudeLog writes a Claude Code JSONL transcript (internal/claudelog).
type claudeLog = claudelog.Log

func newClaudeLog(session string) *claudeLog { return claudelog.New(session) }

var (
	textBlock = claudelog.Text
	use       = claudelog.Use
)

// memorySession is a three-task session: a decision and a constraint, an
// edit that leaves a TODO, a failing test; then a decision that replaces
// the first, the TODO removed and the test passing; then a question.
func memorySession() *claudeLog {
	l := newClaudeLog("11111111-2222-4333-8444-555555555555")
	l.User("Add a cache to the session store. The cache must not exceed 64 MiB.")
	l.Reply(textBlock("We decided to use an LRU cache for the session store because lookups repeat."),
		use("toolu_1", "Edit", map[string]any{"file_path": "engine/cache.go", "old_string": "package engine\n",
			"new_string": "package engine\n\n// TODO: evict by size, not count\ntype lru struct{}\n"}))
	l.Result("toolu_1", "The file engine/cache.go has been updated.", false)
	l.Reply(use("toolu_2", "Bash", map[string]any{"command": "go test ./engine"}))
	l.Result("toolu_2", "Exit code 1\n--- FAIL: TestCacheEvict (0.00s)\nFAIL\tgithub.com/x/engine\t0.01s", true)
	l.Reply(textBlock("The cache is in place; TestCacheEvict still fails."))

	l.User("Fix the failing test, and switch the cache if you must.")
	l.Reply(textBlock("We decided to use an ARC cache instead of an LRU cache, since scans evict hot entries."),
		use("toolu_3", "Edit", map[string]any{"file_path": "engine/cache.go", "old_string": "// TODO: evict by size, not count\ntype lru struct{}\n",
			"new_string": "type arc struct{ size int64 }\n"}))
	l.Result("toolu_3", "The file engine/cache.go has been updated.", false)
	l.Reply(use("toolu_4", "Bash", map[string]any{"command": "go test ./engine"}))
	l.Result("toolu_4", "ok  \tgithub.com/x/engine\t0.02s", false)
	l.Reply(textBlock("Fixed: the ARC cache passes TestCacheEvict."))

	l.User("Now document the cache.")
	l.Reply(use("toolu_5", "Write", map[string]any{"file_path": "docs/cache.md", "content": "# Cache\n\nARC, 64 MiB.\n\n## TODO App notes\n"}))
	l.Result("toolu_5", "File created successfully at: docs/cache.md", false)
	l.Reply(textBlock("I wrote docs/cache.md. Should I also add a section to the README?"))
	return l
}

func deriveLog(t testing.TB, l *claudeLog) (*Imported, []Artifact) {
	t.Helper()
	path := filepath.Join(t.TempDir(), l.Session+".jsonl")
	if err := os.WriteFile(path, l.Data(), 0o644); err != nil {
		t.Fatal(err)
	}
	file, _, _ := readLog(t, path, "claude:"+l.Session)
	im, err := DeriveImport("claude", "claude:"+l.Session, []ImportFile{file})
	if err != nil {
		t.Fatal(err)
	}
	im.Session.ID = "claude:" + l.Session
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
