package cli

import (
	"bytes"
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
)

const claudeLine = `{"type":"user","uuid":"u1","sessionId":"aaaaaaaa-1111-2222-3333-444444444444","timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi"}}`

// bigRollout is codexRollout with enough lines to span several zstd
// blocks.
func bigRollout() string {
	lines := strings.Split(strings.TrimSpace(codexRollout), "\n")
	var b strings.Builder
	b.WriteString(strings.Join(lines[:3], "\n") + "\n")
	for range 4000 {
		b.WriteString(lines[3] + "\n")
	}
	b.WriteString(strings.Join(lines[4:], "\n") + "\n")
	return b.String()
}

func zst(t *testing.T, s string) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderCRC(true), zstd.WithWindowSize(1<<17))
	if err != nil {
		t.Fatal(err)
	}
	return enc.EncodeAll([]byte(s), nil)
}

// TestImportBadInput imports each kind of bad input through the command
// line: every unreadable record is named with its file and line (or
// byte offset) and skipped, the readable ones are imported, a file
// without a record makes no session, and the exit status is 1. A second
// import adds nothing and says the same of what it still cannot read.
func TestImportBadInput(t *testing.T) {
	rollout := "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl"
	lines := strings.Split(strings.TrimSpace(codexRollout), "\n")
	big := zst(t, bigRollout())
	corrupt := bytes.Clone(big)
	for i := len(corrupt) / 2; i < len(corrupt)/2+32; i++ {
		corrupt[i] ^= 0x5a
	}
	rng := rand.New(rand.NewPCG(1, 2))
	binary := make([]byte, 64<<10)
	for i := range binary {
		binary[i] = byte(rng.UintN(256))
	}
	simple, err := os.ReadFile(filepath.Join("..", "codec", "atif", "testdata", "simple.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		source  string
		files   map[string]string
		code    int
		stderr  []string // each in stderr, with FILE for the first file's path
		records int      // records imported
		session string   // a session that must exist ("" for none)
		// settled is set when the bad records lie before the last good
		// one: a second import (which reads on from that record) has
		// nothing to say and exits 0.
		settled bool
	}{
		{name: "garbage", source: "claude", files: map[string]string{"garbage.jsonl": "hello world\nthis is not json\n"}, code: 1,
			stderr: []string{"FILE:1:1: not JSON: invalid character 'h' at start of value (byte 0, skipped)",
				"FILE:2:2: not JSON: invalid character 'h' in literal true (expecting 'r') (byte 12, skipped)", "FILE: no claude record in it; nothing imported, no session", "2 problems"}},
		{name: "bad lines among good", source: "codex", files: map[string]string{rollout: strings.Join(lines[:3], "\n") + "\n{oops\n[1,2]\n{\"foo\":1}\n" + strings.Join(lines[3:], "\n") + "\n"}, code: 1,
			stderr: []string{"FILE:4:2: not JSON: invalid character 'o' at start of value", "FILE:5: not a JSON object: an array",
				`FILE:6: not a Codex rollout record: no "type"`, "3 problems"},
			records: 6, session: "codex:019e1625-789d-76c0-80ab-3724b5ddb799", settled: true},
		{name: "deeply nested line", source: "claude", files: map[string]string{"deep.jsonl": strings.Repeat("[", 100000) + "\n" + claudeLine + "\n"}, code: 1,
			stderr:  []string{"FILE:1:10001: not JSON: exceeded max depth (byte 0, skipped)"},
			records: 1, session: "claude:aaaaaaaa-1111-2222-3333-444444444444", settled: true},
		{name: "deeply nested document", source: "atif", files: map[string]string{"deep.json": strings.Repeat(`{"a":`, 100000)}, code: 1,
			stderr: []string{"FILE:1:50001: not JSON: exceeded max depth", "FILE: no atif record in it"}},
		{name: "truncated zst", source: "codex", files: map[string]string{rollout + ".zst": string(big[:len(big)*2/3])}, code: 1,
			stderr:  []string{"FILE: zstd data corrupt or cut short near compressed byte ", "the rest of the file is not imported (skipped)"},
			session: "codex:019e1625-789d-76c0-80ab-3724b5ddb799"},
		{name: "corrupt zst", source: "codex", files: map[string]string{rollout + ".zst": string(corrupt)}, code: 1,
			stderr:  []string{"FILE: zstd data corrupt or cut short near compressed byte "},
			session: "codex:019e1625-789d-76c0-80ab-3724b5ddb799"},
		{name: "not zst at all", source: "codex", files: map[string]string{rollout + ".zst": "plain text\n"}, code: 1,
			stderr: []string{"FILE: zstd data corrupt or cut short near compressed byte 4 (decompressed byte 0, line 1): invalid input: magic number mismatch"}},
		{name: "empty log", source: "claude", files: map[string]string{"empty.jsonl": ""}, code: 0,
			stderr: []string{"FILE: empty; nothing to import", "0 problems"}},
		{name: "blank log", source: "codex", files: map[string]string{rollout: "\n\n  \n"}, code: 0,
			stderr: []string{"FILE: empty; nothing to import"}},
		{name: "empty document", source: "atif", files: map[string]string{"empty.json": ""}, code: 1,
			stderr: []string{"FILE: empty file (skipped)"}},
		{name: "binary", source: "claude", files: map[string]string{"bin.jsonl": string(binary)}, code: 1,
			stderr: []string{"FILE:1:1: not JSON: invalid character", "more records skipped, not listed", "FILE: no claude record in it"}},
		{name: "binary without a line end", source: "codex", files: map[string]string{rollout: "\x00\x01\x02\xff\xfe"}, code: 1,
			stderr: []string{`FILE:1:1: not JSON: invalid character '\x00' at start of value (byte 0, skipped)`}},
		{name: "wrong shape", source: "claude", files: map[string]string{"shape.jsonl": "[1,2,3]\n{\"foo\":1}\n\"str\"\n{\"type\":7}\n"}, code: 1,
			stderr: []string{"FILE:1: not a JSON object: an array", `FILE:2: not a Claude Code record: no "type"`, "FILE:3: not a JSON object: a string",
				`FILE:4: not a Claude Code record: no "type"`, "FILE: no claude record in it"}},
		{name: "wrong shape meta", source: "claude", files: map[string]string{"s1/subagents/agent-a1.meta.json": "[1]"}, code: 1,
			stderr: []string{"FILE: not a JSON object: an array (skipped)"}},
		{name: "wrong shape document", source: "atif", files: map[string]string{"package.json": `{"name":"pkg","version":"1.0.0"}`}, code: 1,
			stderr: []string{`FILE: not an ATIF document: no "schema_version": "ATIF-v1.N" (skipped)`}},
		{name: "document not JSON", source: "atif", files: map[string]string{"notes.json": "{\n  \"schema_version\": \"ATIF-v1.6\",\n  oops\n}"}, code: 1,
			stderr: []string{"FILE:3:3: not JSON: invalid character 'o'"}},
		{name: "good document", source: "atif", files: map[string]string{"simple.json": string(simple)}, code: 0,
			stderr: []string{"0 problems"}, records: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, logs := t.TempDir(), t.TempDir()
			var first string
			for name, body := range tt.files {
				p := filepath.Join(logs, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
				first = p
			}
			before, _, _ := run(t, "--dir", dir, "sessions")
			for i, want := range []int{tt.code, tt.code} {
				_, errs, code := run(t, "--dir", dir, "import", tt.source, logs)
				if i == 1 && tt.settled {
					if code != 0 || strings.Contains(errs, "skipped") {
						t.Errorf("import #%d: exit %d, want 0 and nothing skipped\n%s", i+1, code, errs)
					}
					want, tt.stderr = 0, nil
				}
				if code != want {
					t.Fatalf("import #%d: exit %d, want %d\n%s", i+1, code, want, errs)
				}
				for _, s := range tt.stderr {
					if s = strings.ReplaceAll(s, "FILE", first); !strings.Contains(errs, s) {
						t.Errorf("import #%d: no %q in\n%s", i+1, s, errs)
					}
				}
				if !strings.Contains(errs, "imported ") {
					t.Errorf("import #%d: no summary in\n%s", i+1, errs)
				}
				if i == 0 && tt.records > 0 && !strings.Contains(errs, "imported "+strconv.Itoa(tt.records)+" records") {
					t.Errorf("import #%d: want %d records in\n%s", i+1, tt.records, errs)
				}
				if i == 1 && !strings.Contains(errs, "imported 0 records") {
					t.Errorf("import #%d is not idempotent:\n%s", i+1, errs)
				}
			}
			out, errs, code := run(t, "--dir", dir, "sessions")
			if code != 0 {
				t.Fatalf("sessions: %d %s", code, errs)
			}
			if tt.session == "" && tt.records == 0 && out != before {
				t.Errorf("a session was made of bad input:\n%s", out)
			}
			for _, name := range []string{"garbage", "deep", "bin", "shape", "package", "empty", "notes"} {
				if strings.Contains(out, ":"+name) {
					t.Errorf("a session is named after the file %s:\n%s", name, out)
				}
			}
			if tt.session != "" && !strings.Contains(out, tt.session[:len(tt.session)-24]) {
				t.Errorf("no session %s:\n%s", tt.session, out)
			}
		})
	}
}

// TestImportBadInputCheck checks that --check compares what was
// imported, leaving the skipped lines out of both sides, and that the
// exit status still says something was skipped.
func TestImportBadInputCheck(t *testing.T) {
	dir, logs := t.TempDir(), t.TempDir()
	lines := strings.Split(strings.TrimSpace(codexRollout), "\n")
	p := writeFile(t, logs, "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
		strings.Join(lines[:2], "\n")+"\n\x00\x01garbage\n"+strings.Join(lines[2:], "\n")+"\n")
	writeFile(t, logs, "rollout-2026-05-12T00-00-00-22222222-2222-3333-4444-555555555555.jsonl", "not a rollout\n")
	out, errs, code := run(t, "--dir", dir, "import", "codex", logs, "--check")
	if code != 1 || !strings.Contains(out, "import --check: 1 sessions, nothing lost") || !strings.Contains(errs, p+":3:1: not JSON") ||
		!strings.Contains(errs, "bbengine: import: 2 records or files skipped as unreadable") {
		t.Fatalf("import --check: exit %d\n%s%s", code, out, errs)
	}
	// Again: nothing new, the session still checks, the file of garbage
	// is still named.
	out, errs, code = run(t, "--dir", dir, "import", "codex", logs, "--check")
	if code != 1 || !strings.Contains(out, "nothing lost") || !strings.Contains(errs, "imported 0 records") || strings.Contains(errs, p+":3") ||
		!strings.Contains(errs, "22222222-2222-3333-4444-555555555555.jsonl:1:2: not JSON") {
		t.Fatalf("second import --check: exit %d\n%s%s", code, out, errs)
	}
	if out, _, _ := run(t, "--dir", dir, "sessions"); strings.Contains(out, "22222222") {
		t.Fatalf("a file without a record made a session:\n%s", out)
	}
}

// TestImportFollowBadInput checks that --follow names a bad file and
// goes on importing.
func TestImportFollowBadInput(t *testing.T) {
	dir, logs := t.TempDir(), t.TempDir()
	lines := strings.Split(strings.TrimSpace(codexRollout), "\n")
	garbage := writeFile(t, logs, "rollout-2026-05-10T00-00-00-33333333-2222-3333-4444-555555555555.jsonl", "\x00garbage\n")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- MainContext(ctx, []string{"bbengine", "--dir", dir, "import", "--follow", "--interval", "20ms", "codex", logs}, &stdout, &stderr)
	}()
	waitFor := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), want); {
			select {
			case code := <-done:
				t.Fatalf("import --follow exited (%d) waiting for %q:\n%s", code, want, stderr.String())
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %q in:\n%s", want, stderr.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor(garbage + ":1:1: not JSON")
	waitFor("following ")
	// A corrupt compressed rollout appears, then a good one.
	bad := filepath.Join(logs, "rollout-2026-05-11T00-00-00-44444444-2222-3333-4444-555555555555.jsonl.zst")
	if err := os.WriteFile(bad, []byte("\x28\xb5\x2f\xfd garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(bad + ": zstd data corrupt or cut short near compressed byte")
	writeFile(t, logs, "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl", strings.Join(lines, "\n")+"\n")
	waitFor("imported 6 records")
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("import --follow: exit %d: %s", code, stderr.String())
	}
	if n := strings.Count(stderr.String(), garbage+":1:1"); n != 1 {
		t.Errorf("the unchanged bad file was named %d times, want once:\n%s", n, stderr.String())
	}
	out, errs, code := run(t, "--dir", dir, "sessions")
	if code != 0 || !strings.Contains(out, "codex:019e1625") || strings.Contains(out, "33333333") || strings.Contains(out, "44444444") {
		t.Fatalf("sessions after --follow: %d %s %s", code, out, errs)
	}
}
