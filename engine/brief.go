package engine

// The queries of what harnesses said about a session (briefs, outcome
// reports) and of a session's artifacts by type; the pipeline derives
// them (engine/derive/brief.go).

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bbengine/bbengine/engine/schema"

	"github.com/cockroachdb/pebble/v2"
)

// Brief returns the brief of a session id, exactly as recorded (a
// session may have a brief before its first request). It is the zero
// Brief with the id when nothing was recorded.
func (e *Engine) Brief(session string) (Brief, error) {
	b := Brief{Session: session}
	_, err := e.getJSON(schema.BriefKey(session), &b)
	return b, err
}

// Reports returns the outcome reports of a session id, in the order
// their notes were written.
func (e *Engine) Reports(session string) ([]Report, error) {
	var out []Report
	err := e.scan(schema.ReportPrefix(session), func(k, v []byte) error {
		var r Report
		if err := json.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("engine: decode report %q: %w", k[2:], err)
		}
		out = append(out, r)
		return nil
	})
	slices.SortFunc(out, func(a, b Report) int { return cmp.Compare(a.Offset, b.Offset) })
	return out, err
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
	s, err := e.rawSession(session)
	if err != nil {
		return "", "", err
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return "", "", ErrClosed
	}
	b, closer, err := e.db.Get(schema.MemStateKey(s.Ordinal))
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
