package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/bbengine/bbengine/engine/schema"

	"github.com/cespare/xxhash/v2"
	"github.com/cockroachdb/pebble/v2"
)

// ArtifactSums returns the ids of a session's artifacts, sorted, and for
// each a sum of what Artifact reads for it: its stored bytes, its
// correction and its session's. Two reads with the same sum give the
// same artifact. It decodes no artifact, so it costs a fraction of
// Artifacts; a reader that keeps the sums (the memory index) then reads
// with ArtifactsByID only the artifacts whose sum changed.
func (e *Engine) ArtifactSums(session string) (ids []string, sums []uint64, err error) {
	st, err := e.MemoryState(session)
	if err != nil {
		return nil, nil, err
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, nil, ErrClosed
	}
	ids = slices.Clone(st.Artifacts)
	slices.Sort(ids)
	sums = make([]uint64, 0, len(ids))
	var buf [binary.MaxVarintLen64]byte
	value := func(h *xxhash.Digest, key []byte) error {
		v, closer, err := e.db.Get(key)
		if errors.Is(err, pebble.ErrNotFound) {
			h.Write(buf[:binary.PutVarint(buf[:], -1)])
			return nil
		}
		if err != nil {
			return fmt.Errorf("engine: read %s: %w", key[1:], err)
		}
		defer closer.Close()
		h.Write(buf[:binary.PutVarint(buf[:], int64(len(v)))])
		h.Write(v)
		return nil
	}
	h := xxhash.New()
	if err := value(h, schema.CorrectionKey("session", st.Session)); err != nil {
		return nil, nil, err
	}
	sessionSum := h.Sum64()
	for _, id := range ids {
		h.Reset()
		h.Write(binary.LittleEndian.AppendUint64(buf[:0], sessionSum))
		if err := value(h, schema.ArtifactKey(id)); err != nil {
			return nil, nil, err
		}
		if err := value(h, schema.CorrectionKey("artifact", id)); err != nil {
			return nil, nil, err
		}
		sums = append(sums, h.Sum64())
	}
	return ids, sums, nil
}

// ArtifactsByID returns the artifacts with these ids, with their
// corrections, in the order given; ids no longer stored (memory moved
// on) are left out.
func (e *Engine) ArtifactsByID(ids []string) ([]Artifact, error) {
	out := make([]Artifact, 0, len(ids))
	for _, id := range ids {
		a, err := e.artifact(id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}
