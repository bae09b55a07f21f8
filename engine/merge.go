package engine

import (
	"fmt"

	"github.com/bbengine/bbengine/engine/derive"
	"github.com/bbengine/bbengine/engine/schema"

	jsonv1 "github.com/go-json-experiment/json/v1"
)

// A proxied session and the imported log of the same agent session are
// read as one merged session (engine/derive's merge.go): its id is the
// live session's, the imported id resolves to it, and its events are
// the merged view the readers below compose from the two stored
// timelines and the merge record.

// mergeHead returns the merge record of the group session s belongs
// to, or nil when it belongs to none.
func (e *Engine) mergeHead(s *Session) (*derive.MergeHead, error) {
	canon, err := e.getMeta(schema.MergeLinkKey(s.ID))
	if err != nil || canon == nil {
		return nil, err
	}
	ord := s.Ordinal
	if string(canon) != s.ID {
		var c Session
		ok, err := e.getJSON(schema.SessionKey(nil, string(canon)), &c)
		if err != nil || !ok {
			return nil, err
		}
		ord = c.Ordinal
	}
	var h derive.MergeHead
	ok, err := e.getJSON(schema.MergeHeadKeyOf(ord), &h)
	if err != nil || !ok {
		return nil, err
	}
	return &h, nil
}

// mergedEvents composes the merged view of the group h: from the stored
// order when it was computed from the sides as they are, else (the
// sides changed since: a commit of a pass before its merges) from a
// merge computed again, which is what the pass will store.
func (e *Engine) mergedEvents(h *derive.MergeHead) ([]Event, []derive.OrderEntry, error) {
	live, err := e.ordinalEvents(h.Live, h.LiveOrdinal)
	if err != nil {
		return nil, nil, err
	}
	imp, err := e.ordinalEvents(h.Import, h.ImportOrdinal)
	if err != nil {
		return nil, nil, err
	}
	if uint64(len(live)) == h.LiveEvents && uint64(len(imp)) == h.ImportEvents {
		v, err := e.getMeta(schema.MergeOrderKey(h.LiveOrdinal))
		if err != nil {
			return nil, nil, err
		}
		order, err := derive.DecodeOrder(v)
		if err != nil {
			return nil, nil, fmt.Errorf("engine: the merge record of session %s (key %x) does not decode: %w (bbengine rebuild derives it again)", h.Live, schema.MergeOrderKey(h.LiveOrdinal), err)
		}
		if view, _, err := derive.MergeView(h.Live, live, h.Import, imp, order); err == nil {
			return view, order, nil
		}
	}
	order, _ := derive.MergeOrder(live, imp)
	view, _, err := derive.MergeView(h.Live, live, h.Import, imp, order)
	return view, order, err
}

// ordinalEvents reads the stored timeline of the session with ordinal
// ord (id names it in errors).
func (e *Engine) ordinalEvents(id string, ord uint64) ([]Event, error) {
	var out []Event
	lo := schema.EventKey(nil, ord, 1)
	hi := schema.AppendU64Key(nil, schema.PrefixEvent, ord+1)
	err := e.scanRange(lo, hi, func(k, v []byte) error {
		var ev Event
		if err := jsonv1.Unmarshal(v, &ev); err != nil {
			return fmt.Errorf("engine: decode event %d of session %s: %w", schema.U64(k[9:]), id, err)
		}
		out = append(out, ev)
		return nil
	})
	return out, err
}

// mergeLinks returns every merge link (member id → canonical id) and
// the merged summaries by the canonical member's ordinal.
func (e *Engine) mergeLinks() (map[string]string, map[uint64]Session, error) {
	links := map[string]string{}
	err := e.scan([]byte{schema.PrefixMerge, schema.MergeLink}, func(k, v []byte) error {
		links[string(k[2:])] = string(v)
		return nil
	})
	if err != nil || len(links) == 0 {
		return links, nil, err
	}
	heads := map[uint64]Session{}
	err = e.scan([]byte{schema.PrefixMerge, schema.MergeHeadKey}, func(k, v []byte) error {
		var h derive.MergeHead
		if err := jsonv1.Unmarshal(v, &h); err != nil {
			return fmt.Errorf("engine: the merge record at key %x does not decode: %w (bbengine rebuild derives it again)", k, err)
		}
		heads[schema.U64(k[2:])] = h.Summary
		return nil
	})
	return links, heads, err
}
