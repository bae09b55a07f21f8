package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/engine"
)

// TestPrintSessionsUnknownTimes: a session none of whose records had a
// time (an import of a log without timestamps) shows "-", not the epoch.
func TestPrintSessionsUnknownTimes(t *testing.T) {
	var b strings.Builder
	at := time.Date(2026, 11, 26, 9, 0, 0, 0, time.Local).UnixNano()
	printSessions(&b, []engine.Session{
		{ID: "claude:timeless", Agent: "claude-code"},
		{ID: "claude:timed", Agent: "claude-code", First: at, Last: at + int64(90*time.Second)},
	})
	out := b.String()
	if strings.Contains(out, "1970") {
		t.Errorf("an unknown start printed as the epoch:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 3 && f[0] == "claude:timeless" && (f[2] != "-" || f[3] != "-"):
			t.Errorf("timeless session: started %q, duration %q", f[2], f[3])
		case len(f) > 4 && f[0] == "claude:timed" && (f[2]+" "+f[3] != "2026-11-26 09:00:00" || f[4] != "1m30s"):
			t.Errorf("timed session: %q", line)
		}
	}
}
