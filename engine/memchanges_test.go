package engine

import (
	"fmt"
	"slices"
	"testing"
)

// TestMemoryChangesLog: a reader gets the sessions changed since its
// last read, each once; one that never read, fell behind the bounded
// log, or missed a change of every state reads them all.
func TestMemoryChangesLog(t *testing.T) {
	var e Engine
	if _, next, all := e.MemoryChanges(0); !all || next == 0 {
		t.Fatalf("a first read: next %d, all %v; want all and a sequence to go on from", next, all)
	}
	_, seq, _ := e.MemoryChanges(0)
	e.memChanges.add([]string{"b", "a"})
	e.memChanges.add([]string{"b"})
	ids, next, all := e.MemoryChanges(seq)
	if all || !slices.Equal(ids, []string{"a", "b"}) {
		t.Fatalf("changes %v, all %v; want [a b]", ids, all)
	}
	if ids, _, all := e.MemoryChanges(next); all || len(ids) != 0 {
		t.Errorf("nothing changed since: %v, %v", ids, all)
	}
	e.memChanges.add(nil)
	if _, _, all := e.MemoryChanges(next); !all {
		t.Error("after a change of every state: not all")
	}
	_, next, _ = e.MemoryChanges(0)
	for i := range maxMemChanges + 10 {
		e.memChanges.add([]string{fmt.Sprint(i)})
	}
	if _, _, all := e.MemoryChanges(next); !all {
		t.Error("a reader behind the bounded log: not all")
	}
	if n := len(e.memChanges.log); n > maxMemChanges {
		t.Errorf("the log holds %d changes, over %d", n, maxMemChanges)
	}
	if _, _, all := e.MemoryChanges(next + 1<<40); !all {
		t.Error("a sequence from the future: not all")
	}
}
