// Package metric owns Histogram: a Prometheus histogram of durations with
// fixed buckets whose Observe is a bucket search and three atomic adds,
// and allocates nothing, so the proxy's request path and the
// canonicalizer can time every request and frame.
//
// A Vec is a family of histograms that differ by label values, collected
// under one name. Histograms are made with Vec.With when the Vec is set up
// (With allocates and takes a lock), then observed from any goroutine.
// Collection (a scrape) builds constant Prometheus metrics from the
// counters: it allocates, the observers never do. Everything here is safe
// for concurrent use.
//
// It imports nothing of bbengine's, like every internal package.
package metric
