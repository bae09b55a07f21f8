package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunHidesPassphrase: bbengine run on an encrypted directory unlocks
// it, but the agent it starts does not get BBENGINE_PASSPHRASE (nor the
// other unlock variables): its tools could print it, send it upstream
// and have it recorded.
func TestRunHidesPassphrase(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	t.Setenv("BBENGINE_PASSPHRASE", "correct horse battery staple")
	if _, errs, code := run(t, "--dir", dir, "init", "--encrypt"); code != 0 {
		t.Fatal(errs)
	}
	t.Setenv("BBENGINE_NEW_PASSPHRASE", "a new passphrase")
	envFile := filepath.Join(t.TempDir(), "env")
	out, errs, code := run(t, "--dir", dir, "run", "--session", "s1", "--", "sh", "-c", "env > "+envFile)
	if code != 0 {
		t.Fatalf("run: %d %s %s", code, out, errs)
	}
	b, err := os.ReadFile(envFile)
	if err != nil || !strings.Contains(string(b), "BBENGINE_SESSION=") {
		t.Fatalf("the agent did not run: %v %q", err, b)
	}
	if strings.Contains(string(b), "correct horse battery staple") || strings.Contains(string(b), "a new passphrase") {
		t.Fatalf("the agent's environment holds a passphrase:\n%s", b)
	}
}
