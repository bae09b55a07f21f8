package webui

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/exchange"
)

// chartPeriods are the periods the usage page charts; the others of
// api.Periods have pages of their own (session: the costliest sessions)
// or none yet (blocks).
var chartPeriods = []string{api.PeriodDaily, api.PeriodWeekly, api.PeriodMonthly}

// Limits of the usage page.
const (
	costliestN = 20  // sessions in the costliest table
	tripsN     = 100 // breaker trips listed, newest first
)

// usagePage is the usage template's data.
type usagePage struct {
	Title string
	Nav   string
	Live  bool
	Frag  string
	// The form, as `bbengine usage` takes its flags.
	Period, Agent, Model, Since string
	Periods                     []string
	Agents                      []string // the agents of the report, for the form's suggestions
	Err                         string

	Report    *api.UsageReport
	Total     usageLine
	Rows      []usageLine
	Tokens    *chart
	Cost      *chart
	ByAgent   []usageLine
	ByModel   []usageLine
	Costliest []usageLine
	Unpriced  string // the models no price is known for, comma-separated
	Trips     []tripView
	TripsMore int // trips beyond tripsN
	TripsErr  string
}

// usageLine is one line of a usage table: a period, an agent, a model or
// a session.
type usageLine struct {
	Key, URL, Agent string
	Calls           int
	api.UsageTokens
	Cost string // "$1.23", "$1.23+?" when it leaves out unpriced tokens, "unpriced"
	// Unpriced names the models whose tokens Cost leaves out.
	Unpriced string
}

// lineOf renders a report row.
func lineOf(key string, r *api.UsageRow) usageLine {
	return usageLine{Key: key, Agent: r.Agent, Calls: r.Calls, UsageTokens: r.UsageTokens,
		Cost: api.CostText(r.CostUSD, len(r.Unpriced) > 0), Unpriced: strings.Join(r.Unpriced, ", ")}
}

// tripView is one trip of the circuit breaker.
type tripView struct {
	Session, URL         string
	Time, TimeFull       string
	Reason, Detail       string
	Calls, SinceProgress int64
	Stagnant, Tokens     int64
	Cost                 string
	Source               string
}

// usageRequest reads the page's form into the request `bbengine usage`
// makes of the same flags: period (daily, weekly, monthly), agent,
// model (a prefix), since (a date, local time, as --since 2026-11-01
// without --tz).
func usageRequest(q url.Values, p *usagePage) (api.UsageRequest, error) {
	p.Period = cmp.Or(strings.TrimSpace(q.Get("period")), api.PeriodDaily)
	p.Agent, p.Model, p.Since = strings.TrimSpace(q.Get("agent")), strings.TrimSpace(q.Get("model")), strings.TrimSpace(q.Get("since"))
	req := api.UsageRequest{Period: p.Period, Agent: p.Agent, Model: p.Model}
	if !slices.Contains(chartPeriods, p.Period) {
		return req, fmt.Errorf("period %q: the page charts %s", p.Period, strings.Join(chartPeriods, ", "))
	}
	if p.Since != "" {
		t, ok := day(p.Since)
		if !ok {
			return req, fmt.Errorf("since %q: want a date (2026-11-01)", p.Since)
		}
		req.Since = t.UnixNano()
	}
	return req, nil
}

// serveUsage answers the usage page: Service.Usage by the period the form
// asks for, charted and tabled, by agent and by model; the costliest
// sessions (the same request by session); the circuit breaker's trips
// (Service.Breakers of every session).
func (u *UI) serveUsage(w http.ResponseWriter, r *http.Request) {
	p := &usagePage{Title: "usage", Nav: "usage", Periods: chartPeriods}
	// The trips do not depend on the form: a page that says what is
	// wrong with it still lists them, never "never tripped" for want of
	// reading them.
	u.trips(p)
	req, err := usageRequest(r.URL.Query(), p)
	if err != nil {
		p.Err = err.Error()
		u.render(w, http.StatusBadRequest, "usage", p)
		return
	}
	// By period and by session: each reads every call the request
	// selects, so the two run side by side.
	sreq := req
	sreq.Period = api.PeriodSession
	var byS *api.UsageReport
	var serr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			// A panic here would end the process (the proxy's):
			// net/http recovers only the handler's own goroutine.
			if v := recover(); v != nil {
				serr = fmt.Errorf("panic: %v", v)
			}
		}()
		byS, serr = u.usage(sreq)
	}()
	rep, err := u.usage(req)
	<-done
	if err != nil {
		p.Err = "usage: " + err.Error()
		u.render(w, statusOf(err), "usage", p)
		return
	}
	if err := serr; err != nil {
		p.Err = "usage by session: " + err.Error()
		u.render(w, statusOf(err), "usage", p)
		return
	}
	p.Report = rep
	p.Total = lineOf("total", &rep.Total)
	p.Unpriced = strings.Join(rep.Total.Unpriced, ", ")
	for i := range rep.Rows {
		p.Rows = append(p.Rows, lineOf(rep.Rows[i].Key, &rep.Rows[i]))
	}
	p.Tokens, p.Cost = tokensChart(rep.Rows), costChart(rep.Rows)
	for _, m := range rep.Total.Models {
		l := usageLine{Key: m.Model, Calls: m.Calls, UsageTokens: m.UsageTokens, Cost: "unpriced", Unpriced: m.Model}
		if m.CostUSD != nil {
			l.Cost, l.Unpriced = api.CostText(*m.CostUSD, false), ""
		}
		p.ByModel = append(p.ByModel, l)
	}
	p.ByAgent = byAgent(byS.Rows)
	for _, a := range p.ByAgent {
		p.Agents = append(p.Agents, a.Key)
	}
	slices.Sort(p.Agents)
	p.Costliest = costliest(byS.Rows, costliestN)
	u.render(w, http.StatusOK, "usage", p)
}

// byAgent adds up the session rows of each agent, most expensive first:
// the calls, tokens and cost `bbengine usage --agent` totals.
func byAgent(rows []api.UsageRow) []usageLine {
	type sum struct {
		calls    int
		t        api.UsageTokens
		cost     float64
		unpriced []string
	}
	sums := map[string]*sum{}
	for i := range rows {
		r := &rows[i]
		a := cmp.Or(r.Agent, "?")
		s := sums[a]
		if s == nil {
			s = &sum{}
			sums[a] = s
		}
		s.calls += r.Calls
		s.t.Input += r.Input
		s.t.Output += r.Output
		s.t.CacheCreation += r.CacheCreation
		s.t.CacheCreation1h += r.CacheCreation1h
		s.t.CacheRead += r.CacheRead
		s.t.Total += r.Total
		s.cost += r.CostUSD
		for _, m := range r.Unpriced {
			if !slices.Contains(s.unpriced, m) {
				s.unpriced = append(s.unpriced, m)
			}
		}
	}
	var out []usageLine
	for a, s := range sums {
		slices.Sort(s.unpriced)
		out = append(out, usageLine{Key: a, Calls: s.calls, UsageTokens: s.t, Cost: api.CostText(s.cost, len(s.unpriced) > 0),
			Unpriced: strings.Join(s.unpriced, ", ")})
	}
	cost := map[string]float64{}
	for a, s := range sums {
		cost[a] = s.cost
	}
	slices.SortFunc(out, func(x, y usageLine) int {
		return cmp.Or(cmp.Compare(cost[y.Key], cost[x.Key]), cmp.Compare(y.Total, x.Total), strings.Compare(x.Key, y.Key))
	})
	return out
}

// costliest returns the n session rows of the highest cost (then the
// most tokens), each linking its timeline.
func costliest(rows []api.UsageRow, n int) []usageLine {
	idx := make([]int, len(rows))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		x, y := &rows[a], &rows[b]
		return cmp.Or(cmp.Compare(y.CostUSD, x.CostUSD), cmp.Compare(y.Total, x.Total), strings.Compare(x.Key, y.Key))
	})
	var out []usageLine
	for _, i := range idx[:min(n, len(idx))] {
		l := lineOf(rows[i].Key, &rows[i])
		l.URL = Prefix + "s/" + url.PathEscape(rows[i].Key)
		out = append(out, l)
	}
	return out
}

// trips lists the circuit breaker's trips, newest first: the records of
// every session (Service.Breakers, as `bbengine breaker status` restores
// them) whose op is a trip.
func (u *UI) trips(p *usagePage) {
	recs, err := u.svc.Breakers("")
	if err != nil {
		p.TripsErr = "the circuit breaker's records: " + err.Error()
		return
	}
	var trips []exchange.Breaker
	for i := range recs {
		if recs[i].Op == "trip" {
			trips = append(trips, recs[i].Breaker)
		}
	}
	slices.SortStableFunc(trips, func(a, b exchange.Breaker) int {
		return cmp.Or(cmp.Compare(b.Time, a.Time), strings.Compare(a.Session, b.Session))
	})
	if len(trips) > tripsN {
		p.TripsMore = len(trips) - tripsN
		trips = trips[:tripsN]
	}
	for _, t := range trips {
		at := time.Unix(0, t.Time)
		c := t.Counters
		cost := fmt.Sprintf("$%.4f", c.CostUSD)
		if c.Unpriced != "" {
			cost += " (no price for " + c.Unpriced + ")"
		}
		p.Trips = append(p.Trips, tripView{Session: t.Session, URL: Prefix + "s/" + url.PathEscape(t.Session),
			Time: at.Format("2006-01-02 15:04:05"), TimeFull: at.Format(time.RFC3339Nano), Reason: t.Reason, Detail: t.Detail,
			Calls: c.Calls, SinceProgress: c.SinceProgress, Stagnant: c.Stagnant, Tokens: c.Tokens, Cost: cost, Source: t.Source})
	}
}

// A chart is the geometry of one bar chart, in the SVG's own units
// (viewBox 0 0 chartW chartH): the template draws it as is.
type chart struct {
	W, H       int
	Left, Top  float64 // the plot's top left corner
	Right      float64 // the plot's right edge
	Bottom     float64 // the plot's baseline
	Ticks      []tick
	Groups     []barGroup
	Label      string // what the chart shows, for screen readers
	Legend     []legend
	LabelEvery int // every how many bars a label is written

	scaleTop float64 // the value at the plot's top
	n        int     // bars
}

// tick is one line of the value axis.
type tick struct {
	Y     float64
	Label string
}

// barGroup is one period's bar: its segments stacked from the baseline,
// its label under the axis (empty when labels would overlap) and its
// exact numbers for the hover title.
type barGroup struct {
	Key          string
	X, W, LabelX float64
	Label        string
	Title        string
	Segs         []seg
}

// seg is one part of a bar.
type seg struct {
	Class string
	Y, H  float64
}

// legend names a segment class.
type legend struct{ Class, Name string }

// The charts' size in SVG units; CSS scales them to the page's width.
const (
	chartW      = 900
	chartH      = 260
	chartLeft   = 64
	chartRight  = 890
	chartTop    = 12
	chartBottom = 220
	maxLabels   = 14
)

// tokenKinds are the billed kinds a token bar stacks, from the baseline.
var tokenKinds = []struct {
	class, name string
	of          func(*api.UsageTokens) int64
}{
	{"k-in", "input (uncached)", func(t *api.UsageTokens) int64 { return t.Input }},
	{"k-cr", "cache read", func(t *api.UsageTokens) int64 { return t.CacheRead }},
	{"k-cw", "cache creation", func(t *api.UsageTokens) int64 { return t.CacheCreation }},
	{"k-out", "output", func(t *api.UsageTokens) int64 { return t.Output }},
}

// tokensChart stacks each row's four billed kinds of tokens.
func tokensChart(rows []api.UsageRow) *chart {
	var top float64
	for i := range rows {
		top = max(top, float64(rows[i].Input+rows[i].CacheRead+rows[i].CacheCreation+rows[i].Output))
	}
	c := newChart(len(rows), top, func(v float64) string { return count(int64(math.Round(v))) })
	c.Label = "tokens by period, stacked by kind"
	for _, k := range tokenKinds {
		c.Legend = append(c.Legend, legend{k.class, k.name})
	}
	for i := range rows {
		r := &rows[i]
		g := c.group(i, r.Key)
		g.Title = fmt.Sprintf("%s: input %d, cache read %d, cache creation %d, output %d (total %d) in %d calls",
			r.Key, r.Input, r.CacheRead, r.CacheCreation, r.Output, r.Input+r.CacheRead+r.CacheCreation+r.Output, r.Calls)
		var base float64
		for _, k := range tokenKinds {
			v := float64(k.of(&r.UsageTokens))
			if v > 0 {
				g.Segs = append(g.Segs, c.seg(k.class, base, v))
			}
			base += v
		}
	}
	return c
}

// costChart draws each row's cost; a cost that leaves out unpriced
// models is drawn apart (a lower bound).
func costChart(rows []api.UsageRow) *chart {
	var top float64
	for i := range rows {
		top = max(top, rows[i].CostUSD)
	}
	c := newChart(len(rows), top, nil)
	c.Label = "cost in US dollars by period"
	c.Legend = []legend{{"k-cost", "cost"}, {"k-cost partial", "cost leaving out unpriced models (a lower bound)"}}
	for i := range rows {
		r := &rows[i]
		g := c.group(i, r.Key)
		g.Title = fmt.Sprintf("%s: %s in %d calls", r.Key, api.CostText(r.CostUSD, len(r.Unpriced) > 0), r.Calls)
		if len(r.Unpriced) > 0 {
			g.Title += " (leaves out " + strings.Join(r.Unpriced, ", ") + ", which have no price)"
		}
		class := "k-cost"
		if len(r.Unpriced) > 0 {
			class += " partial"
		}
		switch {
		case r.CostUSD > 0:
			g.Segs = append(g.Segs, c.seg(class, 0, r.CostUSD))
		case len(r.Unpriced) > 0:
			// Only unpriced calls: a dashed stub says there is a cost
			// the table cannot give, rather than no bar at all.
			g.Segs = append(g.Segs, c.stub(class))
		}
	}
	return c
}

// newChart lays out n bars whose highest reaches top, with round ticks
// labelled by label (nil: dollars).
func newChart(n int, top float64, label func(float64) string) *chart {
	step := niceStep(top / 4)
	if label == nil {
		label = dollars(step)
	}
	c := &chart{W: chartW, H: chartH, Left: chartLeft, Right: chartRight, Top: chartTop, Bottom: chartBottom, LabelEvery: 1}
	steps := max(1, int(math.Ceil(top/step-1e-9)))
	scale := float64(steps) * step
	c.scaleTop = scale
	for i := 0; i <= steps; i++ {
		v := float64(i) * step
		c.Ticks = append(c.Ticks, tick{Y: c.y(v), Label: label(v)})
	}
	if n > maxLabels {
		c.LabelEvery = (n + maxLabels - 1) / maxLabels
	}
	c.n = n
	return c
}

// y returns the height of value v in SVG units.
func (c *chart) y(v float64) float64 {
	return round1(c.Bottom - v/c.scaleTop*(c.Bottom-c.Top))
}

// group adds the bar of row i, keyed key.
func (c *chart) group(i int, key string) *barGroup {
	slot := (c.Right - c.Left) / float64(c.n)
	w := min(max(slot*0.7, 1), 48) // a lone period is a bar, not a wall
	g := barGroup{Key: key, X: round1(c.Left + float64(i)*slot + (slot-w)/2), W: round1(w), LabelX: round1(c.Left + (float64(i)+0.5)*slot)}
	if i%c.LabelEvery == 0 {
		g.Label = key
	}
	c.Groups = append(c.Groups, g)
	return &c.Groups[len(c.Groups)-1]
}

// seg returns the segment from value base to base+v.
func (c *chart) seg(class string, base, v float64) seg {
	y0, y1 := c.y(base), c.y(base+v)
	return seg{Class: class, Y: y1, H: round1(max(y0-y1, 0.5))}
}

// stub is a bar of a few pixels on the base line: a value the chart
// cannot scale (a cost of calls none of which has a price).
func (c *chart) stub(class string) seg {
	y0 := c.y(0)
	return seg{Class: class, Y: round1(y0 - 4), H: 4}
}

// niceStep returns the round step (1, 2 or 5 times a power of ten) at
// least v; 1 for v <= 0.
func niceStep(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if s := m * p; s >= v*(1-1e-9) {
			return s
		}
	}
	return 10 * p
}

// dollars returns a tick label of dollars with cents, or more decimals
// when step needs them.
func dollars(step float64) func(float64) string {
	d := max(2, int(-math.Floor(math.Log10(step)+1e-9)))
	return func(v float64) string { return fmt.Sprintf("$%.*f", d, v) }
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }

// usageCache keeps the usage reports the pages asked for since the
// engine last derived something (Options.Version): a report reads every
// call it selects, and the page is asked for again with nothing new.
type usageCache struct {
	mu      sync.Mutex
	version uint64
	reps    map[string]*api.UsageReport
}

// maxCachedReports bounds the reports kept for one version.
const maxCachedReports = 32

// usage is Service.Usage, answered from the cache when nothing was
// derived since the same request. The pages only read a report.
func (u *UI) usage(req api.UsageRequest) (*api.UsageReport, error) {
	v, err := u.version()
	if err != nil {
		return u.svc.Usage(req)
	}
	kb, err := json.Marshal(req)
	if err != nil {
		return u.svc.Usage(req)
	}
	key := string(kb)
	c := &u.usageCache
	c.mu.Lock()
	if c.version != v || c.reps == nil {
		c.version, c.reps = v, map[string]*api.UsageReport{}
	}
	rep := c.reps[key]
	c.mu.Unlock()
	if rep != nil {
		return rep, nil
	}
	rep, err = u.svc.Usage(req)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.version == v && len(c.reps) < maxCachedReports {
		c.reps[key] = rep
	}
	c.mu.Unlock()
	return rep, nil
}
