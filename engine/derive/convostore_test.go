package derive

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/bbengine/bbengine/codec/redact"
	"github.com/bbengine/bbengine/engine/schema"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestSaveConvoChunks saves a conversation whose threads grow, shrink
// (a compaction replaces a thread's keys with fewer) and are evicted,
// and checks after each save that the store holds exactly the chunks
// each live thread's keys need, and that they load back as they were.
func TestSaveConvoChunks(t *testing.T) {
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem()})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	red, _ := redact.New(nil)
	get := func(key []byte, v any) (bool, error) {
		b, closer, err := db.Get(key)
		if err == pebble.ErrNotFound {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		defer closer.Close()
		return true, json.Unmarshal(b, v)
	}
	p := New(Store{Dir: t.TempDir(), DB: db, GetJSON: get}, Options{Redactor: red})
	c := &canonicalizer{e: p}
	keys := func(th, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("t%d-%d", th, i)
		}
		return out
	}
	const ord = 7
	st := &sessState{s: Session{ID: "s", Ordinal: ord}}
	save := func(what string) {
		t.Helper()
		c.ensureBatch()
		if err := c.saveConvo(st); err != nil {
			t.Fatal(err)
		}
		if err := c.batch.Commit(pebble.Sync); err != nil {
			t.Fatal(err)
		}
		c.batch = nil
		// Exactly the chunks the live threads need.
		want := map[string]bool{}
		for _, th := range st.convo.Threads {
			for n := range chunks(len(th.Known)) {
				want[string(schema.ConvoKnownKey(nil, ord, uint64(th.ID), uint64(n)))] = true
			}
		}
		lo := schema.ConvoKey(nil, ord)
		it, _ := db.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: schema.UpperBound(lo)})
		got := 0
		for it.First(); it.Valid(); it.Next() {
			if len(it.Key()) == len(lo) {
				continue
			}
			if !want[string(it.Key())] {
				t.Fatalf("%s: stray chunk %x", what, it.Key())
			}
			got++
		}
		it.Close()
		if got != len(want) {
			t.Fatalf("%s: %d chunks stored, want %d", what, got, len(want))
		}
		back := &sessState{s: st.s}
		if err := c.loadConvo(back); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if len(back.convo.Threads) != len(st.convo.Threads) {
			t.Fatalf("%s: %d threads loaded, want %d", what, len(back.convo.Threads), len(st.convo.Threads))
		}
		for i, th := range st.convo.Threads {
			if b := back.convo.Threads[i]; b.ID != th.ID || !slices.Equal(b.Known, th.Known) || b.Stored != 0 {
				t.Fatalf("%s: thread %d loaded with %d keys (stored %d), want %d", what, th.ID, len(b.Known), b.Stored, len(th.Known))
			}
		}
	}
	st.convo.Threads = []thread{{ID: 1, Known: keys(1, 600)}, {ID: 2, Known: keys(2, 10)}}
	save("two threads")
	st.convo.Threads[0].Known = append(st.convo.Threads[0].Known, keys(9, 3)...)
	save("grown")
	st.convo.Threads[0].Known = keys(3, 100) // compacted: fewer keys
	save("shrunk")
	st.convo.Threads = st.convo.Threads[1:] // thread 1 evicted
	save("evicted")
	st.convo.Threads = append(st.convo.Threads, thread{ID: 3, Known: keys(4, 257)})
	save("a new thread")
	st.convo.Threads[1].Known = nil
	save("emptied")

	// A build of key layout 1 wrote thread 3's keys inline over its
	// chunks: loaded (inline) and saved again, the store holds the
	// chunks of its keys and no more.
	st.convo.Threads[1].Known = keys(5, 700)
	save("before the old build")
	old := st.convo
	old.Threads = slices.Clone(old.Threads)
	old.Threads[1].Known = keys(6, 10)
	v, _ := json.Marshal(&old)
	if err := db.Set(schema.ConvoKey(nil, ord), v, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	st = &sessState{s: st.s}
	if err := c.loadConvo(st); err != nil {
		t.Fatal(err)
	}
	if got := len(st.convo.Threads[1].Known); got != 10 {
		t.Fatalf("the inline keys loaded as %d keys, want 10", got)
	}
	save("saved over the old build's inline keys")
}
