package breaker

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/llm"
)

// Options configure a Breaker.
type Options struct {
	// Config holds the global thresholds; ConfigFrom says where they came
	// from (a file name, or "defaults").
	Config     Config
	ConfigFrom string
	// Project, when set, is the project directory of every session (proxy
	// --project); otherwise each session's is found from its requests.
	Project string
	// Record writes a record to the WAL. The breaker keeps working when it
	// fails; the failure is logged.
	Record func(exchange.Breaker) error
	// Now is the clock; the default is time.Now.
	Now func() time.Time
	// Logf receives one line per problem worth a person's attention.
	Logf func(format string, args ...any)
	// Source names the writer in records: "proxy" (the default) or "cli"
	// (a command changing a session while no proxy runs).
	Source string
}

// Call is one model call request, as Admit sees it.
type Call struct {
	Session string
	Run     string
	API     llm.API
	Body    []byte
	// Project is a project directory the client named (X-Bb-Project);
	// Options.Project wins over it, and it wins over the working directory
	// the request states.
	Project string
}

// Verdict is Admit's answer. A refused call gets a message that says why
// and how to resume, and the time left until a probe may pass (0 when
// only a reset reopens the session).
type Verdict struct {
	Refuse     bool
	Reason     string
	Message    string
	RetryAfter time.Duration
}

// Status is what a breaker knows of a session.
type Status struct {
	Session string `json:"session"`
	State   string `json:"state"`
	// Reason and Detail say why the breaker last opened (or, when
	// closed, why it last changed).
	Reason string    `json:"reason,omitempty"`
	Detail string    `json:"detail,omitempty"`
	Since  time.Time `json:"since,omitzero"`
	// Until is when an open breaker lets a probe through; zero while open
	// means only a reset reopens the session.
	Until    time.Time                `json:"until,omitzero"`
	Counters exchange.BreakerCounters `json:"counters"`
	// Config is the thresholds in effect for the session, ConfigFrom
	// where they came from, ConfigError a project file that did not load
	// (the global thresholds apply meanwhile).
	Config      *Config `json:"config,omitempty"`
	ConfigFrom  string  `json:"config_from,omitempty"`
	ConfigError string  `json:"config_error,omitempty"`
	// Transitions are the latest changes, oldest first.
	Transitions []exchange.Breaker `json:"transitions,omitempty"`
	// Live is true when a running proxy answered; false when the status
	// is read from the records the engine keeps.
	Live bool `json:"live"`
}

// Limits on what a Breaker holds in memory.
const (
	maxSessions    = 10000
	maxThreads     = 32
	maxSeen        = 4096
	maxTransitions = 20
)

// Breaker watches sessions. It is safe for concurrent use.
type Breaker struct {
	o        Options
	mu       sync.Mutex
	sessions map[string]*session
	projects map[string]*project // by file

	// scans remembers, per session, the layout of its last few bodies
	// (one per thread), so that readStep checks the resent history by
	// hash instead of scanning it. It has its own lock: bodies are read
	// before mu is taken, concurrently.
	scanMu sync.Mutex
	scans  map[string][]*scanned
}

// maxScans is the number of bodies remembered per session: a session's
// threads (main agent, subagents, side calls) alternate. maxScanSessions
// bounds the sessions remembered (a layout holds 24 bytes per message).
const (
	maxScans        = 4
	maxScanSessions = 256
)

// recall returns what is remembered of the session's last bodies.
func (b *Breaker) recall(session string) []*scanned {
	b.scanMu.Lock()
	defer b.scanMu.Unlock()
	return b.scans[session] // never changed in place
}

// remember keeps next, in place of the body it resends (before, or nil).
func (b *Breaker) remember(session string, next, before *scanned) {
	b.scanMu.Lock()
	defer b.scanMu.Unlock()
	if b.scans == nil {
		b.scans = map[string][]*scanned{}
	}
	old, known := b.scans[session]
	if !known && len(b.scans) >= maxScanSessions {
		for id := range b.scans { // forget any one
			delete(b.scans, id)
			break
		}
	}
	l := make([]*scanned, 0, maxScans)
	l = append(l, next)
	for _, s := range old {
		if s != before && len(l) < maxScans {
			l = append(l, s)
		}
	}
	b.scans[session] = l
}

type session struct {
	id      string
	state   string
	reason  string
	detail  string
	since   time.Time
	until   time.Time
	probing bool // half-open: the probe has been let through
	c       exchange.BreakerCounters
	threads map[uint64]*thread
	// seed holds loop counters restored from a record, for the first
	// thread seen after a restart.
	seed    *thread
	cwd     string
	project string // the project directory the client named
	last    time.Time
	dirty   bool // counters changed since the last record
	history []exchange.Breaker
	// worst is the thread whose counters the records show.
	worst *thread
}

type thread struct {
	sinceProgress, stagnant int64
	progressed              bool
	lastKey                 uint64
	lastCalls, lastText     uint64
	lastErr                 uint64
	seen                    map[uint64]struct{}
	prompts                 map[uint64]struct{}
	testsFailing            bool
	used                    time.Time
}

type project struct {
	mod  time.Time
	size int64
	cfg  Config
	err  error
}

// New returns a Breaker.
func New(o Options) *Breaker {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	if o.Record == nil {
		o.Record = func(exchange.Breaker) error { return nil }
	}
	if o.ConfigFrom == "" {
		o.ConfigFrom = "defaults"
	}
	if o.Source == "" {
		o.Source = "proxy"
	}
	return &Breaker{o: o, sessions: map[string]*session{}, projects: map[string]*project{}}
}

// Admit judges a model call before it is forwarded and says whether to
// refuse it. It reads the request body but keeps no reference to it.
func (b *Breaker) Admit(c Call) Verdict {
	if c.Session == "" {
		return Verdict{}
	}
	st, readable, next, before := readStepFrom(c.API, c.Body, b.recall(c.Session))
	if next != nil {
		b.remember(c.Session, next, before)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.o.Now()
	s := b.session(c.Session, now)
	if st.cwd != "" {
		s.cwd = st.cwd
	}
	if c.Project != "" {
		s.project = c.Project
	}
	cfg, _, _ := b.config(s)
	if !cfg.Enabled {
		return Verdict{}
	}
	s.last = now
	switch s.state {
	case exchange.BreakerOpen:
		if s.until.IsZero() || now.Before(s.until) {
			return b.refusal(s, now)
		}
		if capReason(s.reason) {
			if r, _ := b.caps(s, cfg, c.Run, now); r != "" {
				s.until = now.Add(cfg.CooldownDuration())
				return b.refusal(s, now)
			}
		}
		b.change(s, "half-open", exchange.BreakerHalfOpen, s.reason, "the cooldown ended; one request may pass as a probe", time.Time{}, cfg, now)
		s.probing = true
		if readable {
			t := b.thread(s, st.thread, now)
			t.lastKey = st.key // the probe repeats the refused request
		}
		b.count(s, c.Run, now)
		return Verdict{}
	}
	var judged *judgement
	if readable {
		judged = b.judge(s, b.thread(s, st.thread, now), &st, cfg, now)
	}
	if s.state == exchange.BreakerHalfOpen {
		if judged == nil || judged.retry || !judged.step {
			b.count(s, c.Run, now)
			return Verdict{} // the probe again, or a call that says nothing of it
		}
		if judged.progress != "" {
			for _, t := range s.threads {
				t.sinceProgress, t.stagnant = 0, 0
			}
			b.change(s, "close", exchange.BreakerClosed, "probe_progress", "the probe made progress: "+judged.progress, time.Time{}, cfg, now)
			b.count(s, c.Run, now)
			return Verdict{}
		}
		b.trip(s, "probe_no_progress", "the probe after the cooldown made no progress", cfg, now)
		return b.refusal(s, now)
	}
	if judged != nil && judged.trip != "" {
		b.trip(s, judged.trip, judged.detail, cfg, now)
		return b.refusal(s, now)
	}
	if r, d := b.caps(s, cfg, c.Run, now); r != "" {
		b.trip(s, r, d, cfg, now)
		return b.refusal(s, now)
	}
	b.count(s, c.Run, now)
	return Verdict{}
}

// count counts a call that passes.
func (b *Breaker) count(s *session, run string, now time.Time) {
	s.c.Calls++
	if s.c.Started == 0 {
		s.c.Started = now.UnixNano()
	}
	if run != s.c.Run {
		s.c.Run, s.c.RunCalls, s.c.RunTokens, s.c.RunCostUSD, s.c.RunStarted = run, 0, 0, 0, 0
	}
	if run != "" {
		s.c.RunCalls++
		if s.c.RunStarted == 0 {
			s.c.RunStarted = now.UnixNano()
		}
	}
	s.dirty = true
}

// Usage adds what a call used, once its response ended.
func (b *Breaker) Usage(session, run, model string, u exchange.Usage) {
	if session == "" || u.IsZero() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.sessions[session]
	if s == nil {
		return
	}
	cfg, _, _ := b.config(s)
	tokens := u.InputTokens + u.OutputTokens
	if tokens == 0 {
		tokens = u.TotalTokens
	}
	var cost float64
	if p, ok := llm.PriceOf(model, cfg.Pricing); ok {
		cost = p.Cost(llm.Usage{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheReadTokens, CacheCreation: u.CacheCreationTokens})
	} else if model != "" {
		s.c.Unpriced = model
	}
	s.c.Tokens += tokens
	s.c.CostUSD += cost
	if run != "" && run == s.c.Run {
		s.c.RunTokens += tokens
		s.c.RunCostUSD += cost
	}
	s.dirty = true
}

// judgement is what a step says.
type judgement struct {
	step     bool   // the request told of a step (tool results or a prompt)
	retry    bool   // the same tail as the thread's last request
	progress string // the progress signal, "" for none
	trip     string // a rule that opens the breaker
	detail   string
}

// judge updates a thread's loop counters with a step and says whether a
// rule trips.
func (b *Breaker) judge(s *session, t *thread, st *step, cfg Config, now time.Time) *judgement {
	j := &judgement{}
	if st.key == t.lastKey {
		j.retry = true
		return j
	}
	t.lastKey = st.key
	results, prompt := 0, ""
	for i := range st.after {
		m := &st.after[i]
		for k := range m.Parts {
			p := &m.Parts[k]
			switch {
			case p.Type == llm.PartToolResult:
				results++
			case p.Type == llm.PartText && m.Role == "user" && !strings.HasPrefix(strings.TrimSpace(p.Text), "<system-reminder>"):
				prompt += p.Text
			}
		}
	}
	if results == 0 {
		if prompt == "" {
			return j // nothing the call before it did
		}
		h := hashString(prompt)
		if _, seen := t.prompts[h]; !seen {
			if len(t.prompts) < maxSeen {
				t.prompts[h] = struct{}{}
			}
			// A new prompt from a person: a new loop.
			t.sinceProgress, t.stagnant, t.progressed = 0, 0, false
			t.lastCalls, t.lastText, t.lastErr = 0, 0, 0
			return j
		}
	}
	j.step = true
	j.progress = b.progress(t, st)
	stagnation := ""
	if j.progress == "" {
		stagnation = stagnant(t, st)
	}
	// Remember this step for the next comparison.
	t.lastCalls, t.lastText = callsHash(st.turn), textHash(st.turn)
	t.lastErr = errorHash(st)
	if j.progress != "" {
		t.sinceProgress, t.stagnant, t.progressed = 0, 0, true
		s.c.LastProgress, s.c.Signal = now.UnixNano(), clip(j.progress)
	} else {
		t.sinceProgress++
		if stagnation != "" {
			t.stagnant++
			s.c.Stagnation = clip(stagnation)
		} else {
			t.stagnant = 0
		}
	}
	s.dirty = true
	b.pickWorst(s, t, cfg)
	switch {
	case cfg.Stagnation > 0 && t.stagnant >= cfg.Stagnation:
		j.trip = "stagnation"
		j.detail = fmt.Sprintf("%d stagnant calls in a row (threshold %d): %s", t.stagnant, cfg.Stagnation, stagnation)
	case t.progressed && cfg.NoProgress > 0 && t.sinceProgress >= cfg.NoProgress:
		j.trip = "no_progress"
		j.detail = fmt.Sprintf("%d model calls without progress (threshold %d); the last progress was %s", t.sinceProgress, cfg.NoProgress, s.c.Signal)
	case !t.progressed && cfg.NeverProgress > 0 && t.sinceProgress >= cfg.NeverProgress:
		j.trip = "never_progress"
		j.detail = fmt.Sprintf("%d model calls and no progress signal at all (threshold %d): no file changed, no new tool result, no test fixed", t.sinceProgress, cfg.NeverProgress)
	}
	return j
}

// pickWorst makes t the thread the records show when it is closer to a
// trip than the one shown.
func (b *Breaker) pickWorst(s *session, t *thread, cfg Config) {
	score := func(t *thread) float64 {
		if t == nil {
			return -1
		}
		lim := cfg.NeverProgress
		if t.progressed {
			lim = cfg.NoProgress
		}
		f := float64(t.sinceProgress) / float64(max(lim, 1))
		return max(f, float64(t.stagnant)/float64(max(cfg.Stagnation, 1)))
	}
	if s.worst == nil || s.worst == t || score(t) >= score(s.worst) {
		s.worst = t
	}
	s.c.SinceProgress, s.c.Stagnant, s.c.Progressed = s.worst.sinceProgress, s.worst.stagnant, s.worst.progressed
}

// caps returns the cap the session or its run has reached, if any.
func (b *Breaker) caps(s *session, cfg Config, run string, now time.Time) (reason, detail string) {
	c := s.c
	wall := func(start int64) time.Duration { return now.Sub(time.Unix(0, start)).Round(time.Second) }
	check := func(prefix, what string, caps Caps, calls, tokens int64, cost float64, started int64) (string, string) {
		switch {
		case caps.MaxCalls > 0 && calls >= caps.MaxCalls:
			return prefix + "max_calls", fmt.Sprintf("%s made %d model calls (cap %d)", what, calls, caps.MaxCalls)
		case caps.MaxTokens > 0 && tokens >= caps.MaxTokens:
			return prefix + "max_tokens", fmt.Sprintf("%s used %d tokens (cap %d)", what, tokens, caps.MaxTokens)
		case caps.MaxCostUSD > 0 && cost >= caps.MaxCostUSD:
			return prefix + "max_cost", fmt.Sprintf("%s cost $%.2f (cap $%.2f)", what, cost, caps.MaxCostUSD)
		case caps.MaxWallSeconds > 0 && started > 0 && wall(started) >= time.Duration(caps.MaxWallSeconds)*time.Second:
			return prefix + "max_wall", fmt.Sprintf("%s has run for %v (cap %v)", what, wall(started), time.Duration(caps.MaxWallSeconds)*time.Second)
		}
		return "", ""
	}
	if r, d := check("", "the session", cfg.Caps, c.Calls, c.Tokens, c.CostUSD, c.Started); r != "" {
		return r, d
	}
	if run != "" && run == c.Run {
		return check("run_", "run "+run, cfg.Run, c.RunCalls, c.RunTokens, c.RunCostUSD, c.RunStarted)
	}
	return "", ""
}

func capReason(r string) bool { return strings.Contains(r, "max_") }

// trip opens the breaker.
func (b *Breaker) trip(s *session, reason, detail string, cfg Config, now time.Time) {
	until := now.Add(cfg.CooldownDuration())
	if cfg.Cooldown == 0 {
		until = time.Time{}
	}
	b.change(s, "trip", exchange.BreakerOpen, reason, detail, until, cfg, now)
}

// change moves a session to a state and writes the record.
func (b *Breaker) change(s *session, op, state, reason, detail string, until time.Time, cfg Config, now time.Time) error {
	from := s.state
	s.state, s.reason, s.detail, s.since, s.until, s.probing = state, reason, clip(detail), now, until, false
	_, from2, _ := b.config(s)
	r := exchange.Breaker{Op: op, Session: s.id, State: state, From: from, Reason: clip(reason), Detail: s.detail,
		Time: now.UnixNano(), Source: b.o.Source, Config: clip(from2), Counters: s.c}
	if !until.IsZero() {
		r.Until = until.UnixNano()
	}
	return b.record(s, r)
}

// record keeps r in the session's history and writes it. A failed
// write is logged (the breaker works on) and returned.
func (b *Breaker) record(s *session, r exchange.Breaker) error {
	s.history = append(s.history, r)
	if len(s.history) > maxTransitions {
		s.history = slices.Delete(s.history, 0, len(s.history)-maxTransitions)
	}
	s.dirty = false
	err := b.o.Record(r)
	if err != nil {
		b.o.Logf("breaker: recording the %s of session %s failed: %v", r.Op, s.id, err)
	}
	return err
}

// refusal is the verdict for a call of an open session.
func (b *Breaker) refusal(s *session, now time.Time) Verdict {
	v := Verdict{Refuse: true, Reason: s.reason}
	when := "Only a reset lets it through"
	if !s.until.IsZero() {
		v.RetryAfter = max(s.until.Sub(now), time.Second)
		when = fmt.Sprintf("One request may pass as a probe in %v", v.RetryAfter.Round(time.Second))
	}
	v.Message = fmt.Sprintf("bbengine circuit breaker: session %s is open (%s): %s. %s; `bbengine breaker reset %s` resumes it now, `bbengine breaker status %s` explains.",
		s.id, s.reason, s.detail, when, quoteArg(s.id), quoteArg(s.id))
	return v
}

func quoteArg(s string) string {
	if strings.ContainsAny(s, " '\"\\$`!*?;&|<>(){}") {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return s
}

// session returns the state of a session, making it when new.
func (b *Breaker) session(id string, now time.Time) *session {
	s := b.sessions[id]
	if s != nil {
		return s
	}
	if len(b.sessions) >= maxSessions {
		b.evict()
	}
	s = &session{id: id, state: exchange.BreakerClosed, threads: map[uint64]*thread{}, last: now}
	b.sessions[id] = s
	return s
}

// evict forgets the least recently active closed session, after writing
// its counters.
func (b *Breaker) evict() {
	var old *session
	for _, s := range b.sessions {
		if s.state == exchange.BreakerClosed && (old == nil || s.last.Before(old.last)) {
			old = s
		}
	}
	if old != nil {
		b.snapshot(old)
		delete(b.sessions, old.id)
	}
}

// thread returns a session's thread, making it when new.
func (b *Breaker) thread(s *session, id uint64, now time.Time) *thread {
	t := s.threads[id]
	if t == nil {
		if len(s.threads) >= maxThreads {
			var old uint64
			var oldT *thread
			for k, v := range s.threads {
				if oldT == nil || v.used.Before(oldT.used) {
					old, oldT = k, v
				}
			}
			delete(s.threads, old)
			if s.worst == oldT {
				s.worst = nil
			}
		}
		t = &thread{seen: map[uint64]struct{}{}, prompts: map[uint64]struct{}{}}
		if s.seed != nil {
			t.sinceProgress, t.stagnant, t.progressed = s.seed.sinceProgress, s.seed.stagnant, s.seed.progressed
			s.seed = nil
		}
		s.threads[id] = t
	}
	t.used = now
	return t
}

// config returns the thresholds of a session: the global ones, with its
// project's bbengine.yaml laid over them. The project directory is the
// proxy's --project, else the one the client named, else the working
// directory the session's requests state.
func (b *Breaker) config(s *session) (Config, string, error) {
	dir := cmp.Or(b.o.Project, s.project, s.cwd)
	file := FindProject(dir)
	if file == "" {
		return b.o.Config, b.o.ConfigFrom, nil
	}
	st, err := os.Stat(file)
	if err != nil {
		return b.o.Config, b.o.ConfigFrom, nil
	}
	p := b.projects[file]
	if p == nil || !p.mod.Equal(st.ModTime()) || p.size != st.Size() {
		p = &project{mod: st.ModTime(), size: st.Size()}
		f, err := os.Open(file)
		if err == nil {
			p.cfg, _, err = Overlay(b.o.Config, file, f, true)
			f.Close()
		}
		if err != nil {
			p.err = err
			b.o.Logf("breaker: %v (the global thresholds apply)", err)
		}
		b.projects[file] = p
	}
	if p.err != nil {
		return b.o.Config, b.o.ConfigFrom, p.err
	}
	return p.cfg, file, nil
}

// Status returns what the breaker knows of a session, and false when it
// has seen nothing of it.
func (b *Breaker) Status(id string) (Status, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.sessions[id]
	if s == nil {
		return Status{}, false
	}
	return b.status(s), true
}

// List returns the status of every session the breaker holds, open ones
// first, then by latest activity.
func (b *Breaker) List() []Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	ss := make([]*session, 0, len(b.sessions))
	for _, s := range b.sessions {
		ss = append(ss, s)
	}
	slices.SortFunc(ss, func(x, y *session) int {
		if c := cmp.Compare(rank(x.state), rank(y.state)); c != 0 {
			return c
		}
		if c := y.last.Compare(x.last); c != 0 {
			return c
		}
		return strings.Compare(x.id, y.id)
	})
	out := make([]Status, len(ss))
	for i, s := range ss {
		out[i] = b.status(s)
	}
	return out
}

func rank(state string) int {
	switch state {
	case exchange.BreakerOpen:
		return 0
	case exchange.BreakerHalfOpen:
		return 1
	}
	return 2
}

func (b *Breaker) status(s *session) Status {
	cfg, from, err := b.config(s)
	st := Status{Session: s.id, State: s.state, Reason: s.reason, Detail: s.detail, Since: s.since, Until: s.until,
		Counters: s.c, Config: &cfg, ConfigFrom: from, Transitions: slices.Clone(s.history), Live: true}
	if err != nil {
		st.ConfigError = err.Error()
	}
	return st
}

// ErrSession is returned for an empty or invalid session id.
var ErrSession = errors.New("breaker: invalid session id")

// Reset closes a session's breaker and clears its loop counters, as a
// person's override. by says who asked. An error after the change is
// made says its record was not written.
func (b *Breaker) Reset(id, by string) (Status, error) {
	if !exchange.ValidID(id) {
		return Status{}, fmt.Errorf("%w %q", ErrSession, id)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.o.Now()
	s := b.session(id, now)
	for _, t := range s.threads {
		t.sinceProgress, t.stagnant, t.lastCalls, t.lastText, t.lastErr = 0, 0, 0, 0, 0
	}
	s.seed = nil
	s.c.SinceProgress, s.c.Stagnant = 0, 0
	cfg, _, _ := b.config(s)
	detail := "reset by " + by
	err := b.change(s, "reset", exchange.BreakerClosed, "manual", detail, time.Time{}, cfg, now)
	return b.status(s), recordErr(err)
}

// Trip opens a session's breaker until a reset, as a person's emergency
// stop; reason says why. An error after the change is made says its
// record was not written.
func (b *Breaker) Trip(id, reason string) (Status, error) {
	if !exchange.ValidID(id) {
		return Status{}, fmt.Errorf("%w %q", ErrSession, id)
	}
	if strings.TrimSpace(reason) == "" {
		return Status{}, errors.New("breaker: a trip needs a reason")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.o.Now()
	s := b.session(id, now)
	cfg, _, _ := b.config(s)
	err := b.change(s, "trip", exchange.BreakerOpen, "manual", reason, time.Time{}, cfg, now)
	return b.status(s), recordErr(err)
}

// recordErr says what a failed write of a manual change means: it holds
// in this breaker, but a restart will not know it.
func recordErr(err error) error {
	if err != nil {
		return fmt.Errorf("breaker: the change holds in this process but was not recorded, so a restart loses it: %w", err)
	}
	return nil
}

// Restore brings back what records say of sessions the breaker does not
// know yet: their state and counters (the latest record of each), and
// their history. Each session's recs are in WAL order (sessions may interleave).
func (b *Breaker) Restore(recs []exchange.Breaker) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.o.Now()
	fresh := map[string]bool{}
	for _, r := range recs {
		s := b.sessions[r.Session]
		if s == nil {
			s = b.session(r.Session, now)
			fresh[r.Session] = true
		} else if !fresh[r.Session] {
			continue // the proxy has seen it since; its own state is newer
		}
		if r.Op != "snapshot" {
			s.history = append(s.history, r)
			if len(s.history) > maxTransitions {
				s.history = slices.Delete(s.history, 0, len(s.history)-maxTransitions)
			}
			s.since = time.Unix(0, r.Time)
		}
		// A snapshot repeats the state it was taken in, so the state
		// survives even when the change itself is no longer among recs.
		s.state, s.reason, s.detail = r.State, r.Reason, r.Detail
		s.until = time.Time{}
		if r.Until > 0 {
			s.until = time.Unix(0, r.Until)
		}
		if s.project == "" && filepath.Base(r.Config) == ProjectFile && filepath.IsAbs(r.Config) {
			// The project the session's thresholds came from, until its
			// next request names one.
			s.project = filepath.Dir(r.Config)
		}
		s.c = r.Counters
		s.seed = &thread{sinceProgress: r.Counters.SinceProgress, stagnant: r.Counters.Stagnant, progressed: r.Counters.Progressed}
		s.last = time.Unix(0, r.Time)
	}
}

// Snapshot writes the counters of every session that changed since its
// last record, so a restart keeps them. The proxy calls it as it stops.
func (b *Breaker) Snapshot() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range b.sessions {
		b.snapshot(s)
	}
}

func (b *Breaker) snapshot(s *session) {
	if !s.dirty {
		return
	}
	_, from, _ := b.config(s)
	r := exchange.Breaker{Op: "snapshot", Session: s.id, State: s.state, Reason: s.reason, Detail: s.detail,
		Time: b.o.Now().UnixNano(), Source: b.o.Source, Config: clip(from), Counters: s.c}
	if !s.until.IsZero() {
		r.Until = s.until.UnixNano()
	}
	s.dirty = false
	if err := b.o.Record(r); err != nil {
		b.o.Logf("breaker: recording the counters of session %s failed: %v", s.id, err)
	}
}

// clip cuts s to what a record holds.
func clip(s string) string {
	if len(s) <= exchange.MaxBreakerText {
		return strings.ToValidUTF8(s, "")
	}
	s = s[:exchange.MaxBreakerText-3]
	for len(s) > 0 && s[len(s)-1]&0xc0 == 0x80 {
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[len(s)-1] >= 0xc0 {
		s = s[:len(s)-1]
	}
	return strings.ToValidUTF8(s, "") + "…"
}
