package engine

// The queries of memory: sessions' memory states, artifacts with their
// corrections, and the corrections themselves; the memory rules read
// across a project (Resolve, ProjectState, ProjectMemory) are the
// pipeline's (engine/derive/project_resolve.go).

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/bbengine/bbengine/engine/schema"
)

// MemoryStates returns the memory state of every session with memory,
// in session ordinal order.
func (e *Engine) MemoryStates() ([]MemoryState, error) {
	var out []MemoryState
	err := e.scan([]byte{schema.PrefixIndex, schema.MemState}, func(k, v []byte) error {
		var st MemoryState
		if err := json.Unmarshal(v, &st); err != nil {
			return fmt.Errorf("engine: decode memory state %d: %w", schema.U64(k[2:]), err)
		}
		out = append(out, st)
		return nil
	})
	return out, err
}

// MemoryState returns the memory state of a session (any id Session
// accepts). Memory is derived per side: a member of a merged session
// names its own state.
func (e *Engine) MemoryState(session string) (MemoryState, error) {
	var st MemoryState
	s, err := e.rawSession(session)
	if err != nil {
		return st, err
	}
	ok, err := e.getJSON(schema.MemStateKey(s.Ordinal), &st)
	if err == nil && !ok {
		st = MemoryState{Session: s.ID, Ordinal: s.Ordinal}
	}
	return st, err
}

// Artifacts returns the artifacts of a session with their corrections,
// sorted by id.
func (e *Engine) Artifacts(session string) ([]Artifact, error) {
	st, err := e.MemoryState(session)
	if err != nil {
		return nil, err
	}
	out := make([]Artifact, 0, len(st.Artifacts))
	for _, id := range st.Artifacts {
		a, err := e.artifact(id)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// Artifact returns the artifact with id, or the only one whose id starts
// with it, with its corrections. An unknown or ambiguous id is an error
// wrapping ErrNotFound.
func (e *Engine) Artifact(id string) (Artifact, error) {
	if id == "" {
		return Artifact{}, fmt.Errorf("%w: empty artifact id", ErrNotFound)
	}
	a, err := e.artifact(id)
	if err == nil || !errors.Is(err, ErrNotFound) {
		return a, err
	}
	var found []string
	err = e.scan(schema.ArtifactKey(id), func(k, _ []byte) error {
		found = append(found, string(k[1:]))
		if len(found) > 5 {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return a, err
	}
	switch len(found) {
	case 0:
		return a, fmt.Errorf("%w: no artifact %q (bbengine mem search finds artifacts)", ErrNotFound, id)
	case 1:
		return e.artifact(found[0])
	}
	return a, fmt.Errorf("%w: artifact id %q is ambiguous (%s, …)", ErrNotFound, id, strings.Join(found[:2], ", "))
}

var errStop = errors.New("stop")

func (e *Engine) artifact(id string) (Artifact, error) {
	var a Artifact
	ok, err := e.getJSON(schema.ArtifactKey(id), &a)
	if err != nil {
		return a, err
	}
	if !ok {
		return a, fmt.Errorf("%w: no artifact %q", ErrNotFound, id)
	}
	var cs, ss CorrectionState
	if _, err := e.getJSON(schema.CorrectionKey("artifact", id), &cs); err != nil {
		return a, err
	}
	if _, err := e.getJSON(schema.CorrectionKey("session", a.Session), &ss); err != nil {
		return a, err
	}
	// A forgotten session hides all its artifacts.
	a.Forgotten, a.Pinned, a.SessionForgotten = cs.Forgotten || ss.Forgotten, cs.Pinned, ss.Forgotten
	return a, nil
}

// Corrections returns every correction state, artifacts first.
func (e *Engine) Corrections() ([]CorrectionState, error) {
	var out []CorrectionState
	err := e.scan([]byte{schema.PrefixIndex, schema.MemCorrection}, func(k, v []byte) error {
		var cs CorrectionState
		if err := json.Unmarshal(v, &cs); err != nil {
			return fmt.Errorf("engine: decode correction %q: %w", k[3:], err)
		}
		out = append(out, cs)
		return nil
	})
	return out, err
}

// pinRetention pins in the WAL the range of every pinned session (and of
// the session of every pinned artifact), so retention keeps it. Pins
// live in the log's memory: Open and every pass that sees a correction
// set them again.
func (e *Engine) pinRetention() error {
	cs, err := e.Corrections()
	if err != nil {
		return err
	}
	sessions := map[string]bool{}
	for _, c := range cs {
		switch {
		case c.Target == "session":
			if c.Pinned {
				sessions[c.ID] = true
			} else {
				e.log.Unpin("session:" + c.ID)
			}
		case c.Pinned:
			var a Artifact
			if ok, err := e.getJSON(schema.ArtifactKey(c.ID), &a); err != nil {
				return err
			} else if ok {
				sessions[a.Session] = true
			}
		}
	}
	for id := range sessions {
		ranges, err := e.pinRanges(id)
		if err != nil {
			return err
		}
		for sid, r := range ranges {
			e.log.Pin("session:"+sid, r[0], r[1])
		}
	}
	return nil
}

// pinRanges returns the WAL range of the frames session id's events came
// from, by session: for a member of a merged session, of both its sides
// (the proxied exchanges and the import frames). An unknown id has none.
func (e *Engine) pinRanges(id string) (map[string][2]uint64, error) {
	s, err := e.rawSession(id)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	members := []Session{s}
	h, err := e.mergeHead(&s)
	if err != nil {
		return nil, err
	}
	if h != nil {
		members = members[:0]
		for _, m := range []string{h.Live, h.Import} {
			ms, err := e.rawSession(m)
			if err != nil {
				return nil, err
			}
			members = append(members, ms)
		}
	}
	out := map[string][2]uint64{}
	for _, m := range members {
		first, last, ok, err := e.walRange(m)
		if err != nil {
			return nil, err
		}
		if ok {
			out[m.ID] = [2]uint64{first, last}
		}
	}
	return out, nil
}

// walRange returns the WAL offsets of the first and last frame a
// session's events came from.
func (e *Engine) walRange(s Session) (first, last uint64, ok bool, err error) {
	lo := schema.EventKey(nil, s.Ordinal, 0)
	hi := schema.AppendU64Key(nil, schema.PrefixEvent, s.Ordinal+1)
	err = e.scanRange(lo, hi, func(_, v []byte) error {
		var ev struct {
			Prov Provenance `json:"prov"`
		}
		if err := json.Unmarshal(v, &ev); err != nil {
			return err
		}
		if ev.Prov.Last == 0 && ev.Prov.First == 0 {
			return nil
		}
		if !ok || ev.Prov.First < first {
			first = ev.Prov.First
		}
		if ev.Prov.Last > last {
			last = ev.Prov.Last
		}
		ok = true
		return nil
	})
	return first, last, ok, err
}

// Resolve says whether a later session of a's project took a out of force
// (nil when it did not, or a has no project): a decision or constraint
// replaced, a failing test that passed. It reads only the project index
// entries that could apply.
func (e *Engine) Resolve(a Artifact) (*Resolution, error) { return e.pipe.Resolve(a) }

// ProjectState returns a digest that changes whenever ProjectMemory of
// the project would: it reads the project index and the memory state of
// its sessions, not their artifacts.
func (e *Engine) ProjectState(project string) (string, error) { return e.pipe.ProjectState(project) }

// ProjectMemory returns the memory in force of project (a working
// directory, as ProjectOf gives it), from every session of it but the
// one whose ordinal is skip (0: none): a session's own pack has its own
// artifacts. Resolved still says which of the skipped session's
// artifacts a later session took out of force; of those, only the ones
// some other session's entry could apply to are read.
func (e *Engine) ProjectMemory(project string, skip uint64) (*ProjectMemory, error) {
	return e.pipe.ProjectMemory(project, skip)
}
