package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/wal"
)

// nodeDir is the npm project that pins the clients.
const nodeDir = "node"

// requireNodeModules skips the test when the clients are not installed
// and returns the absolute path of node/.
func requireNodeModules(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(nodeDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules")); err != nil {
		t.Skipf("e2e/node/node_modules is missing: run `npm ci --prefix e2e/node` to install the pinned clients (%v)", err)
	}
	return dir
}

// requireNode returns the path of the node binary, skipping when there is
// none.
func requireNode(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		t.Skipf("node is not installed: %v", err)
	}
	return p
}

// seen is one request a fake upstream received and what it answered.
type seen struct {
	Seq    int
	Method string
	Path   string
	Query  string
	Header http.Header
	Body   []byte
	Status int
	Sent   []byte // every response body byte written, in order
}

// fake is a scripted provider on loopback. answer writes the response;
// everything written is kept in seen.Sent so the test can compare it with
// the WAL. Each response carries X-E2e-Seq, the request's index.
type fake struct {
	*httptest.Server
	answer func(s *seen, w http.ResponseWriter)
	mu     sync.Mutex
	reqs   []*seen
}

func newFake(t testing.TB, answer func(s *seen, w http.ResponseWriter)) *fake {
	f := &fake{answer: answer}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.Close)
	return f
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	s := &seen{Seq: len(f.reqs), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	f.reqs = append(f.reqs, s)
	f.mu.Unlock()
	w.Header().Set("X-E2e-Seq", strconv.Itoa(s.Seq))
	cw := &captureWriter{ResponseWriter: w, s: s, mu: &f.mu}
	f.answer(s, cw)
}

// requests returns a copy of what the fake has seen so far.
func (f *fake) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]seen, len(f.reqs))
	for i, s := range f.reqs {
		out[i] = *s
		out[i].Sent = append([]byte(nil), s.Sent...)
	}
	return out
}

type captureWriter struct {
	http.ResponseWriter
	s     *seen
	mu    *sync.Mutex
	wrote bool
}

func (c *captureWriter) WriteHeader(code int) {
	if !c.wrote {
		c.wrote = true
		c.mu.Lock()
		c.s.Status = code
		c.mu.Unlock()
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *captureWriter) Write(b []byte) (int, error) {
	if !c.wrote {
		c.WriteHeader(http.StatusOK)
	}
	n, err := c.ResponseWriter.Write(b)
	c.mu.Lock()
	c.s.Sent = append(c.s.Sent, b[:n]...)
	c.mu.Unlock()
	return n, err
}

func (c *captureWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// writeSSE sends events one by one, flushing after each, as a provider
// streams them.
func writeSSE(w http.ResponseWriter, events []string) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	for _, ev := range events {
		io.WriteString(w, ev)
		w.(http.Flusher).Flush()
	}
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// rig is the proxy under test: a WAL in a temp dir, proxy.New over it and
// an httptest server in front.
type rig struct {
	dir    string
	log    *wal.Log
	p      *proxy.Proxy
	srv    *httptest.Server
	mu     sync.Mutex
	lines  []string
	closed bool
}

func newRig(t *testing.T, upstream string) *rig {
	t.Helper()
	dir := t.TempDir()
	// dir is a data directory: the WAL in dir/wal, as bbengine proxy
	// lays it out, so the CLI's --dir reads it.
	log, err := wal.Open(filepath.Join(dir, "wal"), &wal.Options{Sync: wal.SyncNone, NoCompression: true})
	if err != nil {
		t.Fatal(err)
	}
	rg := &rig{dir: dir, log: log}
	p, err := proxy.New(log, &proxy.Options{
		Upstreams: map[string]string{"anthropic": upstream, "openai": upstream, "gemini": upstream},
		Logf: func(f string, a ...any) {
			rg.mu.Lock()
			rg.lines = append(rg.lines, fmt.Sprintf(f, a...))
			rg.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	rg.p = p
	rg.srv = httptest.NewServer(p)
	t.Cleanup(func() {
		rg.stop(t)
		log.Close()
		rg.mu.Lock()
		defer rg.mu.Unlock()
		for _, l := range rg.lines {
			t.Logf("proxy log: %s", l)
		}
	})
	return rg
}

// stop shuts the server down and flushes the recorder.
func (rg *rig) stop(t *testing.T) {
	t.Helper()
	if rg.closed {
		return
	}
	rg.closed = true
	rg.srv.Close()
	if err := rg.p.Close(); err != nil {
		t.Errorf("recorder: %v", err)
	}
}

// recorded is one exchange read back from the WAL.
type recorded = exchange.Exchange

// seq is the fake upstream's X-E2e-Seq for this exchange, or -1.
func seqOf(x *recorded) int {
	if x.Response == nil {
		return -1
	}
	v := x.Response.Headers["X-E2e-Seq"]
	if len(v) != 1 {
		return -1
	}
	n, err := strconv.Atoi(v[0])
	if err != nil {
		return -1
	}
	return n
}

// readWAL stops the proxy and returns every exchange in the log, in the
// order their first frames were written.
func (rg *rig) readWAL(t *testing.T) []*recorded {
	t.Helper()
	rg.stop(t)
	return assembleWAL(t, rg.log)
}

// assembleWAL reads every frame of log and puts the exchanges back
// together.
func assembleWAL(t *testing.T, log *wal.Log) []*exchange.Exchange {
	t.Helper()
	r := log.NewReader()
	defer r.Close()
	var a exchange.Assembler
	for r.Next() {
		p, err := r.Payload()
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Add(r.Header(), p); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	return a.Exchanges()
}

// checkExchange asserts the shape every forwarded exchange must have in
// the WAL: request start, the request body (when there was one), response
// start, the response body, and a complete end; and that both bodies are
// the bytes that crossed the wire.
func checkExchange(t *testing.T, x *recorded, reqs []seen) {
	t.Helper()
	checkExchangeEnd(t, x, reqs, false)
}

// checkExchangeEnd is checkExchange; with hangup, the client may have
// gone away once the whole response reached the proxy (Codex closes its
// connection on response.completed, at times before the upstream's end
// of stream): the end then says so, with the client's error alone.
func checkExchangeEnd(t *testing.T, x *recorded, reqs []seen, hangup bool) {
	t.Helper()
	name := fmt.Sprintf("exchange %d", x.ID)
	if x.Start == nil || x.Response == nil || x.End == nil {
		t.Errorf("%s: frames %v: want request start, response start and end", name, x.Kinds)
		return
	}
	name = fmt.Sprintf("exchange %d (%s %s)", x.ID, x.Start.Method, x.Start.Path)
	if x.Kinds[0] != frame.KindRequestStart || x.Kinds[len(x.Kinds)-1] != frame.KindResponseEnd {
		t.Errorf("%s: frame order %v", name, x.Kinds)
	}
	hungUp := hangup && !x.End.Complete && x.End.Error == "client disconnected" && len(x.Errors) == 1 &&
		x.Errors[0].Stage == "client" && strings.HasPrefix(x.Errors[0].Error, "client went away after")
	if (!x.End.Complete || x.End.Error != "" || len(x.Errors) > 0) && !hungUp {
		t.Errorf("%s: end %+v errors %+v", name, x.End, x.Errors)
	}
	n := seqOf(x)
	if n < 0 || n >= len(reqs) {
		t.Errorf("%s: no X-E2e-Seq in the recorded response headers %v", name, x.Response.Headers)
		return
	}
	s := reqs[n]
	if !bytes.Equal(x.RequestBody, s.Body) {
		t.Errorf("%s: recorded request body (%d bytes) differs from what the upstream received (%d bytes)", name, len(x.RequestBody), len(s.Body))
	}
	if len(s.Body) > 0 && !x.RequestLast {
		t.Errorf("%s: no request body frame carries FlagLast", name)
	}
	if x.Start.BodyBytes != int64(len(s.Body)) || x.End.RequestBytes != int64(len(s.Body)) {
		t.Errorf("%s: body_bytes %d, request_bytes %d, upstream received %d", name, x.Start.BodyBytes, x.End.RequestBytes, len(s.Body))
	}
	if !bytes.Equal(x.ResponseBody, s.Sent) {
		t.Errorf("%s: recorded response body differs from what the upstream sent:\nrecorded %q\nsent     %q", name, x.ResponseBody, s.Sent)
	}
	if x.End.ResponseBytes != int64(len(s.Sent)) || x.End.Status != s.Status || x.Response.Status != s.Status {
		t.Errorf("%s: end status %d, %d bytes; upstream sent %d, %d bytes", name, x.End.Status, x.End.ResponseBytes, s.Status, len(s.Sent))
	}
}

// scanFiles fails the test if any file under dir holds one of needles.
func scanFiles(t *testing.T, dir string, needles ...string) {
	t.Helper()
	n := 0
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		for _, s := range needles {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds the secret %q", path, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Errorf("no files under %s to scan", dir)
	}
}

// tripwire is an HTTP(S) forward proxy on loopback given to the clients
// as HTTP_PROXY and HTTPS_PROXY: any request that is not for loopback
// would otherwise leave the machine, so it is refused and remembered.
type tripwire struct {
	*httptest.Server
	mu    sync.Mutex
	hosts []string
}

func newTripwire(t *testing.T) *tripwire {
	tw := &tripwire{}
	tw.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if r.Method != http.MethodConnect && r.URL.Host != "" {
			host = r.URL.Host
		}
		tw.mu.Lock()
		tw.hosts = append(tw.hosts, r.Method+" "+host+r.URL.Path)
		tw.mu.Unlock()
		http.Error(w, "e2e tripwire: no traffic leaves the machine", http.StatusForbidden)
	}))
	t.Cleanup(tw.Close)
	return tw
}

// attempts returns the refused requests, sorted and without duplicates.
func (tw *tripwire) attempts() []string {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	m := map[string]bool{}
	for _, h := range tw.hosts {
		m[h] = true
	}
	out := make([]string, 0, len(m))
	for h := range m {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// env returns proxy variables that route every non-loopback request to
// the tripwire.
func (tw *tripwire) env() []string {
	u := tw.URL
	return []string{
		"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u,
		"NO_PROXY=127.0.0.1,localhost,::1", "no_proxy=127.0.0.1,localhost,::1",
	}
}

// loopbackOnly stops the test unless rawURL (http://host:port) is on
// loopback.
func loopbackOnly(t *testing.T, rawURL string) {
	t.Helper()
	host := strings.TrimPrefix(rawURL, "http://")
	h, _, err := net.SplitHostPort(host)
	if err != nil || !net.ParseIP(h).IsLoopback() {
		t.Fatalf("%s is not a loopback address", rawURL)
	}
}

// logOutput logs b line by line.
func logOutput(t *testing.T, what string, b []byte) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		t.Logf("%s: %s", what, sc.Text())
	}
}
