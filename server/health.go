package server

import (
	"math"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/api/webui"
)

// uiHealth gathers the web UI's health page: the proxy's own state (what
// /_bb/health says) and its added latency, and the figures the process
// around it measures for /_bb/metrics (sizes, derivation's lag and time
// per frame, retrieval), read from the same values, not from a scrape.
func (pe *proxyEngine) uiHealth() webui.Health {
	ph := pe.proxy.Health()
	h := webui.Health{Proxy: true, Status: ph.Status, Mode: ph.Mode, Uptime: time.Duration(ph.Uptime * float64(time.Second)),
		Queue: ph.Queue, Recorded: ph.Recorded, Dropped: ph.Dropped, RefusedUnrecorded: ph.RefusedUnrecorded,
		ForwardedUnrecorded: ph.ForwardedUnrecorded, WALError: ph.WALError, WALDamage: ph.WALDamage,
		Derivation: ph.Derivation, Retention: ph.Retention}
	first, total := pe.proxy.Added()
	h.AddedFirst, h.AddedTotal = &first, &total
	pm := pe.metrics
	// The page shows the sizes of now, not of up to sizeEvery ago: a
	// walk of the data directory, as the metrics' own, and the three
	// figures of the same walk.
	h.WALSize, h.DirSize, h.SizedAt = pm.freshSizes(time.Second)
	h.SizeEvery = pm.sizeEvery
	if b, s := math.Float64frombits(pm.lagBytes.Load()), math.Float64frombits(pm.lagSeconds.Load()); !math.IsNaN(b) && !math.IsNaN(s) {
		h.LagKnown, h.LagBytes, h.LagSeconds = true, uint64(b), s
	}
	perFrame := pm.perFrame.Snapshot()
	h.PerFrame = &perFrame
	for i, name := range api.OpNames {
		h.Retrieval = append(h.Retrieval, webui.Timing{Op: name, Snapshot: pm.retrieval.ops[i].Snapshot()})
	}
	return h
}
