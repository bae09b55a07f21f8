package api_test

import (
	"context"
	"encoding/json"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/api"
)

// TestRestoreRefusesPathsOutside: a manifest naming a file outside its
// part of the backup ("../planted") is refused by its field, and nothing
// is written outside the data directory.
func TestRestoreRefusesPathsOutside(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	m, _ := openLocal(t, dir)
	src := filepath.Join(t.TempDir(), "bk")
	if _, err := m.Backup(context.Background(), api.BackupRequest{Dest: src}); err != nil {
		t.Fatal(err)
	}
	payload := []byte("echo pwned\n")
	restoreTo := filepath.Join(t.TempDir(), "restored")
	climb := "../planted"
	// The attacker's file, beside the backup.
	os.WriteFile(filepath.Join(src, climb), payload, 0o600)
	outside := filepath.Join(restoreTo, climb) // beside the data directory
	var man map[string]any
	b, _ := os.ReadFile(filepath.Join(src, api.ManifestName))
	json.Unmarshal(b, &man)
	man["retention"] = []any{map[string]any{"path": climb, "size": len(payload), "crc32c": []uint32{crc32.Checksum(payload, crc32.MakeTable(crc32.Castagnoli))}}}
	b, _ = json.Marshal(man)
	os.WriteFile(filepath.Join(src, api.ManifestName), b, 0o600)
	_, err := api.Restore(context.Background(), api.RestoreRequest{Src: src, Dir: restoreTo})
	if err == nil || !strings.Contains(err.Error(), `retention[].path "../planted"`) {
		t.Errorf("restore: %v, want the manifest's retention path refused", err)
	}
	if got, err := os.ReadFile(outside); err == nil {
		t.Fatalf("restore wrote %s, outside the data directory: %q", outside, got)
	}
}
