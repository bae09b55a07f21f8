package server

import (
	"errors"
	"io/fs"
	"math"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/internal/metric"
	"github.com/bbengine/bbengine/proxy"
	"github.com/bbengine/bbengine/wal"
	"github.com/prometheus/client_golang/prometheus"
)

// retrievalTimings time the proxy's memory reads, whoever asks: bbengine
// mem and the MCP server through the query endpoint, and the harness API.
// A nil *retrievalTimings times nothing.
type retrievalTimings struct {
	vec *metric.Vec
	ops [api.OpN]*metric.Histogram
}

func newRetrievalTimings() *retrievalTimings {
	rt := &retrievalTimings{vec: metric.NewVec("bbengine_retrieval_seconds",
		"Time the proxy's memory takes to answer one retrieval, whoever asks (bbengine mem and MCP through the query endpoint, the harness API): "+
			"from the call of the operation (search, get an artifact, related, context pack, list) to its result, before the answer is encoded; "+
			"a fresh=1 wait for derivation is not counted.",
		retrievalBuckets, "op")}
	for i, name := range api.OpNames {
		rt.ops[i] = rt.vec.With(name)
	}
	return rt
}

var retrievalBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5}

// Observe counts one retrieval of op that started at start. It
// allocates nothing.
func (rt *retrievalTimings) Observe(op api.Op, start time.Time) {
	if rt == nil {
		return
	}
	rt.ops[op].Observe(time.Since(start))
}

// Default refresh periods of the gauges the proxy computes in the
// background.
const (
	lagEvery  = time.Second
	sizeEvery = 10 * time.Second
)

// proxyMetrics are the series of /_bb/metrics that the process around
// the proxy measures: derivation's time per frame and lag, retrieval
// latency, and the sizes of the WAL and of the data directory. Lag and
// sizes cost I/O (a WAL read, a directory walk): a background goroutine
// computes them, every lagEvery and sizeEvery, and scrapes read the last
// values. Nothing here runs on the proxy's request path.
type proxyMetrics struct {
	dir, walDir string
	log         *wal.Log
	derive      *metric.Vec
	perFrame    *metric.Histogram
	retrieval   *retrievalTimings
	// indexSync times the memory index's syncs; indexSince is when the
	// engine first derived memory the index has not taken yet (unix ns),
	// 0 when it has taken all.
	indexSync  *metric.Vec
	indexSyncs *metric.Histogram
	indexSince atomic.Int64

	// Float64 bits of the gauges; NaN until first known.
	lagBytes, lagSeconds, walSize, dirSize atomic.Uint64
	// applied is the engine's applied offset as last read, used while
	// the engine cannot be asked (it stopped after a panic).
	applied atomic.Uint64
	// sizedAt is when walSize and dirSize were measured (unix ns), 0
	// before the first time; sizeEvery is how often they are.
	sizedAt   atomic.Int64
	sizeEvery time.Duration
	// sizeMu serialises the walks that measure the sizes and a reader
	// that wants the three figures of one walk (freshSizes).
	sizeMu sync.Mutex

	stop chan struct{}
	wg   sync.WaitGroup
}

func newProxyMetrics(dir, walDir string, log *wal.Log) *proxyMetrics {
	pm := &proxyMetrics{dir: filepath.Clean(dir), walDir: filepath.Clean(walDir), log: log, retrieval: newRetrievalTimings(), stop: make(chan struct{})}
	pm.derive = metric.NewVec("bbengine_derive_frame_seconds",
		"Derivation time per WAL frame: each commit of derived state is timed from reading its first frame to the commit "+
			"(decoding, staging, writing, and at the end of a pass deriving memory) and the time divided evenly over its frames; "+
			"waits for new frames are not counted.",
		[]float64{.000001, .0000025, .000005, .00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .05, .25, 1})
	pm.perFrame = pm.derive.With()
	pm.indexSync = metric.NewVec("bbengine_index_sync_seconds",
		"Time one sync of the memory index takes, off the request path: reading the memory states and the changed sessions' artifacts, "+
			"and sending the documents whose content changed to Bluge in batches. After a sync that took d the next waits 10·d, at most 500 ms, and for the proxy to be idle, at most 500 ms.",
		[]float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10})
	pm.indexSyncs = pm.indexSync.With()
	nan := math.Float64bits(math.NaN())
	for _, g := range []*atomic.Uint64{&pm.lagBytes, &pm.lagSeconds, &pm.walSize, &pm.dirSize} {
		g.Store(nan)
	}
	return pm
}

// onDerived is the engine's Options.OnDerived.
func (pm *proxyMetrics) onDerived(frames int, took time.Duration) {
	if frames > 0 {
		pm.perFrame.ObserveN(took/time.Duration(frames), uint64(frames))
	}
}

// indexBehind records that the engine derived memory at now; the index
// lag runs from the first such time the index has not taken.
func (pm *proxyMetrics) indexBehind(now time.Time) {
	if pm == nil {
		return
	}
	pm.indexSince.CompareAndSwap(0, now.UnixNano())
}

// indexSynced records a sync of the index that started at start and
// took took: it took every change from before start.
func (pm *proxyMetrics) indexSynced(start time.Time, took time.Duration) {
	if pm == nil {
		return
	}
	pm.indexSyncs.Observe(took)
	for {
		since := pm.indexSince.Load()
		if since == 0 || since > start.UnixNano() || pm.indexSince.CompareAndSwap(since, 0) {
			return
		}
	}
}

// indexLag is the age at now of the oldest memory change the index has
// not taken, in seconds; 0 when it has taken all.
func (pm *proxyMetrics) indexLag(now time.Time) float64 {
	since := pm.indexSince.Load()
	if since == 0 {
		return 0
	}
	return max(now.Sub(time.Unix(0, since)).Seconds(), 0)
}

// register adds the series to the proxy's /_bb/metrics.
func (pm *proxyMetrics) register(p *proxy.Proxy) error {
	gauge := func(name, help string, v *atomic.Uint64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 { return math.Float64frombits(v.Load()) })
	}
	return errors.Join(
		p.Register(pm.derive),
		p.Register(pm.retrieval.vec),
		p.Register(pm.indexSync),
		p.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bbengine_index_lag_seconds",
			Help: "Age of the oldest derived memory the memory index has not taken yet: now minus when the engine first reported memory " +
				"derived since the index's last sync began; 0 when the index has caught up with derivation (the derivation lag adds to it)."},
			func() float64 { return pm.indexLag(time.Now()) })),
		p.Register(gauge("bbengine_derive_lag_bytes", "WAL bytes not derived yet: the WAL's end offset minus the engine's applied offset (committed derived state); 0 when no frame is left. NaN until the engine is open. Refreshed every second.", &pm.lagBytes)),
		p.Register(gauge("bbengine_derive_lag_seconds", "Age of the oldest WAL frame not derived yet (now minus the time in its header); 0 when derivation has caught up. NaN until the engine is open. Refreshed every second.", &pm.lagSeconds)),
		p.Register(gauge("bbengine_wal_size_bytes", "Bytes of the files in the WAL directory. Refreshed in the background every 10 seconds.", &pm.walSize)),
		p.Register(gauge("bbengine_data_dir_size_bytes", "Bytes of every file under the data directory, the WAL, the derived store and the index included. Refreshed in the background every 10 seconds.", &pm.dirSize)),
	)
}

// start refreshes lag every lag and sizes every size until close;
// applied returns the engine's applied offset, ok false while it cannot
// say.
func (pm *proxyMetrics) start(lag, size time.Duration, applied func() (uint64, bool)) {
	pm.sizeEvery = size
	pm.wg.Add(1)
	go func() {
		defer pm.wg.Done()
		t := time.NewTicker(lag)
		defer t.Stop()
		var sized time.Time
		for {
			pm.refreshLag(applied)
			if time.Since(sized) >= size {
				pm.refreshSizes()
				sized = time.Now()
			}
			select {
			case <-pm.stop:
				return
			case <-t.C:
			}
		}
	}()
}

func (pm *proxyMetrics) close() {
	select {
	case <-pm.stop:
	default:
		close(pm.stop)
	}
	pm.wg.Wait()
}

// refreshLag reads the engine's applied offset and the WAL frame there.
func (pm *proxyMetrics) refreshLag(applied func() (uint64, bool)) {
	a, ok := applied()
	if ok {
		pm.applied.Store(a)
	} else if math.IsNaN(math.Float64frombits(pm.lagBytes.Load())) {
		return // never known
	} else {
		a = pm.applied.Load()
	}
	bytes, seconds, err := DerivationLag(pm.log, a, time.Now())
	if err != nil {
		return
	}
	pm.lagBytes.Store(math.Float64bits(float64(bytes)))
	pm.lagSeconds.Store(math.Float64bits(seconds))
}

// DerivationLag returns how far derivation that reached applied is
// behind log: in bytes to its end, and in the age at now of the first
// frame at or after applied. Both are 0 when no frame is there.
func DerivationLag(log *wal.Log, applied uint64, now time.Time) (bytes uint64, seconds float64, err error) {
	end, err := log.End()
	if err != nil || end <= applied {
		return 0, 0, err
	}
	r := log.NewReader()
	defer r.Close()
	err = r.Seek(applied)
	var be *wal.BoundaryError
	switch {
	case errors.As(err, &be):
		err = r.Seek(be.Next)
	case errors.Is(err, wal.ErrOutOfRange):
		// Retention removed what was not derived: the reader starts at
		// the first retained frame.
		err = nil
	}
	if err != nil {
		return 0, 0, err
	}
	for {
		if !r.Next() {
			return 0, 0, r.Err()
		}
		if r.Header().Kind != frame.KindSegmentHeader {
			break
		}
	}
	age := now.Sub(time.Unix(0, r.Header().Time)).Seconds()
	return end - applied, max(age, 0), nil
}

// refreshSizes measures the WAL and the data directory.
func (pm *proxyMetrics) refreshSizes() {
	pm.sizeMu.Lock()
	defer pm.sizeMu.Unlock()
	pm.measureSizes()
}

// freshSizes returns the sizes of one walk at most maxAge old, walking
// the directory again when the last walk is older.
func (pm *proxyMetrics) freshSizes(maxAge time.Duration) (walSize, dirSize int64, at time.Time) {
	pm.sizeMu.Lock()
	defer pm.sizeMu.Unlock()
	if time.Since(time.Unix(0, pm.sizedAt.Load())) > maxAge {
		pm.measureSizes()
	}
	return int64(math.Float64frombits(pm.walSize.Load())), int64(math.Float64frombits(pm.dirSize.Load())), time.Unix(0, pm.sizedAt.Load())
}

// measureSizes walks the directory and stores the sizes; the caller
// holds sizeMu.
func (pm *proxyMetrics) measureSizes() {
	walSize, dirSize := Sizes(pm.dir, pm.walDir)
	pm.walSize.Store(math.Float64bits(float64(walSize)))
	pm.dirSize.Store(math.Float64bits(float64(dirSize)))
	pm.sizedAt.Store(time.Now().UnixNano())
}

// Sizes walks the data directory dir and returns the bytes of the files
// directly in walDir (the WAL's segments) and of every regular file
// under dir, walDir's included: the figures of bbengine_wal_size_bytes
// and bbengine_data_dir_size_bytes. A file removed during the walk (a
// compaction, retention) is not counted.
func Sizes(dir, walDir string) (walSize, dirSize int64) {
	dir, walDir = filepath.Clean(dir), filepath.Clean(walDir)
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		dirSize += info.Size()
		if filepath.Dir(path) == walDir {
			walSize += info.Size()
		}
		return nil
	})
	return walSize, dirSize
}
