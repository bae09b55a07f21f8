package derive

import (
	"fmt"
	"slices"

	"github.com/bbengine/bbengine/engine/schema"
)

// A session's conversation state is stored in two parts: the convo
// (threads, ticks, systems, recent texts) under schema.ConvoKey, and each
// thread's known item keys, which grow by a few keys every turn and
// number thousands in a long session, in chunks of knownChunk keys under
// schema.ConvoKnownKey. A commit rewrites only the chunks from the first
// key that changed since the last save: at turn 300 of a session one or
// two chunks, not the 20 KB of every key the conversation ever had.
//
//	c<ord>                   convo, each thread's Known left out, its length in Stored
//	c<ord><thread><n>        ["key", …] Known[n·knownChunk : (n+1)·knownChunk]
//
// A state written before chunks existed holds Known inline (no Stored):
// it loads as it is, and its first save writes the chunks.

// knownChunk is how many known keys one stored chunk holds.
const knownChunk = 256

// chunks is how many chunks hold n keys.
func chunks(n int) int { return (n + knownChunk - 1) / knownChunk }

// saveConvo adds st's conversation state to the batch, writing the
// chunks of known keys that changed since st.saved and deleting those
// that no longer hold any (a thread's keys replaced by fewer, a thread
// evicted).
func (c *canonicalizer) saveConvo(st *sessState) error {
	ord := st.s.Ordinal
	if st.saved == nil {
		st.saved = map[int][]string{}
	}
	var kb [32]byte // a chunk's key; the batch copies it
	cv := st.convo
	cv.Threads = slices.Clone(cv.Threads)
	live := make(map[int]bool, len(cv.Threads))
	for i := range cv.Threads {
		t := &cv.Threads[i]
		live[t.ID] = true
		old, had := st.saved[t.ID]
		known := t.Known
		if !had {
			// A new thread, or one whose keys loaded inline: no chunk
			// of it is known, so none may be left from before (a
			// build of key layout 1 that wrote the keys inline over a
			// store of layout 2).
			if err := c.batch.DeleteRange(schema.ConvoKnownKey(kb[:0], ord, uint64(t.ID), 0), schema.ConvoKnownKey(nil, ord, uint64(t.ID)+1, 0), nil); err != nil {
				return err
			}
		}
		same := commonPrefix(old, known)
		if !had || same < len(old) || same < len(known) {
			for n := same / knownChunk; n < chunks(len(known)); n++ {
				key := schema.ConvoKnownKey(kb[:0], ord, uint64(t.ID), uint64(n))
				if err := c.setJSON(key, known[n*knownChunk:min(len(known), (n+1)*knownChunk)]); err != nil {
					return err
				}
			}
			for n := chunks(len(known)); n < chunks(len(old)); n++ {
				c.batch.Delete(schema.ConvoKnownKey(kb[:0], ord, uint64(t.ID), uint64(n)), nil)
			}
			st.saved[t.ID] = slices.Clone(known)
		}
		t.Known, t.Stored = nil, len(known)
	}
	for id, old := range st.saved {
		if live[id] {
			continue
		}
		for n := range chunks(len(old)) {
			c.batch.Delete(schema.ConvoKnownKey(kb[:0], ord, uint64(id), uint64(n)), nil)
		}
		delete(st.saved, id)
	}
	return c.setJSON(schema.ConvoKey(c.keyBuf[:0], ord), &cv)
}

// loadConvo reads st's conversation state from the store, each thread's
// known keys from their chunks.
func (c *canonicalizer) loadConvo(st *sessState) error {
	ord := st.s.Ordinal
	key := schema.ConvoKey(nil, ord)
	if _, err := c.e.getJSON(key, &st.convo); err != nil {
		return err
	}
	st.saved = map[int][]string{}
	for i := range st.convo.Threads {
		t := &st.convo.Threads[i]
		if t.Stored == 0 {
			// No keys, or keys written inline before the chunks: none
			// in chunks yet, the next save writes them all.
			continue
		}
		t.Known = make([]string, 0, t.Stored)
		for n := range chunks(t.Stored) {
			var part []string
			ck := schema.ConvoKnownKey(nil, ord, uint64(t.ID), uint64(n))
			ok, err := c.e.getJSON(ck, &part)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("engine: session %s: conversation thread %d: chunk %d of its %d known keys is missing (key %x)", st.s.ID, t.ID, n, t.Stored, ck)
			}
			t.Known = append(t.Known, part...)
		}
		if len(t.Known) != t.Stored {
			return fmt.Errorf("engine: session %s: conversation thread %d: %d known keys stored in chunks, want %d", st.s.ID, t.ID, len(t.Known), t.Stored)
		}
		st.saved[t.ID] = slices.Clone(t.Known)
		t.Stored = 0
	}
	return nil
}
