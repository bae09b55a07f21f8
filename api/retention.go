package api

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/wal"
)

// RetainRequest asks for retention to run now, or, with DryRun, to say
// what it would remove.
type RetainRequest struct {
	// Retention is the policy; a zero one removes nothing.
	Retention engine.Retention `json:"retention"`
	DryRun    bool             `json:"dry_run,omitempty"`
	// Now is the time the ages are measured at; zero means now.
	Now time.Time `json:"now,omitzero"`
}

// Retained is what a retention run removed, or would remove.
type Retained struct {
	// Raw is what went of the WAL (engine.ExpireRaw).
	Raw engine.ExpireReport `json:"raw"`
	// Forgotten are the sessions whose memory was forgotten (or would
	// be) because their last activity is older than
	// Retention.MemoryAge, which MemoryBefore says as a time.
	Forgotten    []string  `json:"forgotten"`
	MemoryBefore time.Time `json:"memory_before,omitzero"`
}

// Retain runs retention (see engine.ExpireRaw): the WAL segments the
// policy selects go after a snapshot of what was derived from them, and
// the memory of sessions older than Retention.MemoryAge is forgotten by
// forget corrections in the WAL, so a rebuild keeps it forgotten; pinned
// sessions, and those of pinned artifacts, are kept. With req.DryRun
// nothing changes.
func (m *Local) Retain(req RetainRequest) (*Retained, error) {
	now := req.Now
	if now.IsZero() {
		now = time.Now()
	}
	r := req.Retention
	if r.RawAge < 0 || r.RawBytes < 0 || r.MemoryAge < 0 {
		return nil, fmt.Errorf("%w: retention ages and sizes cannot be negative", ErrBadRequest)
	}
	out := &Retained{Forgotten: []string{}}
	if !req.DryRun && m.log == nil {
		return nil, errors.New("retention: opened read-only")
	}
	raw, err := m.e.ExpireRaw(context.Background(), r, now, req.DryRun)
	out.Raw = raw
	if err != nil {
		return out, err
	}
	if r.MemoryAge <= 0 {
		return out, nil
	}
	out.MemoryBefore = now.Add(-r.MemoryAge).UTC()
	old, err := m.oldSessions(out.MemoryBefore)
	if err != nil {
		return out, err
	}
	if req.DryRun || len(old) == 0 {
		out.Forgotten = old
		return out, nil
	}
	for _, id := range old {
		p, err := exchange.AppendCorrection(nil, exchange.Correction{Op: "forget", Target: "session", ID: id,
			Reason: "retention: memory older than " + out.MemoryBefore.Format(time.DateOnly)})
		if err != nil {
			return out, err
		}
		if _, err := m.log.Append(wal.Record{Kind: frame.KindMemory, Payload: p}); err != nil {
			return out, fmt.Errorf("write a retention correction to the WAL: %w", err)
		}
		out.Forgotten = append(out.Forgotten, id)
	}
	if err := m.log.Sync(); err != nil {
		return out, fmt.Errorf("sync the WAL: %w", err)
	}
	if err := m.applied(time.Minute, time.Minute); err != nil {
		return out, err
	}
	return out, m.sync()
}

// oldSessions returns the sessions last active before t that no
// correction of the session itself names (a forget, retention's or the
// user's, or an unforget, which a later run must not undo) and that are
// not kept by a pin of one of their artifacts, sorted.
func (m *Local) oldSessions(t time.Time) ([]string, error) {
	cs, err := m.e.Corrections()
	if err != nil {
		return nil, err
	}
	kept := map[string]bool{} // a correction of the session, or a pinned artifact
	for _, c := range cs {
		switch {
		case c.Target == "session":
			kept[c.ID] = true
		case c.Target == "artifact" && c.Pinned:
			if a, err := m.e.Artifact(c.ID); err == nil {
				kept[a.Session] = true
			}
		}
	}
	ss, err := m.e.Sessions(engine.SessionFilter{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, s := range ss {
		if s.Last < t.UnixNano() && !kept[s.ID] {
			out = append(out, s.ID)
		}
	}
	slices.Sort(out)
	return out, nil
}
