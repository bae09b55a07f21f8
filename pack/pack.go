package pack

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/bbengine/bbengine/engine"
)

// Version names the builder. It is part of the cache key: a change to
// what Build produces for the same input changes it.
const Version = "pack/3"

// Budget bounds a pack, in tokens (cl100k_base). Each section first gets
// its own budget; what the pack leaves of Total after them (less
// Pointers) goes to the best ranked decisions, constraints and open
// threads that did not fit their section. A section budget of 0 leaves
// that section out.
type Budget struct {
	Total       int `json:"total"`
	Decisions   int `json:"decisions"`
	Constraints int `json:"constraints"`
	Implemented int `json:"implemented"`
	Threads     int `json:"open_threads"`
	Pointers    int `json:"pointers"`
	// MaxChars bounds the Markdown in characters (bytes); 0 means
	// DefaultMaxChars.
	MaxChars int `json:"max_chars"`
}

// DefaultMaxChars keeps a pack under Claude Code's 10,000-character cap
// on hook-injected context, with headroom.
const DefaultMaxChars = 9000

// DefaultBudget is the spec's: about 1,200 tokens in all.
func DefaultBudget() Budget {
	return Budget{Total: 1200, Decisions: 200, Constraints: 150, Implemented: 300, Threads: 150, Pointers: 100, MaxChars: DefaultMaxChars}
}

// BudgetFor scales the default budget to a total of n tokens, keeping the
// sections' proportions.
func BudgetFor(n int) Budget {
	b := DefaultBudget()
	if n <= 0 || n == b.Total {
		return b
	}
	scale := func(v int) int { return v * n / b.Total }
	return Budget{Total: n, Decisions: scale(b.Decisions), Constraints: scale(b.Constraints), Implemented: scale(b.Implemented),
		Threads: scale(b.Threads), Pointers: scale(b.Pointers), MaxChars: DefaultMaxChars}
}

// MinTotal is the smallest total budget that holds the contract and the
// headings.
const MinTotal = 120

// Validate reports a budget Build cannot honour.
func (b Budget) Validate() error {
	if b.Total < MinTotal {
		return fmt.Errorf("pack: a total budget of %d tokens (at least %d: the usage contract alone takes about 90)", b.Total, MinTotal)
	}
	for _, v := range []int{b.Decisions, b.Constraints, b.Implemented, b.Threads, b.Pointers, b.MaxChars} {
		if v < 0 {
			return fmt.Errorf("pack: a negative budget (%+v)", b)
		}
	}
	if b.MaxChars != 0 && b.MaxChars < 1000 {
		return fmt.Errorf("pack: max_chars %d (at least 1000)", b.MaxChars)
	}
	return nil
}

// Input is everything a pack is built from.
type Input struct {
	Session string
	// Goal is the session's north star and GoalSource where it came from
	// (run, harness, header, first prompt).
	Goal       string
	GoalSource string
	// Checkpoint is the latest session summary a harness recorded.
	Checkpoint string
	// Task describes the task about to start; TaskID names it. Artifacts
	// of the task TaskID itself (a re-run) count as earlier work.
	Task   string
	TaskID string
	// Artifacts are the session's artifacts, in any order. Build neither
	// keeps nor modifies them.
	Artifacts []engine.Artifact
	// State identifies the session state the artifacts come from (the
	// memory digest); it is echoed in the pack.
	State  string
	Budget Budget
	// Project is what the other sessions of the session's project left
	// in force (engine.ProjectMemory): decisions, constraints and open
	// threads, in any order; their items say which session they come
	// from. ProjectState identifies it (ProjectMemory.State).
	Project      []engine.Artifact
	ProjectState string
}

// Pack is a built context pack.
type Pack struct {
	Version    string `json:"version"`
	Session    string `json:"session"`
	Task       string `json:"task,omitempty"`
	TaskID     string `json:"task_id,omitempty"`
	Goal       string `json:"goal,omitempty"`
	GoalSource string `json:"goal_source,omitempty"`
	Checkpoint string `json:"checkpoint,omitempty"`
	// Contract is the agent usage contract (spec 11.4).
	Contract    string     `json:"contract"`
	Decisions   []Item     `json:"decisions"`
	Constraints []Item     `json:"constraints"`
	Implemented []TaskItem `json:"implemented"`
	Threads     []Item     `json:"open_threads"`
	// Pointers are ids of further relevant artifacts, for memory_get.
	Pointers []string `json:"pointers"`
	// Omitted counts, per section, the candidates left out for the budget.
	Omitted map[string]int `json:"omitted,omitempty"`
	// Tokens and Chars measure the Markdown.
	Tokens int    `json:"tokens"`
	Chars  int    `json:"chars"`
	Budget Budget `json:"budget"`
	State  string `json:"state,omitempty"`
	// Artifacts is how many artifacts the pack was built from.
	Artifacts int `json:"artifacts"`
}

// Item is one decision, constraint or open thread of a pack.
type Item struct {
	ID   string `json:"id"`
	Text string `json:"text"`
	// Note qualifies the text: a decision's rationale, a constraint's
	// scope, a thread's file.
	Note string `json:"note,omitempty"`
	Task string `json:"task,omitempty"`
	// From names the earlier session of the project an item comes from,
	// with the day of its latest evidence; empty for the session's own.
	From   string  `json:"from,omitempty"`
	Score  float64 `json:"score"`
	Tokens int     `json:"tokens"`
}

// TaskItem is what one earlier task implemented.
type TaskItem struct {
	ID      string   `json:"id"`
	Task    string   `json:"task"`
	Status  string   `json:"status"`
	Bullets []string `json:"bullets"`
	Files   []string `json:"files,omitempty"`
	Tokens  int      `json:"tokens"`
}

// Empty reports whether the pack says nothing beyond its contract.
func (p *Pack) Empty() bool {
	return p.Goal == "" && p.Checkpoint == "" && len(p.Decisions) == 0 && len(p.Constraints) == 0 &&
		len(p.Implemented) == 0 && len(p.Threads) == 0 && len(p.Pointers) == 0
}

// Key is the cache key of a pack: session, task, builder version, budget
// and session state.
func Key(in *Input) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00%+v\x00%s\x00%s\x00%s\x00%s\x00%s", Version, in.Session, in.TaskID, in.Task, in.Budget, in.State, in.Goal, in.GoalSource, in.Checkpoint, in.ProjectState)
	return hex.EncodeToString(h.Sum(nil))
}

// Contract is the agent usage contract every pack carries.
const Contract = "Use this pack as the authoritative state of the session: do not redo what it lists as done, and keep to its decisions and constraints. " +
	"Call memory tools only for details it lacks; prefer memory_get on an id listed here (bbengine mem get ID) over a search, " +
	"and make at most one memory_search and two memory_get calls."

// Caps on the text of one item, before budgeting.
const (
	maxGoal      = 150 // tokens
	maxItemText  = 320 // characters
	implementedK = 5   // tasks
)

// Build builds the pack for in. It is deterministic: the same input
// gives the same pack.
func Build(in *Input) (*Pack, error) {
	if err := in.Budget.Validate(); err != nil {
		return nil, err
	}
	b := in.Budget
	if b.MaxChars == 0 {
		b.MaxChars = DefaultMaxChars
	}
	p := &Pack{Version: Version, Session: in.Session, Task: oneLine(in.Task), TaskID: in.TaskID, GoalSource: in.GoalSource,
		Contract: Contract, Budget: b, State: in.State, Artifacts: len(in.Artifacts), Omitted: map[string]int{}}
	if p.Goal = truncTokens(oneLine(in.Goal), maxGoal); p.Goal == "" {
		p.GoalSource = ""
	}
	p.Checkpoint = truncTokens(oneLine(in.Checkpoint), maxGoal)

	q := newQuery(in.Task)
	lastN := 0
	for i := range in.Artifacts {
		lastN = max(lastN, in.Artifacts[i].TaskN)
	}
	var decisions, constraints, threads, outcomes []cand
	own := len(in.Artifacts)
	all := in.Artifacts
	if len(in.Project) > 0 {
		all = append(slices.Clip(in.Artifacts), in.Project...)
	}
	for i := range all {
		a := &all[i]
		if a.Forgotten || i >= own && (a.Session == in.Session || a.Type == engine.ArtifactOutcome) {
			continue
		}
		c := cand{a: a, from: i >= own}
		lastN, from := lastN, 1.0
		if c.from {
			// An earlier session's: in force, but behind the session's
			// own, even its oldest, at equal relevance; its tasks are
			// not this session's.
			lastN, from = 0, 0.5
		}
		switch {
		case a.Type == engine.ArtifactDecision && a.Status == "active":
			c.score = score(q, a, from, lastN)
			decisions = append(decisions, c)
		case a.Type == engine.ArtifactConstraint && a.Status == "active":
			if a.Constraint != nil && a.Constraint.Scope == "subagent" {
				continue // it holds for the subagent it was given to
			}
			w := 1.0
			if a.Constraint != nil && a.Constraint.Scope == "session" {
				w = 1.3
			}
			c.score = score(q, a, w*from, lastN)
			constraints = append(constraints, c)
		case a.Type == engine.ArtifactThread && a.Status == "open":
			c.score = score(q, a, 0.9*from, lastN)
			threads = append(threads, c)
		case a.Type == engine.ArtifactOutcome && a.Outcome != nil:
			c.score = score(q, a, 0.8, lastN)
			outcomes = append(outcomes, c)
		}
	}
	for _, cs := range [][]cand{decisions, constraints, threads, outcomes} {
		slices.SortFunc(cs, byScore)
	}
	var spare []cand // candidates that did not fit, for pointers

	p.Decisions, spare = fill(decisions, b.Decisions, decisionItem, spare, p.Omitted, "decisions")
	p.Constraints, spare = fill(constraints, b.Constraints, constraintItem, spare, p.Omitted, "constraints")
	p.Threads, spare = fill(threads, b.Threads, threadItem, spare, p.Omitted, "open_threads")

	// Implemented: the last K tasks, newest first while they fit, shown
	// oldest first; older and lower tasks become pointers.
	recent := slices.Clone(outcomes)
	slices.SortFunc(recent, func(x, y cand) int {
		if c := cmp.Compare(y.a.TaskN, x.a.TaskN); c != 0 {
			return c
		}
		return strings.Compare(x.a.ID, y.a.ID)
	})
	used := 0
	for i, c := range recent {
		if i >= implementedK || b.Implemented-used < minItem {
			spare = append(spare, c)
			p.Omitted["implemented"]++
			continue
		}
		t := taskItem(c.a)
		t.Tokens = count(renderTask(t))
		if used+t.Tokens > b.Implemented {
			spare = append(spare, c)
			p.Omitted["implemented"]++
			continue
		}
		used += t.Tokens
		p.Implemented = append(p.Implemented, t)
	}
	slices.Reverse(p.Implemented)

	// What a section left of its budget goes to the best of what did not
	// fit in another: a session with few tasks has room for more of its
	// project's decisions.
	spare = p.spill(spare, b)

	// Pointers: the best of what did not fit, ids only.
	slices.SortFunc(spare, byScore)
	used = count(pointersHeading)
	for _, c := range spare {
		if c.score <= 0 && c.a.Type == engine.ArtifactOutcome {
			continue
		}
		n := count(c.a.ID + ", ")
		if used+n > b.Pointers {
			break
		}
		used += n
		p.Pointers = append(p.Pointers, c.a.ID)
	}

	p.trim()
	md := p.Markdown()
	p.Tokens, p.Chars = count(md), len(md)
	if len(p.Omitted) == 0 {
		p.Omitted = nil
	}
	// Empty sections are [] in JSON, not null.
	p.Decisions, p.Constraints, p.Threads = nonNil(p.Decisions), nonNil(p.Constraints), nonNil(p.Threads)
	p.Implemented, p.Pointers = nonNil(p.Implemented), nonNil(p.Pointers)
	return p, nil
}

// trim drops the lowest-ranked items until the whole pack fits its total
// budget and character cap: pointers first, then the oldest task, then
// the lowest open thread, constraint and decision.
func (p *Pack) trim() {
	for {
		md := p.Markdown()
		if count(md) <= p.Budget.Total && len(md) <= p.Budget.MaxChars {
			return
		}
		switch {
		case len(p.Pointers) > 0:
			p.Pointers = p.Pointers[:len(p.Pointers)-1]
		case len(p.Implemented) > 0:
			p.Implemented = p.Implemented[1:]
			p.Omitted["implemented"]++
		case len(p.Threads) > 0:
			p.Threads = p.Threads[:len(p.Threads)-1]
			p.Omitted["open_threads"]++
		case len(p.Constraints) > 0:
			p.Constraints = p.Constraints[:len(p.Constraints)-1]
			p.Omitted["constraints"]++
		case len(p.Decisions) > 0:
			p.Decisions = p.Decisions[:len(p.Decisions)-1]
			p.Omitted["decisions"]++
		case p.Checkpoint != "":
			p.Checkpoint = ""
		case p.Goal != "":
			p.Goal = halve(p.Goal)
		case p.Task != "":
			p.Task = halve(p.Task)
		default:
			return // the contract alone: Validate keeps Total above it
		}
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// cand is a candidate artifact and its relevance.
type cand struct {
	a     *engine.Artifact
	score float64
	from  bool // an earlier session's of the project (Input.Project)
}

func byScore(x, y cand) int {
	if c := cmp.Compare(y.score, x.score); c != 0 {
		return c
	}
	if c := cmp.Compare(y.a.Last, x.a.Last); c != 0 {
		return c
	}
	return strings.Compare(x.a.ID, y.a.ID)
}

// A section stops trying candidates when less than minItem tokens are
// left or maxMisses of them in a row did not fit.
const (
	minItem   = 8
	maxMisses = 8
)

// fill takes the ranked candidates that fit the section budget, in rank
// order; the rest go to spare.
func fill(cs []cand, budget int, item func(*engine.Artifact) Item, spare []cand, omitted map[string]int, section string) ([]Item, []cand) {
	var out []Item
	used, misses := 0, 0
	seen := map[string]bool{}
	for _, c := range cs {
		// The same statement made in several sessions is one item: the
		// best ranked (the session's own, else the latest).
		if t := oneLine(strings.ToLower(item(c.a).Text)); seen[t] {
			continue
		} else {
			seen[t] = true
		}
		if budget-used < minItem || misses >= maxMisses {
			// Full: the rest are pointers, not worth tokenizing.
			spare = append(spare, c)
			omitted[section]++
			continue
		}
		it := item(c.a)
		if c.from {
			it.From = origin(c.a)
		}
		it.Score = round(c.score)
		it.Tokens = count(renderItem(it))
		if used+it.Tokens > budget {
			spare = append(spare, c)
			omitted[section]++
			misses++
			continue
		}
		used, misses = used+it.Tokens, 0
		out = append(out, it)
	}
	return out, spare
}

// origin says which earlier session an item comes from, and when it was
// last stated there.
func origin(a *engine.Artifact) string {
	s := "session " + a.Session
	if a.Last != 0 {
		s += ", " + time.Unix(0, a.Last).UTC().Format("2006-01-02")
	}
	return s
}

func decisionItem(a *engine.Artifact) Item {
	it := Item{ID: a.ID, Text: a.Title, Task: a.Task}
	if a.Decision != nil {
		it.Text = a.Decision.Statement
		it.Note = a.Decision.Rationale
	}
	it.Text, it.Note = clip(it.Text), clip(it.Note)
	return it
}

func constraintItem(a *engine.Artifact) Item {
	it := Item{ID: a.ID, Text: a.Title, Task: a.Task}
	if a.Constraint != nil {
		it.Text = a.Constraint.Statement
		if a.Constraint.Scope == "session" {
			it.Note = "session-wide"
		} else if a.Task != "" {
			it.Note = "in " + a.Task
		}
	}
	it.Text = clip(it.Text)
	return it
}

func threadItem(a *engine.Artifact) Item {
	it := Item{ID: a.ID, Text: a.Title, Task: a.Task}
	if t := a.Thread; t != nil {
		it.Text = t.Kind + ": " + t.Text
		switch {
		case t.File != "":
			it.Note = t.File
		case t.Test != "":
			it.Note = t.Test
		}
	}
	it.Text, it.Note = clip(it.Text), clip(it.Note)
	return it
}

// taskItem summarizes an outcome in one to three bullets.
func taskItem(a *engine.Artifact) TaskItem {
	o := a.Outcome
	t := TaskItem{ID: a.ID, Task: a.Task, Status: o.Status}
	if t.Task == "" {
		t.Task = fmt.Sprintf("task %d", a.TaskN)
	}
	for _, s := range o.Summary {
		if s = clip(oneLine(s)); s != "" && len(t.Bullets) < 2 {
			t.Bullets = append(t.Bullets, s)
		}
	}
	if len(t.Bullets) == 0 && o.Prompt != "" {
		t.Bullets = append(t.Bullets, "asked: "+clip(oneLine(o.Prompt)))
	}
	if o.Status != "success" && o.Reason != "" {
		t.Bullets = append(t.Bullets, o.Status+": "+clip(oneLine(o.Reason)))
	}
	for _, f := range o.Files {
		if len(t.Files) == 6 {
			break
		}
		if !slices.Contains(t.Files, f.Path) {
			t.Files = append(t.Files, f.Path)
		}
	}
	return t
}

// query is the task description, as terms.
type query struct {
	// terms numbers the task's terms; seen marks, per artifact scored,
	// the terms found (stamped with gen, so it is never cleared).
	terms map[string]int
	seen  []int
	gen   int
	buf   []byte // reused for the text scored
}

func newQuery(task string) *query {
	q := &query{terms: map[string]int{}}
	eachWord([]byte(task), func(w []byte) {
		if len(w) > 1 && !stop[string(w)] {
			if _, ok := q.terms[string(w)]; !ok {
				q.terms[string(w)] = len(q.terms)
			}
		}
	})
	q.seen = make([]int, len(q.terms))
	return q
}

// score ranks an artifact for the task: keyword overlap with its text,
// file and symbol affinity, the type weight, recency by task and a pin.
func score(q *query, a *engine.Artifact, weight float64, lastN int) float64 {
	rel := 0.0
	if len(q.terms) > 0 {
		q.gen++
		hits := 0
		match := func(w []byte) {
			if i, ok := q.terms[string(w)]; ok && q.seen[i] != q.gen {
				q.seen[i] = q.gen
				hits++
			}
		}
		q.buf = append(q.buf[:0], a.Title...)
		eachWord(q.buf, match)
		if a.Text != a.Title {
			q.buf = append(q.buf[:0], a.Text...)
			eachWord(q.buf, match)
		}
		rel = float64(hits) / math.Sqrt(float64(len(q.terms)))
		aff := 0
		for _, list := range [][]string{a.Files, a.Symbols} {
			for _, f := range list {
				if q.has(f) || q.has(base(f)) {
					aff++
				}
			}
		}
		rel += 1.5 * float64(min(aff, 3))
	}
	recency := 1.0
	if lastN > 0 && a.TaskN > 0 {
		recency = 1 / (1 + 0.15*float64(lastN-a.TaskN))
	}
	s := weight * (1 + 2*rel) * (0.5 + 0.5*recency)
	if a.Pinned {
		s *= 1.5
	}
	return s
}

// has reports whether the task names s (case-insensitively).
func (q *query) has(s string) bool {
	if _, ok := q.terms[s]; ok {
		return true
	}
	_, ok := q.terms[strings.ToLower(s)]
	return ok
}

func base(path string) string {
	if i := strings.LastIndexAny(path, "/\\"); i >= 0 {
		return path[i+1:]
	}
	return path
}

func round(f float64) float64 { return math.Round(f*1000) / 1000 }

// eachWord calls f with each lowercased word of s: runs of letters,
// digits and _ . / - (so paths and dotted names stay whole), and each
// part of such a run split at its punctuation. It lowercases s in place
// (callers pass a copy); f must not keep the word.
func eachWord(s []byte, f func([]byte)) {
	punct := func(c byte) bool { return c == '.' || c == '_' || c == '/' || c == '-' }
	emit := func(w []byte) {
		for len(w) > 0 && punct(w[0]) {
			w = w[1:]
		}
		for len(w) > 0 && punct(w[len(w)-1]) {
			w = w[:len(w)-1]
		}
		if len(w) == 0 {
			return
		}
		f(w)
		if !slices.ContainsFunc(w, punct) {
			return
		}
		start := 0
		for i := 0; i <= len(w); i++ {
			if i == len(w) || punct(w[i]) {
				if i > start {
					f(w[start:i])
				}
				start = i + 1
			}
		}
	}
	start := -1
	for i := 0; i <= len(s); i++ {
		if i < len(s) {
			c := s[i]
			if c >= 'A' && c <= 'Z' {
				s[i] = c + 'a' - 'A'
				c = s[i]
			}
			if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || punct(c) || c >= 0x80 {
				if start < 0 {
					start = i
				}
				continue
			}
		}
		if start >= 0 {
			emit(s[start:i])
			start = -1
		}
	}
}

var stop = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`the a an and or of to in on for with by at from as is are was were be been it its this that these those
		we you i he she they them our your us me my not no do does did done have has had will would should could can may might must
		into onto about over under then than so if else when what which who how why where all any each some more most other such
		only own same too very just also now new add adds added make use using used please task tasks work let lets get set up`) {
		stop[w] = true
	}
}

// clip caps an item's text.
func clip(s string) string { return truncChars(oneLine(s), maxItemText) }

// oneLine folds whitespace runs, newlines included, into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// truncChars cuts s to at most n bytes at a word boundary, marking the cut.
func truncChars(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := s[:n]
	for len(cut) > 0 && cut[len(cut)-1]&0xC0 == 0x80 {
		cut = cut[:len(cut)-1] // do not split a UTF-8 sequence
	}
	if len(cut) > 0 && cut[len(cut)-1] >= 0xC0 {
		cut = cut[:len(cut)-1]
	}
	if i := strings.LastIndexByte(cut, ' '); i > n/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ") + "…"
}

// halve cuts s to about half, or to nothing when it is short.
func halve(s string) string {
	if len(s) < 32 {
		return ""
	}
	return truncChars(s, len(s)/2)
}

// truncTokens cuts s to at most n tokens.
func truncTokens(s string, n int) string {
	for count(s) > n {
		s = truncChars(s, len(s)*9/10)
	}
	return s
}

// spill adds to their sections the decisions, constraints and open
// threads of spare, best ranked first, while the pack stays within its
// total budget less what pointers may take; it returns what is still
// left over.
func (p *Pack) spill(spare []cand, b Budget) []cand {
	slices.SortFunc(spare, byScore)
	md := p.Markdown()
	room := b.Total - b.Pointers - count(md)
	chars := b.MaxChars - len(md) - 4*b.Pointers
	var rest []cand
	seen := map[string]bool{}
	for _, it := range slices.Concat(p.Decisions, p.Constraints, p.Threads) {
		seen[oneLine(strings.ToLower(it.Text))] = true
	}
	for _, c := range spare {
		var item func(*engine.Artifact) Item
		var section *[]Item
		var name string
		switch c.a.Type {
		case engine.ArtifactDecision:
			item, section, name = decisionItem, &p.Decisions, "decisions"
		case engine.ArtifactConstraint:
			item, section, name = constraintItem, &p.Constraints, "constraints"
		case engine.ArtifactThread:
			item, section, name = threadItem, &p.Threads, "open_threads"
		default:
			rest = append(rest, c)
			continue
		}
		if name == "decisions" && b.Decisions == 0 || name == "constraints" && b.Constraints == 0 || name == "open_threads" && b.Threads == 0 || room < minItem {
			rest = append(rest, c)
			continue
		}
		it := item(c.a)
		if t := oneLine(strings.ToLower(it.Text)); seen[t] {
			continue
		}
		if c.from {
			it.From = origin(c.a)
		}
		it.Score = round(c.score)
		r := renderItem(it)
		it.Tokens = count(r)
		if it.Tokens > room || len(r)+1 > chars {
			rest = append(rest, c)
			continue
		}
		seen[oneLine(strings.ToLower(it.Text))] = true
		room, chars = room-it.Tokens, chars-len(r)-1
		*section = append(*section, it)
		p.Omitted[name]--
		if p.Omitted[name] == 0 {
			delete(p.Omitted, name)
		}
	}
	return rest
}
