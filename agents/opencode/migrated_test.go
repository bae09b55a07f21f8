package opencode_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTreeAndMigratedDB: opencode 1.2+ migrates the JSON tree into
// opencode.db once and leaves storage/ in place (json-migration.ts
// deletes nothing). import --all then reads both into the same session
// id; the database's session row, which names a subagent the tree does
// not, stands whatever the order of the files.
func TestTreeAndMigratedDB(t *testing.T) {
	h, db := home(t)
	src := filepath.Join("testdata", "json-tree-1.1-handwritten", "storage")
	dst := filepath.Join(filepath.Dir(db), "storage")
	now := int64(1795779400000)
	var stmts []string
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, _ := os.ReadFile(p)
		os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755)
		os.WriteFile(filepath.Join(dst, rel), b, 0o644)
		var m map[string]any
		if json.Unmarshal(b, &m) != nil {
			return nil
		}
		id := strings.TrimSuffix(filepath.Base(p), ".json")
		dir := filepath.Base(filepath.Dir(p))
		tm, _ := m["time"].(map[string]any)
		created := now
		if c, ok := tm["created"].(float64); ok {
			created = int64(c)
		}
		updated := now
		if u, ok := tm["updated"].(float64); ok {
			updated = int64(u)
		}
		switch {
		case strings.HasPrefix(rel, "project/"):
			stmts = append(stmts, fmt.Sprintf(`insert or ignore into project (id, worktree, time_created, time_updated, sandboxes) values (%s, '/home/user/proj', 1, 1, '[]')`, q(id)))
		case strings.HasPrefix(rel, "session/"):
			stmts = append(stmts, fmt.Sprintf(`insert or ignore into project (id, worktree, time_created, time_updated, sandboxes) values (%s, '/home/user/proj', 1, 1, '[]')`, q(dir)))
			stmts = append(stmts, fmt.Sprintf(`insert into session (id, project_id, slug, directory, title, version, time_created, time_updated) values (%s, %s, %s, %s, %s, %s, %d, %d)`,
				q(id), q(dir), q(fmt.Sprint(m["slug"])), q(fmt.Sprint(m["directory"])), q(fmt.Sprint(m["title"])), q(fmt.Sprint(m["version"])), created, updated))
		case strings.HasPrefix(rel, "message/"):
			delete(m, "id")
			delete(m, "sessionID")
			data, _ := json.Marshal(m)
			stmts = append(stmts, fmt.Sprintf(`insert into message (id, session_id, time_created, time_updated, data) values (%s, %s, %d, %d, %s)`, q(id), q(dir), created, updated, q(string(data))))
		case strings.HasPrefix(rel, "part/"):
			sid, _ := m["sessionID"].(string)
			delete(m, "id")
			delete(m, "sessionID")
			delete(m, "messageID")
			data, _ := json.Marshal(m)
			stmts = append(stmts, fmt.Sprintf(`insert into part (id, message_id, session_id, time_created, time_updated, data) values (%s, %s, %s, %d, %d, %s)`, q(id), q(dir), q(sid), created, updated, q(string(data))))
		}
		return nil
	})
	// parts after messages, messages after sessions
	slices.SortStableFunc(stmts, func(a, b string) int {
		rank := func(s string) int {
			switch {
			case strings.Contains(s, "into project"):
				return 0
			case strings.Contains(s, "into session"):
				return 1
			case strings.Contains(s, "into message"):
				return 2
			}
			return 3
		}
		return rank(a) - rank(b)
	})
	stmts = append(stmts, `insert into session (id, project_id, parent_id, slug, directory, title, version, agent, time_created, time_updated) values ('ses_tree2child', '0f3c9d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e', 'ses_tree1aaaaaaaaaaaaaaaaaaaaa', 'c', '/home/user/proj', 'child task', '1.1.10', 'general', 1700000003000, 1700000004000)`)
	exec(t, db, stmts...)
	dir := t.TempDir()
	if out, code := bbengine(t, h, dir, "import", "opencode", "--all", "--check"); code != 0 || !strings.Contains(out, "nothing lost") {
		t.Fatalf("exit %d", code)
	}
	out2, _ := bbengine(t, h, dir, "show", "--format", "json", "opencode:ses_tree1aaaaaaaaaaaaaaaaaaaaa")
	if !strings.Contains(out2, "ses_tree2child") {
		t.Errorf("the DB's child session is not among the parent's agents")
	}
	os.RemoveAll(dst)
	dir = t.TempDir()
	bbengine(t, h, dir, "import", "opencode", "--all")
	if out3, _ := bbengine(t, h, dir, "show", "--format", "json", "opencode:ses_tree1aaaaaaaaaaaaaaaaaaaaa"); !strings.Contains(out3, "ses_tree2child") {
		t.Errorf("without the tree, the child is not listed either")
	}
}
