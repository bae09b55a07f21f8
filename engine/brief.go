package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2"
)

// memBrief keys a session's brief: 'i' 'b' + session id.
const memBrief = 'b'

func briefKey(session string) []byte {
	return append([]byte{prefixIndex, memBrief}, session...)
}

// Brief is what was said about a session as a whole rather than derived
// from its events: its goal and the latest checkpoint summary a harness
// recorded. Each comes from a WAL frame, so a rebuild gives it again.
type Brief struct {
	Session string `json:"session"`
	// Goal is the session's north star; GoalSource says where it came
	// from: "run" (bbengine run --goal), "harness" (the harness API) or
	// "header" (an X-Bb-Session-Goal request header). GoalOffset is the
	// WAL offset of the frame that set it.
	Goal       string `json:"goal,omitempty"`
	GoalSource string `json:"goal_source,omitempty"`
	GoalOffset uint64 `json:"goal_offset,omitempty"`
	// Checkpoint is the latest session summary, with the time and WAL
	// offset of its frame.
	Checkpoint       string `json:"checkpoint,omitempty"`
	CheckpointTime   int64  `json:"checkpoint_ns,omitempty"`
	CheckpointOffset uint64 `json:"checkpoint_offset,omitempty"`
}

// Brief returns the brief of a session id, exactly as recorded (a
// session may have a brief before its first request). It is the zero
// Brief with the id when nothing was recorded.
func (e *Engine) Brief(session string) (Brief, error) {
	b := Brief{Session: session}
	_, err := e.getJSON(briefKey(session), &b)
	return b, err
}

// ArtifactsOf returns the session's memory state and those of its
// artifacts that have one of the types (all when none is given), with
// their corrections, sorted by id. Artifact ids start with their type's
// prefix, so artifacts of other types are not read.
func (e *Engine) ArtifactsOf(session string, types ...ArtifactType) ([]Artifact, MemoryState, error) {
	st, err := e.MemoryState(session)
	if err != nil {
		return nil, st, err
	}
	var prefixes []string
	for _, t := range types {
		prefixes = append(prefixes, idPrefix(t))
	}
	out := make([]Artifact, 0, len(st.Artifacts))
	for _, id := range st.Artifacts {
		if len(prefixes) > 0 && !hasAnyPrefix(id, prefixes) {
			continue
		}
		a, err := e.artifact(id)
		if err != nil {
			return nil, st, err
		}
		out = append(out, a)
	}
	return out, st, nil
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// idPrefix is the prefix of the ids of artifacts of type t.
func idPrefix(t ArtifactType) string {
	switch t {
	case ArtifactDecision:
		return "dec-"
	case ArtifactConstraint:
		return "con-"
	case ArtifactOutcome:
		return "out-"
	case ArtifactThread:
		return "thr-"
	case ArtifactSegment:
		return "seg-"
	}
	return string(t) + "-"
}

// MemoryDigest returns the digest of a session's memory state (see
// MemoryState.Digest) and the session's full id, without decoding the
// state's list of artifact ids: a pack cache checks it on every lookup,
// and a session of 100k artifacts keeps a list of 1.7 MB.
func (e *Engine) MemoryDigest(session string) (id, digest string, err error) {
	s, err := e.Session(session)
	if err != nil {
		return "", "", err
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return "", "", ErrClosed
	}
	b, closer, err := e.db.Get(memStateKey(s.Ordinal))
	if errors.Is(err, pebble.ErrNotFound) {
		return s.ID, "", nil
	}
	if err != nil {
		return "", "", fmt.Errorf("engine: read: %w", err)
	}
	defer closer.Close()
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", "", fmt.Errorf("engine: decode memory state of %s: not an object", s.ID)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return "", "", fmt.Errorf("engine: decode memory state of %s: %w", s.ID, err)
		}
		if k == "digest" {
			var d string
			if err := dec.Decode(&d); err != nil {
				return "", "", fmt.Errorf("engine: decode memory state of %s: %w", s.ID, err)
			}
			return s.ID, d, nil
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", "", fmt.Errorf("engine: decode memory state of %s: %w", s.ID, err)
		}
	}
	return s.ID, "", nil
}
