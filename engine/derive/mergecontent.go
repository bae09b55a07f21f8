package derive

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	jsonv1 "github.com/go-json-experiment/json/v1"

	"github.com/bbengine/bbengine/engine/schema"
)

// Joining by content (docs/design/merge.md, 2.2 "By content"). Gemini CLI
// sends no session id its log is named by: what a proxied session and an
// imported log share is the conversation itself. The join key is a
// response group's reply key (replyKey: its texts and tool calls, no
// ids). A live session of a family that joins by content writes the keys
// of its first contentGroups calls ('j' 'r' key 'L' ordinal); an import
// session writes the keys of all its calls ('j' 'r' key 'I' ordinal) and
// their list ('j' 'k' ordinal), which its next derivation deletes. Each
// side looks up the other's entries for its new keys and marks the
// imports it finds pending, so the two meet whichever comes first.
//
// Import session I and live session L merge when, over L's first
// contentGroups calls, pairing (pairAll) pairs the first call of the
// thread of L's first pair and at least min(2, I's calls) of them, every pair of calls made by content
// agrees on usage, and neither side has another candidate that pairs as
// many: two identical runs stay apart. The decision reads L's first
// calls only and the whole of I, so L's later turns do not change it,
// and it depends on the final keys, not on the order they came in.

// contentGroups is how many of a live session's first calls join it by
// content.
const contentGroups = 16

// joinContent writes the join key of the exchange's reply when it is one
// of its live session's first calls, marks the imports with the same
// reply pending, and marks the import the session is merged with: to be
// decided again while the session is within its first calls, to be
// composed again after them (the decision reads only those).
func (d *deriver) joinContent() error {
	c, ord := d.c, d.st.s.Ordinal
	early := d.st.s.Requests <= contentGroups
	v, err := c.e.getMeta(schema.JoinContentKey(ord))
	if err != nil {
		return err
	}
	switch {
	case v != nil && early:
		c.markMergePending(string(v))
	case v != nil:
		c.markMergeView(string(v))
	}
	if !early {
		return nil
	}
	// The key of the reply as it is stored, redacted: the import's
	// events and every later reading of this one are.
	var resp []Event
	for i := range d.events {
		if d.events[i].Prov.Side == "response" {
			ev, err := c.storedEvent(&d.events[i])
			if err != nil {
				return err
			}
			resp = append(resp, ev)
		}
	}
	g := group{call: -1}
	for i := range resp {
		if resp[i].Kind == KindModelCall && g.call < 0 {
			g.call = i
		}
		if g.call >= 0 {
			g.events = append(g.events, i)
		}
	}
	key := replyKey(resp, &g)
	if g.call < 0 || key == "" {
		return nil
	}
	c.batch.Set(schema.JoinReplyKey([]byte(key), schema.ReplyLive, ord), nil, nil)
	return c.markReplyImports([]byte(key))
}

// storedEvent returns ev as the store keeps it (setJSON): redacted.
func (c *canonicalizer) storedEvent(ev *Event) (Event, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return Event{}, err
	}
	r := c.e.opts.Redactor.JSON(b)
	if len(r) == len(b) && string(r) == string(b) {
		return *ev, nil
	}
	var out Event
	if err := jsonv1.Unmarshal(r, &out); err != nil {
		return Event{}, fmt.Errorf("decode a redacted event: %w", err)
	}
	return out, nil
}

// errEnough stops firstEvents' scan.
var errEnough = errors.New("enough")

// firstEvents reads the committed timeline of live session s up to its
// first contentGroups calls (and the start of the next exchange): what
// the decision to join it reads.
func (c *canonicalizer) firstEvents(s *Session) ([]Event, error) {
	var out []Event
	calls := 0
	p := schema.AppendU64Key(nil, schema.PrefixEvent, s.Ordinal)
	err := c.e.scan(p, func(k, v []byte) error {
		var ev Event
		if err := jsonv1.Unmarshal(v, &ev); err != nil {
			return fmt.Errorf("decode event %d of session %s: %w", schema.U64(k[9:]), s.ID, err)
		}
		if ev.Kind == KindModelCall && ev.Prov.Side == "response" {
			if calls++; calls > contentGroups {
				return errEnough
			}
		}
		out = append(out, ev)
		return nil
	})
	if err != nil && err != errEnough {
		return nil, err
	}
	return out, nil
}

// markReplyImports marks pending every import session that wrote reply
// key key.
func (c *canonicalizer) markReplyImports(key []byte) error {
	p := schema.JoinReplyPrefix(key, schema.ReplyImport)
	var ords []uint64
	err := c.e.scan(p, func(k, _ []byte) error {
		ords = append(ords, schema.U64(k[len(p):]))
		return nil
	})
	if err != nil {
		return err
	}
	for _, o := range ords {
		id, err := c.e.getMeta(schema.OrdinalKey(nil, o))
		if err != nil {
			return err
		}
		if id != nil {
			c.markMergePending(string(id))
		}
	}
	return nil
}

// importReplies replaces the reply keys of import session ord, whose
// timeline is now events (nil when it has none). The caller marks the
// import pending: its merge finds the live sessions with the same keys.
func (c *canonicalizer) importReplies(ord uint64, events []Event) error {
	old, err := c.e.getMeta(schema.JoinKeysKey(ord))
	if err != nil {
		return err
	}
	for k := range slices.Chunk(old, schema.ReplyKeyLen) {
		c.batch.Delete(schema.JoinReplyKey(k, schema.ReplyImport, ord), nil)
	}
	var keys []byte
	seen := map[string]bool{}
	for _, g := range importGroups(events) {
		k := replyKey(events, &g)
		if k == "" || seen[k] {
			continue
		}
		seen[k] = true
		keys = append(keys, k...)
		c.batch.Set(schema.JoinReplyKey([]byte(k), schema.ReplyImport, ord), nil, nil)
	}
	if len(keys) == 0 {
		c.batch.Delete(schema.JoinKeysKey(ord), nil)
		return nil
	}
	return c.batch.Set(schema.JoinKeysKey(ord), keys, nil)
}

// contentCandidates returns the ordinals of the live sessions that wrote
// a reply key import session ord wrote, in order.
func (c *canonicalizer) contentCandidates(ord uint64) ([]uint64, error) {
	keys, err := c.e.getMeta(schema.JoinKeysKey(ord))
	if err != nil {
		return nil, err
	}
	var out []uint64
	for k := range slices.Chunk(keys, schema.ReplyKeyLen) {
		p := schema.JoinReplyPrefix(k, schema.ReplyLive)
		err := c.e.scan(p, func(key, _ []byte) error {
			out = append(out, schema.U64(key[len(p):]))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// contentRivals adds to work the imports whose decision deciding import
// session id again may change. For each live session L that id may join
// (a candidate), or is merged with now:
//   - an import left apart that shares a first reply of L: it may have
//     been tied with id, and no longer be;
//   - the import merged with L, when id now pairs with L as well as it
//     does: id may take L from it, or tie.
//
// An import merged with another live session is that session's to
// decide. So one log that changes decides again only the groups whose
// live session it pairs with, not every group that shares a first reply
// with it.
func (c *canonicalizer) contentRivals(id string, work map[string]bool) error {
	if src, _, _ := strings.Cut(id, ":"); !joinsByContent(src) {
		return nil
	}
	imp, ok, err := c.stored(id)
	if err != nil || !ok {
		return err
	}
	ords, err := c.contentCandidates(imp.Ordinal)
	if err != nil {
		return err
	}
	if canon, err := c.e.getMeta(schema.MergeLinkKey(id)); err != nil {
		return err
	} else if canon != nil {
		if lv, ok, err := c.stored(string(canon)); err != nil {
			return err
		} else if ok && !slices.Contains(ords, lv.Ordinal) {
			ords = append(ords, lv.Ordinal)
		}
	}
	var impEvents []Event
	if imp.Import != nil && imp.Events > 0 {
		if impEvents, err = c.sideEvents(&imp); err != nil {
			return err
		}
	}
	for _, o := range ords {
		lv, ok, err := c.ordinalSession(o)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		first, err := c.firstEvents(&lv)
		if err != nil {
			return err
		}
		score := 0
		if len(impEvents) > 0 {
			score = contentScore(first, impEvents)
		}
		rivals, err := c.liveImports(first, imp.Ordinal)
		if err != nil {
			return err
		}
		for _, r := range rivals {
			v, err := c.e.getMeta(schema.OrdinalKey(nil, r))
			if err != nil {
				return err
			}
			if v == nil {
				continue
			}
			canon, err := c.e.getMeta(schema.MergeLinkKey(string(v)))
			if err != nil {
				return err
			}
			switch {
			case canon == nil:
				work[string(v)] = true
			case score > 0 && string(canon) == lv.ID:
				other, ok, err := c.stored(string(v))
				if err != nil {
					return err
				}
				if !ok || other.Import == nil || other.Events == 0 {
					work[string(v)] = true
					continue
				}
				events, err := c.sideEvents(&other)
				if err != nil {
					return err
				}
				if score >= contentScore(first, events) {
					work[string(v)] = true
				}
			}
		}
	}
	return nil
}

// ordinalSession reads the committed summary of the session with
// ordinal ord.
func (c *canonicalizer) ordinalSession(ord uint64) (Session, bool, error) {
	v, err := c.e.getMeta(schema.OrdinalKey(nil, ord))
	if err != nil || v == nil {
		return Session{}, false, err
	}
	return c.stored(string(v))
}

// recompose composes the group of import session id, merged by content,
// again from its sides as they are now, with the same live member: its
// live session grew past the calls that decided it.
func (c *canonicalizer) recompose(id string) error {
	canon, err := c.e.getMeta(schema.MergeLinkKey(id))
	if err != nil || canon == nil {
		return err // no longer merged
	}
	lv, ok, err := c.stored(string(canon))
	if err != nil || !ok {
		return err
	}
	v, err := c.e.getMeta(schema.JoinContentKey(lv.Ordinal))
	if err != nil || string(v) != id {
		return err
	}
	// The stored live summary of a merged session is its own side's.
	imp, ok, err := c.stored(id)
	if err != nil || !ok {
		return err
	}
	liveEvents, impEvents, err := c.bothSides(&lv, &imp)
	if err != nil {
		return err
	}
	order, st := MergeOrder(liveEvents, impEvents)
	return c.writeMerge(&lv, liveEvents, &imp, impEvents, order, st)
}

// mergeContent forms the group of import session id, of a family that
// joins by content, when one live session is its best candidate and it
// is that session's best (this file's comment).
func (c *canonicalizer) mergeContent(id string) error {
	imp, ok, err := c.stored(id)
	if err != nil || !ok || imp.Import == nil || imp.Events == 0 {
		return err
	}
	ords, err := c.contentCandidates(imp.Ordinal)
	if err != nil || len(ords) == 0 {
		return err
	}
	impEvents, err := c.sideEvents(&imp)
	if err != nil {
		return err
	}
	type cand struct {
		s      Session
		events []Event
		score  int
	}
	var best *cand
	tie := false
	for _, o := range ords {
		lv, ok, err := c.ordinalSession(o)
		if err != nil {
			return err
		}
		if !ok || lv.Import != nil || lv.Merged != nil {
			continue
		}
		events, err := c.firstEvents(&lv)
		if err != nil {
			return err
		}
		score := contentScore(events, impEvents)
		switch {
		case score == 0:
		case best == nil || score > best.score:
			best, tie = &cand{s: lv, events: events, score: score}, false
		case score == best.score:
			tie = true
		}
	}
	if best == nil || tie {
		return nil // none, or two runs alike: left apart
	}
	// The live session's other candidates: an import that pairs as
	// well with it leaves both apart.
	rivals, err := c.liveImports(best.events, imp.Ordinal)
	if err != nil {
		return err
	}
	for _, o := range rivals {
		v, err := c.e.getMeta(schema.OrdinalKey(nil, o))
		if err != nil {
			return err
		}
		if v == nil {
			continue
		}
		other, ok, err := c.stored(string(v))
		if err != nil {
			return err
		}
		if !ok || other.Import == nil || other.Events == 0 {
			continue
		}
		events, err := c.sideEvents(&other)
		if err != nil {
			return err
		}
		if contentScore(best.events, events) >= best.score {
			return nil
		}
	}
	liveEvents, err := c.sideEvents(&best.s)
	if err != nil {
		return err
	}
	order, st := MergeOrder(liveEvents, impEvents)
	if err := c.writeMerge(&best.s, liveEvents, &imp, impEvents, order, st); err != nil {
		return err
	}
	return c.batch.Set(schema.JoinContentKey(best.s.Ordinal), []byte(imp.ID), nil)
}

// liveImports returns the ordinals of the import sessions, other than
// skip, that wrote the reply key of one of the first calls of the live
// timeline events.
func (c *canonicalizer) liveImports(events []Event, skip uint64) ([]uint64, error) {
	var out []uint64
	for i, g := range liveGroups(events) {
		if i == contentGroups {
			break
		}
		k := replyKey(events, &g)
		if k == "" {
			continue
		}
		p := schema.JoinReplyPrefix([]byte(k), schema.ReplyImport)
		err := c.e.scan(p, func(key, _ []byte) error {
			if o := schema.U64(key[len(p):]); o != skip {
				out = append(out, o)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// contentScore is how many of the first contentGroups calls of the live
// timeline pair with calls of the imported one, or 0 when they do not
// join: the first call of the thread of the first pair must pair, at least min(2, the
// import's calls) must, and every pair made by content must agree on
// usage. Only the live events up to the end of those calls are read, so
// the score does not change as the live session grows.
func contentScore(live, imp []Event) int {
	lg := liveGroups(live)
	if len(lg) == 0 {
		return 0
	}
	if len(lg) >= contentGroups {
		// The events of the first calls' exchanges, and what came before.
		last := lg[contentGroups-1]
		x := live[last.call].Prov.Exchange
		end := len(live)
		for i := last.events[len(last.events)-1] + 1; i < len(live); i++ {
			if e := live[i].Prov.Exchange; e != 0 && e != x {
				end = i
				break
			}
		}
		live = live[:end]
	}
	_, lg, ig, pairs := pairAll(live, imp)
	if len(pairs) == 0 {
		return 0
	}
	// The thread of the first pair must pair from its first call: the
	// live session began where the log has it (the CLI's side calls,
	// routing and next-speaker checks, are threads of their own).
	t := lg[pairs[0].l].thread
	head := slices.IndexFunc(lg, func(g group) bool { return g.thread == t })
	first := false
	for _, gp := range pairs {
		if gp.l == head {
			first = true
		}
		if !gp.content {
			continue // an exact key says it is the same call
		}
		lu, iu := groupUsage(live, &lg[gp.l]), groupUsage(imp, &ig[gp.i])
		if (lu == nil) != (iu == nil) || lu != nil && !equalUsage(lu, iu) {
			return 0
		}
	}
	if !first || len(pairs) < min(2, len(ig)) {
		return 0
	}
	return len(pairs)
}
