package server

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/wal"
)

// TestDerivationLag checks the lag against a real WAL: bytes to the end
// and the age of the first frame not derived, 0 once derivation is at
// the end.
func TestDerivationLag(t *testing.T) {
	// One frame per segment: derivation that read a segment's last
	// frame stands at the next segment's header.
	log, err := wal.Open(filepath.Join(t.TempDir(), "wal"), &wal.Options{Sync: wal.SyncNone, SegmentSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	t0 := time.Unix(1_700_000_000, 0)
	var offs []uint64
	for i := range 3 {
		off, err := log.Append(wal.Record{Kind: frame.KindRequestBody, Exchange: 1, Time: t0.Add(time.Duration(i) * time.Second).UnixNano(), Payload: []byte(`{"n":1}`)})
		if err != nil {
			t.Fatal(err)
		}
		offs = append(offs, off)
	}
	if err := log.Sync(); err != nil {
		t.Fatal(err)
	}
	end, _ := log.End()
	now := t0.Add(10 * time.Second)
	for _, tt := range []struct {
		applied   uint64
		wantBytes uint64
		wantAge   float64
	}{
		{offs[0], end - offs[0], 10},
		{offs[2], end - offs[2], 8},
		{offs[1] - frame.HeaderLen - 8, end - offs[1] + frame.HeaderLen + 8, 9}, // at the header of frame 1's segment
		{end, 0, 0},
	} {
		b, age, err := DerivationLag(log, tt.applied, now)
		if err != nil || b != tt.wantBytes || age != tt.wantAge {
			t.Errorf("applied %d: lag %d bytes, %vs, %v; want %d bytes, %vs", tt.applied, b, age, err, tt.wantBytes, tt.wantAge)
		}
	}
}

// TestIndexLag checks the index lag's clock: it starts at the first
// memory change the index has not taken, keeps that start through later
// changes, and stops at a sync that began after it, not at one that
// began before.
func TestIndexLag(t *testing.T) {
	pm := newProxyMetrics(t.TempDir(), t.TempDir(), nil)
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	if got := pm.indexLag(at(0)); got != 0 {
		t.Fatalf("lag before any change %v, want 0", got)
	}
	pm.indexBehind(at(1))
	pm.indexBehind(at(2))
	if got := pm.indexLag(at(4)); got != 3 {
		t.Fatalf("lag %v, want 3 (from the first change)", got)
	}
	pm.indexSynced(at(0.5), time.Second) // began before the change
	if got := pm.indexLag(at(4)); got != 3 {
		t.Fatalf("lag after an older sync %v, want 3", got)
	}
	pm.indexSynced(at(3), time.Second)
	if got := pm.indexLag(at(5)); got != 0 {
		t.Fatalf("lag after a sync %v, want 0", got)
	}
	if got := pm.indexSyncs.Count(); got != 2 {
		t.Fatalf("%d syncs timed, want 2", got)
	}
}

// TestMetricsObserveAllocs: timing a retrieval or a commit of derived
// frames allocates nothing.
func TestMetricsObserveAllocs(t *testing.T) {
	pm := newProxyMetrics(t.TempDir(), t.TempDir(), nil)
	var none *retrievalTimings
	start := time.Now()
	if n := testing.AllocsPerRun(1000, func() {
		pm.retrieval.Observe(api.OpSearch, start)
		none.Observe(api.OpGet, start)
		pm.onDerived(7, time.Millisecond)
	}); n != 0 {
		t.Fatalf("observing allocates %v times", n)
	}
	if got := pm.perFrame.Count(); got < 7000 {
		t.Fatalf("%d frames counted", got)
	}
}

// TestWaitIdle checks the index syncer's wait for the proxy: at once when
// no exchange is in progress, until the last ends, no longer than its
// bound, and not at all once stopped.
func TestWaitIdle(t *testing.T) {
	var active atomic.Int64
	pe := &proxyEngine{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if !pe.waitIdle(ctx, time.Hour) {
		t.Fatal("without a busy function: not idle")
	}
	pe.setBusy(active.Load)
	if !pe.waitIdle(ctx, time.Hour) {
		t.Fatal("idle proxy: false")
	}
	active.Store(1)
	go func() {
		time.Sleep(20 * time.Millisecond)
		active.Store(0)
	}()
	if !pe.waitIdle(ctx, time.Hour) || active.Load() != 0 {
		t.Fatal("returned while an exchange was in progress")
	}
	active.Store(1)
	if !pe.waitIdle(ctx, 10*time.Millisecond) {
		t.Fatal("bounded wait: false")
	}
	cancel()
	if pe.waitIdle(ctx, time.Hour) {
		t.Fatal("stopped: true")
	}
}
