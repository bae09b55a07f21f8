package webui

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
)

// sessionsPerPage is how many sessions one page of the list shows.
const sessionsPerPage = 50

// filter is what the sessions page selects, from its query.
type filter struct {
	Agent   string
	Project string
	From    string // YYYY-MM-DD, local time
	To      string // YYYY-MM-DD, local time, included
	Q       string
	Page    int // 1-based
}

// parseFilter reads a filter from q; a bad date is ignored.
func parseFilter(q url.Values) filter {
	f := filter{Agent: q.Get("agent"), Project: strings.TrimSpace(q.Get("project")), From: q.Get("from"), To: q.Get("to"), Q: strings.TrimSpace(q.Get("q"))}
	f.Page, _ = strconv.Atoi(q.Get("page"))
	f.Page = max(f.Page, 1)
	return f
}

// query returns f as a URL query, at page.
func (f filter) query(page int) url.Values {
	q := url.Values{}
	for k, v := range map[string]string{"agent": f.Agent, "project": f.Project, "from": f.From, "to": f.To, "q": f.Q} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if page > 1 {
		q.Set("page", strconv.Itoa(page))
	}
	return q
}

// day parses a YYYY-MM-DD in local time; ok is false for "" or a bad one.
func day(s string) (time.Time, bool) {
	t, err := time.ParseInLocation(time.DateOnly, s, time.Local)
	return t, err == nil
}

// sessionRow is one line of the sessions table.
type sessionRow struct {
	ID, Agent, Client, Project, Title, Branch string
	Start, StartFull, Duration                string
	Requests, Errors                          int
	Events                                    uint64
	Tokens, TokensFull                        string
	// Cost is the session's cost as `bbengine usage session` gives it
	// ("" with no priced call); CostFull says what it leaves out.
	Cost, CostFull   string
	Merged, Imported bool
	// Breaker is the state of the session's circuit breaker (open or
	// half-open; "" when closed or it never tripped) and BreakerWhy its
	// last record's reason and detail.
	Breaker, BreakerWhy string
}

// sessionsPage is the sessions template's data.
type sessionsPage struct {
	Title   string
	F       filter
	Agents  []string
	Rows    []sessionRow
	Total   int // sessions the filter keeps
	All     int // sessions in the directory
	Page    int
	Pages   int
	Prev    string
	Next    string
	Frag    string // the URL of this page's rows alone (live updates)
	Err     string
	Live    bool
	Nav     string
	Summary string
	// Version is the live stream's version read before the sessions:
	// the script refreshes the rows when the stream starts at another.
	Version uint64
}

// serveSessions answers the sessions page, or with ?frag=rows its table
// body alone.
func (u *UI) serveSessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	v, _ := u.version()
	p, err := u.sessions(parseFilter(q))
	if err != nil {
		u.refuse(w, statusOf(err), "bbengine ui: sessions: "+err.Error())
		return
	}
	p.Version = v
	if q.Get("frag") == "rows" {
		w.Header().Set("X-Bb-Summary", p.CountLine())
		u.render(w, http.StatusOK, "rows", p)
		return
	}
	u.render(w, http.StatusOK, "sessions", p)
}

// sessions builds the page f selects: the service's sessions, filtered,
// most recently active first, one page of them.
func (u *UI) sessions(f filter) (*sessionsPage, error) {
	req := api.SessionsRequest{}
	from, hasFrom := day(f.From)
	to, hasTo := day(f.To)
	if hasFrom {
		req.Since = from.UnixNano()
	}
	all, err := u.svc.Sessions(api.SessionsRequest{})
	if err != nil {
		return nil, err
	}
	agents := map[string]bool{}
	for i := range all {
		if all[i].Agent != "" {
			agents[all[i].Agent] = true
		}
	}
	text := strings.ToLower(f.Q)
	project := strings.ToLower(f.Project)
	kept := make([]int, 0, len(all))
	for i := range all {
		s := &all[i]
		switch {
		case f.Agent != "" && s.Agent != f.Agent,
			hasFrom && s.Last < req.Since,
			hasTo && s.First >= to.AddDate(0, 0, 1).UnixNano(),
			project != "" && !strings.Contains(strings.ToLower(s.CWD), project),
			text != "" && !matches(s, text):
			continue
		}
		kept = append(kept, i)
	}
	slices.SortFunc(kept, func(a, b int) int {
		return cmp.Or(cmp.Compare(all[b].Last, all[a].Last), strings.Compare(all[a].ID, all[b].ID))
	})
	p := &sessionsPage{Title: "sessions", F: f, Total: len(kept), All: len(all), Live: !u.snapshot, Nav: "sessions"}
	for a := range agents {
		p.Agents = append(p.Agents, a)
	}
	slices.Sort(p.Agents)
	p.Pages = max(1, (len(kept)+sessionsPerPage-1)/sessionsPerPage)
	p.Page = min(f.Page, p.Pages)
	lo := (p.Page - 1) * sessionsPerPage
	hi := min(lo+sessionsPerPage, len(kept))
	ids := make([]string, 0, hi-lo)
	for _, i := range kept[lo:hi] {
		p.Rows = append(p.Rows, rowOf(&all[i]))
		ids = append(ids, all[i].ID)
	}
	if len(ids) > 0 {
		// The page's sessions alone: the service reads their events,
		// not every session's.
		rep, err := u.usage(api.UsageRequest{Period: api.PeriodSession, Sessions: ids})
		if err != nil {
			// The costs are one column: the list stands without them,
			// and says why they are missing.
			p.Err = "no costs: " + err.Error()
			rep = &api.UsageReport{}
		}
		cost := make(map[string]*api.UsageRow, len(rep.Rows))
		for i := range rep.Rows {
			cost[rep.Rows[i].Key] = &rep.Rows[i]
		}
		for i := range p.Rows {
			if r := cost[p.Rows[i].ID]; r != nil {
				p.Rows[i].Cost = api.CostText(r.CostUSD, len(r.Unpriced) > 0)
				p.Rows[i].CostFull = fmt.Sprintf("%d calls", r.Calls)
				if len(r.Unpriced) > 0 {
					p.Rows[i].CostFull += "; leaves out " + strings.Join(r.Unpriced, ", ") + ", which the price table does not know"
				}
			}
		}
	}
	for i := range p.Rows {
		// The breaker's records of the page's sessions alone: its state
		// is that of the last.
		recs, err := u.svc.Breakers(p.Rows[i].ID)
		if err != nil {
			// One line says it: the others would fail alike.
			p.Err = strings.TrimPrefix(p.Err+"; ", "; ") + "no breaker states: " + p.Rows[i].ID + ": " + err.Error()
			break
		}
		if n := len(recs); n > 0 && recs[n-1].State != "" && recs[n-1].State != "closed" {
			last := recs[n-1]
			p.Rows[i].Breaker = last.State
			p.Rows[i].BreakerWhy = strings.TrimSpace(last.Reason + ": " + last.Detail)
		}
	}
	if p.Page > 1 {
		p.Prev = Prefix + "?" + f.query(p.Page-1).Encode()
	}
	if p.Page < p.Pages {
		p.Next = Prefix + "?" + f.query(p.Page+1).Encode()
	}
	fq := f.query(p.Page)
	fq.Set("frag", "rows")
	p.Frag = Prefix + "?" + fq.Encode()
	p.Summary = fmt.Sprintf("%d of %d sessions", p.Total, p.All)
	return p, nil
}

// CountLine is the line above the table.
func (p *sessionsPage) CountLine() string {
	if p.Pages > 1 {
		return fmt.Sprintf("%s · page %d of %d", p.Summary, p.Page, p.Pages)
	}
	return p.Summary
}

// matches reports whether the session's id, title, project, agent,
// client or branch holds text (lower case).
func matches(s *engine.Session, text string) bool {
	for _, f := range []string{s.ID, s.Title, s.CWD, s.Agent, s.Client, s.Branch} {
		if strings.Contains(strings.ToLower(f), text) {
			return true
		}
	}
	return false
}

// rowOf renders one session.
func rowOf(s *engine.Session) sessionRow {
	first := time.Unix(0, s.First)
	u := s.Usage
	tokens := u.Input + u.Output
	row := sessionRow{
		ID: s.ID, Agent: cmp.Or(s.Agent, "?"), Client: s.Client, Project: s.CWD, Title: s.Title, Branch: s.Branch,
		Start: first.Format("2006-01-02 15:04"), StartFull: first.Format(time.RFC3339),
		Duration: duration(time.Duration(s.Last - s.First)),
		Requests: s.Requests, Errors: s.Errors, Events: s.Events,
		Tokens:     count(tokens),
		TokensFull: fmt.Sprintf("input %d (cache read %d, cache write %d), output %d", u.Input, u.CacheRead, u.CacheCreation, u.Output),
		Merged:     s.Merged != nil, Imported: s.Import != nil,
	}
	if s.First == 0 {
		// A session none of whose records has a time (a log of a
		// summary alone): no start, not 1970.
		row.Start, row.StartFull, row.Duration = "—", "no record of the session has a time", "—"
	}
	return row
}

// duration writes d shortly: 45s, 12m, 3h05m.
func duration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// count writes n shortly: 950, 12.3k, 4.5M.
func count(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	default:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	}
}

// statusOf is the HTTP status of a service error.
func statusOf(err error) int {
	switch {
	case errors.Is(err, engine.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, api.ErrBadQuery), errors.Is(err, api.ErrBadRequest):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}
