package proxy

import (
	"bytes"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/codec/httpbody"
	"github.com/bbengine/bbengine/wal"
)

// recorder owns the WAL side of the proxy: the request path queues items
// (a copy of each body chunk, the metadata of each stage) and one goroutine
// encodes, redacts and appends them in order. The queue is bounded: in
// Lossless mode a full queue makes the stream wait; in Degrade mode body
// chunks are dropped and counted, metadata never.
type recorder struct {
	p    *Proxy
	log  *wal.Log
	q    chan item
	done chan struct{}
	// qmu orders sends against close: senders hold it shared while they
	// send, close holds it exclusively to close q, so a handler still
	// finishing after a forced server close never sends on a closed
	// channel. A sender blocked on a full queue holds it only until the
	// run goroutine, which keeps draining, takes its item.
	qmu     sync.RWMutex
	closed  bool
	mu      sync.Mutex
	werr    error // first append error
	frames  atomic.Uint64
	dropped atomic.Uint64

	// The batch being built, owned by the run goroutine.
	pending []pendingFrame
	arena   []byte
	recs    []wal.Record
}

type itemKind uint8

const (
	itRequest itemKind = iota
	itResponseStart
	itChunk
	itMeta
	itEnd
)

type item struct {
	kind    itemKind
	x       *exch
	t       int64
	buf     *[]byte // itChunk: pooled copy of the chunk
	header  http.Header
	proto   string
	meta    any // itMeta: payload to encode
	fkind   frame.Kind
	errMsg  string
	ok      bool
	elapsed time.Duration
}

// chunkPools lend the copies of body chunks, by size class, so a queue
// full of small SSE events does not pin 32 KiB each.
var chunkPools = [...]struct {
	size int
	pool sync.Pool
}{{size: 512}, {size: 4 << 10}, {size: 32 << 10}}

func getChunk(n int) *[]byte {
	for i := range chunkPools {
		if n <= chunkPools[i].size {
			if b, ok := chunkPools[i].pool.Get().(*[]byte); ok {
				return b
			}
			b := make([]byte, 0, chunkPools[i].size)
			return &b
		}
	}
	b := make([]byte, 0, n)
	return &b
}

func putChunk(b *[]byte) {
	c := cap(*b)
	for i := range chunkPools {
		if c == chunkPools[i].size {
			chunkPools[i].pool.Put(b)
			return
		}
	}
}

func newRecorder(p *Proxy, n int) *recorder {
	r := &recorder{p: p, log: p.log, q: make(chan item, n), done: make(chan struct{})}
	go r.run()
	return r
}

func (r *recorder) put(it item) {
	r.qmu.RLock()
	defer r.qmu.RUnlock()
	if r.closed {
		return
	}
	select {
	case r.q <- it:
		return
	default:
	}
	start := time.Now()
	r.q <- it
	r.p.metrics.backpressure.Add(time.Since(start).Seconds())
}

func (r *recorder) request(x *exch) {
	r.put(item{kind: itRequest, x: x, t: x.arrived.UnixNano()})
}

func (r *recorder) responseStart(x *exch, h http.Header, proto string) {
	r.put(item{kind: itResponseStart, x: x, t: time.Now().UnixNano(), header: h, proto: proto})
}

// chunk queues a copy of b, a body chunk of x.
func (r *recorder) chunk(x *exch, k frame.Kind, b []byte) {
	mode := r.p.opts.Mode
	if mode == Privacy {
		return
	}
	bp := getChunk(len(b))
	*bp = append((*bp)[:0], b...)
	it := item{kind: itChunk, x: x, t: time.Now().UnixNano(), buf: bp, fkind: k}
	if mode == Degrade {
		r.qmu.RLock()
		defer r.qmu.RUnlock()
		if r.closed {
			putChunk(bp)
			return
		}
		select {
		case r.q <- it:
		default:
			x.dropped++
			x.dropBytes += int64(len(b))
			r.dropped.Add(1)
			r.p.metrics.dropped.Inc()
			putChunk(bp)
		}
		return
	}
	r.put(it)
}

func (r *recorder) meta(x *exch, k frame.Kind, v any) {
	r.put(item{kind: itMeta, x: x, t: time.Now().UnixNano(), meta: v, fkind: k})
}

func (r *recorder) end(x *exch, errMsg string, ok bool, elapsed time.Duration) {
	r.put(item{kind: itEnd, x: x, t: time.Now().UnixNano(), errMsg: errMsg, ok: ok, elapsed: elapsed})
}

// close stops accepting items and waits until every queued one is
// written.
func (r *recorder) close() error {
	r.qmu.Lock()
	if !r.closed {
		r.closed = true
		close(r.q)
	}
	r.qmu.Unlock()
	<-r.done
	return r.err()
}

func (r *recorder) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.werr
}

// coalesce is how long the recorder lets items gather after it has
// written a batch: while it sleeps, streams queue chunks without waking it,
// so a stream costs one wake-up per interval, not one per chunk. It delays
// recording, never forwarding.
const coalesce = 500 * time.Microsecond

// maxBatch bounds the frames and bytes of one WAL batch.
const (
	maxBatchFrames = 1024
	maxBatchBytes  = 4 << 20
)

func (r *recorder) run() {
	defer close(r.done)
	for {
		it, ok := <-r.q // parks while idle
		if !ok {
			r.flush()
			return
		}
		r.r(it)
		closed := false
	drain:
		for {
			select {
			case it, ok := <-r.q:
				if !ok {
					closed = true
					break drain
				}
				r.r(it)
				if len(r.pending) >= maxBatchFrames || len(r.arena) >= maxBatchBytes {
					r.flush()
				}
			default:
				break drain
			}
		}
		r.flush()
		r.p.metrics.queue.Set(float64(len(r.q)))
		if closed {
			return
		}
		time.Sleep(coalesce)
	}
}

// pendingFrame is a frame of the batch being built; its payload is
// arena[start:end].
type pendingFrame struct {
	kind       frame.Kind
	ex         uint64
	t          int64
	last       bool
	start, end int
}

// append adds one frame to the batch; payload is copied, so the caller
// may reuse it.
func (r *recorder) append(k frame.Kind, x *exch, t int64, last bool, payload []byte) {
	start := len(r.arena)
	r.arena = append(r.arena, payload...)
	r.pending = append(r.pending, pendingFrame{kind: k, ex: x.id, t: t, last: last, start: start, end: len(r.arena)})
}

// flushFull flushes the batch when it holds maxBatchFrames frames or
// maxBatchBytes bytes.
func (r *recorder) flushFull() {
	if len(r.pending) >= maxBatchFrames || len(r.arena) >= maxBatchBytes {
		r.flush()
	}
}

// flush writes the batch with one WAL append, remembering the first
// failure. A failed WAL never stops the proxy: the agent keeps working,
// /_bb/health says degraded.
func (r *recorder) flush() {
	if len(r.pending) == 0 {
		return
	}
	recs := r.recs[:0]
	for _, f := range r.pending {
		recs = append(recs, wal.Record{Kind: f.kind, Exchange: f.ex, Time: f.t, Last: f.last, Payload: r.arena[f.start:f.end:f.end]})
	}
	start := time.Now()
	_, err := r.log.AppendBatch(recs)
	r.p.metrics.appendSeconds.Observe(time.Since(start).Seconds())
	n, size := len(recs), len(r.arena)
	clear(recs)
	r.recs = recs[:0]
	r.pending = r.pending[:0]
	if cap(r.arena) > 2*maxBatchBytes {
		r.arena = nil
	} else {
		r.arena = r.arena[:0]
	}
	if err != nil {
		r.mu.Lock()
		first := r.werr == nil
		if first {
			r.werr = err
		}
		r.mu.Unlock()
		r.p.metrics.walErrors.Add(float64(n))
		if first {
			r.p.opts.Logf("recording failed (the proxy keeps forwarding; nothing more is recorded until restart): %v", err)
		}
		return
	}
	r.frames.Add(uint64(n))
	r.p.metrics.walBytes.Add(float64(size + n*frame.HeaderLen))
}

func (r *recorder) encode(k frame.Kind, x *exch, t int64, v any) {
	b, err := exchange.Encode(v)
	if err != nil {
		r.p.opts.Logf("encode %v: %v", k, err)
		return
	}
	r.append(k, x, t, false, b)
}

// split appends body bytes as frames no larger than the frame limit.
func (r *recorder) body(k frame.Kind, x *exch, t int64, b []byte, last bool) {
	const max = 1 << 20
	// A large request body comes as one item: write the batch whenever
	// it is full, so the arena never holds more than a batch of it.
	for len(b) > max {
		r.flushFull()
		r.append(k, x, t, false, b[:max])
		b = b[max:]
	}
	r.flushFull()
	if len(b) > 0 || last {
		r.append(k, x, t, last, b)
	}
}

func (r *recorder) r(it item) {
	x := it.x
	mode := r.p.opts.Mode
	switch it.kind {
	case itRequest:
		model, streaming, bodySession := readBody(x.body)
		if m, st, ok := pathModel(x.start.Path); ok {
			if model == "" {
				model = m
			}
			streaming = streaming || st
		}
		x.start.Model, x.start.Stream = model, streaming
		x.model = model
		if x.start.SessionID == "" {
			if bodySession != "" {
				x.start.SessionID, x.start.SessionSource = bodySession, "body"
			} else {
				x.start.SessionID, x.start.SessionSource = newID("ses_"), "minted"
			}
		}
		x.session = x.start.SessionID
		x.start.Headers = r.p.red.Headers(x.header)
		x.start.Query = r.p.red.Query(x.req.URL.RawQuery)
		if mode == Passthrough {
			return
		}
		r.encode(frame.KindRequestStart, x, it.t, &x.start)
		if mode == Privacy {
			return
		}
		s := stream{r: r.p.red}
		prev := 0
		for i, m := range x.marks {
			out := s.chunk(x.body[prev:m.end], i == len(x.marks)-1)
			r.body(frame.KindRequestBody, x, m.t, out, i == len(x.marks)-1)
			prev = m.end
		}
	case itResponseStart:
		if mode == Passthrough {
			return
		}
		r.encode(frame.KindResponseStart, x, it.t, &exchange.ResponseStart{
			Status: x.status, Proto: it.proto, Headers: r.p.red.Headers(it.header), TTFB: x.ttfb.Nanoseconds()})
	case itChunk:
		b := *it.buf
		switch {
		case x.encoding != "":
			r.hold(x, it.t, b)
		default:
			x.sniff.feed(b)
			if mode != Passthrough {
				if out := x.redact.chunk(b, false); len(out) > 0 {
					r.body(it.fkind, x, it.t, out, false)
				}
			}
		}
		putChunk(it.buf)
	case itMeta:
		if mode == Passthrough {
			return
		}
		r.encode(it.fkind, x, it.t, it.meta)
	case itEnd:
		var decoded bool
		var unscanned string
		if x.encoding != "" {
			decoded, unscanned = r.flushHeld(x, it.t)
		} else if mode != Passthrough && mode != Privacy && x.chunks > 0 {
			r.body(frame.KindResponseBody, x, it.t, x.redact.chunk(nil, true), true)
		}
		end := &exchange.ResponseEnd{Status: x.status, TTFB: x.ttfb.Nanoseconds(), Duration: it.elapsed.Nanoseconds(),
			RequestBytes: int64(len(x.body)), ResponseBytes: x.respBytes, Chunks: x.chunks,
			DroppedChunks: x.dropped, DroppedBytes: x.dropBytes, Complete: it.ok, Error: it.errMsg,
			Usage: x.sniff.result(), Model: x.model, SessionID: x.session, Decoded: decoded, Unscanned: unscanned}
		if u := end.Usage; u != nil {
			r.p.breaker.Usage(x.session, x.start.RunID, x.model, *u)
			r.p.metrics.tokens.WithLabelValues(x.route.Provider, "input").Add(float64(u.InputTokens))
			r.p.metrics.tokens.WithLabelValues(x.route.Provider, "output").Add(float64(u.OutputTokens))
		}
		r.p.metrics.models.WithLabelValues(x.route.Provider, x.model).Inc()
		r.encode(frame.KindResponseEnd, x, it.t, end)
	}
}

// heldChunk is a compressed response chunk kept until the body ends.
type heldChunk struct {
	t int64
	b []byte
}

// maxHeld bounds the compressed bytes held for one response; past it the
// held chunks are written as sent, unscanned.
const maxHeld = 16 << 20

// hold keeps a chunk of a compressed response: it can only be scanned
// for secrets and usage once whole, and is recorded at its end.
func (r *recorder) hold(x *exch, t int64, b []byte) {
	if x.spilled != "" {
		if r.p.opts.Mode != Passthrough {
			r.body(frame.KindResponseBody, x, t, b, false)
		}
		return
	}
	x.held = append(x.held, heldChunk{t, append([]byte(nil), b...)})
	x.heldN += len(b)
	if x.heldN > maxHeld {
		x.spilled = fmt.Sprintf("compressed body exceeds %d bytes", maxHeld)
		r.writeHeld(x, false)
	}
}

func (r *recorder) writeHeld(x *exch, last bool) {
	if r.p.opts.Mode != Passthrough {
		for i, c := range x.held {
			r.body(frame.KindResponseBody, x, c.t, c.b, last && i == len(x.held)-1)
		}
	}
	x.held, x.heldN = nil, 0
}

// flushHeld records a compressed response at its end: as sent when its
// decoded form holds no secret, else decoded and redacted. It also reads
// the usage from the decoded body.
func (r *recorder) flushHeld(x *exch, t int64) (decoded bool, unscanned string) {
	if x.spilled != "" {
		if r.p.opts.Mode != Passthrough {
			r.body(frame.KindResponseBody, x, t, nil, true)
		}
		return false, x.spilled
	}
	var whole []byte
	for _, c := range x.held {
		whole = append(whole, c.b...)
	}
	plain, err := httpbody.Decode(x.encoding, whole)
	if err != nil {
		r.writeHeld(x, true)
		return false, err.Error()
	}
	x.sniff.feed(plain)
	red := r.p.red.Bytes(plain)
	if bytes.Equal(red, plain) || r.p.opts.Mode == Passthrough {
		r.writeHeld(x, true)
		return false, ""
	}
	r.body(frame.KindResponseBody, x, t, red, true)
	x.held, x.heldN = nil, 0
	return true, ""
}
