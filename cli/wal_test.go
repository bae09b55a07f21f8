package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestWALStatVerify(t *testing.T) {
	dir := t.TempDir()
	offs := makeWAL(t, dir)
	out, errs, code := bb(t, "--dir", dir, "wal", "stat")
	if code != 0 || !strings.Contains(out, "0000000000000000.wal") || !strings.Contains(out, "response-body") || !strings.Contains(out, "2001-09-09T01:46:40") {
		t.Fatalf("wal stat: exit %d, %s\n%s", code, errs, out)
	}
	out, _, code = bb(t, "--dir", dir, "wal", "stat", "--json")
	var st walStat
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != 0 {
		t.Fatalf("wal stat --json: %v\n%s", err, out)
	}
	if st.Kinds["request-start"] != 1 || st.Kinds["import"] != 1 || st.Last != offs[4] || st.Frames < 6 {
		t.Errorf("stat = %+v", st)
	}
	out, _, code = bb(t, "--dir", dir, "wal", "verify")
	if code != 0 || !strings.HasPrefix(out, "ok:") {
		t.Fatalf("verify on a sound log: exit %d\n%s", code, out)
	}

	// Damage the second frame's payload: the frames after it are valid, so
	// this is corruption, not a torn tail.
	seg := filepath.Join(dir, "wal", "0000000000000000.wal")
	b, _ := os.ReadFile(seg)
	b[offs[1]+45] ^= 0xff
	os.WriteFile(seg, b, 0o644)

	out, errs, code = bb(t, "--dir", dir, "wal", "verify")
	if code != 1 || !strings.Contains(out, seg) || !strings.Contains(out, "offset "+strconv.FormatUint(offs[1], 10)) || !strings.Contains(errs, "wal repair") {
		t.Fatalf("verify on a corrupt log: exit %d\nstdout %s\nstderr %s", code, out, errs)
	}
	_, errs, code = bb(t, "--dir", dir, "replay")
	if code != 1 || !strings.Contains(errs, "offset "+strconv.FormatUint(offs[1], 10)) {
		t.Fatalf("replay over corruption: exit %d, %s", code, errs)
	}
	out, errs, code = bb(t, "--dir", dir, "wal", "repair")
	if code != 0 || !strings.Contains(out, "damaged copy kept at "+seg+".damaged-") {
		t.Fatalf("repair: exit %d, %s\n%s", code, errs, out)
	}
	out, _, code = bb(t, "--dir", dir, "wal", "verify")
	if code != 0 {
		t.Fatalf("verify after repair: exit %d\n%s", code, out)
	}
	out, _, _ = bb(t, "--dir", dir, "wal", "repair")
	if !strings.Contains(out, "nothing to repair") {
		t.Errorf("second repair: %s", out)
	}
	if _, _, code := bb(t, "--dir", dir, "wal", "nope"); code != 2 {
		t.Errorf("unknown subcommand: exit %d, want 2", code)
	}
	if _, _, code := bb(t, "--dir", dir, "wal", "stat", "x"); code != 2 {
		t.Errorf("stray argument: exit %d, want 2", code)
	}
}
