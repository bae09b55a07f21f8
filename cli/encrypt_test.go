package cli

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"filippo.io/age"

	"github.com/bbengine/bbengine/proxy"
)

// Markers of TestEncryptedAtRest: each is text an agent sends or gets,
// in a place where it would be stored in the clear without encryption.
const (
	markPrompt  = "zqxPROMPTmarker81"
	markReply   = "zqxREPLYmarker82"
	markBlob    = "zqxBLOBmarker83"
	markCwd     = "zqxCWDmarker84"
	markSession = "zqxSESSIONmarker85"
)

// encUpstream answers /v1/messages with a short reply holding markReply,
// or, for the second request, with a reply longer than the engine's text
// limit (1 MiB) that the engine spills to a blob.
func encUpstream() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		text := "The answer is " + markReply + "."
		if bytes.Contains(body, []byte("long please")) {
			text = strings.Repeat("filler line of a long tool listing\n", 33000) + markBlob
		}
		io.WriteString(w, sseHead+textDelta(text)+sseTail)
	}))
}

// TestEncryptedAtRest records through the real proxy into a directory
// made by init --encrypt, then reads every byte of every file of the
// data directory, of a backup of it and of its restore: no marker sent
// in a prompt, a reply, a blob, a working-directory path or a session id
// is there. The same run without encryption finds them, so the test can
// fail. The content stays readable to whoever unlocks it: show, mem
// search and restore give what the clear directory gives; a wrong or
// missing passphrase is refused with a message that names the way to
// unlock; wal verify needs no key.
func TestEncryptedAtRest(t *testing.T) {
	clear := recordMarkers(t, false)
	if found := filesWith(t, clear, markPrompt, markReply, markBlob, markCwd, markSession); len(found) < 4 {
		t.Fatalf("the clear directory holds only %v: the markers must be stored somewhere for this test to mean anything", found)
	}

	dir := recordMarkers(t, true)
	if found := filesWith(t, dir, markPrompt, markReply, markBlob, markCwd, markSession); len(found) > 0 {
		t.Fatalf("encrypted directory: markers in the clear: %v", found)
	}
	if _, err := os.Stat(filepath.Join(dir, "keys.json")); err != nil {
		t.Fatal(err)
	}

	// Readable with the passphrase.
	show, errs, code := run(t, "--dir", dir, "show", markSession)
	if code != 0 || !strings.Contains(show, markReply) || !strings.Contains(show, markPrompt) {
		t.Fatalf("show: %d %s\n%s", code, errs, show)
	}
	// The two recordings differ in times and exchange ids, not in what
	// was said.
	clearShow, _, _ := run(t, "--dir", clear, "show", markSession)
	if n, m := len(strings.Split(show, "\n")), len(strings.Split(clearShow, "\n")); n != m {
		t.Fatalf("show: %d lines encrypted, %d clear:\n%s\n---\n%s", n, m, show, clearShow)
	}
	search, errs, code := run(t, "--dir", dir, "mem", "search", markPrompt)
	clearSearch, _, _ := run(t, "--dir", clear, "mem", "search", markPrompt)
	cards := func(s string) string { // without ids, scores, times
		var kinds []string
		for _, l := range strings.Split(s, "\n") {
			if f := strings.Fields(l); len(f) > 3 && strings.HasSuffix(f[0], ".") {
				kinds = append(kinds, f[2])
			}
		}
		return strings.Join(kinds, " ")
	}
	if code != 0 || !strings.Contains(search, markPrompt) || cards(search) != cards(clearSearch) {
		t.Fatalf("mem search: %d %s\nencrypted: %s\nclear: %s", code, errs, search, clearSearch)
	}

	// Backup and restore stay encrypted and give the same answers.
	bak := filepath.Join(t.TempDir(), "bak")
	if _, errs, code := run(t, "--dir", dir, "backup", bak); code != 0 {
		t.Fatalf("backup: %d %s", code, errs)
	}
	if found := filesWith(t, bak, markPrompt, markReply, markBlob, markCwd, markSession); len(found) > 0 {
		t.Fatalf("backup: markers in the clear: %v", found)
	}
	if sharedFiles(t, bak) == 0 {
		t.Fatal("the backup shares no file with the directory: the retire check below would mean nothing")
	}
	restored := filepath.Join(t.TempDir(), "restored")
	if _, errs, code := run(t, "--dir", restored, "restore", bak); code != 0 {
		t.Fatalf("restore: %d %s", code, errs)
	}
	if found := filesWith(t, restored, markPrompt, markReply, markBlob, markCwd, markSession); len(found) > 0 {
		t.Fatalf("restored: markers in the clear: %v", found)
	}
	if got, errs, _ := run(t, "--dir", restored, "show", markSession); got != show {
		t.Fatalf("show after restore differs: %s\n%s", errs, got)
	}

	// Keys change without rewriting data: an age slot, a new root key
	// (and generation 2), generation 3, and generation 1 retired once
	// every file's data key is re-wrapped by 3. The content reads the
	// same after each.
	id, err := age.GenerateX25519Identity()
	if err != nil {
		t.Fatal(err)
	}
	idFile := writeFile(t, t.TempDir(), "identity.txt", id.String()+"\n")
	steps := [][]string{
		{"key", "add-slot", "--age-recipient", id.Recipient().String()},
		{"key", "rotate"},
		{"key", "rotate", "--generation"},
		{"key", "retire", "1"},
		{"wal", "verify", "--decrypt"},
	}
	for _, args := range steps {
		if out, errs, code := run(t, append([]string{"--dir", dir}, args...)...); code != 0 {
			t.Fatalf("%v: %d %s %s", args, code, out, errs)
		}
		if got, errs, _ := run(t, "--dir", dir, "show", markSession); got != show {
			t.Fatalf("show after %v differs: %s\n%s", args, errs, got)
		}
	}
	status, _, _ := run(t, "--dir", dir, "key", "status")
	if !strings.Contains(status, "slot 2: age "+id.Recipient().String()) || !strings.Contains(status, "generation 1, made") || !strings.Contains(status, "(retired)") || !strings.Contains(status, "(active)") {
		t.Fatalf("key status:\n%s", status)
	}
	if out, _, _ := run(t, "--dir", dir, "wal", "stat"); strings.Contains(out, "key generation 1)") || !strings.Contains(out, "key generation 3)") {
		t.Fatalf("wal stat after retiring generation 1:\n%s", out)
	}
	if found := filesWith(t, dir, markPrompt, markReply, markBlob, markCwd, markSession); len(found) > 0 {
		t.Fatalf("after key changes: markers in the clear: %v", found)
	}
	// The backup made before the key changes shares files with the
	// directory (hard links to blobs and tables); retire re-wrapped
	// copies of those, so the backup still restores with its own
	// keys.json.
	restored2 := filepath.Join(t.TempDir(), "restored2")
	if _, errs, code := run(t, "--dir", restored2, "restore", bak); code != 0 {
		t.Fatalf("restore of the backup made before key retire: %d %s", code, errs)
	}
	if got, errs, _ := run(t, "--dir", restored2, "show", markSession); got != show {
		t.Fatalf("show after restoring the older backup differs: %s\n%s", errs, got)
	}

	// The age identity alone unlocks it.
	t.Setenv("BBENGINE_PASSPHRASE", "")
	if got, errs, code := run(t, "--dir", dir, "--no-keyring", "--age-identity", idFile, "show", markSession); code != 0 || got != show {
		t.Fatalf("show with the age identity: %d %s", code, errs)
	}

	// The wrong passphrase, or none, is refused and says how to unlock.
	t.Setenv("BBENGINE_PASSPHRASE", "not the passphrase")
	if _, errs, code := run(t, "--dir", dir, "sessions"); code == 0 || !strings.Contains(errs, "BBENGINE_PASSPHRASE") || strings.Contains(errs, "not the passphrase") {
		t.Fatalf("wrong passphrase: %d %s", code, errs)
	}
	os.Unsetenv("BBENGINE_PASSPHRASE")
	if _, errs, code := run(t, "--dir", dir, "--no-keyring", "sessions"); code == 0 || !strings.Contains(errs, "BBENGINE_PASSPHRASE") {
		t.Fatalf("no passphrase: %d %s", code, errs)
	}
	// wal verify needs no key.
	if out, errs, code := run(t, "--dir", dir, "wal", "verify"); code != 0 {
		t.Fatalf("wal verify without a key: %d %s %s", code, out, errs)
	}
}

// recordMarkers makes a data directory (encrypted with a passphrase when
// encrypt), records two exchanges that carry the markers through the
// real proxy, lets it derive and index them, stops it and returns the
// directory.
func recordMarkers(t *testing.T, encrypt bool) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	t.Setenv("BBENGINE_PASSPHRASE", "correct horse battery staple")
	if encrypt {
		if out, errs, code := run(t, "--dir", dir, "init", "--encrypt"); code != 0 || !strings.Contains(out, "encrypted") {
			t.Fatalf("init --encrypt: %d %s %s", code, out, errs)
		}
	}
	up := encUpstream()
	defer up.Close()
	addr, _, stop := startProxy(t, dir, proxy.Options{Upstreams: map[string]string{"anthropic": up.URL}}, false)
	for _, prompt := range []string{"Remember " + markPrompt + " in /home/dev/" + markCwd + "/app", "long please"} {
		body := `{"model":"claude-sonnet-4","stream":true,"max_tokens":1024,"system":"Primary working directory: /home/dev/` + markCwd + `/app","messages":[{"role":"user","content":` + jsonString(prompt) + `}]}`
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/messages", strings.NewReader(body))
		req.Header.Set("X-Bb-Session-Id", markSession)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	// Ask the running proxy (over loopback) until the session is
	// derived and indexed.
	for deadline := time.Now().Add(30 * time.Second); ; {
		out, _, code := run(t, "--dir", dir, "mem", "search", markPrompt)
		if code == 0 && strings.Contains(out, markPrompt) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not indexed within 30 s: %s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	return dir
}

// filesWith returns "file: marker" for every marker found in the bytes of
// any file under dir.
func filesWith(t *testing.T, dir string, markers ...string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range markers {
			if bytes.Contains(b, []byte(m)) || bytes.Contains(bytes.ToLower(b), []byte(strings.ToLower(m))) {
				rel, _ := filepath.Rel(dir, p)
				found = append(found, rel+": "+m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// sharedFiles counts the files under dir that have other names (hard
// links).
func sharedFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
				n++
			}
		}
		return nil
	})
	return n
}
