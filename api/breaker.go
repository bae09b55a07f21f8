package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/proxy/breaker"
	"github.com/bbengine/bbengine/wal"
)

// Breakers answers the circuit breaker's operations: the running proxy's
// breaker (Remote), or one restored here from the records the data
// directory keeps, whose changes go to the WAL (LocalBreakers).
type Breakers interface {
	// BreakerStatus returns the status of a session's breaker; an error
	// wrapping engine.ErrNotFound when it knows nothing of the session.
	BreakerStatus(session string) (breaker.Status, error)
	// BreakerList returns every session's breaker status.
	BreakerList() ([]breaker.Status, error)
	// BreakerReset closes a session's breaker and clears its loop
	// counters (a manual override).
	BreakerReset(req BreakerResetRequest) (breaker.Status, error)
	// BreakerTrip opens a session's breaker until a reset (an emergency
	// stop).
	BreakerTrip(req BreakerTripRequest) (breaker.Status, error)
	// Session resolves a session id or unique prefix.
	Session(id string) (engine.Session, error)
}

// BreakerResetRequest asks to close a session's breaker.
type BreakerResetRequest struct {
	Session string `json:"session"`
	// By names who reset it, for the record.
	By string `json:"by"`
}

// BreakerTripRequest asks to open a session's breaker.
type BreakerTripRequest struct {
	Session string `json:"session"`
	// Reason says why: the agent's requests get it in their 429.
	Reason string `json:"reason"`
}

var (
	_ Breakers = (*Remote)(nil)
	_ Breakers = (*LocalBreakers)(nil)
)

// ResolveBreaker returns the session a command names, by its id or, when the
// breaker knows no such id, by a unique prefix of a recorded session's
// id, and its status (engine.ErrNotFound when the breaker knows nothing
// of it: the id is then still resolved).
func ResolveBreaker(b Breakers, id string) (string, breaker.Status, error) {
	st, err := b.BreakerStatus(id)
	if errors.Is(err, engine.ErrNotFound) {
		if s, serr := b.Session(id); serr == nil && s.ID != id {
			id = s.ID
			st, err = b.BreakerStatus(id)
		}
	}
	return id, st, err
}

// LocalBreakers answers from the records the engine keeps, while no proxy
// runs: a breaker restored from them, whose changes go to the WAL.
type LocalBreakers struct {
	e   *engine.Engine
	log *wal.Log
	b   *breaker.Breaker
	ctx context.Context
}

// OpenLocalBreakers opens the engine of dir here (with write, its WAL
// too) and restores a breaker of opts from the records it keeps. close
// releases them.
func OpenLocalBreakers(ctx context.Context, dir string, opts breaker.Options, write bool) (lb *LocalBreakers, close func() error, err error) {
	e, log, closeEL, err := OpenEngine(ctx, dir, write)
	if err != nil {
		return nil, nil, err
	}
	lb = &LocalBreakers{e: e, log: log, ctx: ctx}
	opts.Source = "cli"
	opts.Record = lb.record
	lb.b = breaker.New(opts)
	recs, err := e.BreakerLatest(maxBreakerRestore)
	if err != nil {
		closeEL()
		return nil, nil, err
	}
	lb.b.Restore(plainBreakers(recs))
	return lb, closeEL, nil
}

// maxBreakerRestore is how many of each session's latest records a
// breaker is restored from: its transitions and the latest snapshot.
const maxBreakerRestore = 21

// record writes a change to the WAL, synced, and derives it.
func (lb *LocalBreakers) record(r exchange.Breaker) error {
	if lb.log == nil {
		return errors.New("breaker: opened read-only")
	}
	p, err := exchange.AppendBreaker(nil, r)
	if err != nil {
		return err
	}
	if _, err := lb.log.Append(wal.Record{Kind: frame.KindBreaker, Time: r.Time, Payload: p}); err != nil {
		return fmt.Errorf("write the breaker record to the WAL: %w", err)
	}
	if err := lb.log.Sync(); err != nil {
		return fmt.Errorf("sync the WAL: %w", err)
	}
	_, err = lb.e.CatchUp(lb.ctx)
	return err
}

// BreakerStatus returns the status of a session's breaker.
func (lb *LocalBreakers) BreakerStatus(id string) (breaker.Status, error) {
	st, ok := lb.b.Status(id)
	if !ok {
		return st, NoBreakerError(id)
	}
	st.Live = false
	return st, nil
}

// BreakerList returns every session's breaker status.
func (lb *LocalBreakers) BreakerList() ([]breaker.Status, error) {
	all := lb.b.List()
	for i := range all {
		all[i].Live = false
	}
	return all, nil
}

// BreakerReset closes a session's breaker and records why.
func (lb *LocalBreakers) BreakerReset(req BreakerResetRequest) (breaker.Status, error) {
	st, err := lb.b.Reset(req.Session, req.By)
	st.Live = false
	return st, err
}

// BreakerTrip opens a session's breaker until a reset.
func (lb *LocalBreakers) BreakerTrip(req BreakerTripRequest) (breaker.Status, error) {
	st, err := lb.b.Trip(req.Session, req.Reason)
	st.Live = false
	return st, err
}

// Session resolves a session id or unique prefix.
func (lb *LocalBreakers) Session(id string) (engine.Session, error) { return lb.e.Session(id) }

// plainBreakers returns the records of recs.
func plainBreakers(recs []engine.BreakerRecord) []exchange.Breaker {
	out := make([]exchange.Breaker, len(recs))
	for i, r := range recs {
		out[i] = r.Breaker
	}
	return out
}

// BreakerStatus asks the running proxy for a session's breaker.
func (rb *Remote) BreakerStatus(id string) (breaker.Status, error) {
	var st breaker.Status
	return st, rb.GetJSON("/v1/breaker/"+url.PathEscape(id), nil, &st)
}

// BreakerList asks the running proxy for every session's breaker.
func (rb *Remote) BreakerList() ([]breaker.Status, error) {
	var out []breaker.Status
	return out, rb.GetJSON("/v1/breaker", nil, &out)
}

// BreakerReset asks the running proxy to close a session's breaker.
func (rb *Remote) BreakerReset(req BreakerResetRequest) (breaker.Status, error) {
	var st breaker.Status
	b, _ := json.Marshal(map[string]string{"by": req.By})
	return st, rb.Do(http.MethodPost, "/v1/breaker/"+url.PathEscape(req.Session)+"/reset", nil, b, &st)
}

// BreakerTrip asks the running proxy to open a session's breaker.
func (rb *Remote) BreakerTrip(req BreakerTripRequest) (breaker.Status, error) {
	var st breaker.Status
	b, _ := json.Marshal(map[string]string{"reason": req.Reason})
	return st, rb.Do(http.MethodPost, "/v1/breaker/"+url.PathEscape(req.Session)+"/trip", nil, b, &st)
}

// RestoreBreaker gives b back what the breaker recorded before: the
// records the engine keeps, and those of the WAL beyond what it has
// derived so far, each session's in WAL order.
func RestoreBreaker(e *engine.Engine, log *wal.Log, b *breaker.Breaker) error {
	recs, err := e.BreakerLatest(maxBreakerRestore)
	if err != nil {
		return err
	}
	applied, err := e.Applied()
	if err != nil {
		return err
	}
	tail, err := walBreakers(log, applied)
	b.Restore(append(plainBreakers(recs), tail...))
	return err
}

// walBreakers reads the breaker records of the WAL from offset from on;
// one that does not decode is skipped (the engine logs it with its
// offset when it derives it).
func walBreakers(log *wal.Log, from uint64) ([]exchange.Breaker, error) {
	r := log.NewReader()
	defer r.Close()
	err := r.Seek(from)
	var be *wal.BoundaryError
	switch {
	case err == nil:
	case errors.As(err, &be):
		err = r.Seek(be.Next) // a repaired segment left a gap
	case errors.Is(err, wal.ErrOutOfRange):
		// Retention removed frames the engine had not derived.
		if first, ferr := log.First(); ferr == nil && first > from {
			err = r.Seek(first)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read the WAL from offset %d: %w", from, err)
	}
	var out []exchange.Breaker
	for r.Next() {
		if r.Header().Kind != frame.KindBreaker {
			continue
		}
		p, err := r.Payload()
		if err != nil {
			continue
		}
		if b, err := exchange.DecodeBreaker(p); err == nil {
			out = append(out, b)
		}
	}
	return out, r.Err()
}
