package api

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/bbengine/bbengine/codec/llm"
	"github.com/bbengine/bbengine/engine"
)

// The periods of a usage report.
const (
	PeriodDaily   = "daily"
	PeriodWeekly  = "weekly"
	PeriodMonthly = "monthly"
	PeriodSession = "session"
	PeriodBlocks  = "blocks"
)

// Periods are the periods UsageRequest.Period accepts.
var Periods = []string{PeriodDaily, PeriodWeekly, PeriodMonthly, PeriodSession, PeriodBlocks}

// BlockDuration is the length of a billing block: Anthropic's 5-hour
// usage window, as ccusage's `blocks` report defines it.
const BlockDuration = 5 * time.Hour

// UsageRequest asks for the tokens and cost of the model calls the
// engine derived, added up by period.
type UsageRequest struct {
	// Period is daily, weekly (weeks start on Monday), monthly, session
	// (one row per session) or blocks (5-hour billing blocks). The
	// default is daily.
	Period string `json:"period,omitempty"`
	// Agent keeps the sessions of one client family (claude-code, codex,
	// gemini-cli, …); Model the calls whose model starts with it (case
	// does not matter); Since the calls at or after it (unix ns). Zero
	// values keep everything.
	Agent string `json:"agent,omitempty"`
	Model string `json:"model,omitempty"`
	Since int64  `json:"since_ns,omitempty"`
	// Sessions, when not empty, keeps the calls of these sessions alone
	// (exact ids, as Service.Sessions lists them; an id that names no
	// session selects nothing): a page of sessions reads the events of
	// its own sessions, not every session's.
	Sessions []string `json:"sessions,omitempty"`
	// TZ is the IANA time zone whose days, weeks and months the report
	// uses. The default ("" or "Local") is the local zone of the process
	// that answers: the proxy's, when one runs on this machine.
	TZ string `json:"tz,omitempty"`
	// Prices is the price table; nil means the built-in one
	// (llm.BuiltinPrices).
	Prices *llm.Prices `json:"prices,omitempty"`
	// Now is the time blocks are active at (unix ns); 0 means now.
	Now int64 `json:"now_ns,omitempty"`
}

// UsageReport is the answer to a UsageRequest.
type UsageReport struct {
	Period string `json:"period"`
	TZ     string `json:"tz"`
	// Prices says which table priced the report: its date and file.
	Prices UsagePrices `json:"prices"`
	// Rows are the periods with at least one call, oldest first.
	Rows []UsageRow `json:"rows"`
	// Total is every row's sum (its Key is "total").
	Total UsageRow `json:"total"`
}

// UsagePrices names the price table of a report.
type UsagePrices struct {
	Date   string `json:"date"`
	File   string `json:"file"`
	Source string `json:"source,omitempty"`
}

// UsageTokens are the tokens of some calls, each counted once, in the
// four kinds providers bill apart. Input is the plain input: without the
// cache reads and writes, which have their own fields (engine usage
// counts them inside its Input). Total is the four kinds' sum.
type UsageTokens struct {
	Input         int64 `json:"input"`
	Output        int64 `json:"output"`
	CacheCreation int64 `json:"cache_creation"`
	CacheRead     int64 `json:"cache_read"`
	// CacheCreation1h is the part of CacheCreation written to the 1-hour
	// cache (priced higher).
	CacheCreation1h int64 `json:"cache_creation_1h,omitempty"`
	Total           int64 `json:"total"`
}

func (t *UsageTokens) add(u UsageTokens) {
	t.Input += u.Input
	t.Output += u.Output
	t.CacheCreation += u.CacheCreation
	t.CacheRead += u.CacheRead
	t.CacheCreation1h += u.CacheCreation1h
	t.Total += u.Total
}

// tokensOf splits the engine's usage of one call into the billed kinds.
func tokensOf(u engine.Usage) UsageTokens {
	t := UsageTokens{Input: max(u.Input-u.CacheRead-u.CacheCreation, 0), Output: u.Output,
		CacheCreation: u.CacheCreation, CacheRead: u.CacheRead, CacheCreation1h: u.CacheCreation1h}
	t.Total = t.Input + t.Output + t.CacheCreation + t.CacheRead
	return t
}

// UsageRow is one period (a day, a week, a month, a session or a block).
type UsageRow struct {
	// Key names the period: 2026-04-18 (a day), the Monday of a week,
	// 2026-04 (a month), a session id, a block's start (RFC 3339, UTC).
	Key string `json:"key"`
	// Start and End bound the period (unix ns, End excluded); for a
	// session they are its first and last call.
	Start int64 `json:"start_ns"`
	End   int64 `json:"end_ns"`
	// Agent is a session's client family (session rows).
	Agent string `json:"agent,omitempty"`
	// Last is the time of the block's last call; Active marks a block
	// still open at the request's Now (blocks rows).
	Last   int64 `json:"last_ns,omitempty"`
	Active bool  `json:"active,omitempty"`
	// Sessions and Calls count what the row adds up.
	Sessions int `json:"sessions"`
	Calls    int `json:"calls"`
	UsageTokens
	// CostUSD is the cost of the priced calls in US dollars. The tokens
	// of a model the price table does not know are in the counts but not
	// in CostUSD: Unpriced names those models, and CostUSD is then a
	// lower bound, never a cost of $0 for them.
	CostUSD  float64  `json:"cost_usd"`
	Unpriced []string `json:"unpriced,omitempty"`
	// Models are the row's calls by model, most expensive first.
	Models []UsageModel `json:"models"`
}

// UsageModel is one model's share of a row.
type UsageModel struct {
	// Model is the model's name as the calls gave it; "unknown" when
	// they named none.
	Model string `json:"model"`
	Calls int    `json:"calls"`
	UsageTokens
	// CostUSD is null for a model the price table does not know
	// (Priced false); PriceEntry is the table entry that priced it.
	CostUSD    *float64 `json:"cost_usd"`
	Priced     bool     `json:"priced"`
	PriceEntry string   `json:"price_entry,omitempty"`
}

// UsageOf adds up calls into the report req asks for. It is the whole of
// the arithmetic of bbengine usage, shared by Local and the tests.
// sessions and calls are parallel: calls[i] are the calls of sessions[i].
func UsageOf(req UsageRequest, sessions []engine.Session, calls [][]engine.CallUsage) (*UsageReport, error) {
	period := cmp.Or(req.Period, PeriodDaily)
	if !slices.Contains(Periods, period) {
		return nil, fmt.Errorf("%w: usage: no period %q (the periods are %s)", ErrBadRequest, req.Period, strings.Join(Periods, ", "))
	}
	loc, tz, err := usageZone(req.TZ)
	if err != nil {
		return nil, err
	}
	prices := req.Prices
	if prices == nil {
		prices = llm.BuiltinPrices()
	}
	if len(prices.Models) == 0 {
		return nil, fmt.Errorf("%w: usage: the price table %s has no models", ErrBadRequest, prices.File)
	}
	now := time.Now()
	if req.Now != 0 {
		now = time.Unix(0, req.Now)
	}
	type call struct {
		session int
		engine.CallUsage
	}
	var only map[string]bool
	if len(req.Sessions) > 0 {
		only = map[string]bool{}
		for _, id := range req.Sessions {
			only[id] = true
		}
	}
	var all []call
	for i := range sessions {
		if only != nil && !only[sessions[i].ID] {
			continue
		}
		for _, c := range calls[i] {
			if req.Since != 0 && c.Time < req.Since {
				continue
			}
			if req.Model != "" && !strings.HasPrefix(strings.ToLower(c.Model), strings.ToLower(req.Model)) {
				continue
			}
			all = append(all, call{i, c})
		}
	}
	slices.SortStableFunc(all, func(a, b call) int { return cmp.Compare(a.Time, b.Time) })

	rows := map[string]*acc{}
	var order []*acc
	rowOf := func(key string, start, end int64) *acc {
		r := rows[key]
		if r == nil {
			r = newAcc(key, start, end)
			rows[key] = r
			order = append(order, r)
		}
		return r
	}
	var block *acc
	for _, c := range all {
		t := time.Unix(0, c.Time).In(loc)
		var r *acc
		switch period {
		case PeriodDaily:
			d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
			r = rowOf(d.Format(time.DateOnly), d.UnixNano(), d.AddDate(0, 0, 1).UnixNano())
		case PeriodWeekly:
			d := time.Date(t.Year(), t.Month(), t.Day()-(int(t.Weekday())+6)%7, 0, 0, 0, 0, loc)
			r = rowOf(d.Format(time.DateOnly), d.UnixNano(), d.AddDate(0, 0, 7).UnixNano())
		case PeriodMonthly:
			d := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, loc)
			r = rowOf(d.Format("2006-01"), d.UnixNano(), d.AddDate(0, 1, 0).UnixNano())
		case PeriodSession:
			s := &sessions[c.session]
			r = rowOf(s.ID, c.Time, c.Time)
			r.row.Agent = s.Agent
			r.row.End = c.Time
		case PeriodBlocks:
			// ccusage's identifySessionBlocks: a block starts at the
			// UTC hour of its first call and takes the calls within 5
			// hours of its start, until a call comes more than 5 hours
			// after the block's start or after the call before it.
			if block == nil || c.Time-block.row.Start > int64(BlockDuration) || c.Time-block.row.Last > int64(BlockDuration) {
				start := time.Unix(0, c.Time).UTC().Truncate(time.Hour)
				block = rowOf(start.Format(time.RFC3339), start.UnixNano(), start.Add(BlockDuration).UnixNano())
			}
			block.row.Last = c.Time
			r = block
		}
		r.add(c.session, c.Model, tokensOf(c.Usage), prices)
	}
	out := &UsageReport{Period: period, TZ: tz, Prices: UsagePrices{Date: prices.Date, File: prices.File, Source: prices.Source}, Rows: []UsageRow{}}
	total := newAcc("total", 0, 0)
	for _, r := range order {
		if period == PeriodBlocks {
			r.row.Active = now.UnixNano()-r.row.Last < int64(BlockDuration) && now.UnixNano() < r.row.End
		}
		for s := range r.sessions {
			total.sessions[s] = true
		}
		total.merge(r)
		out.Rows = append(out.Rows, r.finish())
	}
	if len(out.Rows) > 0 {
		total.row.Start, total.row.End = out.Rows[0].Start, out.Rows[0].End
		for _, r := range out.Rows {
			total.row.Start, total.row.End = min(total.row.Start, r.Start), max(total.row.End, r.End)
		}
	}
	out.Total = total.finish()
	return out, nil
}

// acc adds up one row.
type acc struct {
	row      UsageRow
	models   map[string]*UsageModel
	price    map[string]llm.Price
	sessions map[int]bool
}

func newAcc(key string, start, end int64) *acc {
	return &acc{row: UsageRow{Key: key, Start: start, End: end}, models: map[string]*UsageModel{}, price: map[string]llm.Price{}, sessions: map[int]bool{}}
}

func (a *acc) add(session int, model string, t UsageTokens, prices *llm.Prices) {
	model = cmp.Or(model, "unknown")
	m := a.models[model]
	if m == nil {
		m = &UsageModel{Model: model}
		if p, entry, ok := prices.Lookup(model); ok {
			m.Priced, m.PriceEntry, m.CostUSD = true, entry, new(float64)
			a.price[model] = p
		}
		a.models[model] = m
	}
	m.Calls++
	m.add(t)
	if m.Priced {
		*m.CostUSD += a.price[model].Cost(llm.Usage{Input: t.Input + t.CacheRead + t.CacheCreation, Output: t.Output,
			CacheRead: t.CacheRead, CacheCreation: t.CacheCreation, CacheCreation1h: t.CacheCreation1h})
	}
	a.sessions[session] = true
	a.row.Calls++
}

func (a *acc) merge(b *acc) {
	for name, m := range b.models {
		t := a.models[name]
		if t == nil {
			t = &UsageModel{Model: name, Priced: m.Priced, PriceEntry: m.PriceEntry}
			if m.Priced {
				t.CostUSD = new(float64)
			}
			a.models[name] = t
		}
		t.Calls += m.Calls
		t.add(m.UsageTokens)
		if m.Priced {
			*t.CostUSD += *m.CostUSD
		}
	}
	a.row.Calls += b.row.Calls
}

// finish returns the row with its totals, cost and models.
func (a *acc) finish() UsageRow {
	r := a.row
	r.Sessions = len(a.sessions)
	r.Models = make([]UsageModel, 0, len(a.models))
	for _, m := range a.models {
		r.add(m.UsageTokens)
		if m.Priced {
			r.CostUSD += *m.CostUSD
		} else if m.Total > 0 {
			r.Unpriced = append(r.Unpriced, m.Model)
		}
		r.Models = append(r.Models, *m)
	}
	slices.Sort(r.Unpriced)
	slices.SortFunc(r.Models, func(x, y UsageModel) int {
		var cx, cy float64
		if x.CostUSD != nil {
			cx = *x.CostUSD
		}
		if y.CostUSD != nil {
			cy = *y.CostUSD
		}
		return cmp.Or(cmp.Compare(cy, cx), cmp.Compare(y.Total, x.Total), strings.Compare(x.Model, y.Model))
	})
	return r
}

// usageZone returns the zone named tz and the name to report.
func usageZone(tz string) (*time.Location, string, error) {
	if tz == "" || tz == "Local" {
		name := time.Local.String()
		if _, off := time.Now().Zone(); name == "Local" {
			name = fmt.Sprintf("Local (UTC%+03d:%02d now)", off/3600, abs(off%3600)/60)
		}
		return time.Local, name, nil
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, "", fmt.Errorf("%w: usage: time zone %q: %v (give an IANA name such as Europe/Paris, or UTC)", ErrBadRequest, tz, err)
	}
	return loc, loc.String(), nil
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// Usage implements Service: it reads the usage events the engine derived
// (engine.CallUsages), and no log.
func (m *Local) Usage(req UsageRequest) (*UsageReport, error) {
	if _, _, err := usageZone(req.TZ); err != nil {
		return nil, err
	}
	var sessions []engine.Session
	var calls [][]engine.CallUsage
	keep := func(s *engine.Session, cs []engine.CallUsage) error {
		if len(cs) > 0 {
			sessions = append(sessions, *s)
			calls = append(calls, slices.Clone(cs))
		}
		return nil
	}
	f := engine.SessionFilter{Since: req.Since, Agent: req.Agent}
	if len(req.Sessions) == 0 {
		if err := m.e.CallUsages(context.Background(), f, keep); err != nil {
			return nil, err
		}
		return UsageOf(req, sessions, calls)
	}
	// The sessions named, as CallUsages would select them: f's filters,
	// oldest first.
	var named []engine.Session
	seen := map[string]bool{}
	for _, id := range req.Sessions {
		if seen[id] {
			continue
		}
		seen[id] = true
		s, err := m.e.Session(id)
		switch {
		case errors.Is(err, engine.ErrNotFound):
			continue
		case err != nil:
			return nil, fmt.Errorf("usage: session %q: %w", id, err)
		case s.ID != id, f.Since != 0 && s.Last < f.Since, f.Agent != "" && s.Agent != f.Agent:
			continue
		}
		named = append(named, s)
	}
	slices.SortStableFunc(named, func(a, b engine.Session) int {
		return cmp.Or(cmp.Compare(a.First, b.First), strings.Compare(a.ID, b.ID))
	})
	if err := m.e.SessionCallUsages(context.Background(), named, keep); err != nil {
		return nil, err
	}
	return UsageOf(req, sessions, calls)
}

// Usage implements Service by asking the running proxy.
func (r *Remote) Usage(req UsageRequest) (*UsageReport, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var out UsageReport
	ctx, cancel := context.WithTimeout(context.Background(), storageTimeout)
	defer cancel()
	if err := r.DoContext(ctx, http.MethodPost, "/v1/usage", url.Values{"fresh": {"1"}}, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CostText writes a cost in dollars as `bbengine usage` and the web UI
// show it: partial marks one that leaves out the tokens of a model the
// price table does not know (a lower bound), never a cost of $0 for them.
func CostText(usd float64, partial bool) string {
	s := fmt.Sprintf("$%.2f", usd)
	if partial {
		s += "+?"
	}
	return s
}
