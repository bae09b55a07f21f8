package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/internal/crypt"
	"github.com/bbengine/bbengine/wal"
)

// killUpstream is a fake Anthropic upstream: a streaming request gets
// its id back in 12 SSE events, each flushed on its own; any other gets
// a JSON answer with a Content-Length.
func killUpstream(t *testing.T) *httptest.Server {
	idRe := regexp.MustCompile(`id-[0-9]+-[0-9]+`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		id := idRe.FindString(string(b))
		if !bytes.Contains(b, []byte(`"stream":true`)) {
			body := fmt.Sprintf(`{"id":"msg_%s","type":"message","role":"assistant","content":[{"type":"text","text":"answer to %s"}],"usage":{"input_tokens":3,"output_tokens":4}}`, id, id)
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			io.WriteString(w, body)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		fmt.Fprintf(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_%s\",\"model\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":0}}}\n\n", id)
		fl.Flush()
		for i := 0; i < 10; i++ {
			fmt.Fprintf(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"%s part %d \"}}\n\n", id, i)
			fl.Flush()
		}
		io.WriteString(w, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// killedProxy is one run of the bbengine binary, to be killed.
type killedProxy struct {
	cmd    *exec.Cmd
	addr   string
	stderr *syncBuffer
	exited chan struct{} // closed once the process has exited
}

// alive reports whether the process is still running.
func (p *killedProxy) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL and waits for the process to exit.
func (p *killedProxy) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

func startKilledProxy(t *testing.T, bin, dir, upstream, sync string) *killedProxy {
	t.Helper()
	return startCmd(t, exec.Command(bin, "--dir", dir, "proxy", "--listen", "127.0.0.1:0", "--upstream", "anthropic="+upstream,
		"--breaker", "off", "--sync", sync))
}

// startCmd starts cmd, a `bbengine proxy` command line, and waits until
// it listens.
func startCmd(t *testing.T, cmd *exec.Cmd) *killedProxy {
	t.Helper()
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), "listening on http://"); ok {
				a, _, _ := strings.Cut(rest, " ")
				addr <- a
				break
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	select {
	case a := <-addr:
		return &killedProxy{cmd: cmd, addr: a, stderr: stderr, exited: exited}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("bbengine proxy did not start:\n%s", stderr.String())
		return nil
	}
}

// TestKillNineAcknowledgedRecorded kills `bbengine proxy` with SIGKILL
// again and again while several clients stream through it, then reads
// the WAL: every exchange a client received completely (the whole body
// and its end, for a streamed and for a sized response) must be there
// with its request, every response byte the client got and its end
// frame. Acknowledged means recorded. -short does 4 kills; the full run
// at least 20 kills and 5,000 acknowledged exchanges.
func TestKillNineAcknowledgedRecorded(t *testing.T) {
	kills, perKill, clients := 20, 260, 6
	if testing.Short() {
		kills, perKill, clients = 4, 100, 4
	}
	minTotal := 5000
	if testing.Short() {
		minTotal = 0
	}
	killNine(t, kills, perKill, clients, minTotal, false)
}

// TestKillNineEncrypted is TestKillNineAcknowledgedRecorded in a data
// directory made by init --encrypt, with fewer kills: every exchange a
// client received whole is in the WAL and decrypts, wal verify --decrypt
// authenticates every frame, and the engine's encrypted store, killed
// mid-derivation each time, opens and answers.
func TestKillNineEncrypted(t *testing.T) {
	killNine(t, 6, 100, 4, 300, true)
}

// killNine kills the proxy kills times, each after about perKill
// exchanges acknowledged to clients streaming at once, and checks that
// every acknowledged exchange is recorded; it wants at least minTotal of
// them in all.
func killNine(t *testing.T, kills, perKill, clients, minTotal int, encrypt bool) {
	bin := os.Getenv("BBENGINE_FAULT_BIN") // to run the suite against another build
	if bin == "" {
		bin = buildBBEngine(t, t.TempDir())
	}
	up := killUpstream(t)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 11))
	var keys *crypt.Keys
	if encrypt {
		const pass = "kill nine passphrase"
		t.Setenv("BBENGINE_PASSPHRASE", pass)
		if out, err := exec.Command(bin, "--dir", dir, "init", "--encrypt").CombinedOutput(); err != nil {
			t.Fatalf("init --encrypt: %v\n%s", err, out)
		}
		var err error
		if keys, err = crypt.Unlock(dir, crypt.UnlockOptions{Passphrase: []byte(pass)}); err != nil {
			t.Fatal(err)
		}
	}

	type acked struct {
		id   string
		body []byte
	}
	var (
		mu    sync.Mutex
		acks  []acked
		seq   atomic.Int64
		total int
	)
	for round := 0; round < kills; round++ {
		syncMode := []string{"none", "interval", "always"}[round%3]
		p := startKilledProxy(t, bin, dir, up.URL, syncMode)
		target := perKill/2 + rng.IntN(perKill)
		var got atomic.Int64
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for c := 0; c < clients; c++ {
			wg.Add(1)
			go func(c int) {
				defer wg.Done()
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
				defer client.CloseIdleConnections()
				for n := 0; ctx.Err() == nil; n++ {
					id := fmt.Sprintf("id-%d-%d", c, seq.Add(1))
					stream := n%3 != 2
					body := fmt.Sprintf(`{"model":"m","max_tokens":10,"stream":%v,"messages":[{"role":"user","content":"%s"}]}`, stream, id)
					req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+p.addr+"/v1/messages", strings.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("anthropic-version", "2023-06-01")
					resp, err := client.Do(req)
					if err != nil {
						continue
					}
					b, err := io.ReadAll(resp.Body)
					resp.Body.Close()
					if err != nil || resp.StatusCode != 200 {
						continue
					}
					if !bytes.Contains(b, []byte(id)) {
						t.Errorf("client got someone else's answer for %s: %q", id, b)
						continue
					}
					mu.Lock()
					acks = append(acks, acked{id, b})
					mu.Unlock()
					got.Add(1)
				}
			}(c)
		}
		for got.Load() < int64(target) {
			time.Sleep(time.Millisecond)
			if !p.alive() {
				t.Fatalf("proxy exited on its own:\n%s", p.stderr.String())
			}
		}
		p.kill()
		cancel()
		wg.Wait()
		total += int(got.Load())
	}
	t.Logf("%d kills, %d exchanges acknowledged to clients", kills, total)
	if total < minTotal {
		t.Errorf("only %d acknowledged exchanges; want %d", total, minTotal)
	}

	// Open the log as the next start would (a torn tail is cut) and put
	// the exchanges back together.
	l, err := wal.Open(dir+"/wal", &wal.Options{Keys: keys})
	if err != nil {
		t.Fatalf("open the WAL after the kills: %v", err)
	}
	defer l.Close()
	idRe := regexp.MustCompile(`id-[0-9]+-[0-9]+`)
	byID := map[string]*exchange.Exchange{}
	for _, x := range assembleWAL(t, l) {
		if id := idRe.Find(x.RequestBody); id != nil {
			byID[string(id)] = x
		}
	}
	var missing, noTail, noEnd int
	for _, ack := range acks {
		x := byID[ack.id]
		switch {
		case x == nil:
			missing++
			if missing <= 3 {
				t.Errorf("%s: acknowledged to the client, not in the WAL", ack.id)
			}
		case !bytes.Equal(x.ResponseBody, ack.body):
			noTail++
			if noTail <= 3 {
				t.Errorf("%s: the WAL holds %d of the %d response bytes the client got", ack.id, len(x.ResponseBody), len(ack.body))
			}
		case x.End == nil:
			noEnd++
			if noEnd <= 3 {
				t.Errorf("%s: no end frame", ack.id)
			}
		}
	}
	if missing+noTail+noEnd > 0 {
		t.Fatalf("of %d acknowledged exchanges: %d not recorded, %d without their response tail, %d without an end frame", len(acks), missing, noTail, noEnd)
	}
	if !encrypt {
		return
	}
	l.Close()
	for _, args := range [][]string{{"wal", "verify", "--decrypt"}, {"sessions"}} {
		cmd := exec.Command(bin, append([]string{"--dir", dir, "--no-keyring"}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v after the kills: %v\n%s", args, err, out)
		}
	}
}
