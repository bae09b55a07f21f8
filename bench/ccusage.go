package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// CCUsageVersion is the ccusage the drivers compare with (npm package
// ccusage).
const CCUsageVersion = "18.0.11"

// InstallCCUsage installs ccusage@CCUsageVersion with npm into cache
// (once; "" means $XDG_CACHE_HOME/bbengine-bench/ccusage-VERSION) and
// returns the path of its entry point, to run with node.
func InstallCCUsage(ctx context.Context, cache string) (string, error) {
	if cache == "" {
		dir, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		cache = filepath.Join(dir, "bbengine-bench", "ccusage-"+CCUsageVersion)
	}
	entry := filepath.Join(cache, "node_modules", "ccusage", "dist", "index.js")
	if _, err := os.Stat(entry); err == nil {
		return entry, nil
	}
	fmt.Fprintf(os.Stderr, "installing ccusage@%s into %s…\n", CCUsageVersion, cache)
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--prefix", cache, "ccusage@"+CCUsageVersion)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("npm install ccusage@%s: %w", CCUsageVersion, err)
	}
	if _, err := os.Stat(entry); err != nil {
		return "", fmt.Errorf("ccusage@%s installed, but: %w", CCUsageVersion, err)
	}
	return entry, nil
}
