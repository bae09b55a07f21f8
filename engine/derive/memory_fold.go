package derive

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/bbengine/bbengine/internal/memtext"

	"github.com/bbengine/bbengine/codec/redact"
)

// DeriveMemory derives the artifacts of a session from its events, in a
// stable order (by type, then first evidence), and returns them with the
// number of the session's tasks. It is a pure function: the same session
// and events give the same artifacts, byte for byte. Every text it takes
// from the events goes through red first (nil means no redaction).
//
// Tasks: events carrying a task id (X-Bb-Task-Id) belong to that task;
// in a session without task ids, each prompt a person typed in the main
// thread (the thread with the most model calls) starts a task named
// "turn-N". Events of subagent threads belong to the task running when
// they happened.
//
// DeriveMemory is the fold of a miner over all the events at once; the
// canonicalizer folds each pass's new events into a miner it keeps
// (miner.add) and gets the same artifacts.
func DeriveMemory(s *Session, events []Event, red *redact.Redactor) ([]Artifact, int) {
	m := newMiner(s, red)
	m.load(events)
	return m.snapshot()
}

// A miner is one session's memory derivation, kept as a fold over the
// session's events so that a pass folds in only its new events.
//
// Folding in arrival order gives what deriving from all the events at
// once gives as long as nothing new changes how earlier events were
// read. The miner checks that on every add and reports when it does not
// hold; the caller then loads the miner again from all the events. That
// happens when the threads are classified differently (another main
// thread, a side thread that turns out to be a subagent), when an event
// goes to a task other than the newest (tasks are derived one after the
// other), when a task's run id changes, or when a tool id is reused.
//
// A tool call is folded in only once its result has been read: the
// result decides what the call means (a failed edit changes no file).
// The events from the first call still waiting on its result on are
// queued; a snapshot folds the queue into a copy of the state as if the
// results that have not come will never come, which is what a derivation
// from all the events read so far does.
type miner struct {
	s   *Session
	red *redact.Redactor
	// args holds, while load or add runs, the tool arguments decoded
	// (argsOf): the transcript segments and the task fold both read a
	// call's arguments.
	args map[*Event]map[string]any

	// Thread classification counts, over every event read.
	calls     map[int]int
	tools     map[int]bool
	threadSet map[int]bool
	taskCalls map[string]map[int]int

	// main is the main thread; side are threads that are neither main
	// nor a subagent (title and quota requests): they yield nothing.
	main int
	side map[int]bool
	// mains are the main threads of tasks named by X-Bb-Task-Id: the
	// thread of each such task with the most model calls. bbengine run
	// starts a new conversation per task, so a session has several.
	mains map[int]bool
	// sig identifies the classification the events were folded under.
	sig string

	// Task assignment: byID, cur, the events read before the first task
	// (pre; they go to it, preTask, once there is one) and the number of
	// prompts that started a task.
	tasks   []*mtask
	byID    map[string]*mtask
	cur     *mtask
	pre     []*Event
	preTask *mtask
	turn    int

	// queue are the events assigned and not folded yet; results the
	// tool results read whose call was not folded yet; consumed the ids
	// of the tool calls folded with their result, abandoned those of the
	// calls folded without one (see drain).
	queue     []qitem
	results   map[string]*Event
	consumed  map[string]bool
	abandoned map[string]bool

	decisions, constraints, threads map[string]*Artifact

	seg  segFold
	segs []segArt
}

// qitem is one queued event and its task.
type qitem struct {
	ev *Event
	t  *mtask
}

// mtask is one task: its id, position, run, and what its events folded
// so far say about its outcome.
type mtask struct {
	id  string
	n   int
	run string
	// firstPrompt is the first prompt typed in the task (a question the
	// previous task's answer asked is answered by it).
	firstPrompt *Event

	// The outcome accumulator.
	a         Artifact
	o         Outcome
	prompt    *Event
	final     *Event
	finalCall *Event
	lastErr   *Event
	ev0, evN  *Event
	lastTest  *Command
	models    map[string]Usage
	model     string
	// passed is set when a test run passed, or a build or run that
	// checks the work succeeded, since the agent last wrote; reports are
	// the first sentences the agent wrote right after one (at most
	// maxReports): what it reported once its checks passed.
	passed  bool
	reports []string
	// ver counts the events folded into the task; out caches its
	// outcome and questions at ver and the next task's first prompt.
	ver int
	out *taskOut
}

type taskOut struct {
	ver  int
	next *Event
	a    *Artifact
	qs   []*Artifact
	// enc caches the outcome's stored bytes (see snapshotEncoded): a
	// taskOut never changes once made.
	enc *encoded
}

// segFold is the transcript segment being filled.
type segFold struct {
	b           strings.Builder
	first, last *Event
	files, cmds []string
	// t is the task of the first event; pre is set when the first event
	// came before any task.
	t   *mtask
	pre bool
}

// segArt is a finished segment; its task is set at snapshot. A finished
// segment changes only with its task (known, and its run id): enc caches
// its stored bytes, encoded for task et with run erun.
type segArt struct {
	a    Artifact
	t    *mtask
	pre  bool
	enc  *encoded
	et   *mtask
	erun string
}

// encoded is an artifact's stored bytes and their SHA-256.
type encoded struct {
	v   []byte
	sum [32]byte
}

func newMiner(s *Session, red *redact.Redactor) *miner {
	return &miner{s: s, red: red, calls: map[int]int{}, tools: map[int]bool{}, threadSet: map[int]bool{}, taskCalls: map[string]map[int]int{},
		byID: map[string]*mtask{}, results: map[string]*Event{}, consumed: map[string]bool{}, abandoned: map[string]bool{},
		decisions: map[string]*Artifact{}, constraints: map[string]*Artifact{}, threads: map[string]*Artifact{}}
}

func (m *miner) text(s string) string {
	s = StripPacks(s)
	if m.red == nil {
		return s
	}
	return m.red.String(s)
}

// isMain reports whether thread t is a main thread: the session's, or
// that of a task named by X-Bb-Task-Id.
func (m *miner) isMain(t int) bool { return t == m.main || m.mains[t] }

// count takes events into the classification counts.
func (m *miner) count(events []Event) {
	for i := range events {
		ev := &events[i]
		m.threadSet[ev.Thread] = true
		switch ev.Kind {
		case KindModelCall:
			m.calls[ev.Thread]++
			if ev.Task != "" {
				if m.taskCalls[ev.Task] == nil {
					m.taskCalls[ev.Task] = map[int]int{}
				}
				m.taskCalls[ev.Task][ev.Thread]++
			}
		case KindToolCall:
			m.tools[ev.Thread] = true
		}
	}
}

// classify finds the main, subagent and side threads from the counts and
// returns the signature of the classification.
func (m *miner) classify() string {
	main := 1
	best := -1
	for t := range m.threadSet {
		if c := m.calls[t]; c > best || c == best && t < main {
			main, best = t, c
		}
	}
	m.main = main
	m.side, m.mains = map[int]bool{}, map[int]bool{}
	agents := map[int]bool{}
	for _, a := range m.s.Agents {
		agents[a.Thread] = true
	}
	for _, byThread := range m.taskCalls {
		top, n := 0, -1
		for t, c := range byThread {
			if !agents[t] && (c > n || c == n && t < top) {
				top, n = t, c
			}
		}
		if n >= 0 {
			m.mains[top] = true
		}
	}
	for t := range m.threadSet {
		if !m.isMain(t) && !agents[t] && !m.tools[t] {
			m.side[t] = true
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d %t %s|", m.main, agentCLI(m.s), m.s.ID)
	for _, t := range slices.Sorted(maps.Keys(m.mains)) {
		fmt.Fprintf(&b, "%d,", t)
	}
	b.WriteByte('|')
	for _, t := range slices.Sorted(maps.Keys(m.side)) {
		fmt.Fprintf(&b, "%d,", t)
	}
	// Whose threads are a subagent's decides what is mined (ownThread,
	// delegated): a change is a new classification.
	b.WriteByte('|')
	ags := make([]string, 0, len(m.s.Agents))
	for _, a := range m.s.Agents {
		ags = append(ags, fmt.Sprintf("%d:%t", a.Thread, strings.HasPrefix(a.ID, "acompact")))
	}
	slices.Sort(ags)
	b.WriteString(strings.Join(ags, ","))
	return b.String()
}

// assign gives ev its task: nil for an event of a side thread or one
// read before any task. ok is false when the assignment changes a task's
// run id (what earlier events derived would change).
func (m *miner) assign(ev *Event) (t *mtask, ok bool) {
	if m.side[ev.Thread] {
		return nil, true
	}
	get := func(id string) *mtask {
		t := m.byID[id]
		if t == nil {
			t = &mtask{id: id, n: len(m.tasks) + 1}
			m.byID[id] = t
			m.tasks = append(m.tasks, t)
		}
		return t
	}
	prompt := m.isMain(ev.Thread) && promptText(ev) != ""
	switch {
	case ev.Task != "":
		t = get(ev.Task)
		m.cur = t
	case prompt:
		m.turn++
		t = get("turn-" + strconv.Itoa(m.turn))
		m.cur = t
	case m.cur != nil:
		t = m.cur
	default:
		m.pre = append(m.pre, ev)
		return nil, true
	}
	if len(m.pre) > 0 {
		for _, p := range m.pre {
			m.queue = append(m.queue, qitem{p, t})
		}
		m.pre = nil
		m.preTask = t
	}
	ok = true
	if t.run == "" {
		t.run = ev.Run
		ok = t.ver == 0 || ev.Run == ""
	}
	if prompt && t.firstPrompt == nil {
		t.firstPrompt = ev
	}
	return t, ok
}

// load folds all of a session's events into a new miner.
func (m *miner) load(events []Event) {
	m.args = map[*Event]map[string]any{}
	defer func() { m.args = nil }()
	m.count(events)
	m.sig = m.classify()
	for i := range events {
		ev := &events[i]
		if ev.Kind == KindToolResult && ev.Tool != nil && ev.Tool.ID != "" {
			m.results[ev.Tool.ID] = ev
		}
	}
	// Tasks are derived one after the other, each from all its events.
	byTask := map[*mtask][]*Event{}
	for i := range events {
		ev := &events[i]
		n := len(m.queue)
		t, _ := m.assign(ev)
		for _, q := range m.queue[n:] {
			byTask[q.t] = append(byTask[q.t], q.ev)
		}
		m.queue = m.queue[:n]
		if t != nil {
			byTask[t] = append(byTask[t], ev)
		}
		m.segment(ev, t)
	}
	for _, t := range m.tasks {
		for _, ev := range byTask[t] {
			m.queue = append(m.queue, qitem{ev, t})
		}
	}
	m.drain()
}

// add folds new events (those after the ones folded so far) in, and
// reports false when they change how earlier events were derived: the
// miner is then unusable and must be loaded again from all the events.
func (m *miner) add(events []Event) bool {
	m.args = map[*Event]map[string]any{}
	defer func() { m.args = nil }()
	m.count(events)
	if m.classify() != m.sig {
		return false
	}
	for i := range events {
		ev := &events[i]
		if ev.Tool != nil && ev.Tool.ID != "" {
			id := ev.Tool.ID
			switch {
			case ev.Kind == KindToolCall && m.consumed[id]:
				return false
			case ev.Kind == KindToolResult && (m.consumed[id] || m.abandoned[id]):
				return false
			}
		}
		if ev.Kind == KindToolResult && ev.Tool != nil && ev.Tool.ID != "" {
			m.results[ev.Tool.ID] = ev
		}
		t, ok := m.assign(ev)
		if !ok || t != nil && t != m.tasks[len(m.tasks)-1] {
			return false
		}
		if t != nil {
			m.queue = append(m.queue, qitem{ev, t})
		}
		m.segment(ev, t)
	}
	m.drain()
	return true
}

// drain folds the queued events up to the first tool call whose result
// has not been read. A call that more than maxStall events wait behind
// is folded without its result (a client that never sends it, or an id
// the history does not repeat): as a derivation from the events read so
// far does; should its result come after all, add reports false.
//
// A result whose call was folded is not needed again: a second call or
// result with its id makes add report false. It is dropped after the
// drain, so that a second call with its id in the same drain reads it
// too, as a derivation from all the events does.
func (m *miner) drain() {
	n := 0
	var used []string
	defer func() {
		for _, id := range used {
			delete(m.results, id)
		}
	}()
	for _, q := range m.queue {
		ev := q.ev
		var res *Event
		if ev.Kind == KindToolCall && ev.Tool != nil && ev.Tool.ID != "" {
			if res = m.results[ev.Tool.ID]; res != nil {
				m.consumed[ev.Tool.ID] = true
				used = append(used, ev.Tool.ID)
			} else if len(m.queue)-n > maxStall {
				m.abandoned[ev.Tool.ID] = true
			} else {
				break
			}
		}
		m.fold(q.t, ev, res)
		n++
	}
	m.queue = append(m.queue[:0], m.queue[n:]...)
}

// maxStall is how many events may wait behind a tool call whose result
// has not been read before the call is folded without it.
const maxStall = 16

// fold takes one event into its task's outcome and the session's
// findings; res is a tool call's result, if read.
func (m *miner) fold(t *mtask, ev *Event, res *Event) {
	t.ver++
	if t.a.Outcome == nil {
		t.a = Artifact{Type: ArtifactOutcome, Session: m.s.ID, Task: t.id, TaskN: t.n, Run: t.run}
		t.a.Outcome = &t.o
		t.models = map[string]Usage{}
	}
	a, o := &t.a, &t.o
	if t.ev0 == nil {
		t.ev0 = ev
	}
	t.evN = ev
	switch ev.Kind {
	case KindMessage:
		if t.prompt == nil && m.isMain(ev.Thread) && promptText(ev) != "" {
			t.prompt = ev
		}
		if ev.Role == "assistant" && m.isMain(ev.Thread) && strings.TrimSpace(ev.Text) != "" {
			t.final = ev
			if t.passed {
				if len(t.reports) < maxReports {
					if ss := sentences(m.text(ev.Text), 1); len(ss) > 0 {
						t.reports = append(slices.Clip(t.reports), ss[0])
					}
				}
				m.reportedFixed(ev, m.text(ev.Text))
			}
			t.passed = false
		}
		m.findings(t, ev)
	case KindSystem:
		// Only a harness's or SDK caller's system prompt is mined (see
		// findings).
		if len(ev.Text) <= 4000 {
			m.findings(t, ev)
		}
	case KindModelCall:
		o.Calls++
		if ev.Call != nil {
			t.model = ev.Call.Model
			if ev.Call.Served != "" {
				t.model = ev.Call.Served
			}
			if m.isMain(ev.Thread) {
				t.finalCall = ev
			}
		}
	case KindUsage:
		if ev.Usage != nil {
			o.Usage.Add(*ev.Usage)
			u := t.models[t.model]
			u.Add(*ev.Usage)
			t.models[t.model] = u
		}
	case KindError, KindInterruption:
		line := ""
		if ev.Error != nil {
			line = firstLine(m.text(ev.Error.Message), 200)
		} else {
			line = firstLine(m.text(ev.Text), 200)
		}
		if line != "" {
			o.Errors = addUnique(o.Errors, line)
			a.Errors = addUnique(a.Errors, line)
		}
		if m.isMain(ev.Thread) {
			t.lastErr = ev
		}
		a.Evidence = append(a.Evidence, evidence(ev))
	case KindToolCall:
		before, ran := t.lastTest, len(o.Commands)
		m.toolCall(t, a, ev, res, &t.lastTest)
		if t.lastTest != before && t.lastTest.Test == "passed" {
			t.passed = true
		}
		if len(o.Commands) > ran {
			// A build, a run or a check that succeeded: what the agent
			// says next reports its result ("The build succeeds:
			// relative links are rewritten"), as after passing tests.
			if c := o.Commands[len(o.Commands)-1]; c.Exit != nil && *c.Exit == 0 && c.Error == "" && c.Test == "" && memtext.FailureKind(c.Command, "") != "" {
				t.passed = true
			}
		}
	}
}

// maxReports bounds the reports an outcome keeps (mtask.reports).
const maxReports = 2

// tentative returns a copy of m with the queued events folded in, as if
// the results not read yet never come. m is not changed.
func (m *miner) tentative() *miner {
	if len(m.queue) == 0 {
		return m
	}
	w := *m
	w.decisions, w.constraints, w.threads = cloneArts(m.decisions), cloneArts(m.constraints), cloneArts(m.threads)
	w.tasks = slices.Clone(m.tasks)
	w.byID = nil // not used by snapshot
	cl := map[*mtask]*mtask{}
	for i, t := range w.tasks {
		for _, q := range m.queue {
			if q.t == t {
				c := t.clone()
				cl[t] = c
				w.tasks[i] = c
				break
			}
		}
	}
	w.consumed, w.abandoned = nil, nil
	w.queue = nil
	for _, q := range m.queue {
		var res *Event
		if q.ev.Kind == KindToolCall && q.ev.Tool != nil && q.ev.Tool.ID != "" {
			res = m.results[q.ev.Tool.ID]
		}
		w.fold(cl[q.t], q.ev, res)
	}
	// Segments and preTask may point at the originals of the copied
	// tasks: what they read of a task (id, position, run) is the same.
	return &w
}

// clone returns a copy of t that folding into does not change t.
func (t *mtask) clone() *mtask {
	c := *t
	c.a = cloneArt(&t.a)
	c.o = t.o
	c.o.Files = slices.Clone(t.o.Files)
	c.o.Commands = slices.Clip(t.o.Commands)
	c.o.Errors = slices.Clip(t.o.Errors)
	c.o.Unpriced = slices.Clip(t.o.Unpriced)
	c.o.Summary = slices.Clip(t.o.Summary)
	if t.a.Outcome != nil {
		c.a.Outcome = &c.o
	}
	c.models = maps.Clone(t.models)
	c.out = nil
	return &c
}

// cloneArt returns a copy of a that changing (as the miner does: fields
// set, slices appended to) does not change a.
func cloneArt(a *Artifact) Artifact {
	c := *a
	c.Evidence = slices.Clip(a.Evidence)
	c.Errors = slices.Clip(a.Errors)
	c.Files = slices.Clip(a.Files)
	c.Commands = slices.Clip(a.Commands)
	c.Symbols = slices.Clip(a.Symbols)
	if a.Decision != nil {
		d := *a.Decision
		d.Supersedes = slices.Clip(d.Supersedes)
		c.Decision = &d
	}
	if a.Constraint != nil {
		k := *a.Constraint
		k.Supersedes = slices.Clip(k.Supersedes)
		c.Constraint = &k
	}
	if a.Thread != nil {
		th := *a.Thread
		c.Thread = &th
	}
	return c
}

func cloneArts(set map[string]*Artifact) map[string]*Artifact {
	out := make(map[string]*Artifact, len(set))
	for id, a := range set {
		c := cloneArt(a)
		out[id] = &c
	}
	return out
}

// snapshot returns the artifacts of the events read so far and the
// number of tasks; m is not changed.
func (m *miner) snapshot() ([]Artifact, int) {
	arts, _, n := m.snapshotEncoded(false)
	return arts, n
}

// snapshotEncoded is snapshot; with cache set it also returns, for each
// finished segment and each outcome, its stored bytes (JSON, redacted),
// or nil for the other artifacts. A finished segment does not change
// once its task is known, and an outcome while its task takes no event
// and the next task's first prompt stays (taskOut), so m keeps their
// bytes; such a segment's Artifact carries only its ID.
func (m *miner) snapshotEncoded(cache bool) ([]Artifact, []*encoded, int) {
	w := m.tentative()
	var outcomes []Artifact
	var outs []*taskOut // outcomes[i]'s
	questions := map[string]*Artifact{}
	for i, t := range w.tasks {
		var next *Event
		if i+1 < len(w.tasks) {
			next = w.tasks[i+1].firstPrompt
		}
		out := t.out
		if out == nil || out.ver != t.ver || out.next != next {
			out = w.outcome(t, next)
			t.out = out
		}
		if out.a != nil {
			a := *out.a
			o := *a.Outcome
			o.Files = slices.Clone(o.Files)
			a.Outcome = &o
			outcomes = append(outcomes, a)
			outs = append(outs, out)
		}
		for _, q := range out.qs {
			questions[q.ID] = q
		}
	}
	threads := w.threads
	if len(questions) > 0 {
		threads = maps.Clone(w.threads)
		maps.Copy(threads, questions)
	}
	var out []Artifact
	out = append(out, w.list(w.decisions)...)
	out = append(out, w.list(w.constraints)...)
	firstOutcome := len(out)
	out = append(out, outcomes...)
	out = append(out, w.list(threads)...)
	segs := len(out)
	for _, s := range w.segs {
		out = append(out, w.segTask(s))
	}
	if a, ok := w.seg.artifact(w); ok {
		out = append(out, w.segTask(segArt{a: a, t: w.seg.t, pre: w.seg.pre}))
	}
	var encs []*encoded
	if cache && m.red != nil {
		encs = make([]*encoded, len(out))
	}
	for i := range out {
		j := i - segs
		if k := i - firstOutcome; encs != nil && k >= 0 && k < len(outs) {
			// An outcome's task did not change since its bytes were
			// made: the same bytes. The artifact stays whole, for
			// the reports folded into it and its index keys.
			out[i].Symbols = slices.Clone(out[i].Symbols)
			finishArtifact(&out[i])
			if to := outs[k]; to.enc != nil {
				encs[i] = to.enc
			} else if v, err := json.Marshal(&out[i]); err == nil {
				v = m.red.JSON(v)
				to.enc = &encoded{v, sha256.Sum256(v)}
				encs[i] = to.enc
			}
			continue
		}
		if encs == nil || j < 0 || j >= len(m.segs) {
			out[i].Symbols = slices.Clone(out[i].Symbols)
			finishArtifact(&out[i])
			continue
		}
		// w.segs shares m.segs: the cache is m's.
		s := &m.segs[j]
		t := s.t
		if s.pre {
			t = m.preTask
		}
		run := ""
		if t != nil {
			run = t.run
		}
		if s.enc == nil || s.et != t || s.erun != run {
			out[i].Symbols = slices.Clone(out[i].Symbols)
			finishArtifact(&out[i])
			v, err := json.Marshal(&out[i])
			if err != nil {
				continue
			}
			v = m.red.JSON(v)
			s.enc, s.et, s.erun = &encoded{v, sha256.Sum256(v)}, t, run
		}
		encs[i] = s.enc
		out[i] = Artifact{ID: out[i].ID}
	}
	return out, encs, len(w.tasks)
}

// segTask returns a segment with its task.
func (m *miner) segTask(s segArt) Artifact {
	t := s.t
	if s.pre {
		t = m.preTask
	}
	if t != nil {
		s.a.Task, s.a.TaskN, s.a.Run = t.id, t.n, t.run
	}
	return s.a
}
