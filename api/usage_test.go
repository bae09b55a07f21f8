package api_test

import (
	"errors"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/llm"
	"github.com/bbengine/bbengine/engine"
)

// at returns the unix ns of an RFC 3339 time.
func at(t *testing.T, s string) int64 {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v.UnixNano()
}

// usageCall is one call of model at when, with 1,000 plain input tokens
// and 100 output tokens.
func usageCall(t *testing.T, when, model string) engine.CallUsage {
	return engine.CallUsage{Time: at(t, when), Model: model, Usage: engine.Usage{Input: 1000, Output: 100}}
}

// keys returns the rows' keys and their call counts.
func keys(r *api.UsageReport) ([]string, []int) {
	var k []string
	var n []int
	for _, row := range r.Rows {
		k = append(k, row.Key)
		n = append(n, row.Calls)
	}
	return k, n
}

func TestUsagePeriods(t *testing.T) {
	sessions := []engine.Session{{ID: "s1", Agent: "claude-code"}, {ID: "s2", Agent: "codex"}}
	calls := [][]engine.CallUsage{
		{
			usageCall(t, "2026-03-01T14:59:59Z", "claude-opus-4-7"), // Tokyo: 23:59:59 Sun 1 Mar
			usageCall(t, "2026-03-01T15:00:00Z", "claude-opus-4-7"), // Tokyo: 00:00 Mon 2 Mar
			usageCall(t, "2026-03-31T15:30:00Z", "claude-opus-4-7"), // Tokyo: 1 Apr
		},
		{
			usageCall(t, "2026-03-08T14:00:00Z", "gpt-5"), // Tokyo: 23:00 Sun 8 Mar
		},
	}
	tests := []struct {
		period, tz string
		keys       []string
		calls      []int
	}{
		{"daily", "Asia/Tokyo", []string{"2026-03-01", "2026-03-02", "2026-03-08", "2026-04-01"}, []int{1, 1, 1, 1}},
		{"daily", "UTC", []string{"2026-03-01", "2026-03-08", "2026-03-31"}, []int{2, 1, 1}},
		// Weeks start on Monday: Sunday 1 March belongs to the week of 23 February.
		{"weekly", "Asia/Tokyo", []string{"2026-02-23", "2026-03-02", "2026-03-30"}, []int{1, 2, 1}},
		{"weekly", "UTC", []string{"2026-02-23", "2026-03-02", "2026-03-30"}, []int{2, 1, 1}},
		{"monthly", "Asia/Tokyo", []string{"2026-03", "2026-04"}, []int{3, 1}},
		{"monthly", "UTC", []string{"2026-03"}, []int{4}},
		{"session", "UTC", []string{"s1", "s2"}, []int{3, 1}},
	}
	for _, tt := range tests {
		rep, err := api.UsageOf(api.UsageRequest{Period: tt.period, TZ: tt.tz}, sessions, calls)
		if err != nil {
			t.Fatalf("%s %s: %v", tt.period, tt.tz, err)
		}
		k, n := keys(rep)
		if !reflect.DeepEqual(k, tt.keys) || !reflect.DeepEqual(n, tt.calls) {
			t.Errorf("%s in %s: rows %v calls %v, want %v %v", tt.period, tt.tz, k, n, tt.keys, tt.calls)
		}
		if rep.Total.Calls != 4 || rep.Total.Sessions != 2 || rep.Total.Input != 4000 || rep.Total.Output != 400 {
			t.Errorf("%s in %s: total %+v", tt.period, tt.tz, rep.Total)
		}
		if rep.TZ != tt.tz {
			t.Errorf("tz %q, want %q", rep.TZ, tt.tz)
		}
	}
	// A day's bounds are its zone's midnight to midnight.
	rep, _ := api.UsageOf(api.UsageRequest{Period: "daily", TZ: "Asia/Tokyo"}, sessions, calls)
	if r := rep.Rows[1]; r.Start != at(t, "2026-03-01T15:00:00Z") || r.End != at(t, "2026-03-02T15:00:00Z") {
		t.Errorf("the day 2026-03-02 in Tokyo runs %v to %v", time.Unix(0, r.Start).UTC(), time.Unix(0, r.End).UTC())
	}
	// A session row runs from its first call to its last.
	rep, _ = api.UsageOf(api.UsageRequest{Period: "session", TZ: "UTC"}, sessions, calls)
	if r := rep.Rows[0]; r.Agent != "claude-code" || r.Start != at(t, "2026-03-01T14:59:59Z") || r.End != at(t, "2026-03-31T15:30:00Z") {
		t.Errorf("session row %+v", r)
	}
}

func TestUsageFilters(t *testing.T) {
	sessions := []engine.Session{{ID: "s1"}, {ID: "s2"}}
	calls := [][]engine.CallUsage{{
		usageCall(t, "2026-03-01T10:00:00Z", "claude-opus-4-7"),
		usageCall(t, "2026-03-02T10:00:00Z", "claude-sonnet-4-5-20250929"),
		usageCall(t, "2026-03-03T10:00:00Z", "claude-opus-4-6"),
	}, {
		usageCall(t, "2026-03-04T10:00:00Z", "gpt-5"),
	}}
	tests := []struct {
		name string
		req  api.UsageRequest
		keys []string
	}{
		{"since", api.UsageRequest{Since: at(t, "2026-03-02T10:00:00Z")}, []string{"2026-03-02", "2026-03-03", "2026-03-04"}},
		{"since after all", api.UsageRequest{Since: at(t, "2026-03-05T00:00:00Z")}, nil},
		{"model prefix", api.UsageRequest{Model: "claude-opus"}, []string{"2026-03-01", "2026-03-03"}},
		{"model any case", api.UsageRequest{Model: "CLAUDE-SONNET"}, []string{"2026-03-02"}},
		{"both", api.UsageRequest{Model: "claude-opus", Since: at(t, "2026-03-02T00:00:00Z")}, []string{"2026-03-03"}},
		{"sessions", api.UsageRequest{Sessions: []string{"s2"}}, []string{"2026-03-04"}},
		{"sessions, both", api.UsageRequest{Sessions: []string{"s2", "s1"}}, []string{"2026-03-01", "2026-03-02", "2026-03-03", "2026-03-04"}},
		{"sessions, none of them", api.UsageRequest{Sessions: []string{"s3"}}, nil},
	}
	for _, tt := range tests {
		tt.req.TZ = "UTC"
		rep, err := api.UsageOf(tt.req, sessions, calls)
		if err != nil {
			t.Fatal(err)
		}
		if k, _ := keys(rep); !reflect.DeepEqual(k, tt.keys) {
			t.Errorf("%s: rows %v, want %v", tt.name, k, tt.keys)
		}
		if rep.Rows == nil {
			t.Errorf("%s: rows nil, want [] in JSON", tt.name)
		}
	}
}

// TestUsageBlocks checks ccusage's 5-hour blocks: a block starts at the
// UTC hour of its first call and ends 5 hours later; a call more than 5
// hours after the block's start or after the previous call starts the
// next.
func TestUsageBlocks(t *testing.T) {
	sessions := []engine.Session{{ID: "a"}, {ID: "b"}}
	calls := [][]engine.CallUsage{
		{
			usageCall(t, "2026-03-01T09:40:00Z", "claude-opus-4-7"), // block 09:00
			usageCall(t, "2026-03-01T14:00:00Z", "claude-opus-4-7"), // 5h after 09:00: same block
			usageCall(t, "2026-03-01T14:00:01Z", "claude-opus-4-7"), // > 5h after the start: 14:00
		},
		{
			usageCall(t, "2026-03-01T11:00:00Z", "gpt-5"),           // another session, same block
			usageCall(t, "2026-03-01T19:30:00Z", "gpt-5"),           // 5h29m after 14:00:01: 19:00
			usageCall(t, "2026-03-02T06:00:00Z", "claude-opus-4-7"), // a gap: 06:00
		},
	}
	now := at(t, "2026-03-02T08:00:00Z")
	rep, err := api.UsageOf(api.UsageRequest{Period: "blocks", TZ: "Asia/Tokyo", Now: now}, sessions, calls)
	if err != nil {
		t.Fatal(err)
	}
	k, n := keys(rep)
	wantK := []string{"2026-03-01T09:00:00Z", "2026-03-01T14:00:00Z", "2026-03-01T19:00:00Z", "2026-03-02T06:00:00Z"}
	if !reflect.DeepEqual(k, wantK) || !reflect.DeepEqual(n, []int{3, 1, 1, 1}) {
		t.Fatalf("blocks %v calls %v, want %v [3 1 1 1]", k, n, wantK)
	}
	if r := rep.Rows[0]; r.End-r.Start != int64(5*time.Hour) || r.Last != at(t, "2026-03-01T14:00:00Z") || r.Sessions != 2 || r.Active {
		t.Errorf("first block %+v", r)
	}
	if !rep.Rows[3].Active || rep.Rows[2].Active {
		t.Errorf("active: %v %v, want only the last block (now %v)", rep.Rows[2].Active, rep.Rows[3].Active, time.Unix(0, now).UTC())
	}
	// Five hours after its last call, a block is no longer active.
	rep, _ = api.UsageOf(api.UsageRequest{Period: "blocks", TZ: "UTC", Now: at(t, "2026-03-02T11:00:00Z")}, sessions, calls)
	if rep.Rows[3].Active {
		t.Error("a block past its end is active")
	}
}

// TestUsagePricing: cached tokens are counted once and priced at their
// own rates; an unknown model is unpriced, never $0; a price table
// overrides the built-in one.
func TestUsagePricing(t *testing.T) {
	sessions := []engine.Session{{ID: "s1"}}
	// engine.Usage.Input counts cache reads and writes in.
	opus := engine.CallUsage{Time: at(t, "2026-03-01T10:00:00Z"), Model: "claude-opus-4-7",
		Usage: engine.Usage{Input: 1_000_000 + 2_000_000 + 3_000_000, CacheRead: 2_000_000, CacheCreation: 3_000_000, CacheCreation1h: 1_000_000, Output: 1_000_000}}
	mystery := engine.CallUsage{Time: at(t, "2026-03-01T11:00:00Z"), Model: "claude-mystery-9", Usage: engine.Usage{Input: 500, Output: 50}}
	synthetic := engine.CallUsage{Time: at(t, "2026-03-01T12:00:00Z"), Model: "<synthetic>"}
	calls := [][]engine.CallUsage{{opus, mystery, synthetic}}

	rep, err := api.UsageOf(api.UsageRequest{Period: "daily", TZ: "UTC"}, sessions, calls)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Prices.Date != llm.BuiltinPrices().Date || rep.Prices.File == "" {
		t.Errorf("prices %+v", rep.Prices)
	}
	tot := rep.Total
	want := api.UsageTokens{Input: 1_000_500, Output: 1_000_050, CacheCreation: 3_000_000, CacheRead: 2_000_000, CacheCreation1h: 1_000_000, Total: 7_000_550}
	if tot.UsageTokens != want {
		t.Errorf("tokens %+v\nwant   %+v", tot.UsageTokens, want)
	}
	// 1M input at $5, 2M reads at $0.5, 2M 5-minute writes at $6.25, 1M
	// 1-hour writes at $10, 1M output at $25.
	if wantCost := 5 + 1 + 12.5 + 10 + 25.0; math.Abs(tot.CostUSD-wantCost) > 1e-9 {
		t.Errorf("cost %v, want %v", tot.CostUSD, wantCost)
	}
	if !reflect.DeepEqual(tot.Unpriced, []string{"claude-mystery-9"}) {
		t.Errorf("unpriced %v, want the mystery model (not <synthetic>, which has no tokens)", tot.Unpriced)
	}
	byName := map[string]api.UsageModel{}
	for _, m := range tot.Models {
		byName[m.Model] = m
	}
	if m := byName["claude-mystery-9"]; m.Priced || m.CostUSD != nil || m.Input != 500 || m.Calls != 1 {
		t.Errorf("mystery model %+v: want unpriced, cost null, its tokens counted", m)
	}
	if m := byName["claude-opus-4-7"]; !m.Priced || m.PriceEntry != "claude-opus-4-7" || m.CostUSD == nil {
		t.Errorf("opus %+v", m)
	}

	// An override table: the mystery model priced, opus no longer.
	table, err := llm.ParsePrices("mine.json", []byte(`{"date": "2026-12-01", "models": {"claude-mystery-9": {"input": 1000, "output": 10000}}}`))
	if err != nil {
		t.Fatal(err)
	}
	rep, err = api.UsageOf(api.UsageRequest{Period: "monthly", TZ: "UTC", Prices: table}, sessions, calls)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Prices.File != "mine.json" || rep.Prices.Date != "2026-12-01" {
		t.Errorf("prices %+v", rep.Prices)
	}
	if c := rep.Total.CostUSD; math.Abs(c-(0.5+0.5)) > 1e-9 || !reflect.DeepEqual(rep.Total.Unpriced, []string{"claude-opus-4-7"}) {
		t.Errorf("with mine.json: cost %v unpriced %v", c, rep.Total.Unpriced)
	}

	// mine.json has no cache_read price: cache reads cost what input
	// does, never $0.
	cached := [][]engine.CallUsage{{{Time: at(t, "2026-03-01T10:00:00Z"), Model: "claude-mystery-9", Usage: engine.Usage{CacheRead: 1000}}}}
	rep, err = api.UsageOf(api.UsageRequest{Period: "monthly", TZ: "UTC", Prices: table}, sessions[:1], cached)
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Total.CostUSD; math.Abs(c-1) > 1e-9 {
		t.Errorf("1,000 cache reads at no cache_read price, input $1000/M: cost %v, want 1", c)
	}
}

func TestUsageBadRequest(t *testing.T) {
	for _, req := range []api.UsageRequest{{Period: "hourly"}, {TZ: "Mars/Olympus_Mons"}, {Prices: &llm.Prices{File: "empty.json"}}} {
		if _, err := api.UsageOf(req, nil, nil); !errors.Is(err, api.ErrBadRequest) {
			t.Errorf("%+v: %v, want ErrBadRequest", req, err)
		}
	}
}
