package derive

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/bbengine/bbengine/engine/schema"

	jsonv1 "github.com/go-json-experiment/json/v1"
)

// A proxied session and the imported log of the same agent session are
// two timelines of one session (docs/design/merge.md). They stay derived
// as they are, each under its own ordinal; a merge group joins them: the
// live session (the canonical member, whose id names the merged session)
// and the import session "<source>:<agent id>" its requests named, or,
// for a family that sends no such id, whose replies it has
// (mergecontent.go). At the
// end of a pass the group's merge record is computed again from the two
// stored timelines alone (MergeOrder, MergeView, MergeSummary), so an
// incremental derivation and a rebuild give the same bytes; readers
// compose the merged view from the two timelines and the record.
//
// A group joined by id forms when exactly one live session sent the
// import session's agent id, that live session sent no other id whose
// log was imported, and at least one event pairs: anything else is left
// apart. How events pair and order is mergeorder.go's.

// MergeHead is the stored record of a merge group ('g' 'h'): its
// members, how many events of each side it was computed from, and the
// merged session's summary.
type MergeHead struct {
	Live          string  `json:"live"`
	LiveOrdinal   uint64  `json:"live_ordinal"`
	LiveEvents    uint64  `json:"live_events"`
	Import        string  `json:"import"`
	ImportOrdinal uint64  `json:"import_ordinal"`
	ImportEvents  uint64  `json:"import_events"`
	Summary       Session `json:"summary"`
}

// mergedMemory tells deriveSessionMemory how to derive the memory of
// session s when it is a member of a merged session: for the canonical
// member, s becomes the merged summary and view its merged events; an
// absorbed member gets no events. merged is false for a session that is
// not a member.
func (c *canonicalizer) mergedMemory(s *Session) (merged bool, view []Event, err error) {
	canon, err := c.e.getMeta(schema.MergeLinkKey(s.ID))
	if err != nil || canon == nil {
		return false, nil, err
	}
	if string(canon) != s.ID {
		s.Events = 0
		return true, []Event{}, nil
	}
	var h MergeHead
	ok, err := c.e.getJSON(schema.MergeHeadKeyOf(s.Ordinal), &h)
	if err != nil || !ok {
		return false, nil, err
	}
	if view, err = c.e.view(s.ID); err != nil {
		return false, nil, err
	}
	*s = h.Summary
	s.Events = uint64(len(view))
	return true, view, nil
}

// markMemory marks the memory of session id to be derived again in this
// pass, durably in the batch.
func (c *canonicalizer) markMemory(id string) {
	c.memPending[id] = true
	c.batch.Set(schema.MemPendingKey(id), nil, nil)
}

// markMergePending marks the merge group of import session id to be
// derived again at the end of the pass, durably in the batch.
func (c *canonicalizer) markMergePending(id string) {
	c.ensureBatch()
	if !c.pendingMerges[id] {
		c.pendingMerges[id] = true
		c.batch.Set(schema.MergePendingKey(id), nil, nil)
	}
}

// markMergeView marks the group of import session id, merged by
// content, to be composed again at the end of the pass, durably in the
// batch.
func (c *canonicalizer) markMergeView(id string) {
	c.ensureBatch()
	if !c.viewMerges[id] {
		c.viewMerges[id] = true
		c.batch.Set(schema.MergeViewKey(id), nil, nil)
	}
}

// loadPendingMerges reads the groups left pending by an earlier pass.
func (c *canonicalizer) loadPendingMerges() error {
	p := []byte{schema.PrefixMerge, schema.MergePending}
	err := c.e.scan(p, func(k, _ []byte) error {
		c.pendingMerges[string(k[2:])] = true
		return nil
	})
	if err != nil {
		return err
	}
	return c.e.scan([]byte{schema.PrefixMerge, schema.MergeView}, func(k, _ []byte) error {
		c.viewMerges[string(k[2:])] = true
		return nil
	})
}

// deriveMerges derives the pending merge groups again from the committed
// sides, and commits. Every import session that shares a live session
// with a pending one is derived again too, so a live session that came
// to name two logs leaves both groups.
func (c *canonicalizer) deriveMerges(ctx context.Context) error {
	if len(c.pendingMerges) == 0 && len(c.viewMerges) == 0 {
		return nil
	}
	work := map[string]bool{}
	for id := range c.pendingMerges {
		work[id] = true
		// The group a content candidate of id is in now is decided
		// again too: id may take its live session.
		if err := c.contentRivals(id, work); err != nil {
			return err
		}
		ords, err := c.joinedLives(id)
		if err != nil {
			return err
		}
		for _, o := range ords {
			err := c.e.scan(schema.JoinLivePrefix(o), func(k, _ []byte) error {
				work[string(k[10:])] = true
				return nil
			})
			if err != nil {
				return err
			}
		}
	}
	ids := make([]string, 0, len(work))
	for id := range work {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	c.ensureBatch()
	// Every old group goes before any is formed again: a group formed
	// here must not be dropped as another import's old one.
	for _, id := range ids {
		if err := c.unmerge(id); err != nil {
			return fmt.Errorf("engine: merge of %s: %w", id, err)
		}
	}
	for _, id := range ids {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := c.merge(id); err != nil {
			return fmt.Errorf("engine: merge of %s: %w", id, err)
		}
		c.batch.Delete(schema.MergePendingKey(id), nil)
		c.progress.Merges++
	}
	views := make([]string, 0, len(c.viewMerges))
	for id := range c.viewMerges {
		views = append(views, id)
	}
	slices.Sort(views)
	for _, id := range views {
		if !work[id] {
			if err := c.recompose(id); err != nil {
				return fmt.Errorf("engine: merge of %s: %w", id, err)
			}
			c.progress.Merges++
		}
		c.batch.Delete(schema.MergeViewKey(id), nil)
	}
	clear(c.pendingMerges)
	clear(c.viewMerges)
	if err := c.e.hold(ctx); err != nil {
		return err
	}
	return c.commit()
}

// joinedLives returns the ordinals of the live sessions that sent the
// agent id import session id is named by.
func (c *canonicalizer) joinedLives(id string) ([]uint64, error) {
	if strings.IndexByte(id, 0) >= 0 {
		// No join key names it (deriver.join), and its prefix would
		// match another id's keys.
		return nil, nil
	}
	var out []uint64
	p := schema.JoinPrefix(id)
	err := c.e.scan(p, func(k, _ []byte) error {
		out = append(out, schema.U64(k[len(p):]))
		return nil
	})
	return out, err
}

// unmerge drops the old record of the merge group of import session id,
// if it has one.
func (c *canonicalizer) unmerge(id string) error {
	canon, err := c.e.getMeta(schema.MergeLinkKey(id))
	if err != nil || canon == nil {
		return err
	}
	return c.dropMerge(string(canon), id)
}

// merge derives the merge group of import session id again, once its
// old record is dropped (unmerge): when the group still forms, it writes
// the new one.
func (c *canonicalizer) merge(id string) error {
	if src, _, ok := strings.Cut(id, ":"); ok && joinsByContent(src) {
		return c.mergeContent(id)
	}
	// The join keys first: most imports have none, and a prefix scan
	// costs less than decoding the session.
	ords, err := c.joinedLives(id)
	if err != nil || len(ords) != 1 {
		return err // none, or ambiguous: left apart
	}
	imp, ok, err := c.stored(id)
	if err != nil || !ok || imp.Import == nil || imp.Events == 0 {
		return err
	}
	// The live session named another log that was imported: which one
	// it is cannot be told, so it is left apart from both.
	var others []string
	err = c.e.scan(schema.JoinLivePrefix(ords[0]), func(k, _ []byte) error {
		if other := string(k[10:]); other != id {
			others = append(others, other)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, other := range others {
		o, ok, err := c.stored(other)
		if err != nil {
			return err
		}
		if ok && o.Import != nil && o.Events > 0 {
			return nil
		}
	}
	v, err := c.e.getMeta(schema.OrdinalKey(nil, ords[0]))
	if err != nil || v == nil {
		return err
	}
	lv, ok, err := c.stored(string(v))
	if err != nil || !ok || lv.Import != nil || lv.Merged != nil {
		return err
	}
	liveEvents, impEvents, err := c.bothSides(&lv, &imp)
	if err != nil {
		return err
	}
	order, st := MergeOrder(liveEvents, impEvents)
	if st.Paired == 0 {
		// The same id, and not one fact in common: nothing says they
		// are one session (an agent that reuses ids, keys that differ
		// on the wire and in the log). Left apart, each counts its own.
		return nil
	}
	return c.writeMerge(&lv, liveEvents, &imp, impEvents, order, st)
}

// writeMerge writes the record of the group of live session lv and
// import session imp, whose events pair as order says, and marks the
// memory of both to be derived again.
func (c *canonicalizer) writeMerge(lv *Session, liveEvents []Event, imp *Session, impEvents []Event, order []OrderEntry, st Merged) error {
	view, threads, err := MergeView(lv.ID, liveEvents, imp.ID, impEvents, order)
	if err != nil {
		return err
	}
	h := MergeHead{Live: lv.ID, LiveOrdinal: lv.Ordinal, LiveEvents: uint64(len(liveEvents)),
		Import: imp.ID, ImportOrdinal: imp.Ordinal, ImportEvents: uint64(len(impEvents)),
		Summary: MergeSummary(lv, imp, view, threads, st)}
	TranslateTasks(h.Summary.Tasks, LiveSeqs(order))
	if err := c.setJSON(schema.MergeHeadKeyOf(lv.Ordinal), &h); err != nil {
		return err
	}
	c.batch.Set(schema.MergeOrderKey(lv.Ordinal), AppendOrder(nil, order), nil)
	c.batch.Set(schema.MergeLinkKey(lv.ID), []byte(lv.ID), nil)
	c.batch.Set(schema.MergeLinkKey(imp.ID), []byte(lv.ID), nil)
	// The merged memory is derived again, whole: the view is not an
	// extension of the one a fold of either side read.
	for _, id := range []string{lv.ID, imp.ID} {
		delete(c.folds, id)
		c.markMemory(id)
	}
	return nil
}

// dropMerge deletes the record of the group whose canonical member is
// canon and whose import is id, and its members' links. A record that
// does not decode is dropped all the same (and said): it is derived
// again from the sides.
func (c *canonicalizer) dropMerge(canon, id string) error {
	s, ok, err := c.stored(canon)
	if err != nil || !ok {
		return err
	}
	key := schema.MergeHeadKeyOf(s.Ordinal)
	v, err := c.e.getMeta(key)
	if err != nil {
		return err
	}
	members := []string{canon, id}
	var h MergeHead
	if v != nil {
		if err := json.Unmarshal(v, &h); err != nil {
			c.e.opts.Logf("engine: the merge record at key %x does not decode (%v); deriving it again", key, err)
		} else {
			members = append(members, h.Live, h.Import)
		}
	}
	slices.Sort(members)
	for _, m := range slices.Compact(members) {
		c.batch.Delete(schema.MergeLinkKey(m), nil)
		delete(c.folds, m)
		c.markMemory(m)
	}
	c.batch.Delete(key, nil)
	c.batch.Delete(schema.MergeOrderKey(s.Ordinal), nil)
	c.batch.Delete(schema.JoinContentKey(s.Ordinal), nil)
	return nil
}

// stored reads the committed summary of session id.
func (c *canonicalizer) stored(id string) (Session, bool, error) {
	var s Session
	ok, err := c.e.getJSON(schema.SessionKey(nil, id), &s)
	return s, ok, err
}

// bothSides reads the committed timelines of a live and an import
// session.
func (c *canonicalizer) bothSides(lv, imp *Session) (live, imported []Event, err error) {
	if live, err = c.sideEvents(lv); err != nil {
		return nil, nil, err
	}
	if imported, err = c.sideEvents(imp); err != nil {
		return nil, nil, err
	}
	return live, imported, nil
}

// sideEvents reads the committed timeline of session s.
func (c *canonicalizer) sideEvents(s *Session) ([]Event, error) {
	out := make([]Event, 0, s.Events)
	p := schema.AppendU64Key(nil, schema.PrefixEvent, s.Ordinal)
	err := c.e.scan(p, func(k, v []byte) error {
		var ev Event
		if err := jsonv1.Unmarshal(v, &ev); err != nil {
			return fmt.Errorf("decode event %d of session %s: %w", schema.U64(k[9:]), s.ID, err)
		}
		out = append(out, ev)
		return nil
	})
	return out, err
}
