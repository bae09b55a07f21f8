package proxy

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/codec/httpbody"
	"github.com/bbengine/bbengine/codec/llm"
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
	werr    error // first append error since recording last worked
	frames  atomic.Uint64
	dropped atomic.Uint64
	// wake cuts the recorder's coalescing sleep short: an exchange is
	// waiting for its end to be written before its client sees it.
	wake chan struct{}
	// acks are the waiters of the batch being built, answered when it
	// is written.
	acks []chan error
	stop chan struct{} // closed by close: ends the resume loop

	// rmu is held while items are made into frames and written: by the
	// run goroutine for what it drained, or by a handler that records
	// its own items inline (send). queued counts the items sent on q and
	// not yet made into frames; a handler records inline only when it is
	// 0, so its items never overtake earlier ones.
	rmu    sync.Mutex
	queued atomic.Int64

	// The batch being built, owned by whoever holds rmu.
	pending []pendingFrame
	arena   []byte
	scratch []byte // a payload being encoded, before append copies it
	recs    []wal.Record
	// resent remembers the clean segments of each session's last
	// request body.
	resent *resent
	// tips remembers the conversations of sessions whose requests
	// carry no id, to join each request to the one it continues.
	tips *tips
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
	ack     chan error // itRequest, itEnd: answered once the item's frames (and all before) are written
	// whole: an itChunk held back with its exchange's end (send), so the
	// end's redaction scans it with the rest of the body, once.
	whole bool
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
	r := &recorder{p: p, log: p.log, resent: newResent(p.log.Compresses()), tips: newTips(), q: make(chan item, n), done: make(chan struct{}),
		wake: make(chan struct{}, 1), stop: make(chan struct{})}
	go r.run()
	go r.resumeLoop()
	return r
}

// resumeEvery is how often a recorder whose WAL failed tries it again.
const resumeEvery = time.Second

// resumeLoop clears a failed WAL once the disk takes writes again (space
// came back), so recording resumes with no restart.
func (r *recorder) resumeLoop() {
	t := time.NewTicker(resumeEvery)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
		}
		if r.log.Failed() == nil {
			continue
		}
		if err := r.log.Resume(); err != nil {
			continue
		}
		r.mu.Lock()
		r.werr = nil
		r.mu.Unlock()
		r.p.opts.Logf("recording resumed: the WAL in %s takes writes again", r.log.Dir())
	}
}

// errClosed answers an exchange that waits for its frames after the
// recorder stopped.
var errClosed = errors.New("the recorder is closed")

// put queues it, and reports false when the recorder is closed.
func (r *recorder) put(it item) bool {
	r.qmu.RLock()
	defer r.qmu.RUnlock()
	if r.closed {
		if it.ack != nil {
			it.ack <- errClosed
		}
		return false
	}
	r.enqueue(it)
	return true
}

// enqueue sends it on q; the caller holds qmu shared and saw the
// recorder open.
func (r *recorder) enqueue(it item) {
	r.queued.Add(1)
	select {
	case r.q <- it:
		return
	default:
	}
	start := time.Now()
	r.q <- it
	r.p.metrics.backpressure.Add(time.Since(start).Seconds())
}

// send records it, which carries an ack, after the items its exchange
// held back (hold). When nothing is queued and nothing is being written
// it makes their frames and writes them from the calling goroutine, so
// a small exchange is acknowledged without a handoff to the run
// goroutine and back; else it queues them and wakes the recorder. It
// reports false when the recorder is closed (it.ack is then answered).
func (r *recorder) send(it item) bool {
	x := it.x
	held := x.items
	x.items, x.holding, x.reqHeld = x.items[:0], false, false
	return r.write(held, it, true)
}

// unholdRequest records the request x holds back (holdRequest) and every
// item held after it, and answers x.reqAck once they are written: the
// exchange turned out not to be a small one, and nothing of its response
// may reach the client before its request is recorded.
func (r *recorder) unholdRequest(x *exch) {
	held := x.items
	x.items, x.holding, x.reqHeld = x.items[:0], false, false
	last := held[len(held)-1]
	last.ack = x.reqAck
	r.write(held[:len(held)-1], last, false)
	clear(held[len(held)-1:])
}

// write records held and then it, which carries an ack; at an end, held
// chunks are scanned for secrets with the rest of the body, once.
func (r *recorder) write(held []item, it item, atEnd bool) bool {
	r.qmu.RLock()
	defer r.qmu.RUnlock()
	if r.closed {
		for _, h := range held {
			h.release()
		}
		clear(held)
		it.release()
		it.ack <- errClosed
		return false
	}
	if atEnd {
		// Held items come only before an end (add holds from the
		// response head on), so its body is scanned once, whole, at
		// that end.
		for i := range held {
			held[i].whole = held[i].kind == itChunk
		}
	}
	if r.queued.Load() == 0 && r.rmu.TryLock() {
		// Every item sent before is made into frames and written, and
		// rmu keeps the run goroutine from starting on a later one.
		r.inline(held, it)
	} else {
		for _, h := range held {
			r.enqueue(h)
		}
		r.enqueue(it)
		r.wakeUp()
	}
	clear(held)
	return true
}

// inline makes the frames of held and it and writes them; the caller
// holds rmu, which inline releases.
func (r *recorder) inline(held []item, it item) {
	defer func() {
		if v := recover(); v != nil {
			// A bug in making frames: drop this exchange's frames (the
			// batch held nothing else), answer its waiters, free the
			// lock and let the panic end this handler (net/http logs it
			// and cuts the connection) rather than wedge every other.
			r.pending, r.arena = r.pending[:0], r.arena[:0]
			r.answer(fmt.Errorf("bbengine proxy: recording panicked: %v", v))
			r.rmu.Unlock()
			panic(v)
		}
	}()
	for _, h := range held {
		r.r(h)
	}
	r.r(it)
	r.flush()
	r.rmu.Unlock()
}

// maxHoldItems and maxHoldBytes bound what an exchange holds back.
const (
	maxHoldItems = 16
	maxHoldBytes = 64 << 10
)

// add queues it, or holds it back with its exchange until the exchange's
// end is sent (see hold).
func (r *recorder) add(it item) {
	x := it.x
	if !x.holding {
		r.put(it)
		return
	}
	if x.items == nil {
		x.items = x.itemsBuf[:0]
	}
	x.items = append(x.items, it)
	if it.buf != nil {
		x.itemBytes += len(*it.buf)
	}
	if len(x.items) >= maxHoldItems || x.itemBytes > maxHoldBytes {
		// Not a small reply after all: queue what it held and stop.
		if x.reqHeld {
			r.unholdRequest(x)
			return
		}
		x.holding = false
		for _, h := range x.items {
			if !r.put(h) {
				h.release()
			}
		}
		clear(x.items)
		x.items = x.items[:0]
	}
}

// release gives back what an item that will not be recorded holds.
func (it item) release() {
	if it.buf != nil {
		putChunk(it.buf)
	}
	if it.kind == itRequest {
		it.x.dropBody()
	}
}

// request queues x's request frames. With ack set it is answered once
// they are written, and the recorder is woken for it; a small request is
// held back instead (holdRequest).
func (r *recorder) request(x *exch, ack chan error) {
	// The recorder's reference to the body, dropped once its frames
	// are made.
	x.holdBody()
	it := item{kind: itRequest, x: x, t: x.arrived.UnixNano()}
	if ack != nil && len(x.body) <= inlineRequest && r.log.SyncPolicy() != wal.SyncAlways {
		r.holdRequest(x, it)
		return
	}
	it.ack = ack
	if !r.put(it) {
		x.dropBody()
	}
	if ack != nil {
		r.wakeUp()
	}
}

// holdRequest holds a small request's frames back with its exchange, to
// be written with the exchange's end when its reply is small and sized
// too (one write for the whole exchange, from the handler's goroutine),
// or before any of its response reaches the client otherwise
// (Proxy.requestRecorded). The request goes upstream meanwhile: a crash
// before the exchange ends loses the request of a response no client
// was given whole, as it would if it had crashed before the write.
func (r *recorder) holdRequest(x *exch, it item) {
	x.reqHeld, x.holding = true, true
	x.items = append(x.itemsBuf[:0], it)
}

// inlineRequest is the largest request body a handler holds back
// (holdRequest). A larger one goes upstream while the recorder writes
// it, and so does every request under wal.SyncAlways, so that its
// fdatasync overlaps the upstream's round trip.
const inlineRequest = 64 << 10

// holdReply is the largest sized response whose head and chunks an
// exchange holds back until its end, to record them with it (send).
const holdReply = 32 << 10

// wakeUp cuts the recorder's coalescing sleep short: an exchange waits
// for its frames.
func (r *recorder) wakeUp() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *recorder) responseStart(x *exch, h http.Header, proto string) {
	r.add(item{kind: itResponseStart, x: x, t: time.Now().UnixNano(), header: h, proto: proto})
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
		r.queued.Add(1)
		select {
		case r.q <- it:
		default:
			r.queued.Add(-1)
			x.dropped++
			x.dropBytes += int64(len(b))
			r.dropped.Add(1)
			r.p.metrics.dropped.Inc()
			putChunk(bp)
		}
		return
	}
	r.add(it)
}

func (r *recorder) meta(x *exch, k frame.Kind, v any) {
	r.add(item{kind: itMeta, x: x, t: time.Now().UnixNano(), meta: v, fkind: k})
}

// end queues x's end frame. With ack set it is answered (nil, or the
// write error) once that frame and every frame before it is written, and
// the recorder is woken so the exchange does not wait out a coalescing
// interval.
func (r *recorder) end(x *exch, errMsg string, ok bool, elapsed time.Duration, ack chan error) {
	it := item{kind: itEnd, x: x, t: time.Now().UnixNano(), errMsg: errMsg, ok: ok, elapsed: elapsed, ack: ack}
	if ack != nil {
		r.send(it)
		return
	}
	r.put(it)
}

// close stops accepting items and waits until every queued one is
// written.
func (r *recorder) close() error {
	r.qmu.Lock()
	if !r.closed {
		r.closed = true
		close(r.q)
		close(r.stop)
	}
	r.qmu.Unlock()
	<-r.done
	return r.err()
}

func (r *recorder) isClosed() bool {
	r.qmu.RLock()
	defer r.qmu.RUnlock()
	return r.closed
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
	timer := time.NewTimer(coalesce)
	if !timer.Stop() {
		<-timer.C
	}
	for {
		it, ok := <-r.q // parks while idle
		r.rmu.Lock()
		if !ok {
			r.flush()
			r.rmu.Unlock()
			return
		}
		r.r(it)
		r.queued.Add(-1)
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
				r.queued.Add(-1)
				if len(r.pending) >= maxBatchFrames || len(r.arena) >= maxBatchBytes {
					r.flush()
				}
			default:
				break drain
			}
		}
		r.flush()
		r.rmu.Unlock()
		r.p.metrics.queue.Set(float64(len(r.q)))
		if closed {
			return
		}
		// Let items gather, unless an exchange waits for its end.
		timer.Reset(coalesce)
		select {
		case <-timer.C:
		case <-r.wake:
			if !timer.Stop() {
				<-timer.C
			}
		}
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
	// snappy: the payload is already the snappy block of raw bytes.
	snappy bool
	raw    int
}

// append adds one frame to the batch; payload is copied, so the caller
// may reuse it.
func (r *recorder) append(k frame.Kind, x *exch, t int64, last bool, payload []byte) {
	start := len(r.arena)
	r.arena = append(r.arena, payload...)
	r.pending = append(r.pending, pendingFrame{kind: k, ex: x.id, t: t, last: last, start: start, end: len(r.arena)})
}

// appendStored adds one frame whose payload is stored as the WAL stores
// it: a snappy block of raw bytes when snappy is set.
func (r *recorder) appendStored(k frame.Kind, x *exch, t int64, last bool, stored []byte, snappy bool, raw int) {
	start := len(r.arena)
	r.arena = append(r.arena, stored...)
	r.pending = append(r.pending, pendingFrame{kind: k, ex: x.id, t: t, last: last, start: start, end: len(r.arena), snappy: snappy, raw: raw})
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
		r.answer(nil)
		return
	}
	recs := r.recs[:0]
	for _, f := range r.pending {
		recs = append(recs, wal.Record{Kind: f.kind, Exchange: f.ex, Time: f.t, Last: f.last, Payload: r.arena[f.start:f.end:f.end], Snappy: f.snappy, RawLen: f.raw})
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
	r.answer(err)
	if err != nil {
		r.mu.Lock()
		first := r.werr == nil
		if first {
			r.werr = err
		}
		r.mu.Unlock()
		r.p.metrics.walErrors.Add(float64(n))
		if first {
			what := "lossless mode answers new requests 503"
			if r.p.opts.Mode == Degrade {
				what = "degrade mode forwards them unrecorded"
			}
			r.p.opts.Logf("recording failed (%s until the WAL takes writes again; retried every %v): %v", what, resumeEvery, err)
		}
		return
	}
	r.frames.Add(uint64(n))
	r.p.metrics.walBytes.Add(float64(size + n*frame.HeaderLen))
}

// answer tells the exchanges waiting on the batch just written how it went.
func (r *recorder) answer(err error) {
	for i, ack := range r.acks {
		ack <- err
		r.acks[i] = nil
	}
	r.acks = r.acks[:0]
}

func (r *recorder) encode(k frame.Kind, x *exch, t int64, v any) {
	b, err := exchange.AppendPayload(r.scratch[:0], v)
	if err != nil {
		r.p.opts.Logf("encode %v: %v", k, err)
		return
	}
	r.scratch = b
	r.append(k, x, t, false, b) // copies b
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
	if it.ack != nil {
		// Answered once the batch holding this item's frames is written.
		defer func() { r.acks = append(r.acks, it.ack) }()
	}
	switch it.kind {
	case itRequest:
		defer x.dropBody()
		model, streaming, bodySession, conv := r.p.bodies.readConversation(x.body)
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
				r.join(x, model, conv)
			}
		}
		x.session = x.start.SessionID
		x.start.Headers = r.p.red.Headers(x.header)
		x.start.Query = r.p.red.Query(x.req.URL.RawQuery)
		if mode == Passthrough {
			return
		}
		var decoded []byte
		if mode != Privacy {
			decoded = r.decodeRequest(x)
		}
		r.encode(frame.KindRequestStart, x, it.t, &x.start)
		if mode == Privacy {
			return
		}
		if decoded != nil {
			r.body(frame.KindRequestBody, x, x.marks[len(x.marks)-1].t, decoded, true)
			return
		}
		r.resent.redact(x.session, x.body, x.marks, r.p.red, func(t int64, stored []byte, snappy bool, raw int, last bool) {
			r.flushFull()
			r.appendStored(frame.KindRequestBody, x, t, last, stored, snappy, raw)
		})
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
			if x.tipped && x.status < 300 && !x.replyLong {
				// The reply, for the fingerprint the next request of
				// its session is told apart by (tips): kept, and
				// decoded once at the end.
				if len(x.reply)+len(b) > maxReplyKept {
					x.reply, x.replyLong = nil, true
				} else {
					x.reply = append(x.reply, b...)
				}
			}
			x.sniff.feed(b)
			if it.whole && mode != Passthrough {
				x.redact.keep(b)
			} else if mode != Passthrough {
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
		if x.tipped {
			r.answered(x, it.ok)
		}
		r.encode(frame.KindResponseEnd, x, it.t, end)
	}
}

// join names the session of x, a request that carries no session id:
// the session whose conversation it continues (tips), else a new one.
func (r *recorder) join(x *exch, model string, conv bodyConversation) {
	api := llm.Detect(x.start.Path)
	var s string
	if api == llm.OpenAIResponses {
		// A stored reply it goes on from names the session exactly.
		if prev := previousResponse(x.body); prev != "" {
			s = r.tips.replySession(prev)
		}
	}
	if conv.layout == nil || len(conv.layout.Hashes) == 0 {
		x.start.SessionID, x.start.SessionSource = newID("ses_"), "minted"
		if s != "" {
			x.start.SessionID, x.start.SessionSource = s, "continued"
		}
		x.tipped = api == llm.OpenAIResponses // for its reply's id
		return
	}
	fp := r.tips.fingerprint(model, conv.sys)
	found, key := r.tips.find(conv.layout.Hashes, fp, func(i int) uint64 {
		return r.tips.elementFingerprint(api, x.body, conv.layout, i)
	})
	if s == "" {
		s = found
	}
	if s != "" {
		x.start.SessionID, x.start.SessionSource = s, "continued"
	} else {
		x.start.SessionID, x.start.SessionSource = newID("ses_"), "minted"
	}
	r.tips.add(key, x.start.SessionID, fp)
	x.tip, x.tipped = key, true
}

// answered tells tips how the request of x, whose session was found by
// its conversation, was answered. Besides an error status or a cut
// exchange, a reply that is an error event, stops before its end or
// holds nothing counts as failed: clients resend the same body after it
// (Gemini CLI's retries on an invalid stream), and that retry belongs
// to the session. A compressed reply is judged by its status alone.
// Deciding that for a reply may take decoding it, done only when a
// later request needs it (judgement).
func (r *recorder) answered(x *exch, ok bool) {
	failed := !ok || x.status >= 400 || x.status == 0
	api := llm.Detect(x.start.Path)
	var j *judgement
	switch {
	case failed:
	case x.replyLong:
		// Too long to keep: judged by its status, told apart by model
		// and system prompt only.
	case len(x.reply) > 0:
		j = &judgement{path: x.start.Path, api: api, reply: x.reply}
		if x.recorded != nil {
			// Asked once the client has its reply (Proxy.vouch).
			x.vouch, x.vouchReply = j, x.reply
		} else {
			j.vouch(x.reply) // degrade mode: no handler waits for this
		}
	case x.encoding == "" && x.respBytes == 0:
		failed = true // no reply at all
	}
	x.reply, x.replyLong = nil, false
	if j == nil {
		r.tips.answered(x.tip, x.session, failed, 0)
		return
	}
	r.tips.answeredLater(x.tip, x.session, j)
	r.tips.keep(j)
	if api == llm.OpenAIResponses {
		r.tips.judgeLater(j, x.session)
	}
}

// decodeRequest scans a compressed request body for secrets. When it
// holds one it returns the decoded, redacted body and marks the request
// start Decoded; else it returns nil and the body is recorded as sent
// (the stream redaction that follows cannot see into compressed bytes,
// and finds nothing to change there).
func (r *recorder) decodeRequest(x *exch) []byte {
	enc := x.header.Get("Content-Encoding")
	if enc == "" || strings.EqualFold(enc, "identity") || len(x.marks) == 0 {
		return nil
	}
	plain, err := httpbody.Decode(enc, x.body)
	if err != nil {
		x.start.Unscanned = err.Error()
		return nil
	}
	red := r.p.red.Bytes(plain)
	if bytes.Equal(red, plain) {
		return nil
	}
	x.start.Decoded = true
	return red
}

// heldChunk is a compressed response chunk kept until the body ends.
type heldChunk struct {
	t int64
	b []byte
}

// maxHeld bounds the compressed bytes held for one response; past it the
// body is decoded as it streams (inflate.go). Tests lower it.
var maxHeld = 16 << 20

// hold keeps a chunk of a compressed response: it can only be scanned
// for secrets and usage once whole, and is recorded at its end.
func (r *recorder) hold(x *exch, t int64, b []byte) {
	if x.inflate != nil {
		x.inflate.write(b)
		r.inflated(x, t)
		return
	}
	x.held = append(x.held, heldChunk{t, append([]byte(nil), b...)})
	x.heldN += len(b)
	if x.heldN > maxHeld {
		x.inflate = newInflater(x.encoding, r.p.red)
		for _, c := range x.held {
			x.inflate.write(c.b)
		}
		x.held, x.heldN = nil, 0
		r.inflated(x, t)
	}
}

// inflated records what the inflater of x has decoded and redacted so
// far.
func (r *recorder) inflated(x *exch, t int64) {
	if out := x.inflate.take(); len(out) > 0 {
		x.sniff.feed(out)
		if r.p.opts.Mode != Passthrough {
			r.body(frame.KindResponseBody, x, t, out, false)
		}
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
	if x.inflate != nil {
		out, err := x.inflate.close()
		x.inflate = nil
		x.sniff.feed(out)
		if r.p.opts.Mode == Passthrough {
			return false, ""
		}
		r.body(frame.KindResponseBody, x, t, out, true)
		if err != nil {
			return true, err.Error()
		}
		return true, ""
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
