package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"mime"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bbengine/bbengine/agents"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/internal/bodybuf"
	"github.com/bbengine/bbengine/internal/guard"
	"github.com/bbengine/bbengine/proxy/breaker"
	"github.com/bbengine/bbengine/wal"
)

// Mode is how much of each exchange the proxy records.
type Mode int

// Capture modes.
const (
	// Lossless records every byte; when the recorder's queue is full the
	// stream waits rather than lose anything.
	Lossless Mode = iota
	// Degrade drops body chunks (never metadata) when the queue is full,
	// and counts them in the exchange's end frame.
	Degrade
	// Privacy records metadata only: no request or response bodies.
	Privacy
	// Passthrough records only each exchange's end frame: status,
	// timings, byte counts and token usage.
	Passthrough
)

var modeNames = [...]string{"lossless", "degrade", "privacy", "passthrough"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// ParseMode parses a mode name.
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if s == n {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("proxy: unknown mode %q (want lossless, degrade, privacy or passthrough)", s)
}

// DefaultUpstreams are the routes the proxy knows without configuration.
// anthropic, openai and gemini are chosen by path (see Route); every name
// is also a path prefix: /ollama/v1/chat/completions goes to
// http://127.0.0.1:11434/v1/chat/completions.
var DefaultUpstreams = map[string]string{
	"anthropic": "https://api.anthropic.com",
	"openai":    "https://api.openai.com",
	"gemini":    "https://generativelanguage.googleapis.com",
	"ollama":    "http://127.0.0.1:11434",
	"lmstudio":  "http://127.0.0.1:1234",
	"vllm":      "http://127.0.0.1:8000",
}

// Options configure a Proxy. A nil *Options means defaults.
type Options struct {
	// Upstreams adds or replaces routes: name → base URL. The default is
	// DefaultUpstreams.
	Upstreams map[string]string
	// Mode is the capture mode. The default is Lossless.
	Mode Mode
	// QueueLen bounds the recorder's queue of frames. The default is 4096.
	QueueLen int
	// MaxRequestBody bounds a request body; a larger one is refused with
	// 413. The default is 64 MiB.
	MaxRequestBody int64
	// RedactPatterns are extra body redaction rules, "kind=regexp" or a
	// bare regexp. The default is none beyond the built-in rules.
	RedactPatterns []string
	// HeaderTimeout bounds the wait for an upstream's response headers
	// once the request is sent (big-context requests and reasoning models
	// take minutes). When it fires the client gets 504 and the exchange an
	// error frame. The default is 10 minutes; negative turns it off.
	HeaderTimeout time.Duration
	// IdleTimeout bounds how long a response body may go without a byte
	// from the upstream (a stalled stream); time the proxy spends waiting
	// for a slow client does not count. When it fires the response is cut
	// and the exchange gets an error frame. The default is 5 minutes;
	// negative turns it off.
	IdleTimeout time.Duration
	// BodyTimeout bounds how long a client may go without sending a byte
	// of its request body. When it fires the client gets 408 and the
	// exchange an error frame. The default is 60 seconds; negative turns
	// it off.
	BodyTimeout time.Duration
	// Transport sends requests upstream. The default is a clone of
	// http.DefaultTransport (HTTP/2 when the upstream offers it) that never
	// adds its own compression.
	Transport http.RoundTripper
	// Logf receives one line per failure worth a person's attention. The
	// default discards them.
	Logf func(format string, args ...any)
	// Session, Task and Run, when set, are the ids every exchange is
	// recorded under, whatever the request's headers say (session source
	// "run"): bbengine run starts a proxy for one agent running one task.
	// The defaults are empty.
	Session, Task, Run string
	// AllowOrigins are the web origins ("scheme://host[:port]") whose
	// browser requests are accepted (package internal/guard). The default
	// is none: a request carrying an Origin header, or Sec-Fetch-Site:
	// cross-site, is refused with 403 and neither forwarded nor recorded,
	// so a web page cannot write into a session or use the proxy.
	AllowOrigins []string
	// Breaker configures the circuit breaker (package proxy/breaker); its
	// Record is wrapped to write each change to the WAL. The default is
	// breaker.Defaults() with no project. Config.Enabled false turns it
	// off.
	Breaker *breaker.Options
}

// Proxy is a recording reverse proxy: an http.Handler that forwards
// provider traffic unchanged and records it in a WAL. It is safe for
// concurrent use. Close it after the http.Server that serves it has shut
// down, and before closing the WAL.
type Proxy struct {
	opts      Options
	upstreams map[string]*url.URL
	log       *wal.Log
	red       *Redactor
	rp        *httputil.ReverseProxy
	rec       *recorder
	metrics   *metrics
	breaker   *breaker.Breaker
	// bodies remembers recent request bodies' layouts, so that reading
	// the model, stream flag and session of a body that resends one
	// costs memory speed (bodyMemo).
	bodies bodyMemo
	guard  *guard.Policy
	// sessionHeaders are the headers an agent's own session id is read
	// from, in order of trust: the proxy's own list and the registered
	// agents' (agents.SessionHeaders). Set by New, not changed after.
	sessionHeaders []string
	nextEx         atomic.Uint64
	// active counts the exchanges in progress (see Active).
	active atomic.Int64
	// unrecorded counts requests that came while the WAL failed:
	// refused (lossless) or forwarded (degrade).
	refusedUnrecorded, forwardedUnrecorded atomic.Uint64
	started                                time.Time
	derivation                             atomic.Pointer[func() string]
	retention                              atomic.Pointer[func() string]
	closeOnce                              sync.Once
}

// Active returns the number of exchanges in progress: work that can wait
// (derivation) gives them the CPU first.
func (p *Proxy) Active() int64 { return p.active.Load() }

// New returns a Proxy recording into log.
func New(log *wal.Log, opts *Options) (*Proxy, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.QueueLen <= 0 {
		o.QueueLen = 4096
	}
	if o.MaxRequestBody <= 0 {
		o.MaxRequestBody = 64 << 20
	}
	if o.HeaderTimeout == 0 {
		o.HeaderTimeout = 10 * time.Minute
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = 5 * time.Minute
	}
	if o.BodyTimeout == 0 {
		o.BodyTimeout = 60 * time.Second
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	for _, id := range [][2]string{{"session", o.Session}, {"task", o.Task}, {"run", o.Run}} {
		if id[1] != "" && !exchange.ValidID(id[1]) {
			return nil, fmt.Errorf("proxy: %s id %q: at most 255 bytes, no control characters", id[0], id[1])
		}
	}
	p := &Proxy{opts: o, log: log, upstreams: map[string]*url.URL{}, started: time.Now(), sessionHeaders: agents.SessionHeaders(sessionHeaders)}
	var err error
	ups := map[string]string{}
	for k, v := range DefaultUpstreams {
		ups[k] = v
	}
	for k, v := range o.Upstreams {
		ups[k] = v
	}
	for name, raw := range ups {
		if name == "" || strings.ContainsAny(name, "/ ") || name == "_bb" || name == "v1" || name == "v1beta" {
			return nil, fmt.Errorf("proxy: upstream name %q: use letters, digits, '-' or '_' (and not v1, v1beta or _bb)", name)
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("proxy: upstream %s=%q: want an http:// or https:// URL", name, StripUserinfo(raw))
		}
		p.upstreams[name] = u
	}
	if p.guard, err = guard.New(o.AllowOrigins); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	red, err := NewRedactor(o.RedactPatterns)
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	p.red = red
	tr := o.Transport
	if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ForceAttemptHTTP2 = true
		t.DisableCompression = true // bytes pass through as the upstream sent them
		t.MaxIdleConnsPerHost = 64
		tr = t
	}
	p.nextEx.Store(uint64(time.Now().UnixNano()))
	p.metrics = newMetrics()
	p.rec = newRecorder(p, o.QueueLen)
	p.breaker = p.newBreaker(o.Breaker)
	p.rp = &httputil.ReverseProxy{
		Rewrite:   p.rewrite,
		Transport: timedTransport{tr},
		// FlushInterval stays 0: ReverseProxy flushes a stream (SSE, or
		// no Content-Length) after every write by itself, and
		// clientWriter flushes every other response's writes. -1 would
		// also flush a sized reply's headers alone, from a timer
		// goroutine, one more write system call per exchange.
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.errorHandler,
		BufferPool:     bufferPool{},
		ErrorLog:       stdlog.New(logfWriter(o.Logf), "", 0),
	}
	return p, nil
}

// isEventStream reports whether ct's media type is text/event-stream, as
// ReverseProxy decides it.
func isEventStream(ct string) bool {
	mt, _, _ := mime.ParseMediaType(ct)
	return mt == "text/event-stream"
}

// timedTransport notes when each request is handed to the upstream
// transport and when its response headers come back, for the added
// latency metric.
type timedTransport struct{ rt http.RoundTripper }

func (t timedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	x, _ := req.Context().Value(ctxKey{}).(*exch)
	if x == nil {
		return t.rt.RoundTrip(req)
	}
	x.upSend = time.Since(x.arrived)
	resp, err := t.rt.RoundTrip(req)
	x.upHead = time.Since(x.arrived)
	return resp, err
}

// clientWriter is the client's http.ResponseWriter as ReverseProxy sees
// it: it notes when the first body byte is written. Unwrap keeps
// http.ResponseController (flushes, deadlines) working through it.
type clientWriter struct {
	http.ResponseWriter
	x *exch
}

func (w *clientWriter) Write(b []byte) (int, error) {
	n, err := w.ResponseWriter.Write(b)
	if n > 0 && w.x.clientFirst == 0 {
		w.x.clientFirst = time.Since(w.x.arrived)
	}
	if err == nil && w.x.flushWrites {
		// A sized reply whose upstream sends it slowly, or a stream
		// labelled as something else, reaches the client as it comes.
		if f, ok := w.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		} else {
			err = http.NewResponseController(w.ResponseWriter).Flush()
		}
	}
	return n, err
}

func (w *clientWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

type logfWriter func(string, ...any)

func (f logfWriter) Write(b []byte) (int, error) {
	f("%s", strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// bufferPool lends ReverseProxy its 32 KiB copy buffers.
type bufferPool struct{}

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

func (bufferPool) Get() []byte  { return *copyBufs.Get().(*[]byte) }
func (bufferPool) Put(b []byte) { copyBufs.Put(&b) }

// Close waits for the recorder to write every queued frame. Call it after
// the server has stopped sending requests to the proxy.
func (p *Proxy) Close() error {
	var err error
	p.closeOnce.Do(func() {
		// The breaker's counters go to the WAL before the recorder stops,
		// so a restart resumes them.
		p.breaker.Snapshot()
		err = p.rec.close()
	})
	return err
}

// Route describes where a request goes.
type Route struct {
	Provider string   // anthropic, openai, gemini, or a route name
	Target   *url.URL // upstream base URL
	Path     string   // path to request upstream (a route prefix removed)
}

var openAIPaths = []string{"/v1/chat/completions", "/v1/completions", "/v1/responses", "/v1/embeddings", "/v1/models", "/v1/files", "/v1/images", "/v1/audio", "/v1/moderations", "/v1/batches"}

// Route picks the upstream of a request: a /<name>/ prefix names a route;
// /v1beta/ goes to Gemini; OpenAI's paths go to OpenAI unless the request
// carries Anthropic's headers (both have /v1/models); anything else under
// /v1/ goes to Anthropic.
func (p *Proxy) Route(r *http.Request) (Route, bool) {
	path := r.URL.Path
	if rest, ok := strings.CutPrefix(path, "/"); ok {
		name, sub, _ := strings.Cut(rest, "/")
		if u, ok := p.upstreams[name]; ok {
			return Route{Provider: name, Target: u, Path: "/" + sub}, true
		}
	}
	switch {
	case strings.HasPrefix(path, "/v1beta/") || strings.HasPrefix(path, "/upload/v1beta/"):
		return Route{Provider: "gemini", Target: p.upstreams["gemini"], Path: path}, true
	case strings.HasPrefix(path, "/v1/"):
		anthropicHeaders := r.Header.Get("Anthropic-Version") != "" || r.Header.Get("X-Api-Key") != ""
		if !anthropicHeaders {
			for _, op := range openAIPaths {
				if path == op || strings.HasPrefix(path, op+"/") {
					return Route{Provider: "openai", Target: p.upstreams["openai"], Path: path}, true
				}
			}
		}
		return Route{Provider: "anthropic", Target: p.upstreams["anthropic"], Path: path}, true
	}
	return Route{}, false
}

type ctxKey struct{}

// exch is the proxy's state of one exchange. Fields set on the request
// path are read by the recorder only after the item that carries them is
// queued (the channel orders them).
type exch struct {
	id        uint64
	requestID string
	route     Route
	arrived   time.Time
	req       *http.Request
	header    http.Header // the client's request headers, redacted by the recorder
	start     exchange.RequestStart
	body      []byte // the whole request body, as forwarded
	// bodyRefs counts the readers of body's bytes, and pooled is the
	// buffer to give back when the last is done (bodybuf.go).
	bodyRefs  atomic.Int32
	pooled    []byte
	marks     []mark // where each request chunk ended, and when it arrived
	ttfb      time.Duration
	status    int
	respBytes int64
	chunks    int64
	dropped   int64
	dropBytes int64
	encoding  string // the response's Content-Encoding, "" for none
	// tip is the conversation the request sent, remembered when its
	// session was found by it (recorder.join); tipped says it is set.
	// reply holds the response of a tipped exchange, up to
	// maxReplyKept bytes, decoded once when it ends (per chunk only a
	// copy: a chunk may be recorded on the request's goroutine);
	// replyLong says it was longer.
	tip    tipKey
	tipped bool
	// vouch is the judgement of the reply (vouchReply) that quickGood
	// is asked about once the client has it (Proxy.vouch); set by the
	// recorder before it acknowledges the end.
	vouch      *judgement
	vouchReply []byte
	sized      bool // the response has a Content-Length
	reply      []byte
	replyLong  bool
	ended      atomic.Bool
	complete   bool // ended whole: the client had every byte
	// The times of the added-latency metric, since arrived (0: not
	// reached), all taken on the handler's goroutine: the request handed
	// to the upstream transport, its response headers, first body byte
	// and end as read from the upstream, and the first body byte written
	// to the client.
	upSend, upHead, upFirst, upEnd, clientFirst time.Duration
	flushWrites                                 bool // clientWriter flushes each write (ReverseProxy does not)
	// out is the client's ResponseWriter as ReverseProxy writes to it:
	// it notes clientFirst.
	out clientWriter
	// recorded is answered once the end frame and every frame before it
	// are written (nil in degrade mode, which never waits); see
	// waitRecorded.
	recorded chan error
	ackOnce  sync.Once
	ackErr   error
	// reqAck is answered once the request's frames are written (lossless
	// mode); see requestRecorded.
	reqAck    chan error
	reqWaited bool
	reqErr    error
	// reqHeld: the request's frames are held back in items
	// (recorder.holdRequest), not written yet.
	reqHeld bool
	// ctx is the upstream request's context: a timeout cancels it with a
	// *TimeoutError as its cause. headerTimer and idle watch it.
	ctx         context.Context
	headerTimer *time.Timer
	idle        *idleWatch
	// recorder-side state
	session string
	model   string
	redact  stream
	sniff   sniffer
	held    []heldChunk // compressed response chunks awaiting the end
	heldN   int
	// inflate decodes a compressed response too large to hold, as it
	// streams (inflate.go).
	inflate *inflater
	// Items the handler holds back until the exchange's end (recorder.add,
	// send), while holding: the head and chunks of a small sized reply,
	// recorded with its end in one write.
	holding   bool
	items     []item
	itemsBuf  [3]item
	itemBytes int
}

type mark struct {
	end int
	t   int64
}

// testReleased, when set (by tests, before any request), is called by a
// handler whose client was given its reply, before the handler vouches
// for it.
var testReleased func(x *exch)

// ServeHTTP forwards one request and records it.
//
// A request from a web page whose origin is not allowed (see
// Options.AllowOrigins) is refused before anything else: it is neither
// forwarded nor recorded. The proxy's own /_bb/ endpoints also answer
// only requests addressed to a loopback name (DNS rebinding).
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/_bb/") {
		if err := p.guard.Check(r); err != nil {
			p.opts.Logf("refused %s %s from %s: %v", r.Method, r.URL.Path, r.RemoteAddr, err)
			guard.WriteRefusal(w, err.(*guard.Refusal))
			return
		}
		p.serveOwn(w, r)
		return
	}
	if err := p.guard.CheckOrigin(r); err != nil {
		ref := err.(*guard.Refusal)
		route, _ := p.Route(r)
		p.opts.Logf("refused %s %s from %s: %s", r.Method, r.URL.Path, r.RemoteAddr, ref.Reason)
		writeError(w, route.Provider, ref.Status, ref.Reason)
		return
	}
	route, ok := p.Route(r)
	if !ok {
		writeError(w, "", http.StatusNotFound, fmt.Sprintf("bbengine proxy: no upstream for %s; use /v1/... (Anthropic, OpenAI), /v1beta/... (Gemini) or /<route>/... with a route from --upstream", r.URL.Path))
		return
	}
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		// Codex tries a WebSocket first and falls back to HTTP streaming
		// only on 426.
		writeError(w, route.Provider, http.StatusUpgradeRequired, "bbengine proxy: WebSocket is not supported; use HTTP streaming")
		return
	}
	if p.rec.isClosed() && p.opts.Mode == Lossless {
		// A handler still running after Close (a forced shutdown).
		writeError(w, route.Provider, http.StatusServiceUnavailable, "bbengine proxy: shutting down; not forwarding what can no longer be recorded (lossless mode)")
		return
	}
	if err := p.log.Failed(); err != nil {
		if p.opts.Mode == Lossless {
			// Never forward what cannot be recorded.
			p.metrics.unrecorded.WithLabelValues("refused").Inc()
			p.refusedUnrecorded.Add(1)
			writeError(w, route.Provider, http.StatusServiceUnavailable, fmt.Sprintf(
				"bbengine proxy: not recording, so not forwarding (lossless mode): the WAL in %s cannot be written: %v", p.log.Dir(), err))
			return
		}
		p.metrics.unrecorded.WithLabelValues("forwarded").Inc()
		p.forwardedUnrecorded.Add(1)
	}
	x := &exch{id: p.nextEx.Add(1), requestID: newID("req_"), route: route, arrived: time.Now(), req: r, header: r.Header.Clone()}
	// The handler's reference to the body: dropped last of its defers.
	x.holdBody()
	defer x.dropBody()
	// Whatever path the exchange takes, the handler returns (and the
	// client sees the end of the response) only after its frames are
	// written.
	defer func() {
		if x.reqErr != nil {
			// Answered 503: its request was not recorded, and nothing of
			// the upstream's response was passed on.
			x.waitRecorded()
		} else if p.released(x) != nil {
			panic(http.ErrAbortHandler)
		}
		p.metrics.observeAdded(x, time.Since(x.arrived))
		if j := x.vouch; j != nil {
			if testReleased != nil {
				testReleased(x)
			}
			if x.sized {
				// The client has every byte of a reply of known length:
				// what is left of recording it is off its path.
				j.vouch(x.vouchReply)
			} else {
				// A stream ends for its client only once the handler
				// returns.
				go j.vouch(x.vouchReply)
			}
			x.vouch, x.vouchReply = nil, nil
		}
	}()
	x.redact.r = p.red
	w.Header().Set("X-Bb-Request-Id", x.requestID)
	w.Header().Set("X-Bb-Exchange-Id", strconv.FormatUint(x.id, 10))
	p.metrics.inflight.Inc()
	defer p.metrics.inflight.Dec()
	p.active.Add(1)
	defer p.active.Add(-1)

	sess, src := headerSession(r.Header, p.sessionHeaders)
	x.start = exchange.RequestStart{
		RequestID: x.requestID, Method: r.Method, Path: r.URL.Path, Proto: r.Proto,
		Client: r.RemoteAddr, Provider: route.Provider, Upstream: joinURL(route.Target, route.Path),
		SessionID: sess, SessionSource: src, TaskID: r.Header.Get("X-Bb-Task-Id"), RunID: r.Header.Get("X-Bb-Run-Id"),
		Mode: p.opts.Mode.String(), Redaction: exchange.RedactionVersion, Time: x.arrived.UnixNano(),
	}
	if !exchange.ValidID(x.start.TaskID) {
		x.start.TaskID = ""
	}
	if !exchange.ValidID(x.start.RunID) {
		x.start.RunID = ""
	}
	x.start.Goal = sessionGoal(p.red, r.Header.Get("X-Bb-Session-Goal"))
	if p.opts.Session != "" {
		x.start.SessionID, x.start.SessionSource = p.opts.Session, "run"
	}
	if p.opts.Task != "" {
		x.start.TaskID = p.opts.Task
	}
	if p.opts.Run != "" {
		x.start.RunID = p.opts.Run
	}

	// Read the whole request body before forwarding: it is recorded chunk
	// by chunk as it arrives, and forwarding it from memory avoids the
	// HTTP/1 request-body race that truncates streamed responses
	// (golang/go#40747; shared/notes/proxy.md section 7.2).
	if err := p.readBody(w, r, x); err != nil {
		return
	}
	x.start.BodyBytes = int64(len(x.body))
	if v := p.admit(x); v.Refuse {
		p.refuseBreaker(w, x, v)
		return
	}
	if p.opts.Mode == Lossless {
		// The request goes upstream while its frames are written; its
		// response reaches the client only once they are
		// (requestRecorded), so nothing unrecorded is answered. Against
		// a model that takes a second to its first byte the write is
		// hidden.
		x.reqAck = make(chan error, 1)
		p.rec.request(x, x.reqAck)
	} else {
		p.rec.request(x, nil)
	}
	p.metrics.forwardWait.Observe(time.Since(x.arrived).Seconds())

	ctx, cancel := context.WithCancelCause(context.WithValue(r.Context(), ctxKey{}, x))
	defer cancel(nil)
	x.ctx = ctx
	if d := p.opts.HeaderTimeout; d > 0 {
		x.headerTimer = time.AfterFunc(d, func() { cancel(&TimeoutError{What: "header", After: d}) })
		defer x.headerTimer.Stop()
	}
	if d := p.opts.IdleTimeout; d > 0 {
		x.idle = newIdleWatch(d, cancel)
		defer x.idle.stop()
	}
	x.out = clientWriter{ResponseWriter: w, x: x}
	p.rp.ServeHTTP(&x.out, r.WithContext(ctx))
	if !x.ended.Load() {
		// Neither the response body nor the error handler closed the
		// exchange; close it now so it is never left open in the log.
		p.end(x, "the exchange ended without a response body", false)
	}
}

func (p *Proxy) readBody(w http.ResponseWriter, r *http.Request, x *exch) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	if r.ContentLength > p.opts.MaxRequestBody {
		p.refuseBody(w, x, r.ContentLength)
		return errTooLarge
	}
	size := 32 << 10
	if r.ContentLength > 0 {
		size = int(r.ContentLength) + 1
	}
	buf := bodybuf.Get(size)
	defer func() { x.pooled = buf }()
	// A client that stops sending its body is given up on after
	// BodyTimeout without a byte: a read deadline on its connection,
	// renewed before each read and cleared after the body (a deadline
	// left set would cancel the request later).
	rc := http.NewResponseController(w)
	idle := p.opts.BodyTimeout
	if idle > 0 && rc.SetReadDeadline(time.Now().Add(idle)) != nil {
		idle = 0
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		if idle > 0 {
			rc.SetReadDeadline(time.Now().Add(idle))
		}
		n, err := r.Body.Read(buf[len(buf):cap(buf)])
		if n > 0 {
			buf = buf[:len(buf)+n]
			x.marks = append(x.marks, mark{end: len(buf), t: time.Now().UnixNano()})
			if int64(len(buf)) > p.opts.MaxRequestBody {
				p.refuseBody(w, x, int64(len(buf)))
				return errTooLarge
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			x.body = buf
			x.start.BodyBytes = int64(len(buf))
			p.rec.request(x, nil)
			if idle > 0 && errors.Is(err, os.ErrDeadlineExceeded) {
				te := &TimeoutError{What: "body", After: idle, Received: int64(len(buf))}
				p.opts.Logf("%s %s: %v", x.requestID, r.URL.Path, te)
				x.status = http.StatusRequestTimeout
				// The deadline stays expired and the connection closes
				// after the answer: the server must not wait for the
				// rest of the body before it answers.
				w.Header().Set("Connection", "close")
				p.fail(x, "request", te, len(buf), x.status)
				writeError(w, x.route.Provider, x.status, "bbengine proxy: "+te.Error())
				p.end(x, te.Error(), false)
				return te
			}
			if idle > 0 {
				rc.SetReadDeadline(time.Time{})
			}
			p.fail(x, "request", err, len(buf), 0)
			p.end(x, err.Error(), false)
			return err
		}
	}
	if idle > 0 {
		rc.SetReadDeadline(time.Time{})
	}
	x.body = buf
	r.Body.Close()
	return nil
}

var errTooLarge = errors.New("request body too large")

func (p *Proxy) refuseBody(w http.ResponseWriter, x *exch, n int64) {
	msg := fmt.Sprintf("bbengine proxy: request body of %d bytes exceeds the limit of %d bytes (--max-request-bytes)", n, p.opts.MaxRequestBody)
	p.rec.request(x, nil)
	p.fail(x, "request", errors.New(msg), int(n), http.StatusRequestEntityTooLarge)
	x.status = http.StatusRequestEntityTooLarge
	writeError(w, x.route.Provider, http.StatusRequestEntityTooLarge, msg)
	p.end(x, msg, false)
}

// joinURL is the URL a request goes to, without the base's userinfo.
func joinURL(base *url.URL, path string) string {
	return strings.TrimSuffix(urlString(base), "/") + path
}

// urlString is u without its userinfo: an upstream URL's user and
// password are sent upstream, never printed, logged or recorded.
func urlString(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}

// StripUserinfo returns the URL raw without its userinfo
// (scheme://user:password@host becomes scheme://host), also when raw
// does not parse.
func StripUserinfo(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		if u.User == nil {
			return raw
		}
		return urlString(u)
	}
	i := strings.Index(raw, "://")
	if i < 0 {
		i = -3
	}
	host := raw[i+3:]
	if j := strings.IndexAny(host, "/?#"); j >= 0 {
		host = host[:j]
	}
	if at := strings.LastIndex(host, "@"); at >= 0 {
		return raw[:i+3] + raw[i+3+at+1:]
	}
	return raw
}

// rewrite builds the outbound request: the route's target, the body from
// memory, X-Bb-* headers removed. Everything else goes as the client sent
// it (ReverseProxy drops hop-by-hop headers).
func (p *Proxy) rewrite(pr *httputil.ProxyRequest) {
	x := pr.In.Context().Value(ctxKey{}).(*exch)
	pr.Out.URL.Path = x.route.Path
	raw := pr.In.URL.RawPath
	if raw != "" && x.route.Path != pr.In.URL.Path {
		raw = strings.TrimPrefix(raw, "/"+x.route.Provider)
	}
	pr.Out.URL.RawPath = raw
	pr.SetURL(x.route.Target)
	for k := range pr.Out.Header {
		if strings.HasPrefix(k, "X-Bb-") {
			delete(pr.Out.Header, k)
		}
	}
	body := x.body
	pr.Out.ContentLength = int64(len(body))
	if len(body) == 0 && (pr.In.Body == nil || pr.In.Body == http.NoBody) {
		pr.Out.Body = http.NoBody
		pr.Out.GetBody = nil
		return
	}
	pr.Out.Body = newUpstreamBody(x)
	pr.Out.GetBody = func() (io.ReadCloser, error) { return newUpstreamBody(x), nil }
	pr.Out.TransferEncoding = nil
}

// modifyResponse records the response head and tees the body.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	x := resp.Request.Context().Value(ctxKey{}).(*exch)
	if x.headerTimer != nil {
		x.headerTimer.Stop()
	}
	// A small sized reply is held back with a small request, and both
	// are written with the exchange's end; else the request's frames are
	// written before anything of the response reaches the client.
	hold := p.opts.Mode != Degrade && resp.ContentLength >= 0 && resp.ContentLength <= holdReply
	if !hold || !x.reqHeld {
		if err := p.requestRecorded(x); err != nil {
			return &unrecordedError{err: err}
		}
	}
	x.ttfb = time.Since(x.arrived)
	x.status = resp.StatusCode
	x.sized = resp.ContentLength >= 0
	if enc := resp.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		x.encoding = enc
	}
	x.sniff.sse = strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream")
	// ReverseProxy flushes streams itself (an event-stream media type, or
	// no length); clientWriter flushes the rest.
	x.flushWrites = resp.ContentLength >= 0 && !isEventStream(resp.Header.Get("Content-Type"))
	p.metrics.ttfb.WithLabelValues(x.route.Provider).Observe(x.ttfb.Seconds())
	x.holding = hold
	p.rec.responseStart(x, resp.Header.Clone(), resp.Proto)
	resp.Body = &teeBody{rc: resp.Body, x: x, p: p, length: resp.ContentLength}
	return nil
}

// teeBody passes the upstream body to ReverseProxy and queues a copy of
// every chunk for the recorder.
type teeBody struct {
	rc      io.ReadCloser
	x       *exch
	p       *Proxy
	length  int64 // Content-Length, -1 when unknown
	eof     bool
	readErr error
	once    sync.Once
}

func (t *teeBody) Read(b []byte) (int, error) {
	if t.x.idle != nil {
		t.x.idle.reading.Store(time.Now().UnixNano())
	}
	n, err := t.rc.Read(b)
	if t.x.idle != nil {
		t.x.idle.reading.Store(0)
	}
	if n > 0 && t.x.upFirst == 0 {
		t.x.upFirst = time.Since(t.x.arrived)
	}
	if err == io.EOF && t.x.upEnd == 0 {
		t.x.upEnd = time.Since(t.x.arrived)
	}
	if n > 0 && t.x.reqHeld && (t.length < 0 || t.x.respBytes+int64(n) < t.length) {
		// Not all of a small reply in one read: its first bytes go on
		// only after the request is recorded.
		if rerr := t.p.requestRecorded(t.x); rerr != nil {
			return 0, fmt.Errorf("bbengine proxy: not recorded: %w", rerr)
		}
	}
	if n > 0 {
		t.x.respBytes += int64(n)
		t.x.chunks++
		t.p.rec.chunk(t.x, frame.KindResponseBody, b[:n])
		if t.length >= 0 && t.x.respBytes >= t.length {
			// The client takes a sized body as complete with its last
			// byte, before the handler returns: end the exchange now and
			// hand over the last bytes once it is recorded.
			t.eof = true
			if t.x.upEnd == 0 {
				t.x.upEnd = time.Since(t.x.arrived)
			}
			t.close()
			if rerr := t.p.released(t.x); rerr != nil {
				return 0, fmt.Errorf("bbengine proxy: not recorded: %w", rerr)
			}
		}
	}
	switch {
	case err == io.EOF:
		t.eof = true
	case err != nil && t.readErr == nil:
		t.readErr = err
	}
	return n, err
}

// Close ends the exchange: complete when the upstream body reached EOF
// and the client was still there.
func (t *teeBody) Close() error {
	err := t.rc.Close()
	t.close()
	return err
}

// close ends the exchange once.
func (t *teeBody) close() {
	t.once.Do(func() {
		x, p := t.x, t.p
		ctxErr := x.req.Context().Err()
		switch {
		case ctxErr != nil && !t.eof:
			cause := context.Cause(x.req.Context())
			p.fail(x, "client", fmt.Errorf("client went away after %d response bytes: %v", x.respBytes, cause), int(x.respBytes), x.status)
			p.end(x, "client disconnected", false)
		case t.readErr != nil:
			err := t.readErr
			var te *TimeoutError
			if errors.As(context.Cause(x.ctx), &te) {
				err = te
				p.opts.Logf("%s %s: %v", x.requestID, x.start.Upstream, te)
			}
			p.fail(x, "response", err, int(x.respBytes), x.status)
			p.end(x, err.Error(), false)
		case !t.eof:
			p.fail(x, "client", fmt.Errorf("response stopped after %d bytes: the client could not be written to", x.respBytes), int(x.respBytes), x.status)
			p.end(x, "client write failed", false)
		default:
			p.end(x, "", true)
		}
	})
}

// errorHandler answers when the upstream could not be reached or failed
// before its headers: the client gets a JSON error in its provider's
// shape, and the WAL an error frame.
func (p *Proxy) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	x, _ := r.Context().Value(ctxKey{}).(*exch)
	if x == nil {
		writeError(w, "", http.StatusBadGateway, "bbengine proxy: "+err.Error())
		return
	}
	if rerr := p.requestRecorded(x); rerr != nil {
		err = &unrecordedError{err: rerr}
	}
	if ue, ok := err.(*unrecordedError); ok {
		// The request went upstream while its frames were written, and
		// the write failed: its response is not passed on.
		p.metrics.aborted.Inc()
		x.status = http.StatusServiceUnavailable
		msg := fmt.Sprintf("bbengine proxy: not recorded, so not answered (lossless mode): the WAL in %s cannot be written: %v", p.log.Dir(), ue.err)
		p.opts.Logf("%s: response withheld: the request could not be recorded: %v", x.requestID, ue.err)
		writeError(w, x.route.Provider, x.status, msg)
		p.end(x, msg, false)
		return
	}
	var te *TimeoutError
	if errors.As(context.Cause(r.Context()), &te) {
		x.status = http.StatusGatewayTimeout
		msg := fmt.Sprintf("bbengine proxy: upstream %s: %v", x.route.Target.Host, te)
		p.opts.Logf("%s %s: %v", x.requestID, x.start.Upstream, te)
		p.fail(x, "upstream", te, 0, x.status)
		writeError(w, x.route.Provider, x.status, msg)
		p.end(x, msg, false)
		return
	}
	if r.Context().Err() != nil {
		p.fail(x, "client", fmt.Errorf("client went away before the response: %v", context.Cause(r.Context())), len(x.body), 0)
		p.end(x, "client disconnected", false)
		return
	}
	status := http.StatusBadGateway
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		status = http.StatusGatewayTimeout
	}
	x.status = status
	msg := fmt.Sprintf("bbengine proxy: upstream %s failed: %v", x.route.Target.Host, err)
	p.opts.Logf("%s %s: upstream failed: %s", x.requestID, x.start.Upstream, p.red.String(err.Error()))
	p.fail(x, "upstream", err, 0, status)
	writeError(w, x.route.Provider, status, msg)
	p.end(x, msg, false)
}

func (p *Proxy) fail(x *exch, stage string, err error, received int, status int) {
	p.metrics.errors.WithLabelValues(x.route.Provider, stage).Inc()
	p.rec.meta(x, frame.KindError, &exchange.Error{Stage: stage, Error: p.red.String(err.Error()), Received: int64(received), Status: status})
}

func (p *Proxy) end(x *exch, errMsg string, complete bool) {
	if x.ended.Swap(true) {
		return
	}
	x.complete = complete
	p.metrics.requests.WithLabelValues(x.route.Provider, strconv.Itoa(x.status)).Inc()
	p.metrics.duration.WithLabelValues(x.route.Provider).Observe(time.Since(x.arrived).Seconds())
	if p.opts.Mode != Degrade {
		x.recorded = make(chan error, 1)
	}
	p.rec.end(x, p.red.String(errMsg), complete, time.Since(x.arrived), x.recorded)
}

// waitRecorded waits until every frame of x, its end frame included, is
// written to the WAL (and synced, under --sync always), and returns the
// write error if that failed. It returns nil at once for an exchange not
// ended yet and in degrade mode. The last bytes of a response reach the
// client only after it: acknowledged means recorded.
func (x *exch) waitRecorded() error {
	if x.recorded == nil {
		return nil
	}
	x.ackOnce.Do(func() { x.ackErr = <-x.recorded })
	return x.ackErr
}

// requestRecorded writes the request's frames if they are held back
// (recorder.holdRequest), waits until they are written (lossless mode;
// nil at once otherwise) and returns the write error if that failed.
// Nothing of the response reaches the client before it.
func (p *Proxy) requestRecorded(x *exch) error {
	if x.reqHeld {
		p.rec.unholdRequest(x)
	}
	return x.requestRecorded()
}

// requestRecorded waits for x.reqAck; see Proxy.requestRecorded.
func (x *exch) requestRecorded() error {
	if x.reqAck != nil && !x.reqWaited {
		x.reqErr, x.reqWaited = <-x.reqAck, true
	}
	return x.reqErr
}

// unrecordedError is why a response is withheld: its request's frames
// could not be written.
type unrecordedError struct{ err error }

func (e *unrecordedError) Error() string { return "the request was not recorded: " + e.err.Error() }
func (e *unrecordedError) Unwrap() error { return e.err }

// released is what the client may be given once the exchange's end is
// known: in lossless mode nothing unrecorded, so a failed write aborts
// the response (the client sees it cut, never complete).
func (p *Proxy) released(x *exch) error {
	err := x.waitRecorded()
	if err == nil || p.opts.Mode != Lossless {
		return nil
	}
	p.metrics.aborted.Inc()
	p.opts.Logf("%s: response cut: its frames could not be recorded: %v", x.requestID, err)
	return err
}

// writeError writes a JSON error in the shape the provider's clients parse.
func writeError(w http.ResponseWriter, provider string, status int, msg string) {
	var body any
	switch provider {
	case "anthropic":
		typ := "api_error"
		switch status {
		case http.StatusRequestEntityTooLarge:
			typ = "request_too_large"
		case http.StatusNotFound:
			typ = "not_found_error"
		case http.StatusGatewayTimeout, http.StatusBadGateway:
			typ = "api_error"
		case http.StatusTooManyRequests:
			typ = "rate_limit_error"
		}
		body = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
	case "gemini":
		st := "UNAVAILABLE"
		switch status {
		case http.StatusRequestEntityTooLarge:
			st = "INVALID_ARGUMENT"
		case http.StatusTooManyRequests:
			st = "RESOURCE_EXHAUSTED"
		}
		body = map[string]any{"error": map[string]any{"code": status, "message": msg, "status": st}}
	default:
		body = map[string]any{"error": map[string]any{"message": msg, "type": "bbengine_proxy_error", "code": strings.ToLower(strings.ReplaceAll(http.StatusText(status), " ", "_"))}}
	}
	b, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// serveOwn answers the proxy's own endpoints under /_bb/.
// They only read: any method but GET and HEAD is refused.
func (p *Proxy) serveOwn(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "bbengine proxy: "+r.URL.Path+" only reads: use GET", http.StatusMethodNotAllowed)
		return
	}
	switch r.URL.Path {
	case "/_bb/health":
		h := p.Health()
		w.Header().Set("Content-Type", "application/json")
		if h.Status != "ok" {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(h)
	case "/_bb/metrics":
		p.metrics.handler().ServeHTTP(w, r)
	default:
		http.NotFound(w, r)
	}
}

// Health is the proxy's state as /_bb/health reports it.
type Health struct {
	Status   string  `json:"status"` // ok, or degraded when frames cannot be recorded
	Mode     string  `json:"mode"`
	Uptime   float64 `json:"uptime_s"`
	Queue    int     `json:"queue"`
	Recorded uint64  `json:"frames_recorded"`
	Dropped  uint64  `json:"chunks_dropped"`
	WALError string  `json:"wal_error,omitempty"`
	// Requests that came while the WAL could not be written: refused
	// with 503 (lossless) or forwarded unrecorded (degrade).
	RefusedUnrecorded   uint64            `json:"refused_unrecorded,omitempty"`
	ForwardedUnrecorded uint64            `json:"forwarded_unrecorded,omitempty"`
	Upstreams           map[string]string `json:"upstreams"`
	// Derivation is the state of the engine deriving from the WAL beside
	// the proxy: ok, starting, or why it is paused or off.
	Derivation string `json:"derivation,omitempty"`
	// WALDamage lists what is wrong with the WAL's sealed segments: a
	// segment missing (a gap) or a corrupt frame, by segment and offset.
	// Recording goes on; readers of the log stop there.
	WALDamage []string `json:"wal_damage,omitempty"`
	// Retention says what the retention the user set keeps, and what its
	// last run removed or why it failed; empty when none is set.
	Retention string `json:"retention,omitempty"`
}

// SetRetention gives Health the state of retention running beside the
// proxy.
func (p *Proxy) SetRetention(status func() string) { p.retention.Store(&status) }

// SetDerivation gives Health the state of the derivation running beside
// the proxy.
func (p *Proxy) SetDerivation(status func() string) { p.derivation.Store(&status) }

// Health returns the proxy's current state.
func (p *Proxy) Health() Health {
	h := Health{Status: "ok", Mode: p.opts.Mode.String(), Uptime: time.Since(p.started).Seconds(),
		Queue: len(p.rec.q), Recorded: p.rec.frames.Load(), Dropped: p.rec.dropped.Load(), Upstreams: map[string]string{}}
	if err := p.log.Failed(); err != nil {
		h.Status, h.WALError = "degraded", err.Error()+" (retried every second; recording resumes by itself when the WAL takes writes)"
	}
	for _, d := range p.log.Damage() {
		h.WALDamage = append(h.WALDamage, d.Error())
	}
	h.RefusedUnrecorded, h.ForwardedUnrecorded = p.refusedUnrecorded.Load(), p.forwardedUnrecorded.Load()
	if f := p.derivation.Load(); f != nil {
		h.Derivation = (*f)()
	}
	if f := p.retention.Load(); f != nil {
		h.Retention = (*f)()
	}
	for k, u := range p.upstreams {
		h.Upstreams[k] = urlString(u)
	}
	return h
}

// Upstreams returns the route names and their URLs (without userinfo),
// sorted by name.
func (p *Proxy) Upstreams() [][2]string {
	var out [][2]string
	for k, u := range p.upstreams {
		out = append(out, [2]string{k, urlString(u)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}
