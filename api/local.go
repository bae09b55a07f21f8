package api

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/codec/redact"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/index"
	"github.com/bbengine/bbengine/wal"
)

// Local answers a Service's operations in this process, from an engine
// and, for memory, its index. It is safe for concurrent use.
type Local struct {
	e  *engine.Engine
	ix *index.Index
	// log is the writable WAL corrections go to (the proxy's, or one
	// opened for the command).
	log *wal.Log
	// followed is set when another goroutine follows the WAL with the
	// engine (the proxy's): writers wait for it instead of catching up.
	followed bool
	// red redacts the texts of notes before they reach the WAL; nil
	// means the built-in rules.
	red *redact.Redactor
	// mu serializes index syncs and guards synced.
	mu sync.Mutex
	// changes, when set (in the proxy), counts the engine's passes that
	// derived memory: the engine's OnMemory adds one before the pass's
	// end is visible to WaitCaughtUp. synced is its value when the last
	// sync began (valid once syncedOnce): a sync that would find it
	// unchanged has nothing to do, and skips reading every session's
	// memory state, which at 100k artifacts cost more than the search.
	changes *atomic.Uint64
	// pms keeps project memory by project and session skipped, while
	// the project's state stays put.
	pmMu       sync.Mutex
	pms        map[string]*engine.ProjectMemory
	pmGen      map[string]uint64 // the changes count each was last checked at
	synced     uint64
	syncedOnce bool
	// memSeq is where the last sync read the engine's log of changed
	// memory states (engine.MemoryChanges), 0 before the first: a sync
	// reads only the states of the sessions logged since.
	memSeq uint64
	// ixApart is the index's ChangedApart at the last sync: when it
	// moved (a reset), the next sync is a full one.
	ixApart uint64
	// packs caches context packs.
	packs packs
	// timer, when set (in the proxy), times each retrieval for
	// /_bb/metrics.
	timer Timer
}

// LocalOptions configure a Local. Every field is optional.
type LocalOptions struct {
	// Index is the index memory searches. The default is none: Search,
	// Find and Related fail, the other operations work.
	Index *index.Index
	// WAL is the writable log corrections and notes go to. The default
	// is none: Correct and Note fail (read-only).
	WAL *wal.Log
	// Followed says another goroutine follows the WAL with the engine
	// (the proxy's), so writers wait for it instead of catching up. The
	// default is false.
	Followed bool
	// Redactor redacts the texts of notes. The default is the built-in
	// rules.
	Redactor *redact.Redactor
	// Changes, when set, counts the engine's passes that derived memory
	// (engine.Options.OnMemory adds one before the pass's end is visible
	// to WaitCaughtUp): index syncs and project memory reads are skipped
	// while it stays put. The default is nil: every sync looks.
	Changes *atomic.Uint64
	// Timer times each retrieval. The default is nil: nothing is timed.
	Timer Timer
}

// NewLocal returns the service of the open engine e. It does not own e or
// what opts holds: the caller closes them after its last call.
func NewLocal(e *engine.Engine, opts *LocalOptions) *Local {
	if opts == nil {
		opts = &LocalOptions{}
	}
	return &Local{e: e, ix: opts.Index, log: opts.WAL, followed: opts.Followed, red: opts.Redactor,
		changes: opts.Changes, timer: opts.Timer}
}

// Engine returns the engine m answers from.
func (m *Local) Engine() *engine.Engine { return m.e }

// observe counts one retrieval of op that started at start.
func (m *Local) observe(op Op, start time.Time) {
	if m.timer != nil {
		m.timer.Observe(op, start)
	}
}

// IndexDir is where a data directory keeps its index.
func IndexDir(dir string) string { return filepath.Join(dir, "index") }

// errNoIndex is the error of a memory operation of a Local opened
// without an index.
var errNoIndex = errors.New("memory: no index is open")

// Sessions implements Service.
func (m *Local) Sessions(f SessionsRequest) ([]engine.Session, error) { return m.e.Sessions(f) }

// Session implements Service.
func (m *Local) Session(id string) (engine.Session, error) { return m.e.Session(id) }

// Exchange implements Service.
func (m *Local) Exchange(id uint64) (engine.Exchange, error) { return m.e.Exchange(id) }

// Blob implements Service.
func (m *Local) Blob(sum string) ([]byte, error) {
	if err := checkBlobName(sum); err != nil {
		return nil, err
	}
	b, err := m.e.Blobs().Get(sum)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: no blob %s in the data directory (blob gc removes blobs no event names)", engine.ErrNotFound, sum)
	}
	return b, err
}

// checkBlobName checks that sum can name a blob: 64 lowercase hex digits.
func checkBlobName(sum string) error {
	if len(sum) != 64 {
		if len(sum) > 80 {
			sum = sum[:80] + "…"
		}
		return fmt.Errorf("%w: a blob is named by 64 hex digits, not %q", ErrBadQuery, sum)
	}
	for i := 0; i < len(sum); i++ {
		if c := sum[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fmt.Errorf("%w: a blob is named by 64 lowercase hex digits, not %q", ErrBadQuery, sum)
		}
	}
	return nil
}

// Breakers implements Service.
func (m *Local) Breakers(session string) ([]engine.BreakerRecord, error) {
	return m.e.Breakers(session)
}

// Events implements Service.
func (m *Local) Events(session string, f engine.EventFilter) ([]engine.Event, error) {
	return m.e.Events(session, f)
}

// Sync brings the index up to the engine's artifacts.
func (m *Local) Sync() error { return m.sync() }

// sync brings the index up to the engine's artifacts.
func (m *Local) sync() error {
	if m.ix == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var gen uint64
	if m.changes != nil {
		gen = m.changes.Load()
		if m.syncedOnce && gen == m.synced {
			return nil
		}
	}
	ids, next, all := m.e.MemoryChanges(m.memSeq)
	apart := m.ix.ChangedApart()
	if all || apart != m.ixApart {
		if _, err := m.ix.Sync(m.e); err != nil {
			return err
		}
	} else {
		states := make([]engine.MemoryState, 0, len(ids))
		for _, id := range ids {
			st, err := m.e.MemoryState(id)
			if err != nil {
				return fmt.Errorf("index: sync: memory state of %s: %w", id, err)
			}
			states = append(states, st)
		}
		if _, err := m.ix.SyncSessions(m.e, states); err != nil {
			return err
		}
	}
	m.synced, m.syncedOnce, m.memSeq, m.ixApart = gen, true, next, apart
	return nil
}

// Search implements Service.
func (m *Local) Search(q SearchRequest) ([]engine.Card, error) {
	rs, err := m.Find(q)
	if err != nil || rs == nil {
		return nil, err
	}
	cards := make([]engine.Card, len(rs))
	for i := range rs {
		cards[i] = rs[i].Card
	}
	return cards, nil
}

// Find implements Service.
func (m *Local) Find(q SearchRequest) ([]index.Result, error) {
	defer m.observe(OpSearch, time.Now())
	if strings.TrimSpace(q.Text) == "" {
		return nil, fmt.Errorf("%w: an empty query", ErrBadQuery)
	}
	if m.ix == nil {
		return nil, errNoIndex
	}
	if q.Session != "" {
		s, err := m.e.Session(q.Session)
		if err != nil {
			return nil, err
		}
		q.Session = s.ID
	}
	rs, err := m.ix.Find(index.Query(q))
	if err != nil {
		return nil, err
	}
	return m.inForce(rs, index.Query(q)), nil
}

// inForce answers with what is in force across the sessions of a
// project. The index orders what a session replaced within itself; what
// a later session of the project replaced or closed (engine.Resolve) it
// cannot know: such a result gets that status, and a superseded one gets
// the artifact in force (the end of its chain) placed right above it,
// with its score, so "which tool runs the migrations" finds the current
// choice even when the old one matches the words better.
func (m *Local) inForce(rs []index.Result, q index.Query) []index.Result {
	k := q.K
	if k <= 0 {
		k = index.DefaultK
	}
	later := map[string]bool{}
	closer := map[string]string{}
	for i := range rs {
		c := &rs[i].Card
		if c.Status != "active" && c.Status != "open" || c.Type != engine.ArtifactDecision && c.Type != engine.ArtifactConstraint && c.Type != engine.ArtifactThread {
			continue
		}
		a, err := m.e.Artifact(c.ID)
		if err != nil {
			continue
		}
		if r, err := m.e.Resolve(a); err == nil && r != nil {
			c.Status = r.Status
			later[c.ID] = r.Status == "superseded"
			closer[c.ID] = r.By
		}
	}
	for i := 0; i < len(rs); i++ {
		if !later[rs[i].ID] {
			continue
		}
		succ, ok := m.successor(rs[i].ID)
		if !ok || succ.Forgotten && !q.IncludeForgotten {
			continue
		}
		j := slices.IndexFunc(rs, func(r index.Result) bool { return r.ID == succ.ID })
		if j >= 0 && j < i {
			continue
		}
		top := index.Result{Card: succ.Card(), Project: rs[i].Project}
		top.Score = rs[i].Score
		if j > i {
			top = rs[j]
			top.Score = max(top.Score, rs[i].Score)
			rs = slices.Delete(rs, j, j+1)
		}
		rs = slices.Insert(rs, i, top)
		i++
	}
	// What a later session closed or replaced goes with what closed or
	// replaced it: the answer first, and the earlier state it answers
	// right below it, where the higher of the two ranked (the answer is
	// added when it did not match).
	for i := 0; i < len(rs); i++ {
		by := closer[rs[i].ID]
		if by == "" {
			continue
		}
		j := slices.IndexFunc(rs, func(r index.Result) bool { return r.ID == by })
		if j < 0 {
			a, err := m.e.Artifact(by)
			if err != nil || a.Forgotten && !q.IncludeForgotten {
				continue
			}
			top := index.Result{Card: a.Card(), Project: rs[i].Project, Other: rs[i].Other}
			top.Score = rs[i].Score
			rs = slices.Insert(rs, i, top)
			i++
			continue
		}
		switch {
		case j+1 == i:
		case j < i:
			moved := rs[i]
			moved.Score = rs[j].Score
			rs = slices.Insert(slices.Delete(rs, i, i+1), j+1, moved)
		default:
			moved := rs[j]
			moved.Score = max(moved.Score, rs[i].Score)
			rs = slices.Insert(slices.Delete(rs, j, j+1), i, moved)
			i++
		}
	}
	if len(rs) > k {
		rs = rs[:k]
	}
	return rs
}

// successor follows an artifact's supersession chain to its end.
func (m *Local) successor(id string) (engine.Artifact, bool) {
	var out engine.Artifact
	found := false
	for seen := map[string]bool{}; !seen[id]; {
		seen[id] = true
		a, err := m.e.Artifact(id)
		if err != nil {
			break
		}
		next := ""
		if a.Decision != nil {
			next = a.Decision.SupersededBy
		} else if a.Constraint != nil {
			next = a.Constraint.SupersededBy
		}
		if next == "" && a.Status == "active" {
			// Replaced in a later session of the project.
			if r, err := m.e.Resolve(a); err == nil && r != nil && r.Status == "superseded" {
				next = r.By
			}
		}
		if found = a.ID != "" && len(seen) > 1; found {
			out = a
		}
		if next == "" {
			break
		}
		id = next
	}
	return out, found
}

// Get returns an artifact with its corrections and, when a later session
// of its project replaced or closed it, the resolution and the status it
// gives.
func (m *Local) Get(id string) (engine.Artifact, error) {
	defer m.observe(OpGet, time.Now())
	a, err := m.e.Artifact(id)
	if err != nil {
		return a, err
	}
	if a.Status == "active" || a.Status == "open" {
		r, err := m.e.Resolve(a)
		if err != nil {
			return a, err
		}
		if r != nil {
			a.SetResolved(r)
		}
	}
	return a, nil
}

// Related implements Service.
func (m *Local) Related(req RelatedRequest) (*Related, error) {
	defer m.observe(OpRelated, time.Now())
	if m.ix == nil {
		return nil, errNoIndex
	}
	id, k := req.ID, req.K
	a, err := m.e.Artifact(id)
	if err != nil {
		return nil, err
	}
	r := &Related{Artifact: a.Card()}
	var sup []string
	var by string
	switch {
	case a.Decision != nil:
		sup, by = a.Decision.Supersedes, a.Decision.SupersededBy
	case a.Constraint != nil:
		sup, by = a.Constraint.Supersedes, a.Constraint.SupersededBy
	}
	for _, id := range sup {
		if o, err := m.e.Artifact(id); err == nil {
			r.Supersedes = append(r.Supersedes, o.Card())
		}
	}
	// Follow the chain forward to the decision in force.
	for seen := map[string]bool{a.ID: true}; by != "" && !seen[by]; {
		seen[by] = true
		o, err := m.e.Artifact(by)
		if err != nil {
			break
		}
		r.SupersededBy = append(r.SupersededBy, o.Card())
		by = ""
		if o.Decision != nil {
			by = o.Decision.SupersededBy
		} else if o.Constraint != nil {
			by = o.Constraint.SupersededBy
		}
	}
	if r.Adjacent, err = m.ix.Related(a, k); err != nil {
		return nil, err
	}
	seqs := map[uint64]bool{}
	for _, ev := range a.Evidence {
		seqs[ev.Seq] = true
	}
	evs, err := m.e.Events(a.Session, engine.EventFilter{})
	if err != nil {
		return nil, err
	}
	for _, ev := range evs {
		if seqs[ev.Seq] && len(r.Events) < 8 {
			r.Events = append(r.Events, trimEvent(ev))
		}
	}
	return r, nil
}

// trimEvent caps the text an event carries for display.
func trimEvent(ev engine.Event) engine.Event {
	if len(ev.Text) > 2000 {
		ev.Text = ev.Text[:2000] + "…"
	}
	ev.Parts, ev.Extra = nil, nil
	if ev.Record != nil {
		ev.Record = &engine.Record{Type: ev.Record.Type, Known: ev.Record.Known}
	}
	return ev
}

// List implements Service.
func (m *Local) List(req ListRequest) ([]engine.Card, error) {
	session, types := req.Session, req.Types
	defer m.observe(OpList, time.Now())
	var sessions []string
	if session != "" {
		s, err := m.e.Session(session)
		if err != nil {
			return nil, err
		}
		sessions = []string{s.ID}
	} else {
		sts, err := m.e.MemoryStates()
		if err != nil {
			return nil, err
		}
		for _, st := range sts {
			sessions = append(sessions, st.Session)
		}
	}
	var out []engine.Card
	pms := map[string]*engine.ProjectMemory{}
	for _, s := range sessions {
		arts, err := m.e.Artifacts(s)
		if err != nil {
			return nil, err
		}
		// What a later session of the project took out of force: one
		// read of the project's memory per project, not per artifact.
		st, err := m.e.MemoryState(s)
		if err != nil {
			return nil, err
		}
		pm, ok := pms[st.Project]
		if !ok {
			if pm, err = m.projectMemory(st.Project, 0); err != nil {
				return nil, err
			}
			pms[st.Project] = pm
		}
		for _, a := range resolved(arts, pm) {
			if len(types) == 0 || slices.Contains(types, a.Type) {
				out = append(out, a.Card())
			}
		}
	}
	slices.SortStableFunc(out, func(a, b engine.Card) int {
		if a.Session != b.Session {
			return strings.Compare(a.Session, b.Session)
		}
		if a.Time != b.Time {
			return cmp.Compare(a.Time, b.Time)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// Correct resolves the correction's id (an artifact id or prefix, else a
// session), writes it to the WAL as a memory frame, and waits until the
// engine (catching up here unless the engine is followed elsewhere) and
// the index have taken it.
func (m *Local) Correct(cr exchange.Correction) (*Corrected, error) {
	if m.log == nil {
		return nil, errors.New("memory: opened read-only")
	}
	// The target, when given, is the only kind the id may name; without
	// one the id is an artifact's (id or unique prefix), else a
	// session's.
	if cr.Target != "" && cr.Target != "artifact" && cr.Target != "session" {
		return nil, fmt.Errorf("%w: correction target %q (want artifact, session or none)", ErrBadQuery, cr.Target)
	}
	out := &Corrected{}
	want := cr.Target
	cr.Target = ""
	if want != "session" {
		if a, err := m.e.Artifact(cr.ID); err == nil {
			cr.Target, cr.ID, out.Title = "artifact", a.ID, a.Title
		} else if !errors.Is(err, engine.ErrNotFound) {
			return nil, err
		}
	}
	if cr.Target == "" && want != "artifact" {
		if s, err := m.e.Session(cr.ID); err == nil {
			cr.Target, cr.ID, out.Title = "session", s.ID, "session "+s.ID
		} else if !errors.Is(err, engine.ErrNotFound) {
			return nil, err
		}
	}
	if cr.Target == "" {
		what := map[string]string{"": "artifact or session", "artifact": "artifact", "session": "session"}[want]
		return nil, fmt.Errorf("%w: no %s %q (bbengine mem search finds artifacts, bbengine sessions lists sessions)", engine.ErrNotFound, what, cr.ID)
	}
	p, err := exchange.AppendCorrection(nil, cr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadQuery, err)
	}
	off, err := m.log.Append(wal.Record{Kind: frame.KindMemory, Payload: p})
	if err != nil {
		return nil, fmt.Errorf("write the correction to the WAL: %w", err)
	}
	if err := m.log.Sync(); err != nil {
		return nil, fmt.Errorf("sync the WAL: %w", err)
	}
	out.Correction, out.Offset = cr, off
	err = m.applied(5*time.Second, time.Minute)
	if err != nil {
		return nil, err
	}
	return out, m.sync()
}

// Note writes the note, its texts redacted, to the WAL as a memory
// frame, then waits until
// the engine has derived it (catching up here unless the engine is
// followed elsewhere) and the index has taken it.
func (m *Local) Note(n exchange.Note) (*Noted, error) {
	if m.log == nil {
		return nil, errors.New("memory: opened read-only")
	}
	red := m.red
	if red == nil {
		red, _ = redact.New(nil)
	}
	n.Text = red.String(n.Text)
	if len(n.Files) > 0 {
		files := make([]string, len(n.Files))
		for i, f := range n.Files {
			files[i] = red.String(f)
		}
		n.Files = files
	}
	p, err := exchange.AppendNote(nil, n)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", ErrBadRequest, strings.TrimPrefix(err.Error(), exchange.ErrPayload.Error()+": "))
	}
	off, err := m.log.Append(wal.Record{Kind: frame.KindMemory, Payload: p})
	if err != nil {
		return nil, fmt.Errorf("write the note to the WAL: %w", err)
	}
	if err := m.log.Sync(); err != nil {
		return nil, fmt.Errorf("sync the WAL: %w", err)
	}
	if err := m.applied(10*time.Second, 10*time.Second); err != nil {
		return nil, fmt.Errorf("the note is in the WAL at offset %d, but the engine has not applied it: %w", off, err)
	}
	out := &Noted{Note: n, Offset: off}
	if n.Op == "outcome" {
		out.Artifact = engine.OutcomeID(n.Session, n.TaskID)
	}
	return out, m.sync()
}

// applied waits until the engine has derived what the WAL holds now:
// the engine following the WAL elsewhere (the proxy's) within followed,
// or catching up here within own.
func (m *Local) applied(followed, own time.Duration) error {
	if m.followed {
		ctx, cancel := context.WithTimeout(context.Background(), followed)
		defer cancel()
		return m.e.WaitCaughtUp(ctx)
	}
	ctx, cancel := context.WithTimeout(context.Background(), own)
	defer cancel()
	_, err := m.e.CatchUp(ctx)
	return err
}
