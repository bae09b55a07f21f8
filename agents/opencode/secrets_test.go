package opencode_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/wal"
)

// secretsIn reports each of secrets found in the data directory dir (see
// secretsFound) as an error.
func secretsIn(t *testing.T, dir string, secrets ...string) {
	t.Helper()
	for _, f := range secretsFound(t, dir, secrets...) {
		t.Error(f)
	}
}

// secretsFound returns where each of secrets is in the data directory
// dir: in any file's bytes, and in the decoded payload of every WAL frame
// and the data of every import record (frames are compressed, so the
// files' bytes alone would miss them).
func secretsFound(t *testing.T, dir string, secrets ...string) []string {
	t.Helper()
	var out []string
	check := func(where string, b []byte) {
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				out = append(out, where+" holds "+s)
			}
		}
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		check(p, b)
		return nil
	})
	keys, err := api.Keys(dir)
	if err != nil {
		t.Fatal(err)
	}
	l, err := wal.Open(filepath.Join(dir, "wal"), &wal.Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	r := l.NewReader()
	defer r.Close()
	frames, imports := 0, 0
	for r.Next() {
		p, err := r.Payload()
		if err != nil {
			t.Fatal(err)
		}
		frames++
		check("a WAL frame", p)
		if rec, err := exchange.DecodeImport(p); err == nil {
			imports++
			check("import record "+rec.File, rec.Data)
		}
	}
	if frames == 0 || imports == 0 {
		t.Fatalf("%d WAL frames, %d import records: nothing was checked", frames, imports)
	}
	return out
}

// TestSecretsDecoded: the secrets of TestSecretsAtRest, where the
// importer reads them (a part's text), are found by secretsIn: the
// check can fail.
func TestSecretsDecoded(t *testing.T) {
	h, db := home(t)
	exec(t, db, `update part set data = '{"type":"text","text":"acctAccessZq81v"}' where id = 'prt_21cc8d28e001FcveW9Rl2oxsT1'`)
	dir := t.TempDir()
	bbengine(t, h, dir, "import", "opencode", "--all")
	got := strings.Join(secretsFound(t, dir, "acctAccessZq81v"), "\n")
	if !strings.Contains(got, "a WAL frame holds") || !strings.Contains(got, "import record") {
		t.Errorf("a secret in a part's text was not found in the WAL's frames:\n%s", got)
	}
}

// TestTreeShareNotStored: a 1.1 session file's share.url (and revert,
// permission) never reach the data directory; the rest of the file does,
// and a second import finds the file unchanged.
func TestTreeShareNotStored(t *testing.T) {
	h, db := home(t)
	src := filepath.Join("testdata", "json-tree-1.1-handwritten", "storage")
	dst := filepath.Join(filepath.Dir(db), "storage")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(rel, "session/0f3c") {
			b = bytes.Replace(b, []byte(`{`), []byte(`{"share": {"url": "https://opncd.ai/s/plantedShareUrlQ9"}, "revert": {"messageID": "revertSecretRv7"},`), 1)
			b = bytes.Replace(b, []byte(`"version": "1.1.10",`), []byte(`"version": "1.1.10", "permission": [{"pattern": "permSecretPm3"}],`), 1)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if out, code := bbengine(t, h, dir, "import", "opencode", "--all", "--check"); code != 0 || !strings.Contains(out, "nothing lost") {
		t.Fatalf("exit %d", code)
	}
	if out, _ := bbengine(t, h, dir, "show", "--format", "json", "opencode:ses_tree1aaaaaaaaaaaaaaaaaaaaa"); !strings.Contains(out, "Fix the failing test") {
		t.Errorf("the tree's session lost its title")
	}
	if out, _ := bbengine(t, h, dir, "import", "opencode", "--all"); !strings.Contains(out, "imported 0 records") {
		t.Errorf("a second import took records again")
	}
	secretsIn(t, dir, "plantedShareUrlQ9", "revertSecretRv7", "permSecretPm3", "treeShareSecretQp12", "treeShareUrlRs34")
}
