package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWALRepairNeedsNoKey: wal verify and wal repair work on an
// encrypted directory with no secret at hand (checksums and offsets
// cover the encrypted bytes), and what repair kept reads with the key.
func TestWALRepairNeedsNoKey(t *testing.T) {
	dir := recordMarkers(t, true)
	os.Unsetenv("BBENGINE_PASSPHRASE")
	if out, errs, code := run(t, "--dir", dir, "--no-keyring", "wal", "verify"); code != 0 {
		t.Fatalf("wal verify without a key: %d %s %s", code, out, errs)
	}
	// Tear the tail of the WAL so there is something to repair.
	segs, _ := filepath.Glob(filepath.Join(dir, "wal", "*.wal"))
	last := segs[len(segs)-1]
	fi, _ := os.Stat(last)
	os.Truncate(last, fi.Size()-5)
	out, errs, code := run(t, "--dir", dir, "--no-keyring", "wal", "repair")
	if code != 0 || !strings.Contains(out, "truncated") {
		t.Fatalf("wal repair without a key: exit %d\nstdout: %s\nstderr: %s", code, out, strings.TrimSpace(errs))
	}
	t.Setenv("BBENGINE_PASSPHRASE", "correct horse battery staple")
	if out, errs, code := run(t, "--dir", dir, "wal", "verify", "--decrypt"); code != 0 || !strings.Contains(out, "authenticated") {
		t.Fatalf("wal verify --decrypt after repair: %d %s %s", code, out, errs)
	}
	if out, errs, code := run(t, "--dir", dir, "show", markSession); code != 0 || !strings.Contains(out, markPrompt) {
		t.Fatalf("show after repair: %d %s %s", code, out, errs)
	}
}
