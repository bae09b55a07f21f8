package proxy

import (
	"net/http"
	"time"

	"github.com/bbengine/bbengine/internal/metric"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the proxy's Prometheus series, served at /_bb/metrics from
// a registry of the proxy's own.
type metrics struct {
	reg         *prometheus.Registry
	requests    *prometheus.CounterVec
	errors      *prometheus.CounterVec
	models      *prometheus.CounterVec
	tokens      *prometheus.CounterVec
	ttfb        *prometheus.HistogramVec
	duration    *prometheus.HistogramVec
	forwardWait prometheus.Histogram
	// added is the latency the proxy adds over the upstream's own, to
	// the first response byte and to the end (see addedHelp).
	added                  *metric.Vec
	addedFirst, addedTotal *metric.Histogram
	appendSeconds          prometheus.Histogram
	inflight               prometheus.Gauge
	queue                  prometheus.Gauge
	dropped                prometheus.Counter
	backpressure           prometheus.Counter
	walBytes               prometheus.Counter
	walErrors              prometheus.Counter
	unrecorded             *prometheus.CounterVec
	aborted                prometheus.Counter
	trips                  *prometheus.CounterVec
	refused                *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	f := func(c prometheus.Collector) { m.reg.MustRegister(c) }
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bbengine_proxy_requests_total", Help: "Exchanges by provider and status sent to the client (0: none)."}, []string{"provider", "status"})
	m.errors = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bbengine_proxy_errors_total", Help: "Exchange failures by provider and stage (request, upstream, response, client)."}, []string{"provider", "stage"})
	m.models = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bbengine_proxy_model_requests_total", Help: "Exchanges by provider and requested model."}, []string{"provider", "model"})
	m.tokens = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bbengine_proxy_tokens_total", Help: "Tokens reported by upstream usage, by provider and direction."}, []string{"provider", "direction"})
	buckets := []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	m.ttfb = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "bbengine_proxy_ttfb_seconds", Help: "Request arrival to upstream response headers.", Buckets: buckets}, []string{"provider"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "bbengine_proxy_duration_seconds", Help: "Request arrival to the end of the response.", Buckets: buckets}, []string{"provider"})
	m.forwardWait = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bbengine_proxy_forward_wait_seconds", Help: "Request arrival to the request being handed to the upstream transport: reading the body and asking the circuit breaker (its frames are written meanwhile).", Buckets: []float64{.00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .1}})
	m.added = metric.NewVec("bbengine_proxy_overhead_seconds", addedHelp, AddedBuckets, "stage")
	m.addedFirst, m.addedTotal = m.added.With("first_byte"), m.added.With("total")
	m.appendSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "bbengine_wal_append_seconds", Help: "WAL append latency seen by the recorder (includes sync under sync=always).", Buckets: []float64{.000005, .00001, .000025, .00005, .0001, .00025, .0005, .001, .005, .01, .05, .1}})
	m.inflight = prometheus.NewGauge(prometheus.GaugeOpts{Name: "bbengine_proxy_inflight", Help: "Exchanges in progress."})
	m.queue = prometheus.NewGauge(prometheus.GaugeOpts{Name: "bbengine_recorder_queue_depth", Help: "Items waiting for the recorder."})
	m.dropped = prometheus.NewCounter(prometheus.CounterOpts{Name: "bbengine_recorder_dropped_chunks_total", Help: "Body chunks not recorded (degrade mode under pressure)."})
	m.backpressure = prometheus.NewCounter(prometheus.CounterOpts{Name: "bbengine_recorder_backpressure_seconds_total", Help: "Time streams waited for room in the recorder queue (lossless mode)."})
	m.walBytes = prometheus.NewCounter(prometheus.CounterOpts{Name: "bbengine_wal_bytes_total", Help: "Frame bytes appended to the WAL (before compression)."})
	m.walErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "bbengine_wal_errors_total", Help: "Frames the WAL refused."})
	m.trips = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bbengine_breaker_trips_total", Help: "Circuit breaker trips by reason (stagnation, no_progress, never_progress, probe_no_progress, max_*, run_max_*, manual)."}, []string{"reason"})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bbengine_breaker_refused_total", Help: "Requests the circuit breaker refused, by the reason the session is open."}, []string{"reason"})
	m.unrecorded = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "bbengine_proxy_unrecorded_total", Help: "Requests that arrived while the WAL could not be written: refused (lossless mode, 503) or forwarded unrecorded (degrade mode)."}, []string{"action"})
	m.aborted = prometheus.NewCounter(prometheus.CounterOpts{Name: "bbengine_proxy_unrecorded_cut_total", Help: "Responses cut before their last bytes because their frames could not be recorded (lossless mode)."})
	for _, c := range []prometheus.Collector{m.unrecorded, m.aborted, m.trips, m.refused, m.requests, m.errors, m.models, m.tokens, m.ttfb, m.duration, m.forwardWait, m.added, m.appendSeconds,
		m.inflight, m.queue, m.dropped, m.backpressure, m.walBytes, m.walErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})} {
		f(c)
	}
	return m
}

// addedHelp defines the proxy's added latency.
const addedHelp = "Latency the proxy adds over the upstream's own, per exchange that completed: " +
	"stage first_byte is (request arrival at the proxy to the first response body byte written to the client) minus " +
	"(request handed to the upstream transport to the first response body byte read from it); " +
	"stage total is (request arrival to the handler's return, after the last byte went to the client and the exchange was recorded) minus " +
	"(request handed to the transport to the upstream body's end). For a response without a body both use the response headers."

// AddedBuckets are the bucket bounds, in seconds, of the proxy's added
// latency (bbengine_proxy_overhead_seconds): fine below a millisecond,
// where a healthy proxy sits.
var AddedBuckets = []float64{.000025, .00005, .0001, .0002, .0003, .0005, .00075, .001, .0015, .0025, .005, .01, .025, .05, .1, .25, 1}

// observeAdded records what the proxy added to x, once its client has
// the whole response. It allocates nothing.
func (m *metrics) observeAdded(x *exch, end time.Duration) {
	if !x.complete || x.upSend == 0 {
		return
	}
	upFirst, upEnd, first := x.upFirst, x.upEnd, x.clientFirst
	if upFirst == 0 {
		upFirst = x.upHead
	}
	if upEnd == 0 {
		upEnd = x.upHead
	}
	if first == 0 {
		first = end
	}
	m.addedFirst.Observe(max(first-(upFirst-x.upSend), 0))
	m.addedTotal.Observe(max(end-(upEnd-x.upSend), 0))
}

// Added returns the latency the proxy added so far
// (bbengine_proxy_overhead_seconds), to the first response byte and in
// total, read from the histograms /_bb/metrics serves.
func (p *Proxy) Added() (first, total metric.Snapshot) {
	return p.metrics.addedFirst.Snapshot(), p.metrics.addedTotal.Snapshot()
}

// Register adds c to the collectors served at /_bb/metrics: what the
// process around the proxy measures (derivation, retrieval, sizes).
func (p *Proxy) Register(c prometheus.Collector) error { return p.metrics.reg.Register(c) }

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
