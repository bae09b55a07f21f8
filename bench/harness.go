package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/wal"
)

// Path is one way from the client to the fake upstream.
type Path string

// The paths compared. All three servers listen on 127.0.0.1 in the
// process that runs the client.
const (
	// Direct is the client talking to the fake upstream.
	Direct Path = "direct"
	// ReverseProxy is a bare httputil.ReverseProxy with FlushInterval -1
	// and the same upstream transport settings as bbengine's default.
	ReverseProxy Path = "reverseproxy"
	// BBEngine is proxy.New in Lossless mode recording into a WAL opened
	// with Sync: wal.SyncInterval (snappy on, as by default).
	BBEngine Path = "bbengine"
)

// BBEngineFull is `bbengine proxy` as the command runs it, in this
// process (cli.MainContext) on a data directory of its own: the
// recorder with derivation, memory and the index following the WAL
// beside it (lossless, WAL sync as Config.Sync). Config.Engine adds it.
const BBEngineFull Path = "bbengine-engine"

// BBEngineFullEncrypted is BBEngineFull in a data directory encrypted at
// rest (Config.Encrypted).
const BBEngineFullEncrypted Path = "bbengine-engine-enc"

// Paths lists the paths in report order.
var Paths = []Path{Direct, ReverseProxy, BBEngine}

// Case is one request shape.
type Case string

// The request shapes. All are POST /v1/messages; the body says
// "stream":true or false, a request header tells the fake upstream how to
// pace a stream.
const (
	// Stream is a streaming request answered with Config.Events
	// Anthropic-style SSE events (event:/data: pairs), each flushed, in
	// lockstep: the upstream writes an event once the client has read the
	// previous one. Every event then crosses the proxy as a chunk of its
	// own, as it does when a model generates tokens more slowly than the
	// proxy forwards them, and total time is the sum of one-way event
	// latencies.
	Stream Case = "stream"
	// StreamBurst is Stream with the events written back to back. On
	// loopback they coalesce: the proxy reads the whole stream in one or
	// two chunks, so this measures bulk forwarding, not per-event cost.
	StreamBurst Case = "stream-burst"
	// JSON is a non-streaming request answered with one JSON message
	// carrying the same text, with Content-Length.
	JSON Case = "json"
)

// Cases lists the request shapes in report order.
var Cases = []Case{Stream, StreamBurst, JSON}

// IsStream reports whether c is answered with SSE events.
func (c Case) IsStream() bool { return c == Stream || c == StreamBurst }

// Config configures a Rig. The zero value means defaults.
type Config struct {
	// Dir is the WAL directory. The default is a new temporary directory
	// that Close removes.
	Dir string
	// Events is the number of SSE events in a stream. The default is 50.
	Events int
	// Sync is the WAL's sync policy. The default (the zero value) is
	// wal.SyncInterval.
	Sync wal.SyncPolicy
	// ExtraModes adds a bbengine path per capture mode, named
	// "bbengine-<mode>" (bbengine-privacy, ...), each with a WAL of its own
	// in a subdirectory. Comparing modes splits the cost of capture:
	// privacy records no body chunks, passthrough only sniffs usage in
	// them, lossless also redacts and appends them.
	ExtraModes []proxy.Mode
	// Engine adds the BBEngineFull path: the whole engine running beside
	// the proxy. The default is false.
	Engine bool
	// Encrypted, with Engine, adds the BBEngineFullEncrypted path: the
	// same in a data directory made by `bbengine init --encrypt`. The
	// default is false.
	Encrypted bool
}

// upstreamHeader marks responses written by the fake upstream, so that an
// error page from a proxy cannot pass for a measured response; paceHeader
// tells the upstream the Case of a request.
const (
	upstreamHeader = "Bench-Upstream"
	paceHeader     = "Bench-Case"
)

// Rig holds the fake upstream, the proxies in front of it and one
// keep-alive client per path. Its methods are not safe for concurrent use:
// the harness sends requests one at a time so that client, proxy and
// upstream contend for the cores as little as possible.
type Rig struct {
	cfg     Config
	tmpDir  string
	up      *fakeUpstream
	servers []*server
	paths   []Path
	urls    map[Path]string
	clients map[Path]*http.Client
	bb      map[Path]*instance // the bbengine paths
	full    *fullProxy         // the BBEngineFull path, or nil
	fullEnc *fullProxy         // the BBEngineFullEncrypted path, or nil
	rpLog   lastLine           // the bare reverse proxy's error log
	closed  bool

	header  map[Case]http.Header // request headers, shared read-only by every request
	reqBody map[Case][]byte      // request bodies
	want    map[Case][]byte      // expected response bodies
	bounds  []int                // where each event of a stream ends
	buf     []byte               // response body of the last Do
	lastEx  uint64               // X-Bb-Exchange-Id of the last Do
}

// instance is one bbengine proxy with its WAL and server.
type instance struct {
	proxy   *proxy.Proxy
	log     *wal.Log
	srv     *server
	stopped bool
}

// stop closes the server, then the proxy, which writes every queued frame.
func (in *instance) stop() error {
	if in.stopped {
		return nil
	}
	in.stopped = true
	if in.srv != nil {
		in.srv.close()
	}
	if in.proxy != nil {
		return in.proxy.Close()
	}
	return nil
}

// IsBBEngine reports whether p goes through a bbengine proxy.
func (p Path) IsBBEngine() bool { return strings.HasPrefix(string(p), string(BBEngine)) }

// NewRig starts the upstream and the proxies on 127.0.0.1.
func NewRig(cfg Config) (rg *Rig, err error) {
	if cfg.Events <= 0 {
		cfg.Events = 50
	}
	if cfg.Events < 5 {
		cfg.Events = 5
	}
	rg = &Rig{cfg: cfg, urls: map[Path]string{}, clients: map[Path]*http.Client{}, bb: map[Path]*instance{}}
	defer func() {
		if err != nil {
			rg.Close()
			rg = nil
		}
	}()
	events := StreamEvents(cfg.Events)
	rg.up = &fakeUpstream{events: events, json: JSONBody(cfg.Events), next: make(chan struct{}, len(events)), quit: make(chan struct{})}
	stream := bytes.Join(events, nil)
	rg.want = map[Case][]byte{Stream: stream, StreamBurst: stream, JSON: rg.up.json}
	end := 0
	for _, ev := range events {
		end += len(ev)
		rg.bounds = append(rg.bounds, end)
	}
	streamReq := []byte(`{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"Summarise proxy/proxy.go in one paragraph."}]}`)
	rg.reqBody = map[Case][]byte{
		Stream:      streamReq,
		StreamBurst: streamReq,
		JSON:        []byte(`{"model":"claude-sonnet-4-5","max_tokens":1024,"stream":false,"messages":[{"role":"user","content":"Summarise proxy/proxy.go in one paragraph."}]}`),
	}
	rg.header = map[Case]http.Header{}
	for _, c := range Cases {
		rg.header[c] = http.Header{
			"Content-Type":      {"application/json"},
			"Anthropic-Version": {"2023-06-01"},
			"X-Api-Key":         {"sk-ant-api03-benchbenchbenchbenchbench"},
			"User-Agent":        {"proxybench/1"},
			paceHeader:          {string(c)},
		}
	}

	upSrv, err := serve(rg.up)
	if err != nil {
		return rg, err
	}
	rg.servers = append(rg.servers, upSrv)
	rg.urls[Direct] = upSrv.url
	target, _ := url.Parse(upSrv.url)

	rp := &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target) },
		Transport:     upstreamTransport(),
		FlushInterval: -1,
		ErrorLog:      stdlog.New(&rg.rpLog, "", 0),
	}
	rpSrv, err := serve(rp)
	if err != nil {
		return rg, err
	}
	rg.servers = append(rg.servers, rpSrv)
	rg.urls[ReverseProxy] = rpSrv.url

	dir := cfg.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "proxybench-wal-"); err != nil {
			return rg, err
		}
		rg.tmpDir = dir
	}
	rg.paths = slices.Clone(Paths)
	modes := append([]proxy.Mode{proxy.Lossless}, cfg.ExtraModes...)
	for i, mode := range modes {
		p, walDir := BBEngine, dir
		if i > 0 {
			p, walDir = Path(string(BBEngine)+"-"+mode.String()), filepath.Join(dir, mode.String())
			if _, dup := rg.bb[p]; dup {
				continue
			}
			rg.paths = append(rg.paths, p)
		}
		in := &instance{}
		rg.bb[p] = in
		if in.log, err = wal.Open(walDir, &wal.Options{Sync: cfg.Sync}); err != nil {
			return rg, err
		}
		if in.proxy, err = proxy.New(in.log, &proxy.Options{Mode: mode, Upstreams: map[string]string{"anthropic": upSrv.url}}); err != nil {
			return rg, err
		}
		if in.srv, err = serve(in.proxy); err != nil {
			return rg, err
		}
		rg.urls[p] = in.srv.url
	}

	if cfg.Engine {
		if rg.full, err = startFull(filepath.Join(dir, "engine"), upSrv.url, cfg.Sync, false); err != nil {
			return rg, err
		}
		rg.paths = append(rg.paths, BBEngineFull)
		rg.urls[BBEngineFull] = rg.full.url
		if cfg.Encrypted {
			if rg.fullEnc, err = startFull(filepath.Join(dir, "engine-enc"), upSrv.url, cfg.Sync, true); err != nil {
				return rg, err
			}
			rg.paths = append(rg.paths, BBEngineFullEncrypted)
			rg.urls[BBEngineFullEncrypted] = rg.fullEnc.url
		}
	}

	for _, p := range rg.paths {
		rg.clients[p] = &http.Client{Transport: &http.Transport{
			DisableCompression:  true,
			MaxIdleConns:        4,
			MaxIdleConnsPerHost: 4,
		}}
	}
	return rg, nil
}

// upstreamTransport is what proxy.New uses when Options.Transport is nil:
// a clone of http.DefaultTransport that never adds compression.
func upstreamTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ForceAttemptHTTP2 = true
	t.DisableCompression = true
	t.MaxIdleConnsPerHost = 64
	return t
}

// Events returns the number of SSE events in a stream.
func (rg *Rig) Events() int { return rg.cfg.Events }

// Want returns the response body every path must deliver for c.
func (rg *Rig) Want(c Case) []byte { return rg.want[c] }

// Body returns the response body of the last successful Do. It is valid
// until the next Do.
func (rg *Rig) Body() []byte { return rg.buf }

// UpstreamHits returns the number of requests the fake upstream served.
func (rg *Rig) UpstreamHits() int64 { return rg.up.hits.Load() }

// LastExchange returns the exchange id bbengine gave the last request
// (0 when it did not go through bbengine).
func (rg *Rig) LastExchange() uint64 { return rg.lastEx }

// Log returns the WAL of bbengine path p, or nil.
func (rg *Rig) Log(p Path) *wal.Log {
	if in := rg.bb[p]; in != nil {
		return in.log
	}
	return nil
}

// WALDir returns the directory of the bbengine path's WAL.
func (rg *Rig) WALDir() string { return rg.bb[BBEngine].log.Dir() }

// Paths returns the rig's paths: Paths, then one per Config.ExtraModes.
func (rg *Rig) Paths() []Path { return rg.paths }

// Sample is the timing of one request, measured by the client from just
// before it sends the request.
type Sample struct {
	TTFB     time.Duration // until the first response body byte was read
	Total    time.Duration // until the response body's EOF
	exchange uint64        // X-Bb-Exchange-Id, 0 when none
}

// Do sends one request of shape c along path p and reads the whole
// response. It fails unless the response is the fake upstream's 200 with
// exactly the expected body and came through p (only bbengine adds
// X-Bb-Exchange-Id), so a benchmark cannot measure an error path.
func (rg *Rig) Do(p Path, c Case) (Sample, error) {
	s, buf, err := rg.do(p, c, rg.buf[:0])
	rg.buf = buf
	if err == nil {
		rg.lastEx = s.exchange
	}
	return s, err
}

// DoConcurrent sends n requests of shape c along path p from each of
// clients goroutines at once, over the path's keep-alive connections
// (at most 4 idle), and returns the samples of the requests that
// succeeded, the number that failed and the last error. c must not be
// Stream: its lockstep pacing is one stream at a time.
func (rg *Rig) DoConcurrent(p Path, c Case, clients, n int) (samples []Sample, failed int, lastErr error) {
	if c == Stream && clients > 1 {
		return nil, 0, fmt.Errorf("bench: %s streams in lockstep, one at a time", c)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	samples = make([]Sample, 0, clients*n)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for range n {
				s, b, err := rg.do(p, c, buf[:0])
				buf = b
				mu.Lock()
				if err != nil {
					failed++
					lastErr = err
				} else {
					samples = append(samples, s)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return samples, failed, lastErr
}

// do sends one request, reading the body into buf; it returns buf
// grown. It touches no state of rg but the upstream's lockstep channel
// (Stream only).
func (rg *Rig) do(p Path, c Case, buf []byte) (Sample, []byte, error) {
	client := rg.clients[p]
	if in := rg.bb[p]; client == nil || (in != nil && in.stopped) {
		return Sample{}, buf, fmt.Errorf("bench: path %q is not running", p)
	}
	req, err := http.NewRequest(http.MethodPost, rg.urls[p]+"/v1/messages", bytes.NewReader(rg.reqBody[c]))
	if err != nil {
		return Sample{}, buf, err
	}
	req.Header = rg.header[c]
	var ttfb time.Duration
	lockstep, ev := c == Stream, 0
	for lockstep && len(rg.up.next) > 0 { // left by a failed request
		<-rg.up.next
	}

	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return Sample{}, buf, fmt.Errorf("bench: %s %s: %w%s", p, c, err, rg.logged(p))
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, rerr := resp.Body.Read(buf[len(buf):cap(buf)])
		if n > 0 && ttfb == 0 {
			ttfb = time.Since(start)
		}
		buf = buf[:len(buf)+n]
		for lockstep && ev < len(rg.bounds) && len(buf) >= rg.bounds[ev] {
			if ev++; ev < len(rg.bounds) {
				rg.up.next <- struct{}{} // the upstream may write the next event
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			resp.Body.Close()
			return Sample{}, buf, fmt.Errorf("bench: %s %s: reading the body after %d bytes: %w%s", p, c, len(buf), rerr, rg.logged(p))
		}
	}
	total := time.Since(start)
	resp.Body.Close()
	ex, _ := strconv.ParseUint(resp.Header.Get("X-Bb-Exchange-Id"), 10, 64)

	switch {
	case resp.StatusCode != http.StatusOK:
		return Sample{}, buf, fmt.Errorf("bench: %s %s: status %d: %.200q", p, c, resp.StatusCode, buf)
	case resp.Header.Get(upstreamHeader) == "":
		return Sample{}, buf, fmt.Errorf("bench: %s %s: the response did not come from the fake upstream", p, c)
	case (resp.Header.Get("X-Bb-Exchange-Id") != "") != p.IsBBEngine():
		return Sample{}, buf, fmt.Errorf("bench: %s %s: the response did not come through the %s path (X-Bb-Exchange-Id %q)", p, c, p, resp.Header.Get("X-Bb-Exchange-Id"))
	case !bytes.Equal(buf, rg.want[c]):
		return Sample{}, buf, fmt.Errorf("bench: %s %s: body of %d bytes differs from the expected %d bytes", p, c, len(buf), len(rg.want[c]))
	}
	return Sample{TTFB: ttfb, Total: total, exchange: ex}, buf, nil
}

// logged returns what the bare reverse proxy logged since the last call,
// to explain a failed request.
func (rg *Rig) logged(p Path) string {
	if p != ReverseProxy {
		return ""
	}
	time.Sleep(10 * time.Millisecond) // the proxy logs after the client saw the failure
	if l := rg.rpLog.take(); l != "" {
		return " (reverseproxy logged: " + l + ")"
	}
	return ""
}

// lastLine keeps the last line written to it.
type lastLine struct {
	mu   sync.Mutex
	line string
}

func (l *lastLine) Write(b []byte) (int, error) {
	l.mu.Lock()
	l.line = strings.TrimSpace(string(b))
	l.mu.Unlock()
	return len(b), nil
}

func (l *lastLine) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.line
	l.line = ""
	return s
}

// Allocs sends n requests of shape c along p and returns the heap
// allocations (runtime.MemStats.Mallocs) and bytes (TotalAlloc) per
// request, counted over the whole process: client, servers, the proxy's
// recorder and the WAL writer. The proxy's own share is the difference
// from the Direct path measured in the same process (see AllocsPerChunk).
// A failed request still counts as one of the n (the bare reverse proxy
// sometimes truncates a stream, golang/go#40747); more than n/10 failures
// is an error.
func (rg *Rig) Allocs(p Path, c Case, n int) (allocs, bytes float64, err error) {
	var m0, m1 runtime.MemStats
	var failed int
	runtime.ReadMemStats(&m0)
	for range n {
		if _, err = rg.Do(p, c); err != nil {
			failed++
		}
	}
	runtime.ReadMemStats(&m1)
	if failed > n/10 {
		return 0, 0, fmt.Errorf("%d of %d requests failed; last: %w", failed, n, err)
	}
	return float64(m1.Mallocs-m0.Mallocs) / float64(n), float64(m1.TotalAlloc-m0.TotalAlloc) / float64(n), nil
}

// AllocsPerChunk turns allocations per request into allocations per
// streamed chunk that the proxy adds: (proxied − baseline) / events. With
// Direct as baseline it is bbengine's whole cost; with ReverseProxy it is
// what recording adds to a bare reverse proxy. Per-request costs (routing,
// ids, the request and end frames) are spread over the events.
func AllocsPerChunk(proxied, baseline float64, events int) float64 {
	return (proxied - baseline) / float64(events)
}

// Stats are the percentiles of a set of samples.
type Stats struct {
	N                   int
	TTFB50, TTFB99      time.Duration
	Total50, Total99    time.Duration
	TTFBMean, TotalMean time.Duration
}

// Summarize returns the p50 and p99 (nearest rank) of samples.
func Summarize(samples []Sample) Stats {
	st := Stats{N: len(samples)}
	if len(samples) == 0 {
		return st
	}
	ttfb := make([]time.Duration, len(samples))
	total := make([]time.Duration, len(samples))
	var st1, st2 time.Duration
	for i, s := range samples {
		ttfb[i], total[i] = s.TTFB, s.Total
		st1 += s.TTFB
		st2 += s.Total
	}
	slices.Sort(ttfb)
	slices.Sort(total)
	st.TTFB50, st.TTFB99 = Percentile(ttfb, 50), Percentile(ttfb, 99)
	st.Total50, st.Total99 = Percentile(total, 50), Percentile(total, 99)
	st.TTFBMean, st.TotalMean = st1/time.Duration(len(samples)), st2/time.Duration(len(samples))
	return st
}

// Percentile returns the nearest-rank q-th percentile of sorted.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted))*q/100+0.999999999) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Micros returns d in microseconds.
func Micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// Settle waits (at most 10 s) until every bbengine recorder has drained
// its queue and its WAL has stopped growing for 2 ms, so that background
// work is charged to the block that caused it, not to whatever is
// measured next. Polls back off exponentially: Health allocates, and a
// poll every 100 µs through a long drain would inflate the allocation
// counts by several allocations per request.
func (rg *Rig) Settle() {
	deadline := time.Now().Add(10 * time.Second)
	if rg.full != nil {
		rg.full.settle(deadline)
	}
	if rg.fullEnc != nil {
		rg.fullEnc.settle(deadline)
	}
	for _, in := range rg.bb {
		if in.stopped {
			continue
		}
		wait := 500 * time.Microsecond
		for in.proxy.Health().Queue > 0 && time.Now().Before(deadline) {
			time.Sleep(wait)
			wait = min(2*wait, 16*time.Millisecond)
		}
		last, _ := in.log.End()
		for stable := 0; stable < 2 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
			end, _ := in.log.End()
			if end == last {
				stable++
			} else {
				last, stable = end, 0
			}
		}
	}
}

// Recorded is what the bbengine path wrote to the WAL for one exchange.
type Recorded struct {
	ID     uint64
	Case   Case                 // from the request's headers
	Stream bool                 // the request asked for a stream
	Body   []byte               // response body frames, concatenated (only when asked for)
	End    exchange.ResponseEnd // zero when Ended is false
	Ended  bool
}

// Recorded stops the BBEngine path (its server, then the proxy, which
// writes every queued frame) and reads its WAL back. It returns the
// exchanges in WAL order; bodies are kept when keepBodies is set. The
// other paths keep working.
func (rg *Rig) Recorded(keepBodies bool) ([]*Recorded, error) {
	in := rg.bb[BBEngine]
	if err := in.stop(); err != nil {
		return nil, err
	}
	r := in.log.NewReader()
	defer r.Close()
	a := exchange.Assembler{SkipBodies: !keepBodies}
	for r.Next() {
		p, err := r.Payload()
		if err != nil {
			return nil, err
		}
		if err := a.Add(r.Header(), p); err != nil {
			return nil, err
		}
	}
	if err := r.Err(); err != nil {
		return nil, err
	}
	var out []*Recorded
	for _, x := range a.Exchanges() {
		rec := &Recorded{ID: x.ID, Body: x.ResponseBody}
		if x.Start != nil {
			rec.Stream = x.Start.Stream
			if v := x.Start.Headers[paceHeader]; len(v) == 1 {
				rec.Case = Case(v[0])
			}
		}
		if x.End != nil {
			rec.End, rec.Ended = *x.End, true
		}
		out = append(out, rec)
	}
	return out, nil
}

// Close stops every server and closes the WALs.
func (rg *Rig) Close() error {
	if rg.closed {
		return nil
	}
	rg.closed = true
	var errs []error
	for _, in := range rg.bb {
		errs = append(errs, in.stop())
	}
	if rg.full != nil {
		errs = append(errs, rg.full.stop())
	}
	if rg.fullEnc != nil {
		errs = append(errs, rg.fullEnc.stop())
	}
	for _, c := range rg.clients {
		c.CloseIdleConnections()
	}
	if rg.up != nil {
		close(rg.up.quit)
	}
	for _, s := range rg.servers {
		s.close()
	}
	for _, in := range rg.bb {
		if in.log != nil {
			errs = append(errs, in.log.Close())
		}
	}
	if rg.tmpDir != "" {
		errs = append(errs, os.RemoveAll(rg.tmpDir))
	}
	return errors.Join(errs...)
}

// server is an http.Server on a loopback port.
type server struct {
	srv *http.Server
	url string
}

func serve(h http.Handler) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &server{
		srv: &http.Server{Handler: h, ReadHeaderTimeout: time.Minute, ErrorLog: stdlog.New(io.Discard, "", 0)},
		url: "http://" + ln.Addr().String(),
	}
	go s.srv.Serve(ln)
	return s, nil
}

// close stops the server after its handlers return (the bbengine proxy
// records an exchange's end frame when its handler finishes, which can be
// just after the client has read the last byte), then closes what is left.
func (s *server) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.srv.Shutdown(ctx)
	s.srv.Close()
}

// fakeUpstream answers POST /v1/messages like Anthropic's Messages API:
// a stream of events flushed one by one when the body asks for
// "stream":true, else one JSON message.
type fakeUpstream struct {
	events [][]byte
	json   []byte
	hits   atomic.Int64
	next   chan struct{} // Stream: the client has read the previous event
	quit   chan struct{} // closed by Rig.Close
}

var reqBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func (u *fakeUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.hits.Add(1)
	b := reqBufs.Get().(*bytes.Buffer)
	b.Reset()
	_, err := b.ReadFrom(r.Body)
	streaming := bytes.Contains(b.Bytes(), []byte(`"stream":true`))
	lockstep := r.Header.Get(paceHeader) == string(Stream)
	reqBufs.Put(b)
	if err != nil || r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		http.Error(w, "fake upstream: want POST /v1/messages", http.StatusBadRequest)
		return
	}
	h := w.Header()
	h.Set(upstreamHeader, "1")
	h.Set("Request-Id", "req_bench")
	if !streaming {
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(u.json)))
		w.Write(u.json)
		return
	}
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f := w.(http.Flusher)
	for i, ev := range u.events {
		if lockstep && i > 0 {
			select {
			case <-u.next:
			case <-r.Context().Done():
				return
			case <-u.quit:
				return
			}
		}
		if _, err := w.Write(ev); err != nil {
			return
		}
		f.Flush()
	}
}

// deltaTexts returns n short text fragments, like the few tokens of a
// content_block_delta.
func deltaTexts(n int) []string {
	words := []string{"The", "proxy", "reads", "the", "request", "body", "into", "memory,", "records", "each",
		"chunk", "in", "the", "WAL", "and", "forwards", "bytes", "unchanged;", "usage", "is", "sniffed", "as", "it", "streams."}
	out := make([]string, n)
	x := uint32(2463534242)
	for i := range out {
		var sb strings.Builder
		k := 3 + i%4
		for j := 0; j < k; j++ {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			sb.WriteString(" ")
			sb.WriteString(words[x%uint32(len(words))])
		}
		out[i] = sb.String()
	}
	return out
}

// StreamEvents returns n (at least 5) Anthropic-style SSE events:
// message_start, content_block_start, n-5 text deltas,
// content_block_stop, message_delta (with usage) and message_stop.
func StreamEvents(n int) [][]byte {
	n = max(n, 5)
	ev := func(typ, data string) []byte { return []byte("event: " + typ + "\ndata: " + data + "\n\n") }
	out := [][]byte{
		ev("message_start", `{"type":"message_start","message":{"id":"msg_bench","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":2048,"cache_read_input_tokens":1024,"output_tokens":1}}}`),
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
	}
	for _, t := range deltaTexts(n - 5) {
		out = append(out, ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"`+t+`"}}`))
	}
	out = append(out,
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`),
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":`+strconv.Itoa(3*n)+`}}`),
		ev("message_stop", `{"type":"message_stop"}`),
	)
	return out
}

// JSONBody returns the non-streaming message with the text of
// StreamEvents(n).
func JSONBody(n int) []byte {
	text := strings.Join(deltaTexts(max(n, 5)-5), "")
	return []byte(`{"id":"msg_bench","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"` + text +
		`"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":2048,"cache_read_input_tokens":1024,"output_tokens":` + strconv.Itoa(3*max(n, 5)) + `}}`)
}
