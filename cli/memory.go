package cli

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/codec/redact"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/index"
	"github.com/bbengine/bbengine/pack"
	"github.com/bbengine/bbengine/wal"
	ucli "github.com/urfave/cli/v2"
)

// memory answers memory queries: here, with the engine and the index,
// or through the running proxy that owns the data directory.
type memory interface {
	Search(q index.Query) ([]engine.Card, error)
	// Find is Search with each result's project and, when q.Explain,
	// why it ranks where it does (index.Index.Find).
	Find(q index.Query) ([]index.Result, error)
	Get(id string) (engine.Artifact, error)
	Related(id string, k int) (*Related, error)
	List(session string, types []engine.ArtifactType) ([]engine.Card, error)
	Correct(cr exchange.Correction) (*Corrected, error)
	Context(req ContextRequest) (*pack.Pack, error)
	// Note records a harness note (a session goal, a checkpoint, a task
	// outcome) in the WAL and returns once the engine has applied it, so
	// the next pack and search see it. The session id is taken exactly
	// as given: it may name a session no request has reached yet.
	Note(n exchange.Note) (*Noted, error)
}

// Noted reports a note written to the WAL and applied.
type Noted struct {
	Note   exchange.Note `json:"note"`
	Offset uint64        `json:"offset"`
	// Artifact is the id of the outcome artifact an outcome note went
	// into.
	Artifact string `json:"artifact,omitempty"`
}

// Related is what `mem related` shows: the supersession chain, the
// artifacts adjacent by file, task or symbol, and the events the
// artifact came from.
type Related struct {
	Artifact     engine.Card    `json:"artifact"`
	Supersedes   []engine.Card  `json:"supersedes,omitempty"`
	SupersededBy []engine.Card  `json:"superseded_by,omitempty"`
	Adjacent     []engine.Card  `json:"adjacent"`
	Events       []engine.Event `json:"events"`
}

// Corrected reports a correction written to the WAL.
type Corrected struct {
	Correction exchange.Correction `json:"correction"`
	Offset     uint64              `json:"offset"`
	// Title names what was corrected.
	Title string `json:"title"`
}

// localMemory is memory served from an engine and its index.
type localMemory struct {
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
	// packs caches context packs.
	packs packs
	// timings, when set (in the proxy), times each retrieval for
	// /_bb/metrics.
	timings *retrievalTimings
}

// indexDir is where a data directory keeps its index.
func indexDir(dir string) string { return filepath.Join(dir, "index") }

// sync brings the index up to the engine's artifacts.
func (m *localMemory) sync() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var gen uint64
	if m.changes != nil {
		gen = m.changes.Load()
		if m.syncedOnce && gen == m.synced {
			return nil
		}
	}
	if _, err := m.ix.Sync(m.e); err != nil {
		return err
	}
	m.synced, m.syncedOnce = gen, true
	return nil
}

func (m *localMemory) Search(q index.Query) ([]engine.Card, error) {
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

func (m *localMemory) Find(q index.Query) ([]index.Result, error) {
	defer m.timings.observe(opSearch, time.Now())
	if strings.TrimSpace(q.Text) == "" {
		return nil, fmt.Errorf("%w: an empty query", errBadQuery)
	}
	if q.Session != "" {
		s, err := m.e.Session(q.Session)
		if err != nil {
			return nil, err
		}
		q.Session = s.ID
	}
	rs, err := m.ix.Find(q)
	if err != nil {
		return nil, err
	}
	return m.inForce(rs, q), nil
}

// inForce answers with what is in force across the sessions of a
// project. The index orders what a session replaced within itself; what
// a later session of the project replaced or closed (engine.Resolve) it
// cannot know: such a result gets that status, and a superseded one gets
// the artifact in force (the end of its chain) placed right above it,
// with its score, so "which tool runs the migrations" finds the current
// choice even when the old one matches the words better.
func (m *localMemory) inForce(rs []index.Result, q index.Query) []index.Result {
	k := q.K
	if k <= 0 {
		k = index.DefaultK
	}
	later := map[string]bool{}
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
	if len(rs) > k {
		rs = rs[:k]
	}
	return rs
}

// successor follows an artifact's supersession chain to its end.
func (m *localMemory) successor(id string) (engine.Artifact, bool) {
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
func (m *localMemory) Get(id string) (engine.Artifact, error) {
	defer m.timings.observe(opGet, time.Now())
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

func (m *localMemory) Related(id string, k int) (*Related, error) {
	defer m.timings.observe(opRelated, time.Now())
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

func (m *localMemory) List(session string, types []engine.ArtifactType) ([]engine.Card, error) {
	defer m.timings.observe(opList, time.Now())
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
// engine and the index have taken it.
func (m *localMemory) Correct(cr exchange.Correction) (*Corrected, error) {
	if m.log == nil {
		return nil, errors.New("memory: opened read-only")
	}
	out := &Corrected{}
	if a, err := m.e.Artifact(cr.ID); err == nil {
		cr.Target, cr.ID, out.Title = "artifact", a.ID, a.Title
	} else if !errors.Is(err, engine.ErrNotFound) {
		return nil, err
	} else if s, serr := m.e.Session(cr.ID); serr == nil {
		cr.Target, cr.ID, out.Title = "session", s.ID, "session "+s.ID
	} else {
		return nil, fmt.Errorf("%w: no artifact or session %q (bbengine mem search finds artifacts, bbengine sessions lists sessions)", engine.ErrNotFound, cr.ID)
	}
	p, err := exchange.AppendCorrection(nil, cr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errBadQuery, err)
	}
	off, err := m.log.Append(wal.Record{Kind: frame.KindMemory, Payload: p})
	if err != nil {
		return nil, fmt.Errorf("write the correction to the WAL: %w", err)
	}
	if err := m.log.Sync(); err != nil {
		return nil, fmt.Errorf("sync the WAL: %w", err)
	}
	out.Correction, out.Offset = cr, off
	return out, nil
}

// Note writes the note, its texts redacted, to the WAL as a memory
// frame, then waits until
// the engine has derived it (catching up here unless the engine is
// followed elsewhere) and the index has taken it.
func (m *localMemory) Note(n exchange.Note) (*Noted, error) {
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
		return nil, fmt.Errorf("%w: %s", errBadRequest, strings.TrimPrefix(err.Error(), exchange.ErrPayload.Error()+": "))
	}
	off, err := m.log.Append(wal.Record{Kind: frame.KindMemory, Payload: p})
	if err != nil {
		return nil, fmt.Errorf("write the note to the WAL: %w", err)
	}
	if err := m.log.Sync(); err != nil {
		return nil, fmt.Errorf("sync the WAL: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if m.followed {
		err = m.e.WaitCaughtUp(ctx)
	} else {
		_, err = m.e.CatchUp(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("the note is in the WAL at offset %d, but the engine has not applied it: %w", off, err)
	}
	out := &Noted{Note: n, Offset: off}
	if n.Op == "outcome" {
		out.Artifact = engine.OutcomeID(n.Session, n.TaskID)
	}
	return out, m.sync()
}

// openMemory returns the memory of the data directory: the running
// proxy's, or the engine and index opened here, caught up with the WAL.
// write opens the WAL for corrections.
func openMemory(c *ucli.Context, write bool) (memory, func() error, error) {
	dir := c.String("dir")
	if r := runningProxy(dir); r != nil {
		return &remoteMemory{r}, func() error { return nil }, nil
	}
	return openLocalMemory(c.Context, dir, write)
}

// openLocalMemory opens the engine and the index of dir here, holding
// the directory until the returned function closes them.
func openLocalMemory(ctx context.Context, dir string, write bool) (*localMemory, func() error, error) {
	e, log, closeEL, err := openEngineHere(ctx, dir, write)
	if err != nil {
		return nil, nil, err
	}
	ix, err := index.Open(indexDir(dir), nil)
	if err != nil {
		closeEL()
		return nil, nil, err
	}
	m := &localMemory{e: e, ix: ix, log: log}
	if err := m.sync(); err != nil {
		ix.Close()
		closeEL()
		return nil, nil, err
	}
	return m, func() error { return errors.Join(ix.Close(), closeEL()) }, nil
}

// openEngineHere opens the engine of dir in this process, caught up with
// the WAL, holding the directory until close; with write, the WAL is
// open for appending (log is nil without).
func openEngineHere(ctx context.Context, dir string, write bool) (e *engine.Engine, log *wal.Log, close func() error, err error) {
	var opts *engine.Options
	if write {
		if err := secureDataDir(dir); err != nil {
			return nil, nil, nil, err
		}
		if log, err = wal.Open(filepath.Join(dir, "wal"), nil); err != nil {
			return nil, nil, nil, fmt.Errorf("open the WAL: %w", err)
		}
		opts = &engine.Options{WAL: log}
	}
	closeLog := func() error {
		if log != nil {
			return log.Close()
		}
		return nil
	}
	e, err = engine.Open(dir, opts)
	if err != nil {
		closeLog()
		var le *engine.LockedError
		if errors.As(err, &le) {
			return nil, nil, nil, fmt.Errorf("%w; it serves no queries (no endpoint in the lock file), so stop it or retry later", err)
		}
		return nil, nil, nil, err
	}
	if _, err := e.CatchUp(ctx); err != nil {
		e.Close()
		closeLog()
		return nil, nil, nil, err
	}
	return e, log, func() error { return errors.Join(e.Close(), closeLog()) }, nil
}

// correctHere applies a correction with a memory opened here: it writes
// the frame, then derives and indexes it before returning.
func correctHere(ctx context.Context, m *localMemory, cr exchange.Correction) (*Corrected, error) {
	out, err := m.Correct(cr)
	if err != nil {
		return nil, err
	}
	if _, err := m.e.CatchUp(ctx); err != nil {
		return nil, err
	}
	return out, m.sync()
}

// remoteMemory asks a running proxy.
type remoteMemory struct{ r *remote }

func (m *remoteMemory) Search(q index.Query) ([]engine.Card, error) {
	var out []engine.Card
	return out, m.r.get("/v1/memory/search", searchQuery(q), &out)
}

func (m *remoteMemory) Find(q index.Query) ([]index.Result, error) {
	v := searchQuery(q)
	v.Set("find", "1")
	var out []index.Result
	return out, m.r.get("/v1/memory/search", v, &out)
}

// searchQuery is the query of /v1/memory/search that asks for q.
func searchQuery(q index.Query) url.Values {
	v := url.Values{"q": {q.Text}, "fresh": {"1"}}
	for name, val := range map[string]string{"session": q.Session, "task": q.Task, "project": q.Project, "dir": q.Dir} {
		if val != "" {
			v.Set(name, val)
		}
	}
	if q.K != 0 {
		v.Set("k", strconv.Itoa(q.K))
	}
	for _, t := range q.Types {
		v.Add("type", string(t))
	}
	for name, on := range map[string]bool{"all": q.IncludeForgotten, "all_projects": q.AllProjects, "explain": q.Explain} {
		if on {
			v.Set(name, "1")
		}
	}
	return v
}

func (m *remoteMemory) Get(id string) (engine.Artifact, error) {
	var out engine.Artifact
	return out, m.r.get("/v1/memory/artifacts/"+url.PathEscape(id), url.Values{"fresh": {"1"}}, &out)
}

func (m *remoteMemory) Related(id string, k int) (*Related, error) {
	var out Related
	return &out, m.r.get("/v1/memory/artifacts/"+url.PathEscape(id)+"/related", url.Values{"fresh": {"1"}, "k": {strconv.Itoa(k)}}, &out)
}

func (m *remoteMemory) List(session string, types []engine.ArtifactType) ([]engine.Card, error) {
	v := url.Values{"fresh": {"1"}}
	if session != "" {
		v.Set("session", session)
	}
	for _, t := range types {
		v.Add("type", string(t))
	}
	var out []engine.Card
	return out, m.r.get("/v1/memory/artifacts", v, &out)
}

func (m *remoteMemory) Correct(cr exchange.Correction) (*Corrected, error) {
	body, err := json.Marshal(cr)
	if err != nil {
		return nil, err
	}
	var out Corrected
	return &out, m.r.do(http.MethodPost, "/v1/memory/corrections", nil, body, &out)
}

func (m *remoteMemory) Note(n exchange.Note) (*Noted, error) {
	body, err := json.Marshal(n)
	if err != nil {
		return nil, err
	}
	var out Noted
	return &out, m.r.do(http.MethodPost, "/v1/memory/notes", nil, body, &out)
}

func (m *remoteMemory) Context(req ContextRequest) (*pack.Pack, error) {
	var out pack.Pack
	return &out, m.r.get("/v1/memory/context", contextQuery(req), &out)
}

// contextQuery is the query of /v1/memory/context that asks for req.
func contextQuery(req ContextRequest) url.Values {
	v := url.Values{"fresh": {"1"}, "session": {req.Session}}
	if req.TaskID != "" {
		v.Set("task_id", req.TaskID)
	}
	if req.Task != "" {
		v.Set("task", req.Task)
	}
	if req.Budget != 0 {
		v.Set("budget", strconv.Itoa(req.Budget))
	}
	if req.Project != "" {
		v.Set("project", req.Project)
	}
	return v
}

// serveMemory answers /v1/memory/… for the query server.
func (q *queryServer) serveMemory(w http.ResponseWriter, r *http.Request, path string, reply func(any, error)) {
	m := q.mem
	if m == nil {
		reply(nil, errors.New("memory is not open in the proxy (see its log)"))
		return
	}
	qv := r.URL.Query()
	if qv.Get("fresh") != "" {
		if err := m.sync(); err != nil {
			reply(nil, err)
			return
		}
	}
	types := func() ([]engine.ArtifactType, error) {
		var out []engine.ArtifactType
		for _, t := range qv["type"] {
			if !engine.ArtifactType(t).Valid() {
				return nil, fmt.Errorf("%w: artifact type %q", errBadQuery, t)
			}
			out = append(out, engine.ArtifactType(t))
		}
		return out, nil
	}
	switch {
	case path == "memory/search":
		ts, err := types()
		if err != nil {
			reply(nil, err)
			return
		}
		k, _ := strconv.Atoi(qv.Get("k"))
		sq := index.Query{Text: qv.Get("q"), Session: qv.Get("session"), Task: qv.Get("task"), K: k, Types: ts, IncludeForgotten: qv.Get("all") != "",
			Project: qv.Get("project"), Dir: qv.Get("dir"), AllProjects: qv.Get("all_projects") != "", Explain: qv.Get("explain") != ""}
		if qv.Get("find") != "" {
			// Results: cards with their project and explanation.
			reply(m.Find(sq))
			return
		}
		reply(m.Search(sq))
	case path == "memory/context":
		budget := 0
		if v := qv.Get("budget"); v != "" {
			var err error
			if budget, err = strconv.Atoi(v); err != nil {
				reply(nil, fmt.Errorf("%w: budget %q is not a number", errBadQuery, v))
				return
			}
		}
		reply(m.Context(ContextRequest{Session: qv.Get("session"), TaskID: qv.Get("task_id"), Task: qv.Get("task"), Budget: budget, Project: qv.Get("project")}))
	case path == "memory/artifacts":
		ts, err := types()
		if err != nil {
			reply(nil, err)
			return
		}
		reply(m.List(qv.Get("session"), ts))
	case strings.HasPrefix(path, "memory/artifacts/") && strings.HasSuffix(path, "/related"):
		id, _ := url.PathUnescape(strings.TrimSuffix(strings.TrimPrefix(path, "memory/artifacts/"), "/related"))
		k, _ := strconv.Atoi(qv.Get("k"))
		reply(m.Related(id, k))
	case strings.HasPrefix(path, "memory/artifacts/"):
		id, _ := url.PathUnescape(strings.TrimPrefix(path, "memory/artifacts/"))
		reply(m.Get(id))
	case path == "memory/corrections" && r.Method == http.MethodPost:
		var cr exchange.Correction
		if err := json.NewDecoder(io.LimitReader(r.Body, exchange.MaxCorrection)).Decode(&cr); err != nil {
			reply(nil, fmt.Errorf("%w: correction: %v", errBadQuery, err))
			return
		}
		out, err := m.Correct(cr)
		if err != nil {
			reply(nil, err)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		if err := q.e.WaitCaughtUp(ctx); err != nil {
			reply(nil, err)
			return
		}
		reply(out, m.sync())
	case path == "memory/notes" && r.Method == http.MethodPost:
		var n exchange.Note
		if err := decodeBody(r, &n, exchange.MaxNote); err != nil {
			reply(nil, err)
			return
		}
		reply(m.Note(n))
	default:
		reply(nil, noRoute(r))
	}
}
