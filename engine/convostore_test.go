package engine

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/engine/schema"
	"github.com/cockroachdb/pebble/v2"
)

// convoChunks returns the thread ids and Stored counts of session ord's
// stored convo, and how many chunk keys each thread has.
func convoChunks(t *testing.T, e *Engine, ord uint64) (stored, chunks map[int]int, inline bool) {
	t.Helper()
	v, closer, err := e.db.Get(schema.ConvoKey(nil, ord))
	if err != nil {
		t.Fatal(err)
	}
	var cv struct {
		Threads []struct {
			ID     int             `json:"id"`
			Known  json.RawMessage `json:"known"`
			Stored int             `json:"stored"`
		} `json:"threads"`
	}
	err = json.Unmarshal(v, &cv)
	closer.Close()
	if err != nil {
		t.Fatal(err)
	}
	stored, chunks = map[int]int{}, map[int]int{}
	for _, th := range cv.Threads {
		stored[th.ID] = th.Stored
		inline = inline || len(th.Known) > 0
	}
	p := schema.ConvoKey(nil, ord)
	it, err := e.db.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: schema.UpperBound(p)})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		if len(k) == len(p) {
			continue
		}
		chunks[int(schema.U64(k[len(p):len(p)+8]))]++
	}
	return stored, chunks, inline
}

// TestConvoChunks derives a 200-turn session (its main thread knows over
// 400 item keys) in two halves with the engine closed and reopened
// between them, so that the second half places its requests on the
// thread keys loaded from their chunks; once more after the stored state
// was rewritten as the format before chunks had it (keys inline). The
// result must be what a rebuild derives, and the store must hold exactly
// the chunks the threads' key counts need.
func TestConvoChunks(t *testing.T) {
	for _, old := range []bool{false, true} {
		dir, log := newData(t)
		var c clock
		xs := growingSession("chunky", 200, 60)
		e := open(t, dir, log, nil)
		writeWAL(t, log, &c, 0, xs[:120])
		catchUp(t, e)
		ss, err := e.Sessions(SessionFilter{})
		if err != nil || len(ss) != 1 {
			t.Fatalf("sessions %d %v", len(ss), err)
		}
		ord := ss[0].Ordinal
		stored, chunks, inline := convoChunks(t, e, ord)
		most := 0
		for id, n := range stored {
			most = max(most, n)
			if want := (n + 255) / 256; chunks[id] != want {
				t.Fatalf("thread %d: %d known keys in %d chunks, want %d", id, n, chunks[id], want)
			}
		}
		if inline || most <= 256 {
			t.Fatalf("stored convo: keys inline %v, the longest thread %d keys; want them in more than one chunk", inline, most)
		}
		if old {
			// The format before chunks: every thread's keys inline.
			v, closer, err := e.db.Get(schema.ConvoKey(nil, ord))
			if err != nil {
				t.Fatal(err)
			}
			var cv map[string]any
			json.Unmarshal(v, &cv)
			closer.Close()
			b := e.db.NewBatch()
			for _, th := range cv["threads"].([]any) {
				th := th.(map[string]any)
				id := uint64(th["id"].(float64))
				var known []string
				for n := range chunks[int(id)] {
					k := schema.ConvoKnownKey(nil, ord, id, uint64(n))
					cv, closer, err := e.db.Get(k)
					if err != nil {
						t.Fatal(err)
					}
					var part []string
					json.Unmarshal(cv, &part)
					closer.Close()
					known = append(known, part...)
					b.Delete(k, nil)
				}
				delete(th, "stored")
				th["known"] = known
			}
			nv, _ := json.Marshal(cv)
			b.Set(schema.ConvoKey(nil, ord), nv, nil)
			if err := b.Commit(pebble.Sync); err != nil {
				t.Fatal(err)
			}
		}
		e.Close()
		e = open(t, dir, log, nil)
		writeWAL(t, log, &c, 120, xs[120:])
		p := catchUp(t, e)
		if p.Exchanges == 0 {
			t.Fatalf("old format %v: the second half derived no exchange", old)
		}
		stored, chunks, inline = convoChunks(t, e, ord)
		for id, n := range stored {
			if want := (n + 255) / 256; chunks[id] != want {
				t.Fatalf("old format %v, after the second half: thread %d: %d known keys in %d chunks, want %d", old, id, n, chunks[id], want)
			}
		}
		if inline {
			t.Fatalf("old format %v: keys still inline after a save", old)
		}
		ss, _ = e.Sessions(SessionFilter{})
		if len(ss) != 1 || ss[0].Threads != 1 {
			t.Fatalf("old format %v: %d sessions, threads %d; want 1 session on 1 thread (the reloaded keys continue it)", old, len(ss), ss[0].Threads)
		}
		sameAfterRebuild(t, e, dump(t, e), "deriving across a reopen differs from a rebuild")
		e.Close()
	}
}

// TestConvoChunkMissing: a chunk of known keys gone from the store is an
// error naming the session and the chunk, not a conversation silently
// started again.
func TestConvoChunkMissing(t *testing.T) {
	dir, log := newData(t)
	var c clock
	xs := growingSession("holey", 160, 40)
	e := open(t, dir, log, nil)
	writeWAL(t, log, &c, 0, xs[:150])
	catchUp(t, e)
	ss, _ := e.Sessions(SessionFilter{})
	if err := e.db.Delete(schema.ConvoKnownKey(nil, ss[0].Ordinal, 1, 0), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	e.Close()
	e = open(t, dir, log, nil)
	defer e.Close()
	writeWAL(t, log, &c, 150, xs[150:])
	_, err := e.CatchUp(t.Context())
	if err == nil || !strings.Contains(err.Error(), "holey") || !strings.Contains(err.Error(), "chunk 0") {
		t.Fatalf("CatchUp with a chunk missing: %v; want an error naming the session and the chunk", err)
	}
}

// TestSchemaVersionOne: a store of key layout 1 (conversation keys
// inline) opens without a rebuild and is marked 2 from then on; a layout
// this build does not know is rebuilt from the WAL.
func TestSchemaVersionOne(t *testing.T) {
	dir, log := newData(t)
	var c clock
	writeWAL(t, log, &c, 0, growingSession("v1", 20, 10))
	var logged strings.Builder
	opts := &Options{Logf: func(f string, a ...any) { fmt.Fprintf(&logged, f+"\n", a...) }}
	layout := func(e *Engine) uint32 {
		t.Helper()
		v, closer, err := e.db.Get(schema.KeySchema)
		if err != nil {
			t.Fatal(err)
		}
		defer closer.Close()
		return binary.BigEndian.Uint32(v)
	}
	for _, tc := range []struct {
		set     uint32
		rebuild bool
	}{{1, false}, {99, true}} {
		e := open(t, dir, log, opts)
		catchUp(t, e)
		if err := e.db.Set(schema.KeySchema, binary.BigEndian.AppendUint32(nil, tc.set), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		e.Close()
		logged.Reset()
		e = open(t, dir, log, opts)
		rebuilt := strings.Contains(logged.String(), "rebuilding the derived state")
		if got := layout(e); got != SchemaVersion || rebuilt != tc.rebuild {
			t.Fatalf("a store of key layout %d opened: layout now %d, rebuilt %v (log %q); want %d, rebuilt %v", tc.set, got, rebuilt, logged.String(), SchemaVersion, tc.rebuild)
		}
		e.Close()
	}
}
