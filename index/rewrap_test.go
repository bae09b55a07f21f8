package index

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/bbengine/bbengine/internal/crypt"
)

// TestRewrapLeftoverStateTmp: a state.jsonl.tmp that a kill -9 during
// writeState left behind has its data key bound to state.jsonl: key
// retire skips it rather than fail on it, and Open removes it.
func TestRewrapLeftoverStateTmp(t *testing.T) {
	kdir := t.TempDir()
	keys, err := crypt.Init(kdir, crypt.InitOptions{Passphrase: []byte("p")})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := writeState(dir, map[string]*sessionState{}, true, keys); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, stateName))
	os.WriteFile(filepath.Join(dir, stateName+".tmp"), b, 0o600) // what writeState leaves before its rename
	if _, err := keys.NewGeneration(kdir); err != nil {
		t.Fatal(err)
	}
	targets, err := RewrapTargets(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := crypt.RewrapFiles(filepath.Join(kdir, "rewrap.journal"), keys, 1, targets); err != nil {
		t.Fatalf("re-wrap with a leftover state.jsonl.tmp: %v", err)
	}
	ix, err := Open(dir, &Options{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	ix.Close()
	if _, err := os.Stat(filepath.Join(dir, stateName+".tmp")); !os.IsNotExist(err) {
		t.Fatalf("Open left state.jsonl.tmp: %v", err)
	}
}
