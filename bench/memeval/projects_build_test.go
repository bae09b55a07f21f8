package memeval

import (
	"fmt"
	"strings"
	"time"
)

// The projects set is a second, harder evaluation: many projects, each
// in its own working directory with two or three sessions over days,
// written in the style of real work. Each thing a next task should know
// (or must not be misled by) is a fact card in testdata/projects/facts.json,
// generated from the cards declared beside the sessions below
// (go test -run TestProjectsFacts ./bench/memeval -update). The queries
// are written by someone else from the cards' about lines alone, in
// testdata/projects/queries.json.

// Card kinds and the artifact type each is answered by.
const (
	kindDecision   = "decision"
	kindConstraint = "constraint"
	kindThread     = "thread"
	kindOutcome    = "outcome"
	kindChange     = "change"
)

// factCard is one fact of one project.
type factCard struct {
	ID      string `json:"id"`
	Project string `json:"project"`
	Session string `json:"session"`
	Kind    string `json:"kind"`
	// Status is the status the fact's artifact must have now: active or
	// superseded (decision, constraint), open or closed (thread),
	// success or fail (outcome, change).
	Status string `json:"status"`
	// About says what the fact is about, in words other than the
	// session's, for whoever writes the queries.
	About string `json:"about"`
	// Contains is an exact substring of the session's text that the
	// fact's artifact holds (title, text or files).
	Contains     string   `json:"contains"`
	Supersedes   []string `json:"supersedes,omitempty"`
	SupersededBy []string `json:"superseded_by,omitempty"`
	Closes       []string `json:"closes,omitempty"`
	ClosedBy     []string `json:"closed_by,omitempty"`
	// CrossSession is set when the fact's status depends on a later
	// session of the project.
	CrossSession bool `json:"cross_session,omitempty"`
	// Tags say how the fact was stated (see cardTags) and how it
	// changed: reversal, closed-later, cross-session.
	Tags []string `json:"tags,omitempty"`
	// InPack is set when the pack of a new session of the project must
	// carry the fact: decisions and constraints in force, open threads.
	InPack bool `json:"in_pack"`
}

// distractor is text a session holds that must not become memory of a
// kind: what the user never stated as theirs (a system reminder, a
// subagent prompt, pasted documentation, tool output, a plain
// description) must not become a decision or a constraint; assistant
// narration of a step it then took, or a lesson learned, must not stay
// an open thread. Neither may reach the pack.
type distractor struct {
	ID       string `json:"id"`
	Project  string `json:"project"`
	Session  string `json:"session"`
	About    string `json:"about"`
	Contains string `json:"contains"`
	// Not is what the text must not become: "rule" (a decision or a
	// constraint) or "thread" (an open thread still open).
	Not string `json:"not"`
}

// projectInfo names a project's sessions, oldest first, and the id of
// the empty new session the pack is asked for.
type projectInfo struct {
	Name     string   `json:"name"`
	Cwd      string   `json:"cwd"`
	Sessions []string `json:"sessions"`
	Next     string   `json:"next_session"`
}

// factsFile is testdata/projects/facts.json.
type factsFile struct {
	Projects    []projectInfo `json:"projects"`
	Cards       []factCard    `json:"cards"`
	Distractors []distractor  `json:"distractors"`
}

// proj builds one project: its sessions and its cards.
type proj struct {
	n     int
	name  string
	cwd   string
	logs  []*claudeLog
	cards []*factCard
	not   []distractor
}

func newProj(n int, name string) *proj {
	return &proj{n: n, name: name, cwd: "/home/dev/" + name}
}

// sessionID is the uuid of the s-th session (1-based) of project n;
// session 9 is the new session the pack is asked for.
func sessionID(n, s int) string {
	return fmt.Sprintf("e%02d%02d%03d-7e57-4c0d-8a11-%012d", n, s, n*10+s, n*100+s)
}

// session starts the project's next session.
func (p *proj) session(start time.Time) *claudeLog {
	l := newClaudeLog(sessionID(p.n, len(p.logs)+1), start)
	l.cwd = p.cwd
	p.logs = append(p.logs, l)
	return l
}

func (p *proj) cur() string { return "claude:" + p.logs[len(p.logs)-1].session }

// fact declares a card from the current session.
func (p *proj) fact(id, kind, status, about, contains string) *factCard {
	c := &factCard{ID: p.name + "/" + id, Project: p.cwd, Session: p.cur(), Kind: kind, Status: status, About: about, Contains: contains}
	c.InPack = (kind == kindDecision || kind == kindConstraint) && status == "active" || kind == kindThread && status == "open"
	p.cards = append(p.cards, c)
	return c
}

func (p *proj) decision(id, status, about, contains string) *factCard {
	return p.fact(id, kindDecision, status, about, contains)
}

func (p *proj) rule(id, status, about, contains string) *factCard {
	return p.fact(id, kindConstraint, status, about, contains)
}

func (p *proj) thread(id, status, about, contains string) *factCard {
	return p.fact(id, kindThread, status, about, contains)
}

func (p *proj) outcome(id, status, about, contains string) *factCard {
	return p.fact(id, kindOutcome, status, about, contains)
}

func (p *proj) change(id, about, file string) *factCard {
	return p.fact(id, kindChange, "success", about, file)
}

// distract declares text of the current session that is not the user's.
func (p *proj) distract(id, about, contains string) {
	p.not = append(p.not, distractor{ID: p.name + "/" + id, Project: p.cwd, Session: p.cur(), About: about, Contains: contains, Not: "rule"})
}

// distractThread declares text of the current session that must not
// stay an open thread.
func (p *proj) distractThread(id, about, contains string) {
	p.not = append(p.not, distractor{ID: p.name + "/" + id, Project: p.cwd, Session: p.cur(), About: about, Contains: contains, Not: "thread"})
}

func (p *proj) card(id string) *factCard {
	for _, c := range p.cards {
		if c.ID == p.name+"/"+id {
			return c
		}
	}
	panic("no card " + p.name + "/" + id)
}

// replaces records that card newID supersedes card oldID.
func (p *proj) replaces(newID, oldID string) {
	n, o := p.card(newID), p.card(oldID)
	n.Supersedes = append(n.Supersedes, o.ID)
	o.SupersededBy = append(o.SupersededBy, n.ID)
	o.CrossSession = o.CrossSession || n.Session != o.Session
}

// closes records that card newID (an outcome or decision) closes thread
// oldID.
func (p *proj) closes(newID, oldID string) {
	n, o := p.card(newID), p.card(oldID)
	n.Closes = append(n.Closes, o.ID)
	o.ClosedBy = append(o.ClosedBy, n.ID)
	o.CrossSession = o.CrossSession || n.Session != o.Session
}

// task is a subagent launched with the Task tool: its prompt is the
// agent's instruction to the subagent, not the user's.
func (l *claudeLog) task(desc, agent, prompt, result string) {
	l.call("", "Task", map[string]any{"description": desc, "subagent_type": agent, "prompt": prompt}, result, false)
}

// askUser asks through the AskUserQuestion tool; the user's choice comes
// back as the tool's result.
func (l *claudeLog) askUser(text, header, question string, options []string, answer string) {
	var opts []map[string]any
	for _, o := range options {
		opts = append(opts, map[string]any{"label": o, "description": ""})
	}
	l.call(text, "AskUserQuestion", map[string]any{"questions": []any{map[string]any{
		"question": question, "header": header, "options": opts, "multiSelect": false}}},
		fmt.Sprintf("User has answered your questions: %q=%q. You can now continue with the user's answers in mind.", question, answer), false)
}

// plan proposes a plan with ExitPlanMode, which the user approves.
func (l *claudeLog) plan(plan string) {
	l.call("", "ExitPlanMode", map[string]any{"plan": plan},
		"User has approved your plan. You can now start coding. Start with updating your todo list if applicable\n\n## Approved Plan:\n"+plan, false)
}

// reminder is a system reminder Claude Code adds as a meta user line.
func (l *claudeLog) reminder(text string) {
	l.add(map[string]any{"type": "user", "isMeta": true, "message": map[string]any{"role": "user",
		"content": "<system-reminder>\n" + text + "\n</system-reminder>"}})
}

// compact writes a compaction: the boundary and the summary that
// continues the conversation.
func (l *claudeLog) compact(summary string) {
	l.add(map[string]any{"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted", "level": "info",
		"compactMetadata": map[string]any{"trigger": "auto", "preTokens": 161234}})
	l.add(map[string]any{"type": "user", "isCompactSummary": true, "message": map[string]any{"role": "user",
		"content": "This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\n" + summary}})
}

// day is a date at a time of day in UTC.
func day(m time.Month, d, h, min int) time.Time { return time.Date(2026, m, d, h, min, 0, 0, time.UTC) }

// lines joins lines with newlines.
func lines(s ...string) string { return strings.Join(s, "\n") }
