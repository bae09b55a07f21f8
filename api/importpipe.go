package api

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/wal"
)

// importPipe carries the records an import reads to its sink while the
// next ones are read:
//
//	reader ──send──▶ workers (GOMAXPROCS: redact, encode frames)
//	                     │ in order
//	                     ▼
//	                 appender (WAL, or the running proxy) ──▶ deriver
//
// The reader is the caller of send. At most 2 x GOMAXPROCS chunks (of
// about 1 MiB, see engine.ScanImport) are in flight, so memory does not
// grow with the input. With a local sink the workers redact and encode
// the records (engine.EncodeImports) and the deriver catches the engine
// up to marks the appender sets, where the WAL ended then
// (engine.CatchUpTo), so derivation runs beside the reading instead of
// after it: a mark goes between two sessions once pipeDerive bytes were
// appended since the last, so a pass covers about that, and a session
// is rarely cut in two (the first pass would derive half of it, the
// second all of it again). The
// appender may run up to pipeLag bytes ahead of the last finished pass:
// the records wait in the WAL, not in memory, and the reading keeps the
// processors busy while a pass has less work than processors (its
// commit, the last sessions of its phases). With a running proxy, the
// proxy derives. A pipe is used by one goroutine; close waits for
// everything sent.
type importPipe struct {
	ctx   context.Context
	sink  ImportSink
	log   *wal.Log // the local sink's WAL, nil for a running proxy
	jobs  chan *pipeJob
	order chan *pipeJob
	// derive hands the deriver the marks to derive to, in order; caught
	// tells the appender a pass ended. appended counts the bytes of
	// records appended, derived those a finished pass covered.
	derive            chan deriveMark
	caught            chan struct{}
	appended, derived atomic.Int64
	wg                sync.WaitGroup // workers, appender, deriver
	closed            bool

	mu       sync.Mutex
	firstErr error
}

// pipeJob is one chunk of records on its way.
type pipeJob struct {
	// session is the session of the chunk's records (a chunk is of one
	// file, see engine.ScanImport).
	session string
	recs    []exchange.Import
	frames  []wal.Record
	bytes   int
	err     error
	ready   chan struct{}
}

// deriveMark is a point the deriver derives to: the WAL's end, and the
// bytes of records appended up to it.
type deriveMark struct {
	end      uint64
	appended int64
}

const (
	// pipeDerive is how many bytes of records are appended between two
	// derivation passes; pipeLag how far the appender may get ahead of
	// the last finished pass.
	//
	// A pass holds what it derives (the frames it read, its sessions'
	// events) until it ends: at 200 copies of the golden corpus passes
	// of 8 MiB took 8% less CPU than passes of 16 MiB (less for the
	// collector). A session longer than 2 x pipeDerive is cut, and
	// derived again whole in the next pass, as before at 16 MiB passes.
	pipeDerive = 8 << 20
	pipeLag    = 64 << 20 // more than the 2 x pipeDerive a pass may cover
	// appendGroup is how many frames go to the WAL in one AppendBatch:
	// the WAL keeps a frame buffer per frame of a batch for reuse, so
	// large batches would leave it holding tens of MiB.
	appendGroup = 64
)

// appendFrames appends frames to log in groups of appendGroup.
func appendFrames(log *wal.Log, frames []wal.Record) error {
	for len(frames) > 0 {
		n := min(len(frames), appendGroup)
		if _, err := log.AppendBatch(frames[:n]); err != nil {
			return err
		}
		frames = frames[n:]
	}
	return nil
}

func newImportPipe(ctx context.Context, sink ImportSink) *importPipe {
	workers := runtime.GOMAXPROCS(0)
	p := &importPipe{ctx: ctx, sink: sink, jobs: make(chan *pipeJob, 2*workers), order: make(chan *pipeJob, 2*workers),
		derive: make(chan deriveMark, pipeLag/pipeDerive+1), caught: make(chan struct{}, 1)}
	if ls, ok := sink.(*LocalImportSink); ok {
		p.log = ls.log
	}
	for range workers {
		p.wg.Go(p.work)
	}
	p.wg.Go(p.appendAll)
	if p.log != nil {
		p.wg.Go(p.deriveAll)
	}
	return p
}

// send hands recs, which the pipe then owns, to the pipe. It blocks
// while the pipe is full and returns the pipe's first error.
func (p *importPipe) send(recs []exchange.Import) error {
	if err := p.err(); err != nil {
		return err
	}
	j := &pipeJob{recs: recs, ready: make(chan struct{})}
	if len(recs) > 0 {
		j.session = recs[0].Session
	}
	for i := range recs {
		j.bytes += len(recs[i].Data)
	}
	select {
	case p.order <- j:
	case <-p.ctx.Done():
		return p.ctx.Err()
	}
	p.jobs <- j // never blocks: the order channel, as large, admitted j
	return nil
}

func (p *importPipe) work() {
	for j := range p.jobs {
		if p.log != nil {
			j.frames, j.err = engine.EncodeImports(j.recs)
			j.recs = nil
		}
		close(j.ready)
	}
}

// appendAll appends the chunks in the order they were sent.
func (p *importPipe) appendAll() {
	defer func() {
		if p.derive != nil {
			close(p.derive)
		}
	}()
	var (
		appended int    // since the last mark
		last     string // the session of the last chunk appended
	)
	for j := range p.order {
		<-j.ready
		if p.err() != nil {
			continue // drain
		}
		// A mark goes between two sessions, once pipeDerive bytes were
		// appended: a session cut by a mark is derived in both passes,
		// whole in the second. A session longer than pipeDerive is cut
		// after twice that.
		if p.log != nil && (appended >= pipeDerive && j.session != last || appended >= 2*pipeDerive) {
			appended = 0
			end, err := p.log.End()
			if err != nil {
				p.fail(err)
				continue
			}
			p.derive <- deriveMark{end: end, appended: p.appended.Load()}
		}
		err := j.err
		switch {
		case err != nil:
		case p.log != nil:
			err = appendFrames(p.log, j.frames)
		default:
			err = p.sink.Append(j.recs)
		}
		if err != nil {
			p.fail(err)
			continue
		}
		p.appended.Add(int64(j.bytes))
		appended += j.bytes
		last = j.session
		p.keepUp()
	}
}

// keepUp waits while the deriver is more than pipeLag bytes behind the
// appender, so that the records waiting to be derived, and what the
// final catch-up derives at once, do not grow with the input.
func (p *importPipe) keepUp() {
	if p.log == nil {
		return // the running proxy derives at its own pace
	}
	for p.appended.Load()-p.derived.Load() > pipeLag && p.err() == nil {
		select {
		case <-p.caught:
		case <-p.ctx.Done():
			p.fail(p.ctx.Err())
		}
	}
}

// deriveAll catches the engine up to each mark the appender sends.
func (p *importPipe) deriveAll() {
	ls := p.sink.(*LocalImportSink)
	for m := range p.derive {
		if p.err() == nil {
			if _, err := ls.e.CatchUpTo(p.ctx, m.end); err != nil {
				p.fail(err)
			}
		}
		p.derived.Store(m.appended)
		select {
		case p.caught <- struct{}{}:
		default:
		}
	}
}

// close waits until everything sent is appended (and the deriver is
// idle) and returns the pipe's first error. It is safe to call twice.
func (p *importPipe) close() error {
	if !p.closed {
		p.closed = true
		close(p.order)
		close(p.jobs)
		p.wg.Wait()
	}
	return p.err()
}

func (p *importPipe) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.firstErr
}

func (p *importPipe) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.firstErr == nil {
		p.firstErr = err
	}
}
