package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKillNineDuringRetention kills `bbengine proxy` with SIGKILL while
// it records with a WAL cap far below what it holds, small segments,
// and retention running at every start, often in the middle of a
// retention run (a snapshot being taken or swapped, segments being
// removed). After the last run: the WAL verifies, every session a
// client got an answer for is there with its answer, and a rebuild
// (from the snapshot and what is left of the WAL) gives the same
// sessions.
func TestKillNineDuringRetention(t *testing.T) {
	bin := os.Getenv("BBENGINE_FAULT_BIN")
	if bin == "" {
		bin = buildBBEngine(t, t.TempDir())
	}
	kills := 8
	if testing.Short() {
		kills = 4
	}
	up := killUpstream(t)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 5))
	start := func() *killedProxy {
		cmd := exec.Command(bin, "--dir", dir, "proxy", "--listen", "127.0.0.1:0", "--upstream", "anthropic="+up.URL,
			"--breaker", "off", "--wal-segment-size", "8KiB", "--retention-max-size", "24KiB")
		return startCmd(t, cmd)
	}
	acked := map[string]string{} // session id: the answer's text
	n := 0
	for round := range kills {
		p := start()
		for range 20 + rng.IntN(20) {
			n++
			id := fmt.Sprintf("id-%d-%d", round, n)
			body := fmt.Sprintf(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"%s %s"}]}`, id, strings.Repeat("pad ", 50))
			req, _ := http.NewRequest("POST", "http://"+p.addr+"/v1/messages", strings.NewReader(body))
			req.Header.Set("X-Bb-Session-Id", "sess-"+id)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				continue
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == 200 {
				acked["sess-"+id] = "answer to " + id
			}
			_ = b
		}
		// Kill during the next start's retention run, or now.
		if round%2 == 1 {
			p.kill()
			p = start()
			time.Sleep(time.Duration(rng.IntN(40)) * time.Millisecond)
		}
		p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
	}
	// A last run, stopped cleanly, derives what is left.
	p := start()
	p.cmd.Process.Signal(syscall.SIGINT)
	<-p.exited
	if out, err := exec.Command(bin, "--dir", dir, "wal", "verify").CombinedOutput(); err != nil {
		t.Fatalf("wal verify: %v\n%s", err, out)
	}
	if rs, err := os.ReadFile(dir + "/expired.json"); err != nil || len(rs) < 10 {
		t.Fatalf("retention removed nothing: %v", err)
	}
	sessions := func() map[string]bool {
		out, err := exec.Command(bin, "--dir", dir, "sessions", "--json").Output()
		if err != nil {
			t.Fatalf("sessions: %v", err)
		}
		var ss []struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(out, &ss); err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, s := range ss {
			m[s.ID] = true
		}
		return m
	}
	before := sessions()
	for id, answer := range acked {
		if !before[id] {
			t.Errorf("acknowledged session %s is gone", id)
			continue
		}
		if out, err := exec.Command(bin, "--dir", dir, "show", id).Output(); err != nil || !strings.Contains(string(out), answer) {
			t.Errorf("show %s: %v\n%s", id, err, out)
		}
	}
	if out, err := exec.CommandContext(context.Background(), bin, "--dir", dir, "rebuild").CombinedOutput(); err != nil {
		t.Fatalf("rebuild: %v\n%s", err, out)
	}
	after := sessions()
	for id := range before {
		if !after[id] {
			t.Errorf("session %s lost by the rebuild", id)
		}
	}
	t.Logf("%d kills, %d sessions acknowledged, %d after rebuild", kills, len(acked), len(after))
}
