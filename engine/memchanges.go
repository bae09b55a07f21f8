package engine

import (
	"slices"
	"sync"
)

// memChanges is the log of the sessions whose memory state the engine
// wrote, for a reader that keeps something in step with the states (the
// search index): it reads the states of the sessions named since its
// last read instead of every state. It is in memory only; a reader
// that starts, or falls behind the log, reads every state once.
type memChanges struct {
	mu sync.Mutex
	// base is the sequence number before log[0]: the change log[i] has
	// sequence base+i+1.
	base uint64
	log  []string
}

// maxMemChanges bounds the log; past it the older half is dropped, and
// a reader behind it reads every state.
const maxMemChanges = 1 << 16

// add logs a change of the states of sessions; nil means every state
// may have changed or gone.
func (m *memChanges) add(sessions []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.base == 0 {
		m.base = 1 // sequence 0 is a reader that never read
	}
	if sessions == nil {
		m.base += uint64(len(m.log)) + 1
		m.log = m.log[:0]
		return
	}
	m.log = append(m.log, sessions...)
	if n := len(m.log); n > maxMemChanges {
		drop := n / 2
		m.base += uint64(drop)
		m.log = append(m.log[:0], m.log[drop:]...)
	}
}

// MemoryChanges returns the sessions whose memory state changed after
// the sequence number since (each once), and the number to pass next
// time. all is set when they cannot be told (since is 0, the log no
// longer reaches back to it, or every state may have changed): the
// reader then reads every state (MemoryStates). A change made while the
// caller reads the states it got is in the next call's answer.
func (e *Engine) MemoryChanges(since uint64) (sessions []string, next uint64, all bool) {
	m := &e.memChanges
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.base == 0 {
		m.base = 1
	}
	next = m.base + uint64(len(m.log))
	if since == 0 || since < m.base || since > next {
		return nil, next, true
	}
	sessions = slices.Clone(m.log[since-m.base:])
	slices.Sort(sessions)
	return slices.Compact(sessions), next, false
}
