package webui

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/wal"
)

// xssModel is a model name no price table knows, holding markup.
const xssModel = `<script>alert(1)</script><img src=x onerror=alert(1)>`

// usageRig records three sessions through the proxy: sess-big (three
// calls of a priced model), sess-small (one) and sess-xss (one call of
// xssModel, unpriced); with trip, a breaker trip of sess-big goes to the
// WAL too. Then the engine derives it all.
func usageRig(t *testing.T, trip bool) *rig {
	t.Helper()
	r := newRig(t)
	for i := range 3 {
		r.send(t, "sess-big", fmt.Sprintf(`[{"role":"user","content":"step %d"}]`, i), "")
	}
	r.send(t, "sess-small", `[{"role":"user","content":"hello"}]`, "")
	r.sendModel(t, "sess-xss", xssModel, `[{"role":"user","content":"hello"}]`, "")
	if trip {
		p, err := exchange.AppendBreaker(nil, exchange.Breaker{Op: "trip", Session: "sess-big", State: exchange.BreakerOpen, From: exchange.BreakerClosed,
			Reason: "stagnation", Detail: "the same call Bash make 3 times in a row (threshold 3)", Time: time.Now().UnixNano(), Source: "proxy",
			Counters: exchange.BreakerCounters{Calls: 3, SinceProgress: 3, Stagnant: 3, Tokens: 381, CostUSD: 0.0012}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.log.Append(wal.Record{Kind: frame.KindBreaker, Time: time.Now().UnixNano(), Payload: p}); err != nil {
			t.Fatal(err)
		}
	}
	r.serve(t)
	return r
}

// totalLine is the tokens table's total row the page writes for rep.
func totalLine(rep *api.UsageReport) string {
	t := rep.Total
	return fmt.Sprintf(`<tfoot><tr><th>total</th><td class="n">%d</td><td class="n">%d</td><td class="n">%d</td><td class="n">%d</td><td class="n">%d</td><td class="n">%d</td><td class="n"`,
		t.Calls, t.Input, t.CacheRead, t.CacheCreation, t.Output, t.Total)
}

// TestUsagePage: the page's totals are Service.Usage's for the request
// `bbengine usage` makes of the same flags, one bar per period in each
// chart, the filters narrow it, the costliest sessions link their
// timelines, and the trips are listed.
func TestUsagePage(t *testing.T) {
	r := usageRig(t, true)
	c := r.client(t)
	code, body := get(t, c, r.srv.URL+Prefix+"usage")
	if code != 200 {
		t.Fatalf("usage: %d\n%s", code, body)
	}
	want, err := r.svc.Usage(api.UsageRequest{Period: api.PeriodDaily})
	if err != nil {
		t.Fatal(err)
	}
	if want.Total.Calls != 5 {
		t.Fatalf("the service counts %d calls, want 5", want.Total.Calls)
	}
	if !strings.Contains(body, totalLine(want)) {
		t.Errorf("the page's total is not the service's %s\n%s", totalLine(want), body)
	}
	if wantCost := api.CostText(want.Total.CostUSD, true); !strings.Contains(html.UnescapeString(body), `<th class="n">`+wantCost+`</th>`) {
		t.Errorf("the total cost %s is not on the page (a lower bound: one model is unpriced)", wantCost)
	}
	if n := strings.Count(body, `<g class="bar"`); n != 2*len(want.Rows) {
		t.Errorf("%d bar groups, want %d (one per period in each chart)", n, 2*len(want.Rows))
	}
	if !strings.Contains(body, "prices of "+want.Prices.Date+" ("+want.Prices.File+")") {
		t.Errorf("the price table's date and file are not on the page")
	}

	// The costliest sessions: sess-big first, each linking its timeline.
	costliest := cut(t, body, `id="costliest"`, "</table>")
	links := regexp.MustCompile(`href="/_bb/ui/s/([^"]+)"`).FindAllStringSubmatch(costliest, -1)
	if len(links) != 3 || links[0][1] != "sess-big" || links[1][1] != "sess-small" {
		t.Errorf("costliest sessions link %v, want sess-big, sess-small, then sess-xss", links)
	}
	for _, l := range links {
		if code, tl := get(t, c, r.srv.URL+Prefix+"s/"+l[1]); code != 200 || !strings.Contains(tl, l[1]) {
			t.Errorf("the timeline of %s: %d", l[1], code)
		}
	}

	// The trips: the one recorded, with its session, why and metrics.
	trips := cut(t, body, `id="trips"`, "</table>")
	for _, w := range []string{`href="/_bb/ui/s/sess-big"`, "stagnation", "the same call Bash make 3 times", `<td class="n">381</td>`, "$0.0012"} {
		if !strings.Contains(trips, w) {
			t.Errorf("the trips table has no %q:\n%s", w, trips)
		}
	}

	// The sessions page marks the session whose breaker is open, and
	// only it, with why. (The rig's proxy wrote its own record of
	// sess-big, closed, when it stopped: a trip comes after it.)
	p, err := exchange.AppendBreaker(nil, exchange.Breaker{Op: "trip", Session: "sess-big", State: exchange.BreakerOpen, From: exchange.BreakerClosed,
		Reason: "stagnation", Detail: "the same call Bash make 3 times in a row (threshold 3)", Time: time.Now().UnixNano(), Source: "proxy"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.log.Append(wal.Record{Kind: frame.KindBreaker, Time: time.Now().UnixNano(), Payload: p}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.e.CatchUp(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, list := get(t, c, r.srv.URL+Prefix)
	rows := regexp.MustCompile(`(?s)<tr class="row" data-id="([^"]+)".*?</tr>`).FindAllStringSubmatch(list, -1)
	if len(rows) != 3 {
		t.Fatalf("the sessions page has %d rows, want 3", len(rows))
	}
	for _, row := range rows {
		open := strings.Contains(row[0], "breaker open")
		if open != (row[1] == "sess-big") || open && !strings.Contains(row[0], `title="stagnation: the same call Bash make 3 times`) {
			t.Errorf("session %s: breaker shown %v in\n%s", row[1], open, row[0])
		}
	}

	// The filters narrow the report as the service does.
	for _, tc := range []struct {
		query string
		req   api.UsageRequest
		calls int
	}{
		{"?period=weekly&model=claude-sonnet", api.UsageRequest{Period: api.PeriodWeekly, Model: "claude-sonnet"}, 4},
		{"?period=monthly&model=" + url.QueryEscape("<script>"), api.UsageRequest{Period: api.PeriodMonthly, Model: "<script>"}, 1},
		{"?since=" + time.Now().AddDate(0, 0, -1).Format(time.DateOnly), api.UsageRequest{Since: dayStart(t, time.Now().AddDate(0, 0, -1))}, 5},
	} {
		code, body := get(t, c, r.srv.URL+Prefix+"usage"+tc.query)
		want, err := r.svc.Usage(tc.req)
		if err != nil {
			t.Fatal(err)
		}
		if code != 200 || want.Total.Calls != tc.calls || !strings.Contains(body, totalLine(want)) {
			t.Errorf("%s: %d, the service counts %d calls (want %d), the page's total is not %s", tc.query, code, want.Total.Calls, tc.calls, totalLine(want))
		}
	}
	for _, q := range []string{"?agent=codex", "?since=" + time.Now().AddDate(0, 0, 2).Format(time.DateOnly)} {
		if code, body := get(t, c, r.srv.URL+Prefix+"usage"+q); code != 200 || !strings.Contains(body, "no model calls with usage recorded match these filters") {
			t.Errorf("%s: %d, want no calls\n%s", q, code, body)
		}
	}
	for _, q := range []string{"?since=yesterday", "?period=hourly", "?period=session"} {
		code, body := get(t, c, r.srv.URL+Prefix+"usage"+q)
		if code != 400 || !strings.Contains(body, `id="err"`) {
			t.Errorf("%s: %d, want 400 saying why", q, code)
		}
		// The trips do not depend on the form: still listed.
		if strings.Contains(body, `id="notrips"`) || !strings.Contains(body, `href="/_bb/ui/s/sess-big"`) {
			t.Errorf("%s: the page with an error does not list the trip", q)
		}
	}
}

// dayStart is the local midnight of t's day, as a since date names it.
func dayStart(t *testing.T, d time.Time) int64 {
	t.Helper()
	return time.Date(d.Year(), d.Month(), d.Day(), 0, 0, 0, 0, time.Local).UnixNano()
}

// cut returns the part of body from the first from to the next to.
func cut(t *testing.T, body, from, to string) string {
	t.Helper()
	_, rest, ok := strings.Cut(body, from)
	if !ok {
		t.Fatalf("no %s on the page", from)
	}
	s, _, _ := strings.Cut(rest, to)
	return s
}

// TestUsageInert: a model named with markup renders as text everywhere
// the page names it: tables, the SVG's <title> and the unpriced note;
// and the sessions page shows each session's cost, the unpriced one as a
// lower bound. A page without trips says so.
func TestUsageInert(t *testing.T) {
	r := usageRig(t, false)
	c := r.client(t)
	code, body := get(t, c, r.srv.URL+Prefix+"usage")
	if code != 200 {
		t.Fatalf("usage: %d", code)
	}
	for _, bad := range []string{"<script>alert", "<img src=x", "onerror=alert(1)>"} {
		if strings.Contains(body, bad) {
			t.Errorf("the page holds %q unescaped", bad)
		}
	}
	esc := "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"
	svg := cut(t, body, `aria-label="cost in US dollars by period"`, "</svg>")
	for where, s := range map[string]string{"the models table": cut(t, body, `id="models"`, "</table>"), "a chart's <title>": svg, "the note": cut(t, body, `id="unpriced"`, "</p>")} {
		if !strings.Contains(s, esc) {
			t.Errorf("%s does not name the model escaped:\n%s", where, s)
		}
	}
	if !strings.Contains(body, `id="notrips"`) {
		t.Errorf("a page without trips does not say so")
	}

	// The sessions page: each row's cost is the service's.
	code, list := get(t, c, r.srv.URL+Prefix)
	if code != 200 {
		t.Fatalf("sessions: %d", code)
	}
	rep, err := r.svc.Usage(api.UsageRequest{Period: api.PeriodSession})
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rep.Rows {
		cells := html.UnescapeString(cut(t, list, `data-id="`+row.Key+`"`, "</tr>"))
		want := api.CostText(row.CostUSD, len(row.Unpriced) > 0)
		if !strings.Contains(cells, `<td class="n cost"`) || !strings.Contains(cells, ">"+want+"</td>") {
			t.Errorf("session %s: its row has no cost %s:\n%s", row.Key, want, cells)
		}
	}
	if cells := cut(t, list, `data-id="sess-xss"`, "</tr>"); !strings.Contains(cells, "&#43;?</td>") || strings.Contains(cells, "<script>") {
		t.Errorf("the unpriced session's cost is not a lower bound, or holds markup:\n%s", cells)
	}
	// The live fragment carries the same column.
	if _, frag := get(t, c, r.srv.URL+Prefix+"?frag=rows"); !strings.Contains(frag, `<td class="n cost"`) {
		t.Errorf("the rows fragment has no cost column")
	}
}

// TestUsageSessionsFilter: api.Local's Usage with Sessions reads those
// sessions alone and gives their rows exactly as the report of every
// session does.
func TestUsageSessionsFilter(t *testing.T) {
	r := usageRig(t, false)
	all, err := r.svc.Usage(api.UsageRequest{Period: api.PeriodSession})
	if err != nil {
		t.Fatal(err)
	}
	some, err := r.svc.Usage(api.UsageRequest{Period: api.PeriodSession, Sessions: []string{"sess-xss", "sess-big", "sess-none", "sess-big"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, row := range some.Rows {
		got = append(got, row.Key)
		for _, w := range all.Rows {
			if w.Key == row.Key && !reflect.DeepEqual(w, row) {
				t.Errorf("%s: %+v, the report of every session has %+v", row.Key, row, w)
			}
		}
	}
	if fmt.Sprint(got) != "[sess-big sess-xss]" || some.Total.Calls != 4 {
		t.Errorf("rows %v with %d calls, want sess-big and sess-xss with 4", got, some.Total.Calls)
	}
}

// fakeUsage answers Usage with rows and no breaker record.
type fakeUsage struct {
	api.Service
	rows []api.UsageRow
}

func (f fakeUsage) Usage(req api.UsageRequest) (*api.UsageReport, error) {
	rep := &api.UsageReport{Period: req.Period, TZ: "UTC", Prices: api.UsagePrices{Date: "2026-01-01", File: "builtin"}, Rows: f.rows}
	for _, r := range f.rows {
		rep.Total.Calls += r.Calls
		rep.Total.CostUSD += r.CostUSD
	}
	return rep, nil
}

func (fakeUsage) Breakers(string) ([]engine.BreakerRecord, error) { return nil, nil }

// Sessions: the fake has none (the UI fingerprints them for its cache).
func (fakeUsage) Sessions(api.SessionsRequest) ([]engine.Session, error) { return nil, nil }

// TestUsageCharts: one bar group per period, in order, each with its
// exact numbers in its title; stacked segments that add up to the bar;
// round ticks; labels thinned when there are many periods.
func TestUsageCharts(t *testing.T) {
	var rows []api.UsageRow
	for i := range 30 {
		tok := api.UsageTokens{Input: int64(100 * i), CacheRead: 1000, CacheCreation: 50, Output: 7}
		tok.Total = tok.Input + tok.CacheRead + tok.CacheCreation + tok.Output
		rows = append(rows, api.UsageRow{Key: time.Date(2026, 3, 1+i, 0, 0, 0, 0, time.UTC).Format(time.DateOnly), Calls: 1, UsageTokens: tok, CostUSD: 0.01 * float64(i)})
	}
	tc := tokensChart(rows)
	if len(tc.Groups) != 30 || tc.Groups[4].Key != "2026-03-05" {
		t.Fatalf("%d groups", len(tc.Groups))
	}
	if g := tc.Groups[29]; !strings.Contains(g.Title, "input 2900, cache read 1000, cache creation 50, output 7 (total 3957)") || len(g.Segs) != 4 {
		t.Errorf("the last bar: %q, %d segments", g.Title, len(g.Segs))
	}
	if g := tc.Groups[0]; len(g.Segs) != 3 {
		t.Errorf("a kind with no tokens is drawn: %+v", g.Segs)
	}
	// 3957 at most: ticks of 1k to 4k.
	var labels []string
	for _, tk := range tc.Ticks {
		labels = append(labels, tk.Label)
	}
	if fmt.Sprint(labels) != "[0 1.0k 2.0k 3.0k 4.0k]" || tc.Ticks[len(tc.Ticks)-1].Y != chartTop {
		t.Errorf("ticks %v, the top at %v", labels, tc.Ticks[len(tc.Ticks)-1].Y)
	}
	// The segments of a bar reach its total's height.
	g := tc.Groups[29]
	if top := g.Segs[len(g.Segs)-1].Y; top != tc.y(3957) {
		t.Errorf("the last bar tops at %v, want %v", top, tc.y(3957))
	}
	shown := 0
	for _, g := range tc.Groups {
		if g.Label != "" {
			shown++
		}
	}
	if shown > maxLabels || shown < maxLabels/2 {
		t.Errorf("%d period labels under 30 bars", shown)
	}
	cc := costChart(rows)
	if len(cc.Groups) != 30 || len(cc.Groups[0].Segs) != 0 || cc.Ticks[1].Label != "$0.10" {
		t.Errorf("cost chart: %d groups, first %+v, ticks %+v", len(cc.Groups), cc.Groups[0], cc.Ticks)
	}

	for _, tt := range []struct{ in, want float64 }{{0, 1}, {0.0031, 0.005}, {0.7, 1}, {1, 1}, {1.2, 2}, {3, 5}, {989, 1000}, {2000, 2000}} {
		if got := niceStep(tt.in); got != tt.want {
			t.Errorf("niceStep(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}

	// Through the page: one group per period in each chart.
	ui, err := New(&Options{Service: fakeUsage{rows: rows[:7]}, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	w := httptest.NewRecorder()
	req := httptest.NewRequest("GET", Prefix+"usage?period=daily", nil)
	req.Host, req.RemoteAddr = "127.0.0.1:1", "127.0.0.1:40000"
	req.AddCookie(ui.testCookie())
	ui.ServeHTTP(w, req)
	body := w.Body.String()
	if w.Code != http.StatusOK || strings.Count(body, `<g class="bar"`) != 14 || !strings.Contains(body, `data-key="2026-03-07"`) {
		t.Errorf("%d, %d bar groups, want 7 in each chart\n%s", w.Code, strings.Count(body, `<g class="bar"`), body)
	}
	if strings.Contains(body, "style=") {
		t.Errorf("the page uses an inline style the CSP forbids")
	}
}

// brokenCosts is a service whose Usage and Breakers fail.
type brokenCosts struct{ manySessions }

func (brokenCosts) Usage(api.UsageRequest) (*api.UsageReport, error) {
	return nil, errors.New("event 7 of s-1: undecodable")
}

func (brokenCosts) Breakers(string) ([]engine.BreakerRecord, error) {
	return nil, errors.New("breaker store unreadable")
}

// TestSessionsWithoutCosts: when the costs or the breaker states cannot
// be read, the sessions list stands without them and says why.
func TestSessionsWithoutCosts(t *testing.T) {
	ss := []engine.Session{{ID: "s-1", First: 1, Last: 2}, {ID: "s-2", First: 3, Last: 4}}
	ui, err := New(&Options{Service: brokenCosts{manySessions{ss: ss, byID: map[string]int{"s-1": 0, "s-2": 1}}}, Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Close()
	p, err := ui.sessions(filter{Page: 1})
	if err != nil {
		t.Fatalf("the list fails with its costs: %v", err)
	}
	if len(p.Rows) != 2 || !strings.Contains(p.Err, "no costs: event 7 of s-1: undecodable") || !strings.Contains(p.Err, "breaker store unreadable") {
		t.Errorf("rows %d, err %q", len(p.Rows), p.Err)
	}
}

// countingUsage counts the Usage calls that reach the service.
type countingUsage struct {
	fakeUsage
	calls *atomic.Int64
}

func (c countingUsage) Usage(req api.UsageRequest) (*api.UsageReport, error) {
	c.calls.Add(1)
	return c.fakeUsage.Usage(req)
}

// TestUsageCache: the usage page asked for again with nothing derived
// since reads no usage again; once the engine derived something, it
// does; another request is read apart.
func TestUsageCache(t *testing.T) {
	var calls atomic.Int64
	var version atomic.Uint64
	svc := countingUsage{fakeUsage{rows: []api.UsageRow{{Key: "2026-11-27", Calls: 3, CostUSD: 0.5}}}, &calls}
	ui, err := New(&Options{Service: svc, Token: testToken, Version: func() (uint64, error) { return version.Load(), nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Close()
	ck := ui.testCookie()
	load := func(q string) {
		t.Helper()
		req := httptest.NewRequest("GET", "http://127.0.0.1:8080"+Prefix+"usage"+q, nil)
		req.RemoteAddr = "127.0.0.1:5555"
		req.AddCookie(ck)
		rec := httptest.NewRecorder()
		ui.ServeHTTP(rec, req)
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), "$0.50") {
			t.Fatalf("usage%s: %d\n%s", q, rec.Code, rec.Body.String())
		}
	}
	for _, step := range []struct {
		q    string
		bump bool
		want int64
	}{
		{"", false, 2},               // by period and by session
		{"", false, 2},               // nothing new: both from the cache
		{"?period=weekly", false, 3}, // another period; the same by session
		{"", true, 5},                // derived since: read again
	} {
		if step.bump {
			version.Add(1)
		}
		load(step.q)
		if got := calls.Load(); got != step.want {
			t.Errorf("after usage%s (version %d): %d Usage calls, want %d", step.q, version.Load(), got, step.want)
		}
	}
}
