package api

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/wal"
)

// writer opens the WAL and the engine of dir, as a proxy or `bbengine
// sessions` does, and records a note; close closes both.
func writer(t *testing.T, dir, session string) (close func()) {
	t.Helper()
	log, err := wal.Open(filepath.Join(dir, "wal"), nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.Open(dir, &engine.Options{WAL: log})
	if err != nil {
		log.Close()
		t.Fatal(err)
	}
	m := NewLocal(e, &LocalOptions{WAL: log})
	for i := 0; i < 3; i++ {
		if _, err := m.Note(exchange.Note{Op: "checkpoint", Session: session, Text: "step " + session, Source: "run"}); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
		if err := log.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestDoctorPeekWhileOpened: a process opens the data directory and
// writes after doctor found it free and opened its derived state, before
// doctor reads it. Doctor drops what it read (it would lag behind the
// writer) and says the directory is busy, a warn to run again: no made-up
// lag, no fail, no advice to rebuild. Once the writer is gone, doctor
// finds derivation caught up.
func TestDoctorPeekWhileOpened(t *testing.T) {
	home := t.TempDir()
	t.Setenv("PATH", t.TempDir())
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	t.Setenv("CODEX_HOME", "")
	dir := filepath.Join(home, "data")
	writer(t, dir, "s1")()

	var closeWriter func()
	peekHook = func() { closeWriter = writer(t, dir, "s2") }
	defer func() { peekHook = nil }()
	req := DoctorRequest{Dir: dir, Home: home, ProjectDir: home, Exe: "/usr/bin/bbengine"}
	rep, err := Doctor(context.Background(), req)
	peekHook = nil
	if closeWriter == nil {
		t.Fatal("doctor never opened the derived state")
	}
	closeWriter()
	if err != nil {
		t.Fatal(err)
	}
	lag := finding(t, rep, "lag")
	if lag.Severity != agents.Warn || !strings.Contains(lag.Message, "while doctor read it") || !strings.Contains(lag.Fix, "again") {
		t.Errorf("lag with a writer opening the directory: %+v", lag)
	}
	for _, f := range rep.Findings {
		if f.Severity == agents.Fail || strings.Contains(f.Fix, "rebuild") || strings.Contains(f.Message, "behind the WAL") {
			t.Errorf("finding with a writer opening the directory: %+v", f)
		}
	}

	rep, err = Doctor(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if lag := finding(t, rep, "lag"); lag.Severity != agents.OK || !strings.Contains(lag.Message, "caught up") {
		t.Errorf("lag once the writer is gone: %+v", lag)
	}
}

// finding returns bbengine's finding of check in rep.
func finding(t *testing.T, rep *DoctorReport, check string) agents.Finding {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Agent == bb && f.Check == check {
			return f
		}
	}
	t.Fatalf("no %s finding in %+v", check, rep.Findings)
	return agents.Finding{}
}
