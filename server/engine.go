package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/api/httpapi"
	"github.com/bbengine/bbengine/api/webui"
	"github.com/bbengine/bbengine/codec/redact"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/index"
	"github.com/bbengine/bbengine/internal/guard"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/proxy/breaker"
	"github.com/bbengine/bbengine/wal"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// proxyEngine runs the engine inside the proxy: it opens the data
// directory's engine on the proxy's WAL (waiting while a command holds the
// directory), serves queries on loopback and follows the WAL, restarting
// after an error.
type proxyEngine struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	e      *engine.Engine
	qs     *httpapi.Server
	mem    *api.Local
	ix     *index.Index
	// memory is signalled when the engine derived memory: the index
	// syncer wakes on it. memoryN counts those passes (see
	// api.LocalOptions.Changes).
	memory  chan struct{}
	memoryN atomic.Uint64
	syncers sync.WaitGroup
	// addr is the proxy's listening address, for the lock file.
	addr string
	// brk is the proxy's circuit breaker; restored is closed once it has
	// taken back its recorded state (or that failed).
	brk      *breaker.Breaker
	restored chan struct{}
	// guard is the proxy's browser policy, for the query endpoint.
	guard *guard.Policy
	fs    vfs.FS // the file system of the engine's Pebble; nil for the OS's
	// status is what /_bb/health says of derivation: "ok", "starting",
	// or why it is paused or stopped.
	status atomic.Pointer[string]
	// wedged: the engine panicked and must not be used again (see run).
	wedged bool
	// filled is set once the WAL could not be written this run (hold).
	filled atomic.Bool
	// busy reports the proxy's exchanges in progress; runUntil is when
	// derivation may yield to them again (see yield).
	busy     atomic.Pointer[func() int64]
	runUntil time.Time
	// metrics times derivation and retrieval for /_bb/metrics.
	metrics *proxyMetrics
	// proxy is the recording proxy the engine runs beside: the web UI's
	// health page shows its state.
	proxy *proxy.Proxy
	// retainer runs the user's retention, when set.
	retainer *retainer
	// uiToken is the web UI's token ("" for no UI); ui serves it once
	// the engine is open.
	uiToken string
	// uiDown says why the web UI could not start, "" while it is up or
	// not yet tried.
	uiDown string
	ui     *webui.UI
}

// applied returns the engine's applied offset for the derivation lag
// metric; ok is false while the engine is not open or cannot be used.
func (pe *proxyEngine) applied() (off uint64, ok bool) {
	pe.mu.Lock()
	e, wedged := pe.e, pe.wedged
	pe.mu.Unlock()
	if e == nil || wedged {
		return 0, false
	}
	off, err := e.Applied()
	return off, err == nil
}

// setBusy tells derivation how many exchanges the proxy is serving.
func (pe *proxyEngine) setBusy(active func() int64) { pe.busy.Store(&active) }

// Derivation gives the proxy's exchanges the CPU first: while some are in
// progress it pauses between frames, up to yieldMax at a time, and then
// runs at least yieldRun before it pauses again, so that under constant
// load it still has a fifth of a core and never falls behind for good.
const (
	yieldMax  = 40 * time.Millisecond
	yieldRun  = 10 * time.Millisecond
	yieldPoll = 500 * time.Microsecond
)

// yield is the engine's Yield: it returns how long it paused. It runs on
// the deriving goroutine only.
func (pe *proxyEngine) yield(ctx context.Context) time.Duration {
	busy := pe.busy.Load()
	if busy == nil || (*busy)() == 0 {
		return 0
	}
	now := time.Now()
	if now.Before(pe.runUntil) {
		return 0
	}
	deadline := now.Add(yieldMax)
	t := time.NewTimer(yieldPoll)
	defer t.Stop()
	for (*busy)() > 0 && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return time.Since(now)
		case <-t.C:
			t.Reset(yieldPoll)
		}
	}
	pe.runUntil = time.Now().Add(yieldRun)
	return time.Since(now)
}

// setStatus records derivation's state for /_bb/health.
func (pe *proxyEngine) setStatus(s string) { pe.status.Store(&s) }

// Status is derivation's state as /_bb/health reports it.
func (pe *proxyEngine) Status() string {
	if s := pe.status.Load(); s != nil {
		return *s
	}
	return "starting"
}

// panicError is a panic recovered at the derivation boundary.
type panicError struct {
	what  string
	v     any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("%s panicked: %v", p.what, p.v) }

// recovered runs f and turns a panic in it into a *panicError:
// derivation (the canonicalizer, memory, the index, Pebble and Bluge
// under them) never takes the proxy down.
func recovered(what string, f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{what: what, v: v, stack: debug.Stack()}
		}
	}()
	return f()
}

// breakerRestoreWait bounds how long the proxy waits for the engine to
// restore the circuit breaker before it serves.
const breakerRestoreWait = 10 * time.Second

// setProxy records the proxy's address in the lock file, now or when
// the engine opens.
func (pe *proxyEngine) setProxy(addr string) {
	pe.mu.Lock()
	defer pe.mu.Unlock()
	pe.addr = addr
	if pe.e != nil {
		pe.e.SetProxy(addr)
	}
}

func startEngine(dir string, log *wal.Log, red *redact.Redactor, logf func(string, ...any), p *proxy.Proxy, pol *guard.Policy, fs vfs.FS, pm *proxyMetrics, rt *retainer, uiToken string) *proxyEngine {
	ctx, cancel := context.WithCancel(context.Background())
	pe := &proxyEngine{cancel: cancel, done: make(chan struct{}), memory: make(chan struct{}, 1), brk: p.Breaker(), proxy: p, restored: make(chan struct{}), guard: pol, fs: fs, metrics: pm, retainer: rt, uiToken: uiToken}
	go pe.run(ctx, dir, log, red, logf)
	return pe
}

func (pe *proxyEngine) run(ctx context.Context, dir string, log *wal.Log, red *redact.Redactor, logf func(string, ...any)) {
	defer close(pe.done)
	lowPriority()
	restored := sync.OnceFunc(func() { close(pe.restored) })
	defer restored()
	var e *engine.Engine
	for warned := false; ; {
		var err error
		e, err = engine.Open(dir, &engine.Options{Keys: log.Keys(), WAL: log, Logf: logf, OnMemory: pe.memoryChanged, Redactor: red, FS: pe.fs, MemoryWorkers: 1,
			Hold: func() bool { return pe.hold(log, logf) }, Yield: pe.yield, OnDerived: pe.metrics.onDerived})
		if err == nil {
			break
		}
		if !errors.Is(err, engine.ErrLocked) {
			pe.setStatus(fmt.Sprintf("off: %v (recording goes on; bbengine rebuild derives it later)", err))
			logf("canonicalizer off: %v (recording goes on; bbengine rebuild derives it later)", err)
			return
		}
		if !warned {
			logf("canonicalizer waiting: %v", err)
			warned = true
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
	if pe.brk != nil {
		if err := api.RestoreBreaker(e, log, pe.brk); err != nil {
			logf("circuit breaker: restoring its recorded state: %v (sessions start afresh)", err)
		}
	}
	restored()
	var mem *api.Local
	ix, err := index.Open(api.IndexDir(dir), &index.Options{Keys: e.Keys()})
	if err != nil {
		ix = nil
		logf("memory index off: %v (bbengine rebuild --index rebuilds it)", err)
	} else {
		mem = api.NewLocal(e, &api.LocalOptions{Index: ix, WAL: log, Followed: true, Redactor: red, Timer: pe.metrics.retrieval, Changes: &pe.memoryN})
		pe.syncers.Add(1)
		go pe.syncIndex(ctx, mem, logf)
	}
	if pe.retainer != nil {
		// Retention needs no index: without one it runs over a memory
		// that only writes corrections.
		rm := mem
		if rm == nil {
			rm = api.NewLocal(e, &api.LocalOptions{WAL: log, Followed: true, Redactor: red})
		}
		pe.syncers.Add(1)
		go pe.retain(ctx, rm, pe.retainer, logf)
	}
	qs, err := httpapi.Start(e, mem, pe.brk, pe.guard)
	if err != nil {
		logf("query endpoint off: %v (sessions and show wait until the proxy stops)", err)
	}
	var ui *webui.UI
	if pe.uiToken != "" {
		var svc api.Service = mem
		if mem == nil {
			svc = api.NewLocal(e, nil)
		}
		if ui, err = webui.New(&webui.Options{Service: svc, WAL: log, Token: pe.uiToken, Version: e.Applied, Health: pe.uiHealth}); err != nil {
			logf("web UI off: %v", err)
			pe.mu.Lock()
			pe.uiDown = err.Error()
			pe.mu.Unlock()
		}
	}
	pe.mu.Lock()
	pe.e, pe.qs, pe.mem, pe.ix, pe.ui = e, qs, mem, ix, ui
	if pe.addr != "" {
		e.SetProxy(pe.addr)
	}
	pe.mu.Unlock()
	for {
		pe.setStatus("ok")
		err := recovered("the canonicalizer", func() error { return e.Follow(ctx) })
		if ctx.Err() != nil {
			return
		}
		var pv *panicError
		if errors.As(err, &pv) {
			// Pebble panics when a write of its own log fails and leaves
			// its commit pipeline locked: this engine can neither derive
			// nor close again. Recording goes on; the next start derives
			// the rest from the WAL.
			pe.mu.Lock()
			pe.wedged = true
			pe.mu.Unlock()
			pe.setStatus(fmt.Sprintf("stopped: %v (recording goes on; the next proxy start derives the rest)", err))
			logf("canonicalizer stopped until the proxy restarts (recording goes on; the next start or bbengine rebuild derives the rest): %v\n%s", err, pv.stack)
			return
		}
		pe.setStatus(fmt.Sprintf("paused: %v (recording goes on; retrying every 5s)", err))
		logf("canonicalizer paused: %v; recording goes on, retrying in 5s", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(5 * time.Second):
		}
	}
}

// serveUI answers the web UI's paths: the UI once the engine is open,
// else 503.
func (pe *proxyEngine) serveUI(w http.ResponseWriter, r *http.Request) {
	pe.mu.Lock()
	ui, down, token := pe.ui, pe.uiDown, pe.uiToken
	pe.mu.Unlock()
	if ui == nil {
		switch {
		case down != "":
		case token == "":
			down = "it has no token (see the proxy's log)"
		default:
			down = "the engine is not open yet: derivation is " + pe.Status()
		}
		webui.Unavailable(w, r, down)
		return
	}
	ui.ServeHTTP(w, r)
}

// closeUI ends the web UI's live streams, so that the server's shutdown
// does not wait for them.
func (pe *proxyEngine) closeUI() {
	pe.mu.Lock()
	ui := pe.ui
	pe.mu.Unlock()
	if ui != nil {
		ui.Close()
	}
}

// query returns the query server, or nil while the engine is not open.
func (pe *proxyEngine) query() *httpapi.Server {
	pe.mu.Lock()
	defer pe.mu.Unlock()
	return pe.qs
}

// memoryChanged wakes the index syncer and starts the index lag's clock
// if it is not running; it never blocks.
func (pe *proxyEngine) memoryChanged() {
	pe.memoryN.Add(1)
	pe.metrics.indexBehind(time.Now())
	select {
	case pe.memory <- struct{}{}:
	default:
	}
}

// The index syncer keeps to a duty cycle: after a sync that took d it
// waits indexShare·d, at most indexEvery, before the next, so that it
// uses at most about 1/(1+indexShare) of a core however busy memory is,
// and the passes of a busy session are taken in one Bluge batch (one
// segment fsync) instead of one each. A cheap sync (a small session)
// leaves the index a few milliseconds behind; an expensive one (reading
// a long session's artifacts) at most indexEvery plus the sync. A query
// that asks for fresh results syncs itself.
const (
	indexShare = 10
	indexEvery = 500 * time.Millisecond
)

// indexIdleMax is how long the index syncer waits for the proxy to have
// no exchange in progress before it syncs anyway: a sync reads the
// changed sessions' artifacts and feeds Bluge, CPU the proxy's requests
// should have first on a small machine.
const indexIdleMax = 500 * time.Millisecond

// syncIndex keeps the memory index up to the engine's artifacts: once at
// start, then after the engine derived memory, keeping to the duty cycle
// above and waiting for the proxy to be idle (see indexIdleMax). It runs
// off the request path, on its own goroutine.
func (pe *proxyEngine) syncIndex(ctx context.Context, mem *api.Local, logf func(string, ...any)) {
	defer pe.syncers.Done()
	lowPriority()
	var last time.Time
	var took time.Duration
	for {
		if wait := min(indexEvery, indexShare*took) - time.Since(last); !last.IsZero() && wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		if !pe.waitIdle(ctx, indexIdleMax) {
			return
		}
		// Changes from now on are not in this sync: drain the signal
		// first, so that one arriving during the sync wakes the next.
		select {
		case <-pe.memory:
		default:
		}
		start := time.Now()
		err := recovered("the memory index", mem.Sync)
		last = time.Now()
		took = last.Sub(start)
		var retry <-chan time.Time
		if err != nil {
			logf("memory index paused: %v (recording goes on; retrying in 5s)", err)
			retry = time.After(5 * time.Second)
		} else {
			pe.metrics.indexSynced(start, took)
		}
		select {
		case <-ctx.Done():
			return
		case <-pe.memory:
		case <-retry:
		}
	}
}

// waitIdle waits until the proxy has no exchange in progress, or max
// has passed; it returns false when ctx is done.
func (pe *proxyEngine) waitIdle(ctx context.Context, max time.Duration) bool {
	busy := pe.busy.Load()
	if busy == nil || (*busy)() == 0 {
		return ctx.Err() == nil
	}
	deadline := time.NewTimer(max)
	defer deadline.Stop()
	poll := time.NewTicker(yieldPoll)
	defer poll.Stop()
	for (*busy)() > 0 {
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return true
		case <-poll.C:
		}
	}
	return true
}

// hold tells derivation not to write derived state: from the first time
// the WAL cannot be written until the proxy stops. A full disk is shared
// with Pebble, whose own log may have failed meanwhile, and a Pebble
// whose log failed crashes the process at its next rotation (a fatal
// error, past any recover), even after space returns; so derivation
// stops for this run, and the next start (or bbengine rebuild) derives
// what it missed from the WAL, where everything is recorded.
func (pe *proxyEngine) hold(log *wal.Log, logf func(string, ...any)) bool {
	if log.Failed() != nil && pe.filled.CompareAndSwap(false, true) {
		msg := "the disk filled while recording; the next proxy start (or bbengine rebuild) derives the rest from the WAL"
		pe.setStatus("stopped: " + msg)
		logf("canonicalizer stopped: %s", msg)
	}
	return pe.filled.Load()
}

// close stops following, derives and indexes what is left and closes the
// engine and the index.
func (pe *proxyEngine) close() error {
	pe.cancel()
	<-pe.done
	pe.syncers.Wait()
	pe.mu.Lock()
	defer pe.mu.Unlock()
	if pe.e == nil {
		return nil
	}
	if pe.ui != nil {
		pe.ui.Close()
	}
	if pe.qs != nil {
		pe.qs.Close()
	}
	if pe.wedged || pe.filled.Load() {
		// The engine panicked, or its store met a full disk: it cannot
		// be used, not even to close.
		if pe.mem != nil {
			pe.ix.Close()
		}
		return errors.New("derivation stopped after a panic or a full disk this run; the next start (or bbengine rebuild) derives what it missed from the WAL, where everything is recorded")
	}
	_, err := pe.e.CatchUp(context.Background())
	if pe.mem != nil {
		err = errors.Join(err, pe.mem.Sync(), pe.ix.Close())
	}
	return errors.Join(err, pe.e.Close())
}
