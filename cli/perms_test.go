//go:build unix

package cli

import (
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/server"
)

// withUmask sets the process's umask for the test.
func withUmask(t *testing.T, mask int) {
	old := syscall.Umask(mask)
	t.Cleanup(func() { syscall.Umask(old) })
}

// looseFiles lists what under dir has group or other permission bits.
func looseFiles(t *testing.T, dir string) (loose []string, n int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n++
		if fi.Mode().Perm()&0o077 != 0 {
			loose = append(loose, p+" "+fi.Mode().String())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return loose, n
}

// TestOwnerOnlyDataDir records a session through the proxy with umask
// 022, derives it, indexes it, writes blobs and tokens, rebuilds, and
// finds every directory under the data directory 0700 and every file
// 0600. Run as root, it then has another user run bbengine replay on
// the directory, which must be refused.
func TestOwnerOnlyDataDir(t *testing.T) {
	withUmask(t, 0o022)
	up := sseUpstream(t)
	base := t.TempDir()
	dir := filepath.Join(base, "data")
	addr, apiAddr, stop := startProxy(t, dir, proxy.Options{Upstreams: map[string]string{"anthropic": up.URL}}, true)
	if apiAddr == "" {
		t.Fatal("no harness API")
	}
	big := strings.Repeat("output line\n", 200)
	body := `{"model":"claude-sonnet-4","stream":true,"messages":[{"role":"user","content":"ping"},` +
		`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"Bash","input":{"command":"ls"}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":` + strconv.Quote(big) + `}]}]}`
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/messages", strings.NewReader(body))
	req.Header.Set("X-Bb-Session-Id", "perm-1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if out, errs, code := run(t, "--dir", dir, "mem", "search", "pong", "--json"); code != 0 || !strings.Contains(out, "perm-1") {
		t.Fatalf("mem search: %d\n%s%s", code, out, errs)
	}
	if out, errs, code := run(t, "--dir", dir, "show", "perm-1", "--blob-threshold", "100"); code != 0 || !strings.Contains(out, "@blob") {
		t.Fatalf("show: %d\n%s%s", code, out, errs)
	}
	if _, _, _, err := server.BearerToken(dir, "mcp.token", ""); err != nil {
		t.Fatal(err)
	}
	// Stop the proxy, then rebuild everything derived in this process.
	stop()
	if out, errs, code := run(t, "--dir", dir, "rebuild"); code != 0 {
		t.Fatalf("rebuild: %d\n%s%s", code, out, errs)
	}
	for _, p := range []string{"wal", "db", "index", "blobs", "api.token", "mcp.token", "engine.lock", "wal/LOCK"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("expected %s: %v", p, err)
		}
	}
	loose, n := looseFiles(t, dir)
	if len(loose) > 0 {
		t.Errorf("%d of %d paths under the data directory are readable by others:\n%s", len(loose), n, strings.Join(loose, "\n"))
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("data directory: %v %v, want drwx------", fi.Mode(), err)
	}

	t.Run("other user", func(t *testing.T) { otherUserRefused(t, base, dir) })
}

// otherUserRefused runs `bbengine replay` on dir as nobody (possible
// when the test runs as root) and wants it refused: permission denied.
// base, the directory above dir, is opened to others for the test, as a
// home directory usually is.
func otherUserRefused(t *testing.T, base, dir string) {
	if os.Geteuid() != 0 {
		t.Skip("not root: cannot run a command as another user")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	self, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	// The test binary, copied where nobody may run it; every directory
	// above the data directory opened to others.
	binDir := filepath.Join(base, "bin")
	if err := os.Mkdir(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(binDir, "bbengine.test")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	for p := base; p != "/" && p != "."; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o005 != 0o005 {
			if err := os.Chmod(p, fi.Mode().Perm()|0o055); err != nil {
				t.Fatal(err)
			}
			defer os.Chmod(p, fi.Mode().Perm())
		}
	}
	asNobody := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), asMainEnv+"=1", "HOME=/")
		cmd.Dir = "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	// nobody can run the binary and read what is not private.
	if out, err := asNobody("version"); err != nil {
		t.Skipf("cannot run the test binary as nobody: %v\n%s", err, out)
	}
	out, err := asNobody("--dir", dir, "replay", "--from", "0")
	if err == nil {
		t.Fatalf("nobody replayed the data directory:\n%s", out)
	}
	if !strings.Contains(out, "permission denied") {
		t.Errorf("replay as nobody failed, but not for permission:\n%s", out)
	}
	if strings.Contains(out, "ping") || strings.Contains(out, "pong") {
		t.Errorf("replay as nobody printed the recording:\n%s", out)
	}
}
