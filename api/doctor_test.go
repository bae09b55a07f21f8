package api_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/api"
)

// TestDoctorNoDataDir runs Doctor on a home with nothing in it: the
// data directory is a warn, the agents are not found, nothing fails and
// nothing is created.
func TestDoctorNoDataDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("CODEX_HOME", "")
	dir := filepath.Join(home, "data")
	rep, err := api.Doctor(context.Background(), api.DoctorRequest{Dir: dir, Home: home, ProjectDir: home, Exe: "/usr/bin/bbengine"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed || rep.Proxy != "" {
		t.Errorf("failed %v, proxy %q: %+v", rep.Failed, rep.Proxy, rep.Findings)
	}
	got := map[string]agents.Severity{}
	for _, f := range rep.Findings {
		got[f.Agent+" "+f.Check] = f.Severity
	}
	want := map[string]agents.Severity{"bbengine data-dir": agents.Warn, "claude found": agents.OK, "codex found": agents.OK}
	for k, sev := range want {
		if got[k] != sev {
			t.Errorf("%s = %q, want %q (all: %v)", k, got[k], sev, got)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("Doctor created %s", dir)
	}
	_, err = api.Doctor(context.Background(), api.DoctorRequest{Dir: dir, Home: home, Agents: []string{"nosuch"}})
	if !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("an unknown agent: %v, want ErrBadRequest", err)
	}
}
