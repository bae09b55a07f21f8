package webui

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
)

// typeOrder is the order of the memory page's sections, with their
// headings.
var typeOrder = []struct {
	Type  engine.ArtifactType
	Title string
}{
	{engine.ArtifactDecision, "decisions"},
	{engine.ArtifactConstraint, "constraints"},
	{engine.ArtifactThread, "open threads"},
	{engine.ArtifactOutcome, "outcomes"},
	{engine.ArtifactSegment, "transcript segments"},
}

// cardView is one artifact card as the memory and search pages show it.
type cardView struct {
	ID, Short, URL string
	Type           string
	Title          string
	Snippet        string
	Status         string
	Pinned         bool
	Forgotten      bool
	Session        string
	SessionURL     string
	Task           string
	Time           string
	Files          []string
	Score          string
	// Chain is, for a decision or a constraint, what it replaced and
	// what replaced it.
	Chain []chainLink
	// Other marks a search result from another project (Project).
	Other   bool
	Project string
	// Fix is the card's forget and pin form, on the pages that offer it.
	Fix *correctView
}

// chainLink is one step of a supersession chain.
type chainLink struct {
	Rel, ID, Short, URL string
}

// section is the cards of one type.
type section struct {
	Type  string
	Title string
	Cards []cardView
	Fold  bool // folded: transcript segments
}

// memoryPage is the memory template's data.
type memoryPage struct {
	Title    string
	Nav      string
	Live     bool
	Frag     string
	Session  string
	Project  string
	Sessions []sessionRow // the project's sessions
	Projects []projectRef // without a session or project: where to look
	Sections []section
	Total    int
	Pack     string
	Err      string
	Snapshot bool // no forget and pin forms: the UI cannot write
}

// projectRef links the memory of one project.
type projectRef struct {
	Dir      string
	URL      string
	Sessions int
}

// artifactURL is the page of artifact id.
func artifactURL(id string) string { return Prefix + "a/" + url.PathEscape(id) }

// memoryURL is the memory page of a session, or of a project.
func memoryURL(session, project string) string {
	q := url.Values{}
	if session != "" {
		q.Set("session", session)
	} else {
		q.Set("project", project)
	}
	return Prefix + "m/?" + q.Encode()
}

// eventURL is the event seq in its session's timeline.
func eventURL(session string, seq uint64) string {
	s := strconv.FormatUint(seq, 10)
	return Prefix + "s/" + url.PathEscape(session) + "?at=" + s + "#e" + s
}

// cardOf renders a card.
func cardOf(c *engine.Card) cardView {
	v := cardView{ID: c.ID, Short: shortID(c.ID), URL: artifactURL(c.ID), Type: string(c.Type), Title: c.Title, Status: c.Status,
		Pinned: c.Pinned, Forgotten: c.Forgotten, Session: c.Session, SessionURL: Prefix + "s/" + url.PathEscape(c.Session),
		Task: c.Task, Files: c.Files}
	if s := strings.Join(strings.Fields(c.Snippet), " "); s != c.Title {
		v.Snippet = c.Snippet
	}
	if c.Time != 0 {
		v.Time = time.Unix(0, c.Time).Format("2006-01-02 15:04")
	}
	if c.Score != 0 {
		v.Score = fmt.Sprintf("%.2f", c.Score)
	}
	return v
}

// chainOf returns what artifact a replaced and what replaced it.
func chainOf(a *engine.Artifact) []chainLink {
	var sup []string
	var by string
	switch {
	case a.Decision != nil:
		sup, by = a.Decision.Supersedes, a.Decision.SupersededBy
	case a.Constraint != nil:
		sup, by = a.Constraint.Supersedes, a.Constraint.SupersededBy
	}
	var out []chainLink
	for _, id := range sup {
		out = append(out, chainLink{Rel: "supersedes", ID: id, Short: shortID(id), URL: artifactURL(id)})
	}
	if by != "" {
		out = append(out, chainLink{Rel: "superseded by", ID: by, Short: shortID(by), URL: artifactURL(by)})
	}
	if r := a.Resolved; r != nil && r.By != "" {
		out = append(out, chainLink{Rel: r.Status + " by", ID: r.By, Short: shortID(r.By), URL: artifactURL(r.By)})
	}
	return out
}

// serveMemory answers the memory page: the artifacts of ?session= or of
// the sessions of ?project= (a directory: the sessions whose project,
// engine.ProjectOf, it is); without either, the projects to pick from.
func (u *UI) serveMemory(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := &memoryPage{Title: "memory", Nav: "memory", Snapshot: u.snapshot, Session: strings.TrimSpace(q.Get("session")), Project: strings.TrimSpace(q.Get("project"))}
	var cards []engine.Card
	switch {
	case p.Session != "":
		s, err := u.svc.Session(p.Session)
		if err != nil {
			u.refuse(w, statusOf(err), "bbengine ui: session "+p.Session+": "+err.Error())
			return
		}
		p.Session, p.Title = s.ID, "memory of session "+shortID(s.ID)
		p.Project = engine.ProjectOf(&s)
		p.Pack = Prefix + "pack?" + url.Values{"session": {s.ID}}.Encode()
		if cards, err = u.svc.List(api.ListRequest{Session: s.ID}); err != nil {
			u.refuse(w, statusOf(err), "bbengine ui: memory of "+s.ID+": "+err.Error())
			return
		}
	case p.Project != "":
		p.Project = filepath.Clean(p.Project)
		p.Title = "memory of " + p.Project
		ss, err := u.svc.Sessions(api.SessionsRequest{})
		if err != nil {
			u.refuse(w, statusOf(err), "bbengine ui: sessions: "+err.Error())
			return
		}
		for i := range ss {
			if engine.ProjectOf(&ss[i]) != p.Project {
				continue
			}
			p.Sessions = append(p.Sessions, rowOf(&ss[i]))
			cs, err := u.svc.List(api.ListRequest{Session: ss[i].ID})
			if err != nil {
				u.refuse(w, statusOf(err), "bbengine ui: memory of "+ss[i].ID+": "+err.Error())
				return
			}
			cards = append(cards, cs...)
		}
		if len(p.Sessions) == 0 {
			p.Err = "no session has the project " + p.Project + " (a session's project is its working directory)"
		}
	default:
		ss, err := u.svc.Sessions(api.SessionsRequest{})
		if err != nil {
			u.refuse(w, statusOf(err), "bbengine ui: sessions: "+err.Error())
			return
		}
		n := map[string]int{}
		for i := range ss {
			if d := engine.ProjectOf(&ss[i]); d != "" {
				n[d]++
			}
		}
		for d, k := range n {
			p.Projects = append(p.Projects, projectRef{Dir: d, URL: memoryURL("", d), Sessions: k})
		}
		slices.SortFunc(p.Projects, func(a, b projectRef) int { return strings.Compare(a.Dir, b.Dir) })
		u.render(w, http.StatusOK, "memory", p)
		return
	}
	p.Total = len(cards)
	for _, t := range typeOrder {
		sec := section{Type: string(t.Type), Title: t.Title, Fold: t.Type == engine.ArtifactSegment}
		for i := range cards {
			if cards[i].Type != t.Type {
				continue
			}
			v := cardOf(&cards[i])
			v.Fix = u.correctFor(&v, r.URL.RequestURI())
			if t.Type == engine.ArtifactDecision || t.Type == engine.ArtifactConstraint {
				// The card has no chain: the artifact has.
				if a, err := u.svc.Get(cards[i].ID); err == nil {
					v.Chain = chainOf(&a)
				}
			}
			sec.Cards = append(sec.Cards, v)
		}
		if len(sec.Cards) > 0 {
			p.Sections = append(p.Sections, sec)
		}
	}
	u.render(w, http.StatusOK, "memory", p)
}

// evidenceView is one event an artifact came from.
type evidenceView struct {
	Seq      uint64
	Kind     string
	Time     string
	Timeline string // the event in its timeline
	Frames   string // the raw frames of its exchange, or ""
	From     string // an imported event's source file and line
	Text     string // the event's text, as Related gives it
	Label    string
}

// artifactPage is the artifact template's data.
type artifactPage struct {
	Title      string
	Nav        string
	Live       bool
	Frag       string
	A          engine.Artifact
	Card       cardView
	Memory     string // the memory page of its session
	First      string
	Last       string
	Facts      [][2]string
	Chain      []chainLink
	Earlier    []cardView // what it replaced (Related.Supersedes)
	Later      []cardView // what replaced it, to the one in force
	Adjacent   []cardView
	Evidence   []evidenceView
	ClosedBy   *evidenceView
	RelatedErr string
	Snapshot   bool // no forget and pin form: the UI cannot write
}

// serveArtifact answers one artifact: its text and facts, its
// supersession chain, its neighbours and its evidence, each event linked
// into its timeline and down to its raw frames.
func (u *UI) serveArtifact(w http.ResponseWriter, r *http.Request, id string) {
	if id == "" {
		u.refuse(w, http.StatusBadRequest, "bbengine ui: no artifact id in "+r.URL.Path)
		return
	}
	a, err := u.svc.Get(id)
	if err != nil {
		u.refuse(w, statusOf(err), "bbengine ui: artifact "+id+": "+err.Error())
		return
	}
	c := a.Card()
	p := &artifactPage{Title: string(a.Type) + " " + shortID(a.ID), Nav: "memory", A: a, Card: cardOf(&c),
		Memory: memoryURL(a.Session, ""), Chain: chainOf(&a), Snapshot: u.snapshot}
	p.Card.Fix = u.correctFor(&p.Card, artifactURL(a.ID))
	if a.First != 0 {
		p.First = time.Unix(0, a.First).Format(time.RFC3339)
	}
	if a.Last != 0 {
		p.Last = time.Unix(0, a.Last).Format(time.RFC3339)
	}
	p.Facts = factsOf(&a)
	texts := map[uint64]engine.Event{}
	rel, err := u.svc.Related(api.RelatedRequest{ID: a.ID})
	if err != nil {
		p.RelatedErr = err.Error()
	} else {
		for i := range rel.Supersedes {
			p.Earlier = append(p.Earlier, cardOf(&rel.Supersedes[i]))
		}
		for i := range rel.SupersededBy {
			p.Later = append(p.Later, cardOf(&rel.SupersededBy[i]))
		}
		for i := range rel.Adjacent {
			p.Adjacent = append(p.Adjacent, cardOf(&rel.Adjacent[i]))
		}
		for _, ev := range rel.Events {
			texts[ev.Seq] = ev
		}
	}
	for _, ev := range a.Evidence {
		v := evidenceOf(a.Session, &ev)
		if e, ok := texts[ev.Seq]; ok {
			ew := viewOf(a.Session, &e)
			v.Text, v.Label = ew.Text, ew.Label
		}
		p.Evidence = append(p.Evidence, v)
	}
	if a.Thread != nil && a.Thread.ClosedBy != nil {
		v := evidenceOf(a.Session, a.Thread.ClosedBy)
		p.ClosedBy = &v
	}
	u.render(w, http.StatusOK, "artifact", p)
}

// evidenceOf links one evidence event of session.
func evidenceOf(session string, ev *engine.Evidence) evidenceView {
	v := evidenceView{Seq: ev.Seq, Kind: string(ev.Kind), Label: string(ev.Kind), Timeline: eventURL(session, ev.Seq),
		Frames: framesURL(session, ev.Seq, ev.Prov)}
	if ev.Time != 0 {
		v.Time = time.Unix(0, ev.Time).Format("2006-01-02 15:04:05")
	}
	if ev.Prov.File != "" {
		v.From = fmt.Sprintf("%s:%d", ev.Prov.File, ev.Prov.Line)
	}
	return v
}

// factsOf lists what an artifact's type says about it, as `mem get`
// and its JSON do.
func factsOf(a *engine.Artifact) [][2]string {
	var out [][2]string
	add := func(k, v string) {
		if v != "" {
			out = append(out, [2]string{k, v})
		}
	}
	list := func(xs []string) string { return strings.Join(xs, ", ") }
	switch {
	case a.Decision != nil:
		d := a.Decision
		add("statement", d.Statement)
		add("rationale", d.Rationale)
		add("subject", d.Subject)
		add("subject from", d.SubjectFrom)
		add("context", d.Context)
		add("chooses", list(d.Chooses))
		add("replaces", list(d.Replaces))
		add("setting", d.Setting)
		add("stated by", fmt.Sprintf("%s, %d×", d.Role, d.Count))
		add("via", d.Via)
		add("why it replaced", d.SupersedesWhy)
	case a.Constraint != nil:
		c := a.Constraint
		add("statement", c.Statement)
		add("modal", c.Modal)
		add("until", c.Until)
		add("scope", c.Scope)
		add("stated by", fmt.Sprintf("%s, %d×", c.Source, c.Count))
		add("via", c.Via)
	case a.Thread != nil:
		th := a.Thread
		add("kind", th.Kind)
		add("text", th.Text)
		add("context", th.Context)
		add("file", th.File)
		add("test", th.Test)
		add("from", th.From)
		add("closed because", th.Why)
	case a.Outcome != nil:
		o := a.Outcome
		add("outcome", o.Status+": "+o.Reason)
		add("prompt", o.Prompt)
		add("summary", strings.Join(o.Summary, "\n"))
		var files []string
		for _, f := range o.Files {
			files = append(files, f.Op+" "+f.Path)
		}
		add("files changed", strings.Join(files, "\n"))
		var cmds []string
		for _, c := range o.Commands {
			s := c.Command
			if c.Exit != nil {
				s += fmt.Sprintf("  (exit %d)", *c.Exit)
			}
			cmds = append(cmds, s)
		}
		add("commands", strings.Join(cmds, "\n"))
		add("errors", strings.Join(o.Errors, "\n"))
		add("model calls", fmt.Sprintf("%d, %d input and %d output tokens", o.Calls, o.Usage.Input, o.Usage.Output))
		if o.CostUSD != 0 {
			add("cost", fmt.Sprintf("$%.4f", o.CostUSD))
		}
		add("duration", time.Duration(o.Duration).Round(time.Second).String())
	case a.Segment != nil:
		add("events", fmt.Sprintf("%d to %d, thread %d", a.Segment.FirstSeq, a.Segment.LastSeq, a.Segment.Thread))
	}
	if r := a.Resolved; r != nil {
		add(r.Status, fmt.Sprintf("by %s in session %s: %s", r.By, r.Session, r.Reason))
	}
	add("files", list(a.Files))
	add("symbols", list(a.Symbols))
	add("commands", list(a.Commands))
	add("errors", list(a.Errors))
	add("task", cmp.Or(a.Task, ""))
	add("run", a.Run)
	add("builder", a.Builder)
	return out
}
