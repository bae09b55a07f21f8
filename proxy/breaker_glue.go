package proxy

import (
	"bytes"
	"errors"
	"math"
	"net/http"
	"strconv"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/codec/llm"
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
		// Its texts may quote a tool call's arguments.
		r.Reason, r.Detail = p.red.String(r.Reason), p.red.String(r.Detail)
		r.Counters.Signal, r.Counters.Stagnation = p.red.String(r.Counters.Signal), p.red.String(r.Counters.Stagnation)
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

// admit asks the circuit breaker about a model call: only model calls of
// a known session are judged. A session named only in the body
// (metadata.user_id) is read here, ahead of the recorder; a body without
// a user_id is not decoded.
func (p *Proxy) admit(x *exch) breaker.Verdict {
	api := llm.Detect(x.route.Path)
	if api == "" || x.req.Method != http.MethodPost {
		return breaker.Verdict{}
	}
	if x.start.SessionID == "" && bytes.Contains(x.body, []byte(`"user_id"`)) {
		if _, _, s := p.bodies.read(x.body); s != "" {
			x.start.SessionID, x.start.SessionSource = s, "body"
		}
	}
	return p.breaker.Admit(breaker.Call{Session: x.start.SessionID, Run: x.start.RunID, API: api, Body: x.body,
		Project: x.req.Header.Get("X-Bb-Project")})
}

// refuseBreaker answers a call of a tripped session with the provider's
// own rate-limit error: 429, Retry-After when a probe may pass later, and
// X-Should-Retry: false so SDKs do not retry on their own. The exchange
// is recorded, refusal included.
func (p *Proxy) refuseBreaker(w http.ResponseWriter, x *exch, v breaker.Verdict) {
	p.metrics.refused.WithLabelValues(v.Reason).Inc()
	p.rec.request(x, nil)
	p.fail(x, "breaker", errors.New(v.Message), len(x.body), http.StatusTooManyRequests)
	x.status = http.StatusTooManyRequests
	if v.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(v.RetryAfter.Seconds()))))
	}
	w.Header().Set("X-Should-Retry", "false")
	writeError(w, x.route.Provider, http.StatusTooManyRequests, v.Message)
	p.end(x, v.Message, false)
}
