package proxy

import (
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/proxy/breaker"
	"github.com/bbengine/bbengine/wal"
)

// newBreaker makes the proxy's circuit breaker: its records go to the
// WAL, and its trips to the metrics.
func (p *Proxy) newBreaker(o *breaker.Options) *breaker.Breaker {
	var bo breaker.Options
	if o != nil {
		bo = *o
	} else {
		bo.Config = breaker.Defaults()
	}
	if bo.Logf == nil {
		bo.Logf = p.opts.Logf
	}
	then := bo.Record
	bo.Record = func(r exchange.Breaker) error {
		if r.Op == "trip" {
			p.metrics.trips.WithLabelValues(r.Reason).Inc()
		}
		b, err := exchange.AppendBreaker(nil, r)
		if err == nil {
			_, err = p.log.Append(wal.Record{Kind: frame.KindBreaker, Time: r.Time, Payload: b})
		}
		if then != nil {
			if err2 := then(r); err == nil {
				err = err2
			}
		}
		return err
	}
	return breaker.New(bo)
}

// Breaker returns the proxy's circuit breaker: for status, resets and
// trips, and to restore the state recorded before a restart.
func (p *Proxy) Breaker() *breaker.Breaker { return p.breaker }
