package api

import (
	"container/list"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/pack"
)

// packTypes are the artifact types a pack is built from: transcript
// segments are for search, not for the pack.
var packTypes = []engine.ArtifactType{engine.ArtifactDecision, engine.ArtifactConstraint, engine.ArtifactOutcome, engine.ArtifactThread}

// packs caches built packs and the artifacts they are built from.
type packs struct {
	mu    sync.Mutex
	built map[string]*list.Element // pack.Key → element holding *pack.Pack
	order *list.List               // most recently used first
	// arts holds, per session, the pack artifacts of one memory state.
	arts map[string]sessionArts
}

type sessionArts struct {
	digest string
	arts   []engine.Artifact
}

type cachedPack struct {
	key string
	p   *pack.Pack
}

// maxPacks bounds the pack cache; maxSessionArts the sessions whose
// artifacts stay loaded.
const (
	maxPacks       = 256
	maxSessionArts = 8
)

func (c *packs) get(key string) (*pack.Pack, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.built == nil {
		return nil, false
	}
	el, ok := c.built[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(cachedPack).p, true
}

func (c *packs) put(key string, p *pack.Pack) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.built == nil {
		c.built, c.order = map[string]*list.Element{}, list.New()
	}
	if el, ok := c.built[key]; ok {
		c.order.MoveToFront(el)
		return
	}
	c.built[key] = c.order.PushFront(cachedPack{key, p})
	for c.order.Len() > maxPacks {
		el := c.order.Back()
		c.order.Remove(el)
		delete(c.built, el.Value.(cachedPack).key)
	}
}

func (c *packs) artifacts(session, digest string) ([]engine.Artifact, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sa, ok := c.arts[session]
	return sa.arts, ok && sa.digest == digest
}

func (c *packs) keepArtifacts(session, digest string, arts []engine.Artifact) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.arts == nil {
		c.arts = map[string]sessionArts{}
	}
	if _, ok := c.arts[session]; !ok && len(c.arts) >= maxSessionArts {
		for k := range c.arts {
			delete(c.arts, k) // any one: sessions are rarely this many
			break
		}
	}
	c.arts[session] = sessionArts{digest, arts}
}

// Context builds (or finds in the cache) the context pack of a task.
func (m *Local) Context(req ContextRequest) (*pack.Pack, error) {
	defer m.observe(OpContext, time.Now())
	if strings.TrimSpace(req.Session) == "" {
		return nil, fmt.Errorf("%w: a context pack needs a session id", ErrBadQuery)
	}
	b := pack.BudgetFor(req.Budget)
	if err := b.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadQuery, err)
	}
	id, digest, err := m.e.MemoryDigest(req.Session)
	known := err == nil
	if errors.Is(err, engine.ErrNotFound) {
		id = req.Session // a session about to start: its brief may exist
	} else if err != nil {
		return nil, err
	}
	brief, err := m.e.Brief(id)
	if err != nil {
		return nil, err
	}
	in := &pack.Input{Session: id, Goal: brief.Goal, GoalSource: brief.GoalSource, Checkpoint: brief.Checkpoint,
		Task: req.Task, TaskID: req.TaskID, State: digest, Budget: b}
	project, skip := "", uint64(0)
	if req.Project != "" {
		project = filepath.Clean(req.Project)
	}
	if known {
		st, err := m.e.MemoryState(id)
		if err != nil {
			return nil, err
		}
		if st.Project != "" {
			project = st.Project
		}
		skip = st.Ordinal
	}
	pm, err := m.projectMemory(project, skip)
	if err != nil {
		return nil, err
	}
	in.Project, in.ProjectState = pm.InForce, pm.State
	key := pack.Key(in)
	if p, ok := m.packs.get(key); ok {
		return p, nil
	}
	if known {
		arts, ok := m.packs.artifacts(id, digest)
		if !ok {
			var st engine.MemoryState
			if arts, st, err = m.e.ArtifactsOf(id, packTypes...); err != nil {
				return nil, err
			}
			if st.Digest != digest {
				// Memory moved on between the two reads: key the pack by
				// what it is built from.
				in.State = st.Digest
				key = pack.Key(in)
			}
			m.packs.keepArtifacts(id, in.State, arts)
		}
		in.Artifacts = resolved(arts, pm)
		if in.Goal == "" {
			in.Goal, in.GoalSource = firstPrompt(arts)
		}
	}
	p, err := pack.Build(in)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadQuery, err)
	}
	m.packs.put(key, p)
	return p, nil
}

// projectMemory is what the sessions of project other than the one with
// ordinal skip leave in force. It is kept while the project's state
// (engine.ProjectState: its index entries and its sessions' memory
// digests) stays put.
func (m *Local) projectMemory(project string, skip uint64) (*engine.ProjectMemory, error) {
	if project == "" {
		return &engine.ProjectMemory{}, nil
	}
	key := project + "\x00" + strconv.FormatUint(skip, 10)
	var gen uint64
	m.pmMu.Lock()
	pm, ok := m.pms[key]
	if m.changes != nil {
		// In the proxy: nothing derived since the last look, nothing to
		// read.
		gen = m.changes.Load()
		if ok && m.pmGen[key] == gen {
			m.pmMu.Unlock()
			return pm, nil
		}
	}
	m.pmMu.Unlock()
	state, err := m.e.ProjectState(project)
	if err != nil {
		return nil, err
	}
	if ok && pm.State == state {
		m.pmMu.Lock()
		m.pmGen[key] = gen
		m.pmMu.Unlock()
		return pm, nil
	}
	if pm, err = m.e.ProjectMemory(project, skip); err != nil {
		return nil, err
	}
	m.pmMu.Lock()
	defer m.pmMu.Unlock()
	if m.pms == nil || len(m.pms) >= maxSessionArts {
		m.pms, m.pmGen = map[string]*engine.ProjectMemory{}, map[string]uint64{}
	}
	m.pms[key], m.pmGen[key] = pm, gen
	return pm, nil
}

// resolved is arts with the status a later session of the project gave
// them (copied when one changes).
func resolved(arts []engine.Artifact, pm *engine.ProjectMemory) []engine.Artifact {
	out := arts
	for i, a := range arts {
		r, ok := pm.Resolved[a.ID]
		if !ok {
			continue
		}
		if &out[0] == &arts[0] {
			out = slices.Clone(arts)
		}
		out[i].SetResolved(&r)
	}
	return out
}

// firstPrompt is the goal of a session nobody stated one for: the prompt
// of its first task.
func firstPrompt(arts []engine.Artifact) (string, string) {
	first := -1
	for i, a := range arts {
		if a.Type != engine.ArtifactOutcome || a.Outcome == nil || a.Outcome.Prompt == "" {
			continue
		}
		if first < 0 || a.TaskN < arts[first].TaskN || a.TaskN == arts[first].TaskN && a.ID < arts[first].ID {
			first = i
		}
	}
	if first < 0 {
		return "", ""
	}
	return arts[first].Outcome.Prompt, "first prompt"
}
