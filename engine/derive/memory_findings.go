package derive

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/bbengine/bbengine/internal/memtext"
)

// findings takes the decisions, constraints and prose threads of one
// message or system prompt.
//
// Only the user's own words are the user's: what a person typed in a
// prompt of the session's own threads (not a system reminder, hook
// output or pasted document, which promptText and typedText remove).
// Answers through a question tool, approved plans and the reasons for
// rejected tool calls come through toolAnswers. The prompt the agent
// gives a subagent or teammate is the agent's: its rules hold for that
// agent only (scope subagent); the rest of a subagent's conversation is
// not mined. A compaction summary is the agent's account of the work:
// its list of work still to do becomes threads, its choices the agent's
// decisions.
func (m *miner) findings(t *mtask, ev *Event) {
	role := ev.Role
	if ev.Kind == KindSystem {
		role = "system"
	}
	if role == "system" && agentCLI(m.s) {
		// A coding agent's own system text (tool and skill listings) is
		// the same boilerplate in every session.
		return
	}
	if ev.Kind == KindMessage && !m.ownThread(ev.Thread) {
		if ev.Role == "user" && m.delegated(ev.Thread) {
			// The parent agent's prompt to a subagent or teammate: its
			// rules hold for that agent (scope subagent), its choices are
			// the parent agent's.
			if text := promptText(ev); strings.TrimSpace(text) != "" {
				m.mine(t, ev, "assistant", "subagent prompt", m.text(text), false)
			}
		}
		return
	}
	var text string
	switch {
	case role == "user" && ev.Meta == "compact_summary":
		// The summary is the agent's account of its work: its choices
		// are the agent's decisions; the user's words it quotes are not
		// the user's saying them again.
		text := m.text(ev.Text)
		m.summaryTodos(t, ev, text)
		m.mine(t, ev, "assistant", "summary", text, true)
		return
	case role == "user":
		text = typedText(promptText(ev))
	case role == "assistant" || role == "system":
		text = ev.Text
	}
	if strings.TrimSpace(text) == "" {
		return
	}
	text = m.text(text)
	m.mine(t, ev, role, "", text, false)
	if role == "assistant" {
		for _, item := range memtext.TodoList(text) {
			m.todoItem(t, ev, item)
		}
		if memtext.AllDone(text) {
			for _, o := range m.list(m.threads) {
				a := m.threads[o.ID]
				if a.Status == "open" && (a.Thread.Kind == "todo" || a.Thread.Kind == "blocker") && a.Thread.File == "" && a.Evidence[0].Seq < ev.Seq {
					m.close(a, ev, "the agent reported the work done: "+capText(firstLine(text, 160), 160))
				}
			}
		} else {
			// "The migration files are renamed to tern's layout" closes
			// "todo: rename the .up.sql files to tern's layout". Each
			// thread is judged on its own, so the map's order does not
			// matter, and the message is read once, when a TODO is open.
			var r *memtext.Report
			for _, a := range m.threads {
				if a.Status == "open" && a.Thread.Kind == "todo" && a.Thread.File == "" && a.Evidence[0].Seq < ev.Seq {
					if r == nil {
						r = memtext.ReadReport(text)
					}
					if r.Done(a.Thread.Text) {
						m.close(a, ev, "the agent reported it done: "+capText(firstLine(text, 160), 160))
					}
				}
			}
		}
	}
}

// mine files the findings of text, said by role (via says how, for the
// user's words that are no typed prompt); decisionsOnly keeps only the
// decisions (of an approved plan).
func (m *miner) mine(t *mtask, ev *Event, role, via, text string, decisionsOnly bool) {
	read := role
	if via == "subagent prompt" {
		// A prompt reads like a user's: imperatives are instructions.
		read = "user"
	}
	for _, f := range memtext.Find(text, memtext.FindOptions{Role: read, Plan: via == "plan", Delegated: via == "subagent prompt"}) {
		switch string(f.Type) {
		case "decision":
			m.decision(t, ev, role, via, f)
		case "constraint":
			if !decisionsOnly {
				m.constraint(t, ev, role, via, f)
			}
		case "todo", "fixme", "blocker":
			if role == "assistant" && via == "" {
				m.proseThread(t, ev, f)
			}
		case "wait":
			if role == "user" && via == "" && !decisionsOnly {
				m.waitThread(t, ev, f)
			}
		case "question":
			// A question the user leaves open on purpose ("… Leave it
			// open."); Find reports a user's question only then.
			if role == "user" && (via == "" || via == "question tool") && !decisionsOnly {
				m.userQuestion(t, ev, f)
			}
		}
		if role == "assistant" && via == "" {
			m.resolveProse(ev, f)
		}
	}
	if role == "user" && via == "" {
		// "Finance signed off yesterday" closes "waiting: finance signs
		// off" (each thread on its own, as above).
		var r *memtext.Report
		for _, a := range m.threads {
			if a.Status == "open" && a.Thread.Kind == "waiting" && a.Evidence[0].Seq < ev.Seq {
				if r == nil {
					r = memtext.ReadReport(text)
				}
				if r.Met(a.Thread.Text) {
					m.close(a, ev, "the user says it happened: "+capText(firstLine(text, 160), 160))
				}
			}
		}
	}
}

// waitThread opens a thread for a condition the user holds something
// back for ("until finance signs off").
func (m *miner) waitThread(t *mtask, ev *Event, f memtext.Finding) {
	if !m.ownThread(ev.Thread) {
		return
	}
	m.openThread(t, ev, artifactID("thr", m.s.ID, "waiting", f.Key), "waiting", "waiting until ", f.Sentence)
}

// openThread opens thread id of kind, titled prefix+text, unless it is
// open already.
func (m *miner) openThread(t *mtask, ev *Event, id, kind, prefix, text string) {
	if _, ok := m.threads[id]; ok {
		return
	}
	a := m.base(ArtifactThread, id, t, ev)
	a.Status = "open"
	a.Thread = &Thread{Kind: kind, Text: text}
	a.Title = capText(prefix+text, 160)
	a.Symbols = memtext.Identifiers(text)
	m.threads[id] = a
}

// ownThread reports whether thread th is one of the session's own
// conversations: a main thread that is not a subagent's.
func (m *miner) ownThread(th int) bool {
	if m.agentThread(th) {
		return false
	}
	// An imported session's busiest thread may be a subagent's; its
	// first thread is then the session's own.
	return m.isMain(th) || th == 1 && m.agentThread(m.main)
}

// delegated reports whether thread th is a subagent or teammate that the
// session's agent started with a prompt of its own (not the agent
// harness's compaction agent, whose prompt is boilerplate).
func (m *miner) delegated(th int) bool {
	for _, a := range m.s.Agents {
		if a.Thread == th && th != 1 {
			return !strings.HasPrefix(a.ID, "acompact")
		}
	}
	return false
}

// agentThread reports whether thread th is a subagent's or teammate's.
func (m *miner) agentThread(th int) bool {
	for _, a := range m.s.Agents {
		if a.Thread == th && th != 1 {
			return true
		}
	}
	return false
}

// typedText returns what the user typed of a prompt: a document pasted
// after a short lead-in ("Does this doc page help?", "Man page:") is
// evidence, not the user's words, so the long tail after a lead-in
// ending in ':' or '?' is cut, keeping a short closing paragraph.
func typedText(p string) string {
	const pasted = 1500
	if len(p) < pasted {
		return p
	}
	paras := strings.Split(p, "\n\n")
	n := 0
	for i, para := range paras {
		n += len(para) + 2
		t := strings.TrimSpace(para)
		if (strings.HasSuffix(t, ":") || strings.HasSuffix(t, "?")) && leadIn(t) {
			if len(p)-n >= pasted {
				kept := strings.Join(paras[:i+1], "\n\n")
				if last := strings.TrimSpace(paras[len(paras)-1]); len(paras) > i+2 && len(last) < 300 && !strings.HasSuffix(last, ":") {
					kept += "\n\n" + last
				}
				return kept
			}
		}
		if n > 2*pasted {
			break
		}
	}
	return p
}

// leadIn reports whether a paragraph introduces something pasted: it
// names a document, output or message ("does this doc page help?", "Man
// page:", "here's the log:", "this is their analysis").
func leadIn(p string) bool {
	l := strings.ToLower(p)
	for _, w := range []string{"doc", "page", "output", "log", "error", "trace", "here is", "here's", "below", "paste",
		"article", "readme", "spec", "transcript", "email", "message", "analysis", "review", "this is", "manual", "reference"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// summaryTodos opens a thread for each item of a compaction summary's
// list of work still to do, and closes the items of earlier summaries
// this one no longer lists.
func (m *miner) summaryTodos(t *mtask, ev *Event, text string) {
	items := memtext.TodoList(text)
	keep := map[string]bool{}
	for _, item := range items {
		keep[artifactID("thr", m.s.ID, "todo", memtext.Normalize(item))] = true
	}
	for _, o := range m.list(m.threads) {
		a := m.threads[o.ID]
		if a.Status == "open" && a.Thread.From == "summary" && !keep[a.ID] {
			m.close(a, ev, "a later summary no longer lists it")
		}
	}
	for _, item := range items {
		a := m.todoItem(t, ev, item)
		a.Thread.From = "summary"
	}
}

// todoItem opens a thread for an item of a list of work still to do, or
// restates the open one that says the same in other words.
func (m *miner) todoItem(t *mtask, ev *Event, item string) *Artifact {
	f := memtext.Finding{Type: memtext.TypeTodo, Sentence: item, Key: memtext.Normalize(item)}
	if m.threads[artifactID("thr", m.s.ID, "todo", f.Key)] == nil {
		terms := itemTerms(item)
		for _, o := range m.list(m.threads) {
			a := m.threads[o.ID]
			if a.Status == "open" && a.Thread.Kind == "todo" && a.Thread.File == "" && similar(terms, itemTerms(a.Thread.Text)) {
				a.Last = ev.Time
				if len(a.Evidence) < 32 {
					a.Evidence = append(a.Evidence, evidence(ev))
				}
				return a
			}
		}
	}
	return m.proseThread(t, ev, f)
}

// itemTerms returns the terms of a list item with "add/update" split in
// two, sorted and unique.
func itemTerms(s string) []string {
	var out []string
	for _, t := range memtext.Terms(s) {
		if strings.Contains(t, "/") && !strings.Contains(t, ".") {
			out = append(out, strings.Split(t, "/")...)
			continue
		}
		out = append(out, t)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// toolAnswers takes the user's words that come back through a tool
// result: the answers to a question tool (AskUserQuestion), a plan the
// user approved (ExitPlanMode: its choices are decisions), and the reason
// the user gave for rejecting a tool call.
func (m *miner) toolAnswers(t *mtask, call, res *Event) {
	if call.Tool == nil || res == nil || res.Tool == nil || !m.ownThread(call.Thread) {
		return
	}
	text := m.text(res.Text)
	const why = "The user provided the following reason for the rejection:"
	if i := strings.Index(text, why); i >= 0 {
		m.mine(t, res, "user", "rejection", strings.TrimSpace(text[i+len(why):]), false)
		return
	}
	if res.Tool.IsError {
		return
	}
	switch call.Tool.Name {
	case "AskUserQuestion":
		args := m.argsOf(call)
		for _, qa := range memtext.ToolAnswers(text) {
			m.answer(t, res, qa[0], qa[1], questionHeader(args, qa[0]))
			// The question was a thread from the call to the answer.
			id := artifactID("thr", m.s.ID, "question", fmt.Sprint(call.Seq), memtext.Normalize(qa[0]))
			q := m.base(ArtifactThread, id, t, call)
			q.Thread = &Thread{Kind: "question", Text: capText(qa[0], 400)}
			q.Title = capText("question: "+qa[0], 160)
			q.Symbols = memtext.Identifiers(qa[0])
			m.close(q, res, "the user answered: "+capText(qa[1], 160))
			m.threads[id] = q
		}
	case "ExitPlanMode":
		if !strings.Contains(text, "approved your plan") {
			return
		}
		if plan := str(m.argsOf(call), "plan"); plan != "" {
			m.mine(t, res, "user", "plan", m.text(plan), true)
		}
	}
}

// questionHeader returns the header of the question q in an
// AskUserQuestion call's arguments, or "".
func questionHeader(args map[string]any, q string) string {
	qs, _ := args["questions"].([]any)
	for _, x := range qs {
		if o, ok := x.(map[string]any); ok && str(o, "question") == q {
			return str(o, "header")
		}
	}
	return ""
}

// answer files the user's answer a to the question q: the decisions and
// rules it states, or else the answer itself as the user's choice.
func (m *miner) answer(t *mtask, ev *Event, q, a, header string) {
	found := false
	// A short answer is an option's label ("Tempo via OTLP", "Yes,
	// versioned with the code"): the choice itself, not a sentence to
	// read for decisions.
	label := len(strings.Fields(a)) <= 5 && !strings.ContainsAny(a, ".;")
	for _, f := range memtext.Find(a, memtext.FindOptions{Role: "user"}) {
		if label {
			break
		}
		switch string(f.Type) {
		case "decision":
			if f.Subject == "" {
				f.Subject, f.SubjectFrom = memtext.SubjectOf(q, header)
			}
			if f.Context == "" {
				// What the answer is about: the question.
				f.Context = capText(strings.TrimSpace(q), 300)
			}
			m.decision(t, ev, "user", "answer", f)
			found = true
		case "constraint":
			m.constraint(t, ev, "user", "answer", f)
			found = true
		}
	}
	if found || strings.TrimSpace(a) == "" {
		return
	}
	f := memtext.Finding{Type: memtext.TypeDecision, Sentence: capText(strings.TrimSpace(a)+" (answer to: "+strings.TrimSpace(q)+")", 400),
		Key: memtext.Normalize(q + " " + a), Chooses: []string{strings.ToLower(capText(strings.TrimSpace(a), 120))}}
	f.Subject, f.SubjectFrom = memtext.SubjectOf(q, header)
	m.decision(t, ev, "user", "answer", f)
}

func (m *miner) base(typ ArtifactType, id string, t *mtask, ev *Event) *Artifact {
	return &Artifact{ID: id, Type: typ, Session: m.s.ID, Task: t.id, TaskN: t.n, Run: t.run, First: ev.Time, Last: ev.Time,
		Evidence: []Evidence{evidence(ev)}}
}

// decision adds or restates a decision, and supersedes what it replaces.
func (m *miner) decision(t *mtask, ev *Event, role, via string, f memtext.Finding) {
	key := f.Key
	if key == "" {
		key = memtext.Normalize(f.Sentence)
	}
	if f.Settings {
		// One decision per setting: a later request may change the
		// learning rate and keep the precision.
		for _, item := range f.Chooses {
			g := f
			g.Settings, g.Chooses = false, []string{item}
			g.Subject, g.SubjectFrom = memtext.SettingName(item), "a setting of a task request"
			if !strings.ContainsAny(item, "0123456789") && !strings.HasSuffix(f.Subject, " settings") {
				// "keyed per user id" under "Rate limiting:" is about the
				// label's job: the rate limit key.
				if r, _ := memtext.SubjectOf(f.Subject, ""); r != "" && r != f.Subject {
					g.Subject, g.SubjectFrom = r, "a setting of a list labelled "+strconv.Quote(f.Subject)
				}
			}
			g.Key = key + "\x00" + item
			m.settingDecision(t, ev, role, via, g, item)
		}
		return
	}
	m.settingDecision(t, ev, role, via, f, "")
}

// settingDecision adds or restates the decision of finding f, which is
// the one setting named when setting is not "".
func (m *miner) settingDecision(t *mtask, ev *Event, role, via string, f memtext.Finding, setting string) {
	key := f.Key
	if key == "" {
		key = memtext.Normalize(f.Sentence)
	}
	id := artifactID("dec", m.s.ID, key)
	if a := m.decisions[id]; a != nil {
		a.Last = ev.Time
		a.Decision.Count++
		if len(a.Evidence) < 32 {
			a.Evidence = append(a.Evidence, evidence(ev))
		}
		if a.Status == "superseded" {
			// Stated again after being replaced: in force again, and it
			// replaces what replaced it.
			m.supersede(a)
		}
		return
	}
	a := m.base(ArtifactDecision, id, t, ev)
	a.Status = "active"
	a.Decision = &Decision{Statement: f.Sentence, Rationale: f.Rationale, Context: f.Context, Subject: f.Subject, SubjectFrom: f.SubjectFrom,
		Chooses: f.Chooses, Replaces: f.Replaces, Role: role, Count: 1, Via: via, Setting: setting}
	a.Title = capText(f.Sentence, 160)
	if setting != "" {
		a.Decision.Head = f.Head
		a.Title = capText(setting+": "+settingOf(a.Decision), 160)
	}
	a.Symbols = memtext.Identifiers(f.Sentence + " " + f.Rationale + " " + f.Context)
	m.decisions[id] = a
	m.supersede(a)
}

// supersede marks the active decisions that a replaces as superseded.
func (m *miner) supersede(a *Artifact) {
	d := a.Decision
	for _, o := range m.list(m.decisions) {
		old := m.decisions[o.ID]
		if old == a || old.Status != "active" || !conflicts(d, old.Decision) {
			continue
		}
		old.Status = "superseded"
		old.Decision.SupersededBy = a.ID
		d.Supersedes = addUnique(d.Supersedes, old.ID)
		d.SupersedesWhy = conflictWhy(d, old.Decision)
	}
	a.Status = "active"
	d.SupersededBy = ""
}

// conflicts reports whether decision d replaces the earlier decision e:
// both name the same subject with a different choice, or d drops an
// option e took.
func conflicts(d, e *Decision) bool {
	if d.Subject != "" && d.Subject == e.Subject && !(quantityOnly(d) && namesTool(e) || namesTool(d) && quantityOnly(e)) {
		// The same choice restated in other words is no replacement;
		// nor is a quantity a replacement of a named choice on a subject
		// read from a word both mention ("go down to 5% for the traces"
		// and "Tempo via OTLP" are both about tracing).
		return len(d.Chooses) == 0 || !sameChoice(d.Chooses, e.Chooses)
	}
	if _, ok := valueChange(d, e); ok {
		return true
	}
	if negates(said(d), said(e)) {
		return true
	}
	if _, ok := insteadOf(said(d), said(e)); ok {
		return true
	}
	terms := memtext.Terms(said(e))
	for _, r := range d.Replaces {
		for _, c := range e.Chooses {
			if r == c {
				return true
			}
		}
		for _, w := range terms {
			if r == w {
				return true
			}
		}
	}
	return false
}

// conflictWhy says why d replaces e, for a person: the subject they
// share and the choices, or the option d drops.
func conflictWhy(d, e *Decision) string {
	if d.Subject != "" && d.Subject == e.Subject {
		why := "same subject, " + d.Subject
		if len(d.Chooses) > 0 && len(e.Chooses) > 0 {
			why += ": " + d.Chooses[0] + " instead of " + e.Chooses[0]
		}
		return why
	}
	if why, ok := valueChange(d, e); ok {
		return why
	}
	if negates(said(d), said(e)) {
		return "says not to do what it chose"
	}
	if y, ok := insteadOf(said(d), said(e)); ok {
		return "instead of " + y
	}
	for _, r := range d.Replaces {
		return "drops " + r
	}
	return ""
}

// valueChange reports whether decision d sets anew a quantity e set: both
// state a value of one kind ("30 seconds", "5 minutes"), the values
// differ, and d either shares a word with e ("memory"), changes the value
// relative to what it was ("go down to 5%"), or follows a sentence that
// quotes e's value ("30s is too chatty. Make it 5 minutes."). It says so
// for a person: "10% -> 5%".
func valueChange(d, e *Decision) (string, bool) {
	dv := memtext.Values(said(d))
	if len(dv) == 0 {
		return "", false
	}
	ev := memtext.Values(said(e))
	for _, x := range dv {
		for _, y := range ev {
			if !memtext.Comparable(x, y) || memtext.SameQuantity(x, y) || slices.ContainsFunc(ev, func(v memtext.Value) bool { return memtext.SameQuantity(v, x) }) {
				continue
			}
			if memtext.RelativeChange(d.Statement) || sharesSettingWord(d, e, x.Unit) || quotes(d.Context, y) {
				return fmt.Sprintf("the same quantity set anew: %s%s, was %s%s", x.Num, unitText(x.Unit), y.Num, unitText(y.Unit)), true
			}
		}
	}
	return "", false
}

// quotes reports whether text states the quantity v.
func quotes(text string, v memtext.Value) bool {
	return slices.ContainsFunc(memtext.Values(text), func(w memtext.Value) bool { return memtext.SameQuantity(w, v) })
}

// sharesSettingWord reports whether d and e share a content word that is
// not the unit itself: what the quantity is of.
func sharesSettingWord(d, e *Decision, unit string) bool {
	a := memtext.Terms(said(d) + " " + d.Subject)
	b := memtext.Terms(said(e) + " " + e.Subject)
	for _, w := range a {
		if w == unit || strings.Trim(w, "0123456789.%") == "" || valueUnitWord(w) {
			continue
		}
		if _, ok := slices.BinarySearch(b, w); ok {
			return true
		}
	}
	return false
}

// valueUnitWord reports whether w is only a unit or a number with one.
func valueUnitWord(w string) bool {
	return len(memtext.Values("1 "+w)) == 1 || len(memtext.Values(w)) == 1
}

func unitText(u string) string {
	if u == "%" {
		return u
	}
	return " " + u
}

// sameChoice reports whether two decisions choose the same option, in
// other words or not: "hatchling" and "hatchling build backend".
func sameChoice(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			fx, fy := strings.Fields(x), strings.Fields(y)
			if x == y || len(fx) > 0 && len(fy) > 0 && strings.Trim(fx[0], "`") == strings.Trim(fy[0], "`") {
				return true
			}
		}
	}
	return false
}

// constraint adds or restates a constraint; a restatement the other way
// round ("must" then "must not" about the same thing) supersedes it.
func (m *miner) constraint(t *mtask, ev *Event, role, via string, f memtext.Finding) {
	key := f.Key
	if key == "" {
		key = memtext.Normalize(f.Sentence)
	}
	id := artifactID("con", m.s.ID, key)
	if a := m.constraints[id]; a != nil {
		a.Last = ev.Time
		a.Constraint.Count++
		if len(a.Evidence) < 32 {
			a.Evidence = append(a.Evidence, evidence(ev))
		}
		return
	}
	scope := "task"
	if via == "subagent prompt" {
		scope = "subagent"
	} else if role == "system" || role == "user" && (t.n == 1 || sessionWide(f.Sentence)) || role == "assistant" && sessionWide(f.Sentence) {
		scope = "session"
	}
	a := m.base(ArtifactConstraint, id, t, ev)
	a.Status = "active"
	a.Constraint = &Constraint{Statement: f.Sentence, Modal: f.Modal, Until: f.Until, Scope: scope, Source: role, Count: 1, Via: via}
	a.Title = capText(f.Sentence, 160)
	a.Symbols = memtext.Identifiers(f.Sentence)
	core := constraintCore(f.Sentence)
	for _, o := range m.list(m.constraints) {
		old := m.constraints[o.ID]
		if old.Status != "active" || negative(old.Constraint.Modal) == f.Negative {
			continue
		}
		if similar(core, constraintCore(old.Constraint.Statement)) {
			old.Status = "superseded"
			old.Constraint.SupersededBy = id
			a.Constraint.Supersedes = append(a.Constraint.Supersedes, old.ID)
		}
	}
	m.constraints[id] = a
}

func negative(modal string) bool {
	return strings.Contains(modal, "not") || strings.Contains(modal, "never") || strings.Contains(modal, "n't") || modal == "no"
}

// sessionWide reports whether a constraint says it holds beyond its task.
func sessionWide(s string) bool {
	l := strings.ToLower(s)
	for _, w := range []string{"always", "never", "from now on", "in this project", "in this repo", "for all", "every", "going forward", "throughout"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}

// constraintCore returns a constraint's terms without its modal words.
func constraintCore(s string) []string {
	var out []string
	for _, w := range memtext.Terms(s) {
		switch w {
		case "must", "not", "never", "always", "do", "don't", "dont", "should", "shouldn't", "required", "make", "sure", "please", "only":
			continue
		}
		out = append(out, w)
	}
	return out
}

// similar reports whether two sorted term lists overlap by at least 60%
// of the smaller one (and at least two terms).
func similar(a, b []string) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	n := 0
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			n++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	small := min(len(a), len(b))
	return n >= 2 && n*10 >= small*6 || small == 1 && n == 1
}

// proseThread opens a thread for a TODO, FIXME or blocker stated by the
// assistant.
func (m *miner) proseThread(t *mtask, ev *Event, f memtext.Finding) *Artifact {
	key := f.Key
	if key == "" {
		key = memtext.Normalize(f.Sentence)
	}
	id := artifactID("thr", m.s.ID, string(f.Type), key)
	if a := m.threads[id]; a != nil {
		a.Last = ev.Time
		if a.Status == "closed" {
			a.Status, a.Thread.ClosedBy, a.Thread.Why = "open", nil, ""
		}
		if len(a.Evidence) < 32 {
			a.Evidence = append(a.Evidence, evidence(ev))
		}
		return a
	}
	a := m.base(ArtifactThread, id, t, ev)
	a.Status = "open"
	a.Thread = &Thread{Kind: string(f.Type), Text: f.Sentence}
	a.Title = capText(string(f.Type)+": "+f.Sentence, 160)
	a.Symbols = memtext.Identifiers(f.Sentence)
	m.threads[id] = a
	return a
}

// resolveProse closes prose threads that a later assistant sentence
// reports done: it shares most of their terms and says done, fixed,
// resolved, implemented, unblocked.
func (m *miner) resolveProse(ev *Event, f memtext.Finding) {
	l := strings.ToLower(f.Sentence)
	done := false
	for _, w := range []string{"done", "fixed", "resolved", "implemented", "unblocked", "completed", "now works", "works now", "addressed", "finished"} {
		if strings.Contains(l, w) {
			done = true
			break
		}
	}
	if !done || f.Type == "todo" || f.Type == "fixme" || f.Type == "blocker" {
		return
	}
	terms := memtext.Terms(f.Sentence)
	for _, o := range m.list(m.threads) {
		a := m.threads[o.ID]
		if a.Status != "open" || a.Thread.File != "" || a.Thread.Test != "" || a.Thread.Kind == "question" || a.Evidence[0].Seq >= ev.Seq {
			continue
		}
		if similar(terms, memtext.Terms(a.Thread.Text)) {
			m.close(a, ev, "reported done: "+capText(f.Sentence, 160))
		}
	}
}

func (m *miner) close(a *Artifact, ev *Event, why string) {
	e := evidence(ev)
	a.Status = "closed"
	a.Thread.ClosedBy = &e
	a.Thread.Why = why
	a.Last = ev.Time
}

// questions returns a thread for each question the final assistant
// message of a task asks the user; the next task's first prompt, next,
// answers it.
func (m *miner) questions(t *mtask, final *Event, text string, next *Event) []*Artifact {
	var out []*Artifact
	if !m.ownThread(final.Thread) {
		return nil
	}
	for _, f := range memtext.Find(text, memtext.FindOptions{Role: "assistant", Questions: true}) {
		if string(f.Type) != "question" {
			continue
		}
		id := artifactID("thr", m.s.ID, "question", fmt.Sprint(final.Seq), f.Key)
		a := m.base(ArtifactThread, id, t, final)
		a.Status = "open"
		a.Thread = &Thread{Kind: "question", Text: f.Sentence, Context: f.Context}
		a.Title = capText("question: "+f.Sentence, 160)
		a.Symbols = memtext.Identifiers(f.Sentence)
		if next != nil {
			m.close(a, next, "the user replied")
		}
		out = append(out, a)
	}
	return out
}

// userQuestion opens a thread for a question the user left open; a later
// decision about the same things closes it (see project_resolve.go).
func (m *miner) userQuestion(t *mtask, ev *Event, f memtext.Finding) {
	if !m.ownThread(ev.Thread) {
		return
	}
	m.openThread(t, ev, artifactID("thr", m.s.ID, "question", fmt.Sprint(ev.Seq), f.Key), "question", "question: ", f.Sentence)
}

// todos opens threads for the TODO and FIXME comments an edit writes
// into a file, and closes those of the file the edit removes.
func (m *miner) todos(t *mtask, ev *Event, fe memtext.FileEdit) {
	added := m.text(fe.Added)
	kept := map[string]bool{}
	for _, td := range memtext.TODOs(added) {
		kept[td.Text] = true
	}
	// Close the file's open TODOs the edit removed (or a whole rewrite
	// no longer holds, or a deletion).
	for _, o := range m.list(m.threads) {
		a := m.threads[o.ID]
		if a.Status != "open" || a.Thread.File != fe.Path || kept[a.Thread.Text] {
			continue
		}
		switch {
		case fe.Op == "delete":
			m.close(a, ev, "the file was deleted")
		case fe.Whole:
			m.close(a, ev, "the file was rewritten without it")
		case strings.Contains(fe.Remove, a.Thread.Text):
			m.close(a, ev, "an edit removed it")
		}
	}
	lines := strings.Split(added, "\n")
	for _, td := range memtext.TODOs(added) {
		if docFile(fe.Path) && td.Line >= 1 && td.Line <= len(lines) {
			// In prose files "#" starts a heading, not a comment: "# TODO
			// App" is a title. Only "TODO:" and "TODO(x)" count there.
			l := lines[td.Line-1]
			if !strings.Contains(l, td.Marker+":") && !strings.Contains(l, td.Marker+"(") {
				continue
			}
		}
		kind := "todo"
		if strings.EqualFold(td.Marker, "FIXME") {
			kind = "fixme"
		}
		id := artifactID("thr", m.s.ID, kind, fe.Path, td.Text)
		if a := m.threads[id]; a != nil {
			a.Last = ev.Time
			if a.Status == "closed" {
				a.Status, a.Thread.ClosedBy, a.Thread.Why = "open", nil, ""
			}
			continue
		}
		a := m.base(ArtifactThread, id, t, ev)
		a.Status = "open"
		a.Thread = &Thread{Kind: kind, Text: td.Text, File: fe.Path}
		a.Title = capText(fmt.Sprintf("%s in %s: %s", td.Marker, fe.Path, td.Text), 160)
		a.Files = []string{fe.Path}
		a.Symbols = memtext.Identifiers(td.Text)
		m.threads[id] = a
	}
}

// testThreads opens a thread per failing test of a run, and closes the
// failing-test threads a passing run covers: the same command, or a run
// of the same tool over everything ("./...", no arguments).
func (m *miner) testThreads(t *mtask, call, res *Event, cmd string, tr memtext.TestResult) {
	ev := call
	if res != nil {
		ev = res
	}
	norm := strings.Join(strings.Fields(cmd), " ")
	if tr.Passed && !tr.Failed {
		for _, o := range m.list(m.threads) {
			a := m.threads[o.ID]
			if a.Status != "open" || a.Thread.Kind != "failing_test" {
				continue
			}
			if slices.Contains(a.Commands, norm) || covers(norm, a.Commands[0]) || namesTest(norm, a.Thread.Test) {
				m.close(a, ev, "a later run passed: "+capText(norm, 120))
			}
		}
		return
	}
	if !tr.Failed {
		return
	}
	names := tr.FailedNames
	named := len(names) > 0
	if !named {
		names = []string{norm}
	}
	for _, name := range names {
		// A test is one thread however it was run; a run that names no
		// test is one thread per command.
		id := artifactID("thr", m.s.ID, "failing_test", name)
		if !named {
			id = artifactID("thr", m.s.ID, "failing_test", norm, name)
		}
		if a := m.threads[id]; a != nil {
			a.Last = ev.Time
			if a.Status == "closed" {
				a.Status, a.Thread.ClosedBy, a.Thread.Why = "open", nil, ""
			}
			if len(a.Evidence) < 32 {
				a.Evidence = append(a.Evidence, evidence(ev))
			}
			a.Commands = addUnique(a.Commands, norm)
			continue
		}
		a := m.base(ArtifactThread, id, t, ev)
		a.Status = "open"
		var title string
		if named {
			title = "Test " + name + " fails"
		} else {
			title = "Tests fail when run with " + toolWord(norm)
		}
		if tr.Summary != "" {
			title += " (" + tr.Summary + ")"
		}
		text := title
		if res != nil && !named {
			// What failed, in the runner's words: "● sync › uploads
			// queued photos when back online".
			if d := memtext.FailureDetails(m.text(res.Text), 3); len(d) > 0 {
				text = capText(title+": "+strings.Join(d, "; "), 400)
			}
		}
		a.Thread = &Thread{Kind: "failing_test", Text: text, Test: name}
		a.Title = capText(title, 160)
		a.Commands = []string{norm}
		a.Symbols = memtext.Identifiers(name)
		if res != nil {
			if e := memtext.FirstErrorLine(m.text(res.Text)); e != "" {
				a.Errors = []string{e}
			}
		}
		m.threads[id] = a
	}
}

// toolWord names the tool a command runs, for a title: "go test",
// "pytest", "npm test", without paths, flags or arguments.
func toolWord(cmd string) string {
	f := strings.Fields(cmd)
	for len(f) > 0 && (strings.Contains(f[0], "=") || f[0] == "cd" || f[0] == "&&" || f[0] == "uv" && len(f) > 1 && f[1] == "run") {
		if f[0] == "cd" && len(f) > 1 {
			f = f[1:]
		}
		f = f[1:]
	}
	if len(f) == 0 {
		return "the test command"
	}
	w := f[0]
	if i := strings.LastIndexByte(w, '/'); i >= 0 {
		w = w[i+1:]
	}
	if len(f) > 1 && !strings.HasPrefix(f[1], "-") && !strings.ContainsAny(f[1], "/.") {
		w += " " + f[1]
		// "npm run build" is not "npm run dev".
		if (f[1] == "run" || f[1] == "exec" || f[1] == "x") && len(f) > 2 && !strings.HasPrefix(f[2], "-") && !strings.ContainsAny(f[2], "/") {
			w += " " + f[2]
		}
	}
	return w
}

// failure opens, or restates, a thread for a command that failed with an
// error that leaves work open (a build, an import, a CI job); the same
// error from the same tool is one thread however often it recurs.
func (m *miner) failure(t *mtask, ev *Event, cmd, errLine, output string) {
	what := memtext.FailureKind(cmd, output)
	// The error line as a person reads it: the first line of it (JSON
	// output escapes its newlines).
	errLine, _, _ = strings.Cut(errLine, "\\n")
	errLine = strings.TrimSpace(errLine)
	details := memtext.FailureDetails(output, 3)
	if errLine == "" && len(details) > 0 {
		errLine, details = details[0], details[1:]
		errLine, _, _ = strings.Cut(errLine, "\\n")
		errLine = strings.TrimSpace(errLine)
	}
	if what == "" || errLine == "" {
		return
	}
	tool := runKey(cmd)
	sig := memtext.ErrorSignature(errLine)
	id := artifactID("thr", m.s.ID, "failure", tool, sig)
	if m.threads[id] == nil {
		// The same tool still failing with another error is the same
		// open failure, not a second thread.
		for _, o := range m.list(m.threads) {
			if a := m.threads[o.ID]; a.Status == "open" && a.Thread.Kind == "failure" && a.Thread.Test == tool {
				id = a.ID
				if !slices.Contains(a.Errors, errLine) {
					a.Errors = append(a.Errors, errLine)
					a.Thread.Text = capText(a.Thread.Text+"; then: "+errLine, 600)
				}
				break
			}
		}
	}
	if a := m.threads[id]; a != nil {
		a.Last = ev.Time
		if a.Status == "closed" {
			a.Status, a.Thread.ClosedBy, a.Thread.Why = "open", nil, ""
		}
		if len(a.Evidence) < 32 {
			a.Evidence = append(a.Evidence, evidence(ev))
		}
		a.Commands = addUnique(a.Commands, capText(cmd, 300))
		return
	}
	a := m.base(ArtifactThread, id, t, ev)
	a.Status = "open"
	title := what + " fails: " + errLine
	text := title
	if len(details) > 0 {
		text += " (" + strings.Join(details, "; ") + ")"
	}
	a.Thread = &Thread{Kind: "failure", Text: capText(text, 400), Test: tool}
	a.Title = capText(title, 160)
	a.Commands = []string{capText(cmd, 300)}
	a.Errors = []string{errLine}
	a.Symbols = memtext.Identifiers(errLine)
	m.threads[id] = a
}

// succeeded closes the failure threads of the tool that cmd runs: a
// later run of it succeeded.
func (m *miner) succeeded(ev *Event, cmd string) {
	tools := commandTools(cmd)
	for _, o := range m.list(m.threads) {
		a := m.threads[o.ID]
		if a.Status == "open" && a.Thread.Kind == "failure" && slices.Contains(tools, a.Thread.Test) {
			m.close(a, ev, "a later run succeeded: "+capText(cmd, 120))
		}
	}
}

// reportedFixed closes the failure threads whose last error the agent
// says is gone, right after a check of its work succeeded: "41,229 rows,
// no key errors" for "KeyError: 'shipping_country'" though another
// command did the work.
func (m *miner) reportedFixed(ev *Event, text string) {
	if len(memtext.FixedErrors(text)) == 0 {
		return
	}
	for _, o := range m.list(m.threads) {
		a := m.threads[o.ID]
		if a.Status == "open" && a.Thread.Kind == "failure" && memtext.ErrorFixed(text, lastError(a)) {
			m.close(a, ev, "the agent reports the error gone: "+capText(text, 120))
		}
	}
}

// namesTest reports whether a test command runs the test name by name:
// "go test -run TestEvict ./cache", "pytest tests/test_x.py::test_y",
// "pytest -k test_y".
func namesTest(cmd, name string) bool {
	if name == "" || strings.ContainsAny(name, " ") {
		return false
	}
	base := name
	if i := strings.LastIndex(base, "::"); i >= 0 {
		base = base[i+2:]
	}
	if i := strings.IndexByte(base, '/'); i > 0 && !strings.Contains(name, "::") {
		base = base[:i] // TestFoo/sub runs under TestFoo
	}
	for _, f := range strings.Fields(cmd) {
		f = strings.Trim(f, "'\"^$")
		if f == name || f == base || strings.HasSuffix(f, "::"+base) {
			return true
		}
	}
	return false
}

// covers reports whether a passing run of cmd covers a failing run of
// old: the same first two words and cmd runs everything.
func covers(cmd, old string) bool {
	a, b := strings.Fields(cmd), strings.Fields(old)
	if len(a) < 2 || len(b) < 2 || a[0] != b[0] || a[1] != b[1] {
		return false
	}
	return len(a) == 2 || strings.Contains(cmd, "./...") || strings.HasSuffix(cmd, " .")
}

// segment takes one event, of task t, into the transcript segments: the
// conversation of the main and subagent threads cut into chunks of about
// 1,200 bytes, broken at each prompt.
func (m *miner) segment(ev *Event, t *mtask) {
	const size = 1200
	g := &m.seg
	if m.side[ev.Thread] {
		return
	}
	start := func() {
		if g.first == nil {
			g.first, g.t, g.pre = ev, t, t == nil
		}
		g.last = ev
	}
	var line string
	switch ev.Kind {
	case KindMessage:
		if p := promptText(ev); p != "" {
			m.flush()
			line = "user: " + p
		} else if ev.Role == "assistant" {
			line = "assistant: " + strings.TrimSpace(ev.Text)
		}
	case KindToolCall:
		if ev.Tool == nil {
			return
		}
		args := m.argsOf(ev)
		if c := memtext.ShellCommand(ev.Tool.Name, args); c != "" {
			line = "$ " + firstLine(c, 200)
			g.cmds = addUnique(g.cmds, capText(m.text(c), 300))
		} else if fes := memtext.FileEdits(ev.Tool.Name, args, ev.Text); len(fes) > 0 {
			var ps []string
			for _, fe := range fes {
				ps = append(ps, fe.Path)
				g.files = addUnique(g.files, m.text(fe.Path))
			}
			line = fmt.Sprintf("%s %s", ev.Tool.Name, strings.Join(ps, ", "))
		} else if v := str(args, "file_path", "path", "notebook_path", "pattern", "query", "url", "description"); v != "" {
			line = ev.Tool.Name + " " + capText(v, 160)
		} else {
			line = ev.Tool.Name + " " + capText(string(ev.Tool.Args), 120)
		}
	case KindToolResult:
		if ev.Tool != nil && ev.Tool.IsError {
			line = "error: " + firstLine(ev.Text, 200)
		}
	case KindError:
		if ev.Error != nil {
			line = "error: " + firstLine(ev.Error.Message, 200)
		}
	}
	if strings.TrimSpace(line) == "" || line == "assistant: " {
		return
	}
	line = m.text(line)
	if g.b.Len() > 0 && g.b.Len()+len(line)+1 > size {
		m.flush()
	}
	for len(line) > 2*size {
		part := strings.TrimSuffix(capText(line, size), "…")
		start()
		g.b.WriteString(part)
		g.b.WriteByte('\n')
		m.flush()
		line = line[len(part):]
	}
	start()
	g.b.WriteString(line)
	g.b.WriteByte('\n')
	if g.b.Len() >= size {
		m.flush()
	}
}

// flush ends the segment being filled.
func (m *miner) flush() {
	g := &m.seg
	if a, ok := g.artifact(m); ok {
		m.segs = append(m.segs, segArt{a: a, t: g.t, pre: g.pre})
	}
	g.b.Reset()
	g.first, g.last, g.files, g.cmds, g.t, g.pre = nil, nil, nil, nil, nil, false
}

// artifact returns the segment being filled, without its task, or false
// when it is empty.
func (g *segFold) artifact(m *miner) (Artifact, bool) {
	if g.first == nil || strings.TrimSpace(g.b.String()) == "" {
		return Artifact{}, false
	}
	first, last := g.first, g.last
	// A long message makes several segments that start at one event.
	part := 0
	for i := len(m.segs) - 1; i >= 0 && m.segs[i].a.Segment.FirstSeq == first.Seq; i-- {
		part++
	}
	a := Artifact{ID: artifactID("seg", m.s.ID, fmt.Sprint(first.Seq), fmt.Sprint(part)), Type: ArtifactSegment, Session: m.s.ID,
		First: first.Time, Last: last.Time, Text: g.b.String(), Files: slices.Clip(g.files), Commands: slices.Clip(g.cmds),
		Segment:  &Segment{FirstSeq: first.Seq, LastSeq: last.Seq, Thread: first.Thread},
		Evidence: []Evidence{evidence(first)}}
	if last != first {
		a.Evidence = append(a.Evidence, evidence(last))
	}
	a.Title = firstLine(a.Text, 100)
	a.Symbols = memtext.Identifiers(a.Text)
	return a, true
}

// docFile reports whether path is a prose document.
func docFile(path string) bool {
	for _, ext := range []string{".md", ".markdown", ".txt", ".rst", ".adoc", ".mdx"} {
		if strings.HasSuffix(strings.ToLower(path), ext) {
			return true
		}
	}
	return false
}

// commandTools are the tools (toolWord) of each command a shell line runs
// in sequence ("npm run codegen && npm run build"): when the line
// succeeded, each of them did.
func commandTools(cmd string) []string {
	var out []string
	for _, part := range strings.FieldsFunc(strings.ReplaceAll(cmd, "&&", ";"), func(r rune) bool { return r == ';' || r == '\n' }) {
		if strings.TrimSpace(part) == "" {
			continue
		}
		if w := runKey(part); !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	return out
}

// negatedClauses returns the "don't …" (or "do not", "no longer",
// "stop") clauses of statement d, lowercased: what negates compares.
func negatedClauses(d string) []string {
	low := strings.ToLower(d)
	var out []string
	for _, neg := range []string{"don't ", "do not ", "dont ", "no longer ", "stop "} {
		i := strings.Index(low, neg)
		if i < 0 || i > 0 && low[i-1] != ' ' && low[i-1] != ',' {
			continue
		}
		clause := low[i+len(neg):]
		if j := strings.IndexAny(clause, ",.;:!?"); j >= 0 {
			clause = clause[:j]
		}
		out = append(out, clause)
	}
	return out
}

// negates reports whether statement d tells not to do what statement e
// did: d has a "don't …" (or "do not", "stop", "no longer") clause of at
// least two content words, two thirds of which e holds ("don't hard-pin
// the VPC module" against "pin the VPC module to 5.1.2"; a hyphenated
// word counts by its last part).
func negates(d, e string) bool {
	et := memtext.Terms(e)
	for _, clause := range negatedClauses(d) {
		ct := memtext.Terms(clause)
		if len(ct) < 2 {
			continue
		}
		n := 0
		for _, t := range ct {
			if _, ok := slices.BinarySearch(et, t); ok {
				n++
			} else if k := strings.LastIndexByte(t, '-'); k >= 0 {
				if _, ok := slices.BinarySearch(et, t[k+1:]); ok {
					n++
				}
			}
		}
		if n >= 2 && n*3 >= len(ct)*2 {
			return true
		}
	}
	return false
}

// interpreters run the script their first argument names: a failure of
// "python train.py" is closed by a later success of train.py, not of any
// Python script.
var interpreters = map[string]bool{"python": true, "python3": true, "node": true, "ruby": true, "bash": true, "sh": true, "deno": true, "bun": true, "perl": true, "php": true}

// runKey names what a command runs, for matching a failure with a later
// success: toolWord, and for an interpreter the script it runs.
func runKey(cmd string) string {
	w := toolWord(cmd)
	if !interpreters[w] {
		return w
	}
	f := strings.Fields(cmd)
	for i, x := range f {
		if path.Base(x) != w {
			continue
		}
		for j := i + 1; j < len(f); j++ {
			switch a := f[j]; {
			case a == "-c":
				return w // inline code names no script
			case a == "-m" && j+1 < len(f):
				return w + " " + f[j+1] // "python -m pkg.tool"
			case !strings.HasPrefix(a, "-"):
				return w + " " + path.Base(a)
			}
		}
		break
	}
	return w
}

// insteadOf reports whether statement d replaces what statement e chose
// by naming it: d says "instead of Y" (or "rather than Y"), e holds
// every content word of Y, and the two share another content word, what
// both are about ("Count the rate limit per workspace instead of per
// user" against "Rate limiting: 20 messages per 10 seconds, keyed per
// user id"). It returns Y.
func insteadOf(d, e string) (string, bool) {
	low := strings.ToLower(d)
	et := memtext.Terms(e)
	for _, m := range []string{"instead of ", "rather than "} {
		i := strings.Index(low, m)
		if i < 0 {
			continue
		}
		y := low[i+len(m):]
		if j := strings.IndexAny(y, ",.;:!?"); j >= 0 {
			y = y[:j]
		}
		for _, stop := range []string{" from now on", " going forward", " for now"} {
			y, _, _ = strings.Cut(y, stop)
		}
		yt := memtext.Terms(y)
		if len(yt) == 0 || len(yt) > 4 {
			continue
		}
		all := true
		for _, t := range yt {
			if _, ok := slices.BinarySearch(et, t); !ok {
				all = false
				break
			}
		}
		if !all {
			continue
		}
		for _, t := range memtext.Terms(low[:i]) {
			if _, ok := slices.BinarySearch(et, t); ok && !slices.Contains(yt, t) && len(t) > 3 {
				return strings.TrimSpace(y), true
			}
		}
	}
	return "", false
}

// said is what a decision says for comparing it with another: the one
// setting it is, or its statement.
func said(d *Decision) string {
	if d.Setting != "" {
		return d.Setting
	}
	return d.Statement
}

// settingOf is what a setting decision is a setting of: the head of its
// sentence, or the sentence when it has none.
func settingOf(d *Decision) string {
	if d.Head != "" {
		return d.Head
	}
	return d.Statement
}

// quantityOnly reports whether decision d sets a quantity and names no
// known tool: "go down to 5%", not "Tempo via OTLP".
func quantityOnly(d *Decision) bool {
	return len(memtext.Values(said(d))) > 0 && !namesTool(d)
}

// namesTool reports whether decision d chooses a tool of known role.
func namesTool(d *Decision) bool {
	for _, c := range d.Chooses {
		if memtext.ToolRole(c) != "" {
			return true
		}
	}
	return false
}
