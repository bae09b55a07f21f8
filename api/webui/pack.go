package webui

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/pack"
)

// packPage is the pack preview template's data.
type packPage struct {
	Title    string
	Nav      string
	Live     bool
	Frag     string
	Session  string
	Task     string
	Budget   string
	Pack     *pack.Pack
	Text     string // the pack as the agent gets it (pack.Pack.Markdown)
	Over     bool   // more tokens than the budget
	Omitted  []omitted
	Timeline string
	Memory   string
	Note     string
	Err      string
}

// omitted is one section's count of items left out for the budget.
type omitted struct {
	Section string
	N       int
}

// servePack answers the pack preview: the context pack Service.Context
// gives for ?session=, ?task= and ?budget= (tokens; empty is the
// default), exactly as `bbengine mem context` prints it, with its size
// against the budget and what it left out.
func (u *UI) servePack(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	p := &packPage{Title: "pack preview", Nav: "pack", Session: strings.TrimSpace(q.Get("session")), Task: q.Get("task"),
		Budget: strings.TrimSpace(q.Get("budget"))}
	if p.Session == "" {
		u.render(w, http.StatusOK, "pack", p)
		return
	}
	req := api.ContextRequest{Session: p.Session, Task: p.Task}
	if p.Budget != "" {
		b, err := strconv.Atoi(p.Budget)
		if err != nil || b <= 0 {
			p.Err = "budget " + strconv.Quote(p.Budget) + ": want a positive number of tokens"
			u.render(w, http.StatusBadRequest, "pack", p)
			return
		}
		req.Budget = b
	}
	if s, err := u.svc.Session(p.Session); err == nil {
		p.Timeline, p.Memory = Prefix+"s/"+url.PathEscape(s.ID), memoryURL(s.ID, "")
	} else {
		p.Note = "No session " + p.Session + " is recorded yet: this is the pack an agent starting it would get (its brief alone)."
	}
	pk, err := u.svc.Context(req)
	if err != nil {
		p.Err = err.Error()
		u.render(w, statusOf(err), "pack", p)
		return
	}
	p.Pack, p.Text, p.Title = pk, pk.Markdown(), "pack preview of "+shortID(pk.Session)
	p.Over = pk.Tokens > pk.Budget.Total
	for s, n := range pk.Omitted {
		if n > 0 {
			p.Omitted = append(p.Omitted, omitted{Section: s, N: n})
		}
	}
	slices.SortFunc(p.Omitted, func(a, b omitted) int { return strings.Compare(a.Section, b.Section) })
	u.render(w, http.StatusOK, "pack", p)
}
