package derive

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/redact"
	"github.com/bbengine/bbengine/internal/claudelog"
)

// Helpers the memory tests share with the engine's (internal/claudelog
// holds the transcript writer and the session both derive).

// claudeLog writes a Claude Code JSONL transcript (internal/claudelog).
type claudeLog = claudelog.Log

func newClaudeLog(session string) *claudeLog { return claudelog.New(session) }

var (
	textBlock = claudelog.Text
	use       = claudelog.Use
)

// memorySession is claudelog.CacheSession.
func memorySession() *claudeLog { return claudelog.CacheSession() }

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
