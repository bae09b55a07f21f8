package claude

import "strconv"

// Threads assigns the lines of a session's logs to the threads a
// timeline shows them in, the same way for the importer
// (agents/claude) and the census (Count), so that both count the same
// model responses. Thread 1 is the main conversation. A line with an
// agentId is in its agent's thread. A sidechain user or assistant line
// whose parent is not an earlier line of its file starts the thread of
// an inline subagent (roots without a uuid apart by line). Any other
// sidechain line is in its parent's thread, else in the latest inline
// subagent's. The zero value is ready to use.
type Threads struct {
	n      int                        // threads started, the main one included
	keys   map[string]int             // agentId, or "\x00"+file+"\x00"+uuid of an inline root
	byUUID map[string]int             // a sidechain line's uuid → its thread
	seen   map[string]map[string]bool // file → uuids of its lines so far
	inline int                        // the latest inline subagent's thread
}

// Line returns the thread of line i of file, r, taking the lines in
// order. started is set when the line starts its thread; agentID is
// then the subagent's agentId ("" for an inline one).
func (t *Threads) Line(file string, i int, r *Record) (thread int, started bool, agentID string) {
	if t.keys == nil {
		t.n, t.keys, t.byUUID, t.seen = 1, map[string]int{}, map[string]int{}, map[string]map[string]bool{}
	}
	fs := t.seen[file]
	if fs == nil {
		fs = map[string]bool{}
		t.seen[file] = fs
	}
	thread = 1
	switch {
	case r.AgentID != "":
		thread, started = t.start(r.AgentID)
		agentID = r.AgentID
	case r.IsSidechain && (r.Type == "user" || r.Type == "assistant") && (r.ParentUUID == "" || !fs[r.ParentUUID]):
		key := "\x00" + file + "\x00" + r.UUID
		if r.UUID == "" {
			key += "\x00" + strconv.Itoa(i)
		}
		thread, started = t.start(key)
		t.inline = thread
	case r.IsSidechain:
		if th, ok := t.byUUID[r.ParentUUID]; ok {
			thread = th
		} else if t.inline != 0 {
			thread = t.inline
		}
	}
	if r.UUID != "" {
		fs[r.UUID] = true
		if thread != 1 {
			t.byUUID[r.UUID] = thread
		}
	}
	return thread, started, agentID
}

func (t *Threads) start(key string) (int, bool) {
	if th, ok := t.keys[key]; ok {
		return th, false
	}
	t.n++
	t.keys[key] = t.n
	return t.n, true
}

// ThreadResponseKey is ResponseKey within a thread: the key of the model
// response line i of the given thread belongs to (a line without a
// message id is a response of its own).
func ThreadResponseKey(thread int, r *Record, i int) string {
	k := r.ResponseKey()
	if k == "" {
		return strconv.Itoa(thread) + "\x01" + strconv.Itoa(i)
	}
	return strconv.Itoa(thread) + "\x00" + k
}
