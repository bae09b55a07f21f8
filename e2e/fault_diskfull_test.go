package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDiskFullTmpfs runs the real `bbengine proxy` (recorder, engine,
// memory index) on a small tmpfs and fills it: the proxy must stay up,
// answer 503 naming the data directory in lossless mode (a request
// already on its way upstream included, its response dropped), report it on /_bb/health, and once the tmpfs grows record
// again by itself. It needs root to mount; it skips otherwise.
func TestDiskFullTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", mnt).Run() })
	bin := buildBBEngine(t, t.TempDir())
	up := killUpstream(t)
	dir := mnt + "/data"
	p := startKilledProxy(t, bin, dir, up.URL, "interval")
	defer p.kill()

	post := func(i int) (int, string, error) {
		pad := make([]byte, 48<<10)
		rand.Read(pad)
		body := fmt.Sprintf(`{"model":"m","stream":true,"messages":[{"role":"user","content":"id-0-%d %s"}]}`, i, hex.EncodeToString(pad))
		// A new connection each time: a response cut by the full disk
		// leaves its connection closed.
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Post("http://"+p.addr+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	health := func() map[string]any {
		resp, err := http.Get("http://" + p.addr + "/_bb/health")
		if err != nil {
			t.Fatalf("the proxy is gone: %v (%v); its log:\n%s", err, p.cmd.ProcessState, p.stderr.String())
		}
		defer resp.Body.Close()
		var h map[string]any
		json.NewDecoder(resp.Body).Decode(&h)
		return h
	}

	refused := 0
	i := 0
	for ; i < 400 && refused < 5; i++ {
		code, body, err := post(i)
		if !p.alive() {
			t.Fatalf("the proxy exited after %d requests (%v):\n%s", i, p.cmd.ProcessState, p.stderr.String())
		}
		if err == nil && code == 503 {
			if !strings.Contains(body, dir) {
				t.Fatalf("503 does not name the data directory %s: %s", dir, body)
			}
			refused++
		}
	}
	if refused == 0 {
		t.Fatalf("%d requests on a 6 MiB tmpfs and none refused; proxy log:\n%s", i, p.stderr.String())
	}
	h := health()
	if h["status"] != "degraded" || !strings.Contains(fmt.Sprint(h["wal_error"]), "no space left") {
		t.Fatalf("health with the disk full: %v", h)
	}
	t.Logf("refused from request %d; health: %v", i-refused, h)

	if out, err := exec.Command("mount", "-o", "remount,size=256m", mnt).CombinedOutput(); err != nil {
		t.Fatalf("grow tmpfs: %v %s", err, out)
	}
	for deadline := time.Now().Add(60 * time.Second); health()["status"] != "ok"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("recording did not resume after space returned: %v", health())
		}
	}
	for j := 0; j < 5; j++ {
		if code, _, err := post(1000 + j); err != nil || code != 200 {
			t.Fatalf("after space returned: %d %v; health %v; proxy log:\n%s", code, err, health(), p.stderr.String())
		}
	}
	// Derivation is running, or (when Pebble panicked on its own full
	// log) stopped for this run with the reason; never the proxy.
	h = health()
	if d, _ := h["derivation"].(string); d != "ok" && !strings.HasPrefix(d, "stopped:") && !strings.HasPrefix(d, "paused:") {
		t.Fatalf("derivation: %q", d)
	}
	if !p.alive() {
		t.Fatalf("the proxy exited:\n%s", p.stderr.String())
	}
	t.Logf("derivation after the fault: %v", h["derivation"])
	// Stop it as Ctrl-C does, then every recorded exchange is derived:
	// by this run, or by the next command that opens the directory.
	p.cmd.Process.Signal(syscall.SIGINT)
	<-p.exited
	if strings.Contains(p.stderr.String(), "\npanic: ") || strings.Contains(p.stderr.String(), "fatal error:") {
		t.Fatalf("the proxy crashed:\n%s", p.stderr.String())
	}
	// Every exchange whose end is recorded is derived (one whose end
	// could not be written, as the disk filled, may have no session).
	ends, err := exec.Command(bin, "--dir", dir, "replay", "--kind", "response-end", "--format", "jsonl").Output()
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	out, err := exec.Command(bin, "--dir", dir, "sessions", "--json").Output()
	if err != nil {
		t.Fatalf("sessions: %v", err)
	}
	var sessions []json.RawMessage
	if err := json.Unmarshal(out, &sessions); err != nil {
		t.Fatalf("sessions --json: %v\n%s", err, out)
	}
	if n := strings.Count(string(ends), "\n"); len(sessions) < n {
		t.Fatalf("%d exchanges recorded whole, %d sessions derived", n, len(sessions))
	}
	t.Logf("%d sessions derived; proxy log:\n%s", len(sessions), p.stderr.String())
}
