package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/bbengine/bbengine/engine"
)

// TestKillNineMerge records Claude Code-like sessions through `bbengine
// proxy`, then imports their logs with `bbengine import`, killed with
// SIGKILL again and again while it appends and derives (merges among
// it), and once more to the end. Every session is then one merged
// session whose call counts once, and a rebuild gives the same answers:
// whatever a kill left (sides committed before their merge, a torn
// WAL tail, records appended twice) was derived to the same state.
func TestKillNineMerge(t *testing.T) {
	bin := os.Getenv("BBENGINE_FAULT_BIN")
	if bin == "" {
		bin = buildBBEngine(t, t.TempDir())
	}
	const sessions = 150
	up := killUpstream(t)
	dir := t.TempDir()
	sid := func(i int) string { return fmt.Sprintf("7a1c0000-0000-4000-8000-%012d", i) }

	p := startKilledProxy(t, bin, dir, up.URL, "always")
	for i := range sessions {
		body := fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"say id-%d-0"}]}`, i)
		req, err := http.NewRequest("POST", "http://"+p.addr+"/v1/messages", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "claude-cli/2.1.330 (external, cli)")
		req.Header.Set("X-Claude-Code-Session-Id", sid(i))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("session %d: %s", i, resp.Status)
		}
	}
	p.kill()

	logs := t.TempDir()
	for i := range sessions {
		lines := []string{
			fmt.Sprintf(`{"type":"user","uuid":"u%d","sessionId":"%s","timestamp":"2026-11-27T10:00:00.000Z","cwd":"/work/p","message":{"role":"user","content":"say id-%d-0"}}`, i, sid(i), i),
			fmt.Sprintf(`{"type":"assistant","uuid":"a%d","parentUuid":"u%d","sessionId":"%s","timestamp":"2026-11-27T10:00:01.000Z","cwd":"/work/p",`+
				`"message":{"id":"msg_id-%d-0","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"answer to id-%d-0"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":4}}}`,
				i, i, sid(i), i, i),
		}
		if err := os.WriteFile(filepath.Join(logs, sid(i)+".jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rng := rand.New(rand.NewPCG(3, 5))
	killed := 0
	for round := 0; round < 10; round++ {
		cmd := exec.Command(bin, "--dir", dir, "import", "claude", logs)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("import round %d: %v\n%s", round, err, out.String())
			}
		case <-time.After(time.Duration(10+rng.IntN(140)) * time.Millisecond):
			cmd.Process.Signal(syscall.SIGKILL)
			<-done
			killed++
		}
	}
	t.Logf("import killed %d times of 10", killed)

	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--dir", dir}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		out, err := cmd.Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("bbengine %v: %v\n%s", args, err, ee.Stderr)
			}
			t.Fatalf("bbengine %v: %v", args, err)
		}
		return string(out)
	}
	run("import", "claude", logs)
	answers := func() string {
		var list []engine.Session
		js := run("sessions", "--json")
		if err := json.Unmarshal([]byte(js), &list); err != nil {
			t.Fatal(err)
		}
		merged := 0
		for _, s := range list {
			if s.Merged != nil && s.Merged.Paired >= 4 {
				merged++
			}
		}
		if len(list) != sessions || merged != sessions {
			t.Errorf("%d sessions, %d merged; want %d, each merged", len(list), merged, sessions)
		}
		var rep struct {
			Total struct {
				Calls  int   `json:"calls"`
				Output int64 `json:"output"`
			} `json:"total"`
		}
		us := run("usage", "session", "--json")
		if err := json.Unmarshal([]byte(us), &rep); err != nil {
			t.Fatal(err)
		}
		if rep.Total.Calls != sessions || rep.Total.Output != 4*sessions {
			t.Errorf("usage: %d calls, output %d; want %d calls, output %d (each once)", rep.Total.Calls, rep.Total.Output, sessions, 4*sessions)
		}
		return js + us + run("show", sid(0)) + run("show", sid(sessions-1)) + run("mem", "list", "--json")
	}
	before := answers()
	run("rebuild")
	if after := answers(); after != before {
		t.Errorf("the answers after a rebuild differ from those after the kills")
	}
}
