package exchange

import (
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"
)

// Breaker is the payload of a breaker frame (frame.KindBreaker): one
// change of a session's circuit breaker, or a snapshot of its counters.
// It is JSON:
//
//	{"op":"trip","session":"s1","state":"open","from":"closed","reason":"stagnation",
//	 "detail":"the same call Bash {\"command\":\"make\"} 3 times in a row (threshold 3)",
//	 "until":1763800000000000000,"time":1763799700000000000,"source":"proxy","counters":{…}}
//
// Op is what happened:
//
//	trip       the breaker opened: a rule (Reason no_progress, stagnation,
//	           never_progress, max_calls, max_tokens, max_cost, max_wall,
//	           run_max_calls, run_max_tokens, run_max_cost, run_max_wall,
//	           probe_no_progress) or a person (Reason manual)
//	half-open  the cooldown ended: one request may pass as a probe
//	close      the probe made progress
//	reset      a person closed it (Reason manual)
//	snapshot   no change: the counters as they stood (written when the
//	           proxy stops, so they survive a restart)
//
// State is the state after the change: closed, open or half-open. Until
// is when an open breaker's cooldown ends (unix ns; 0 means it stays open
// until a reset). Source is who wrote it: proxy or cli.
type Breaker struct {
	Op       string          `json:"op"`
	Session  string          `json:"session"`
	State    string          `json:"state"`
	From     string          `json:"from,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	Detail   string          `json:"detail,omitempty"`
	Until    int64           `json:"until,omitempty"`
	Time     int64           `json:"time"`
	Source   string          `json:"source"`
	Config   string          `json:"config,omitempty"`
	Counters BreakerCounters `json:"counters"`
}

// BreakerCounters are what a breaker measured of a session when it wrote
// a record. Loop counters (SinceProgress, Stagnant, Progressed) are those
// of the conversation thread closest to a trip.
type BreakerCounters struct {
	// Calls counts the session's model calls the breaker saw.
	Calls int64 `json:"calls"`
	// SinceProgress counts model calls since the thread's last progress
	// signal; Stagnant its consecutive stagnant calls; Progressed says
	// whether it ever made progress.
	SinceProgress int64 `json:"since_progress"`
	Stagnant      int64 `json:"stagnant"`
	Progressed    bool  `json:"progressed,omitempty"`
	// Tokens (input and output) and CostUSD of the session's calls;
	// Unpriced names a model the price table lacks (its calls cost 0).
	Tokens   int64   `json:"tokens"`
	CostUSD  float64 `json:"cost_usd"`
	Unpriced string  `json:"unpriced,omitempty"`
	// Started is the session's first call the breaker saw (unix ns).
	Started int64 `json:"started,omitempty"`
	// LastProgress is when the last progress signal came (unix ns), and
	// Signal what it was ("file changed: main.go"); Stagnation is the last
	// stagnation seen ("the same call … repeated").
	LastProgress int64  `json:"last_progress,omitempty"`
	Signal       string `json:"signal,omitempty"`
	Stagnation   string `json:"stagnation,omitempty"`
	// Run is the run id (X-Bb-Run-Id) of the latest call, and RunCalls,
	// RunTokens, RunCostUSD and RunStarted its share.
	Run        string  `json:"run,omitempty"`
	RunCalls   int64   `json:"run_calls,omitempty"`
	RunTokens  int64   `json:"run_tokens,omitempty"`
	RunCostUSD float64 `json:"run_cost_usd,omitempty"`
	RunStarted int64   `json:"run_started,omitempty"`
}

// Breaker states.
const (
	BreakerClosed   = "closed"
	BreakerOpen     = "open"
	BreakerHalfOpen = "half-open"
)

// Limits of a breaker record, in bytes.
const (
	MaxBreakerText = 2 << 10 // Detail, Signal, Stagnation, Reason, Config
	MaxBreaker     = 64 << 10
)

// AppendBreaker appends b's encoding to dst.
func AppendBreaker(dst []byte, b Breaker) ([]byte, error) {
	if err := b.Validate(); err != nil {
		return dst, err
	}
	p, err := json.Marshal(b)
	if err != nil {
		return dst, err
	}
	if len(p) > MaxBreaker {
		return dst, fmt.Errorf("%w: breaker record encodes to %d bytes (at most %d)", ErrPayload, len(p), MaxBreaker)
	}
	return append(dst, p...), nil
}

// breakerOps maps each op to the state it may leave the breaker in.
var breakerOps = map[string][]string{
	"trip":      {BreakerOpen},
	"half-open": {BreakerHalfOpen},
	"close":     {BreakerClosed},
	"reset":     {BreakerClosed},
	"snapshot":  {BreakerClosed, BreakerOpen, BreakerHalfOpen},
}

// Validate checks the op against the state, the ids, the text limits and
// that every number is finite and not negative.
func (b Breaker) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: breaker %s: %s", ErrPayload, b.Op, fmt.Sprintf(format, args...))
	}
	states, ok := breakerOps[b.Op]
	if !ok {
		return fmt.Errorf("%w: breaker op %q (want trip, half-open, close, reset or snapshot)", ErrPayload, b.Op)
	}
	okState := false
	for _, s := range states {
		okState = okState || s == b.State
	}
	if !okState {
		return bad("state %q after a %s", b.State, b.Op)
	}
	switch b.From {
	case "", BreakerClosed, BreakerOpen, BreakerHalfOpen:
	default:
		return bad("from %q (want closed, open or half-open)", b.From)
	}
	if err := checkID(b.Session); err != nil {
		return bad("session: %v", err)
	}
	switch b.Source {
	case "proxy", "cli":
	default:
		return bad("source %q (want proxy or cli)", b.Source)
	}
	c := b.Counters
	if c.Run != "" {
		if err := checkID(c.Run); err != nil {
			return bad("run: %v", err)
		}
	}
	for name, s := range map[string]string{"reason": b.Reason, "detail": b.Detail, "config": b.Config,
		"signal": c.Signal, "stagnation": c.Stagnation, "unpriced": c.Unpriced} {
		if len(s) > MaxBreakerText || !utf8.ValidString(s) {
			return bad("%s: want at most %d bytes of UTF-8", name, MaxBreakerText)
		}
	}
	for name, n := range map[string]int64{"until": b.Until, "time": b.Time, "calls": c.Calls,
		"since_progress": c.SinceProgress, "stagnant": c.Stagnant, "tokens": c.Tokens, "started": c.Started,
		"last_progress": c.LastProgress, "run_calls": c.RunCalls, "run_tokens": c.RunTokens, "run_started": c.RunStarted} {
		if n < 0 {
			return bad("%s is negative (%d)", name, n)
		}
	}
	for name, f := range map[string]float64{"cost_usd": c.CostUSD, "run_cost_usd": c.RunCostUSD} {
		if f < 0 || math.IsNaN(f) || math.IsInf(f, 0) {
			return bad("%s is %v (want a finite amount, not negative)", name, f)
		}
	}
	return nil
}

// DecodeBreaker decodes a breaker frame's payload.
func DecodeBreaker(p []byte) (Breaker, error) {
	var b Breaker
	if len(p) > MaxBreaker {
		return b, fmt.Errorf("%w: breaker record of %d bytes (at most %d)", ErrPayload, len(p), MaxBreaker)
	}
	if err := json.Unmarshal(p, &b); err != nil {
		return b, fmt.Errorf("%w: breaker record: %v", ErrPayload, err)
	}
	return b, b.Validate()
}
