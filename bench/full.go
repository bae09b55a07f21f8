package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bbengine/bbengine/cli"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/wal"
)

// fullProxy is `bbengine proxy` run in this process through
// cli.MainContext: the BBEngineFull path.
type fullProxy struct {
	dir    string
	url    string
	cancel context.CancelFunc
	done   chan int
	out    *syncBuffer
	client *http.Client
	// The query endpoint the proxy wrote into the lock file, for Settle.
	qaddr, qtoken string
	stopped       bool
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startFull runs `bbengine --dir dir proxy` on a loopback port with
// upstream as its anthropic route and returns once it listens and its
// engine serves queries.
func startFull(dir, upstream string, sync wal.SyncPolicy, encrypt bool) (*fullProxy, error) {
	if encrypt {
		// A passphrase slot: the proxy unlocks once at start (argon2id),
		// as a user's would.
		if os.Getenv("BBENGINE_PASSPHRASE") == "" {
			os.Setenv("BBENGINE_PASSPHRASE", "proxybench passphrase")
		}
		var out bytes.Buffer
		if code := cli.Main([]string{"bbengine", "--dir", dir, "init", "--encrypt"}, &out, &out); code != 0 {
			return nil, fmt.Errorf("bench: bbengine init --encrypt exited with %d: %s", code, out.String())
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	fp := &fullProxy{dir: dir, cancel: cancel, done: make(chan int, 1), out: &syncBuffer{},
		client: &http.Client{Timeout: 30 * time.Second}}
	go func() {
		fp.done <- cli.MainContext(ctx, []string{"bbengine", "--dir", dir, "proxy", "--listen", "127.0.0.1:0",
			"--upstream", "anthropic=" + upstream, "--sync", sync.String(), "--shutdown-timeout", "5s"}, fp.out, fp.out)
	}()
	const prefix = "listening on "
	deadline := time.Now().Add(30 * time.Second)
	for fp.url == "" {
		if s := fp.out.String(); strings.Contains(s, prefix) {
			fp.url, _, _ = strings.Cut(s[strings.Index(s, prefix)+len(prefix):], " ")
			break
		}
		select {
		case code := <-fp.done:
			fp.stopped = true
			return nil, fmt.Errorf("bench: bbengine proxy exited with %d: %s", code, fp.out.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			fp.stop()
			return nil, fmt.Errorf("bench: bbengine proxy did not start: %s", fp.out.String())
		}
	}
	for {
		if h, held, err := engine.ReadHolder(dir); err == nil && held && h.Addr != "" {
			fp.qaddr, fp.qtoken = h.Addr, h.Token
			return fp, nil
		}
		if time.Now().After(deadline) {
			fp.stop()
			return nil, fmt.Errorf("bench: bbengine proxy's engine serves no queries: %s", fp.out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// settle waits until the proxy's recorder has drained its queue and
// derivation, memory and the index have caught up with the WAL (a fresh
// memory search waits for derivation, then syncs the index), so the work
// a block caused is charged to it.
func (fp *fullProxy) settle(deadline time.Time) {
	wait := 500 * time.Microsecond
	for time.Now().Before(deadline) {
		resp, err := fp.client.Get(fp.url + "/_bb/health")
		if err != nil {
			return
		}
		var h struct{ Queue int }
		json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		if h.Queue == 0 {
			break
		}
		time.Sleep(wait)
		wait = min(2*wait, 16*time.Millisecond)
	}
	req, err := http.NewRequest(http.MethodGet, "http://"+fp.qaddr+"/v1/memory/search?fresh=1&q=settle", nil)
	if err != nil {
		return
	}
	req.Header.Set("Authorization", "Bearer "+fp.qtoken)
	if resp, err := fp.client.Do(req); err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// Pebble compactions and Bluge merges go on in the background: wait
	// until the process is quiet (under 10% of a core over 20 ms), so
	// they too are charged to this block, not to the next path's.
	for prev := CPUTime(); time.Now().Before(deadline); {
		time.Sleep(quietWindow)
		now := CPUTime()
		if now-prev < quietWindow/10 {
			return
		}
		prev = now
	}
}

// quietWindow is the window over which settle finds the process quiet.
const quietWindow = 20 * time.Millisecond

// sessions returns the proxy's sessions as its query endpoint answers
// them, JSON, as derived so far.
func (fp *fullProxy) sessions() (string, error) {
	req, err := http.NewRequest(http.MethodGet, "http://"+fp.qaddr+"/v1/sessions", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+fp.qtoken)
	resp, err := fp.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// EngineMetrics scrapes the BBEngineFull path's /_bb/metrics: series
// ("name{labels}" as exposed) to value. It fails when the rig has no
// such path.
func (rg *Rig) EngineMetrics() (map[string]float64, error) {
	if rg.full == nil {
		return nil, fmt.Errorf("bench: no %s path (Config.Engine)", BBEngineFull)
	}
	resp, err := rg.full.client.Get(rg.full.url + "/_bb/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, nil
}

// stop stops the proxy as Ctrl-C does: it drains, derives what is left
// and closes.
func (fp *fullProxy) stop() error {
	if fp.stopped {
		return nil
	}
	fp.stopped = true
	fp.cancel()
	if code := <-fp.done; code != 0 {
		return fmt.Errorf("bench: bbengine proxy exited with %d: %s", code, fp.out.String())
	}
	return nil
}
