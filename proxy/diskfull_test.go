package proxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/wal"
)

// faultyRig is a proxy whose WAL writes go through a fault switch: full
// fails every write with ENOSPC, as a full disk does; beforeWrite, when
// set, is called before each write.
type faultyRig struct {
	up          *upstream
	log         *wal.Log
	p           *Proxy
	srv         *httptest.Server
	full        atomic.Bool
	beforeWrite atomic.Pointer[func()]
}

func newFaultyRig(t *testing.T, mode Mode, sync wal.SyncPolicy) *faultyRig {
	t.Helper()
	rg := &faultyRig{up: newUpstream(t)}
	log, err := wal.Open(t.TempDir(), &wal.Options{Sync: sync, FaultWrite: func(path string, n int) error {
		if f := rg.beforeWrite.Load(); f != nil && n > 0 {
			(*f)()
		}
		if rg.full.Load() && n > 0 {
			return &pathErr{path, syscall.ENOSPC}
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	rg.log = log
	p, err := New(log, &Options{Mode: mode, Upstreams: map[string]string{"anthropic": rg.up.URL, "openai": rg.up.URL}})
	if err != nil {
		t.Fatal(err)
	}
	rg.p = p
	rg.srv = httptest.NewServer(p)
	t.Cleanup(func() {
		rg.srv.Close()
		p.Close()
		log.Close()
	})
	return rg
}

type pathErr struct {
	path string
	err  error
}

func (e *pathErr) Error() string { return "write " + e.path + ": " + e.err.Error() }
func (e *pathErr) Unwrap() error { return e.err }

func (rg *faultyRig) post(path string) (int, string, error) {
	return rg.postBody(path, `{"model":"claude-sonnet-4","stream":true,"messages":[]}`)
}

func (rg *faultyRig) postBody(path, body string) (int, string, error) {
	resp, err := http.Post(rg.srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func (rg *faultyRig) upstreamRequests() int {
	rg.up.mu.Lock()
	defer rg.up.mu.Unlock()
	return len(rg.up.requests)
}

// waitHealthy waits for the recorder's resume loop to find the WAL
// writable again.
func waitHealthy(t *testing.T, p *Proxy) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); p.Health().Status != "ok"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("recording did not resume: %+v", p.Health())
		}
	}
}

// TestDiskFullLossless: once the WAL cannot be written, lossless mode
// withholds the response of the request whose frames failed, answers new
// requests 503 naming the data directory without forwarding them, and
// never crashes; when space
// returns it records again by itself, and the log holds no junk.
func TestDiskFullLossless(t *testing.T) {
	for _, sync := range []wal.SyncPolicy{wal.SyncInterval, wal.SyncAlways} {
		t.Run(sync.String(), func(t *testing.T) {
			rg := newFaultyRig(t, Lossless, sync)
			if code, body, err := rg.post("/v1/messages"); err != nil || code != 200 || body != anthropicSSE {
				t.Fatalf("before the disk fills: %d %v", code, err)
			}
			before := rg.upstreamRequests()
			rg.full.Store(true)
			// The first request after the disk fills goes upstream
			// while its frames are written; they fail, so its response
			// is withheld: 503, naming the data directory.
			if code, body, err := rg.post("/v1/messages"); err != nil || code != 503 || !strings.Contains(body, rg.log.Dir()) || !strings.Contains(body, "not answered") {
				t.Fatalf("the request whose frames failed: %d %q %v, want 503 naming %s", code, body, err, rg.log.Dir())
			}
			if n := rg.upstreamRequests(); n > before+1 {
				t.Fatalf("%d requests forwarded for one", n-before)
			}
			before = rg.upstreamRequests()
			for i := 0; i < 3; i++ {
				code, body, err := rg.post("/v1/messages")
				if err != nil || code != 503 || !strings.Contains(body, rg.log.Dir()) || !strings.Contains(body, "no space left") {
					t.Fatalf("with the disk full: %d %q %v, want 503 naming %s", code, body, err, rg.log.Dir())
				}
			}
			if n := rg.upstreamRequests(); n != before {
				t.Fatalf("%d unrecorded requests forwarded upstream", n-before)
			}
			h := rg.p.Health()
			if h.Status != "degraded" || !strings.Contains(h.WALError, "no space left") || h.RefusedUnrecorded < 3 {
				t.Fatalf("health with the disk full: %+v", h)
			}
			rg.full.Store(false)
			waitHealthy(t, rg.p)
			if code, body, err := rg.post("/v1/messages"); err != nil || code != 200 || body != anthropicSSE {
				t.Fatalf("after space returned: %d %v", code, err)
			}
			rg.srv.Close()
			if err := rg.p.Close(); err != nil {
				t.Fatal(err)
			}
			var a exchange.Assembler
			r := rg.log.NewReader()
			for r.Next() {
				p, err := r.Payload()
				if err != nil {
					t.Fatal(err)
				}
				a.Add(r.Header(), p)
			}
			if err := r.Err(); err != nil {
				t.Fatalf("the log after the fault: %v", err)
			}
			r.Close()
			complete := 0
			for _, x := range a.Exchanges() {
				if x.End != nil && x.End.Complete && string(x.ResponseBody) == anthropicSSE {
					complete++
				}
			}
			if complete != 2 {
				t.Fatalf("%d complete exchanges recorded, want 2 (before and after the fault)", complete)
			}
		})
	}
}

// TestDiskFullDegrade: degrade mode forwards while the WAL cannot be
// written, counts what went unrecorded, and records again by itself.
func TestDiskFullDegrade(t *testing.T) {
	rg := newFaultyRig(t, Degrade, wal.SyncInterval)
	rg.full.Store(true)
	for i := 0; i < 4; i++ {
		if code, body, err := rg.post("/v1/messages"); err != nil || code != 200 || body != anthropicSSE {
			t.Fatalf("degrade with the disk full: %d %v", code, err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); rg.log.Failed() == nil; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the WAL never failed")
		}
	}
	if code, _, err := rg.post("/v1/messages"); err != nil || code != 200 {
		t.Fatalf("degrade after the WAL failed: %d %v", code, err)
	}
	if h := rg.p.Health(); h.Status != "degraded" || h.ForwardedUnrecorded == 0 {
		t.Fatalf("health: %+v", h)
	}
	rg.full.Store(false)
	waitHealthy(t, rg.p)
	if code, _, err := rg.post("/v1/messages"); err != nil || code != 200 {
		t.Fatalf("after space returned: %d %v", code, err)
	}
	if err := rg.log.Failed(); err != nil {
		t.Fatal(err)
	}
}

// TestEndReleasedAfterWrite: the client does not see the end of a
// response (streamed, or sized) before the write that holds its end
// frame: each write checks that no client has finished an exchange the
// log has not written yet.
func TestEndReleasedAfterWrite(t *testing.T) {
	for _, path := range []string{"/v1/messages", "/v1/messages/count_tokens"} {
		for _, mode := range []Mode{Lossless, Privacy, Passthrough} {
			rg := newFaultyRig(t, mode, wal.SyncInterval)
			var clientDone, early atomic.Bool
			f := func() {
				// Give a client that could finish now every chance to.
				for i := 0; i < 50 && !clientDone.Load(); i++ {
					time.Sleep(time.Millisecond)
				}
				if clientDone.Load() {
					early.Store(true)
				}
			}
			for i := 0; i < 3; i++ {
				clientDone.Store(false)
				rg.beforeWrite.Store(&f)
				code, _, err := rg.post(path)
				clientDone.Store(true)
				if err != nil || code != 200 {
					t.Fatalf("%s %v: %d %v", path, mode, code, err)
				}
				rg.beforeWrite.Store(nil)
				rg.log.Sync()
			}
			if early.Load() {
				t.Errorf("%s %v: a client had the whole response before its frames were written", path, mode)
			}
		}
	}
}

// TestRequestForwardedWhileRecorded: in lossless mode a request larger
// than a handler records itself, and under --sync always any request,
// goes upstream while its frames are written, and nothing of its
// response reaches the client before they are.
func TestRequestForwardedWhileRecorded(t *testing.T) {
	big := `{"model":"claude-sonnet-4","stream":true,"messages":[{"role":"user","content":"` + strings.Repeat("x", inlineRequest+1) + `"}]}`
	small := `{"model":"claude-sonnet-4","stream":true,"messages":[]}`
	t.Run("interval/large", func(t *testing.T) { forwardedWhileRecorded(t, wal.SyncInterval, big) })
	t.Run("always/small", func(t *testing.T) { forwardedWhileRecorded(t, wal.SyncAlways, small) })
}

func forwardedWhileRecorded(t *testing.T, sync wal.SyncPolicy, body string) {
	rg := newFaultyRig(t, Lossless, sync)
	release := make(chan struct{})
	var armed atomic.Bool
	hold := func() {
		if armed.CompareAndSwap(true, false) {
			<-release
		}
	}
	rg.beforeWrite.Store(&hold)
	before := rg.upstreamRequests()
	armed.Store(true)
	type result struct {
		code int
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		code, body, err := rg.postBody("/v1/messages", body)
		got <- result{code, body, err}
	}()
	for deadline := time.Now().Add(10 * time.Second); rg.upstreamRequests() == before; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			close(release)
			t.Fatal("the request did not go upstream while its frames were being written")
		}
	}
	select {
	case r := <-got:
		close(release)
		t.Fatalf("the client had its response (%d) before the request's frames were written", r.code)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if r := <-got; r.err != nil || r.code != 200 || r.body != anthropicSSE {
		t.Fatalf("after the write: %d %v", r.code, r.err)
	}
}
