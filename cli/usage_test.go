package cli

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/api"
)

const usageSession = "aaaaaaaa-2222-4333-8444-555555555555"

// usageTranscript is a Claude Code log of two responses: the first
// streamed over two lines (a thinking block, then text), the first line
// carrying the partial output count (3) and the last the final one
// (250), with 5-minute and 1-hour cache writes and cache reads; the
// second from a model no price table knows, the next day (UTC).
func usageTranscript() string {
	line := func(ts, uuid string, m map[string]any) string {
		m["uuid"], m["sessionId"], m["timestamp"], m["cwd"], m["version"] = uuid, usageSession, ts, "/repo", "2.1.39"
		b, _ := json.Marshal(m)
		return string(b)
	}
	usage := func(out int) map[string]any {
		return map[string]any{"input_tokens": 10, "cache_creation_input_tokens": 1000, "cache_read_input_tokens": 5000, "output_tokens": out,
			"cache_creation": map[string]any{"ephemeral_5m_input_tokens": 400, "ephemeral_1h_input_tokens": 600}}
	}
	reply := func(id, req, model string, content []any, u map[string]any) map[string]any {
		return map[string]any{"type": "assistant", "requestId": req, "message": map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model, "content": content, "usage": u}}
	}
	return strings.Join([]string{
		line("2026-11-02T23:30:00Z", "00000000-0000-4000-8000-000000000001", map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": "Fix the cache."}}),
		line("2026-11-02T23:30:05Z", "00000000-0000-4000-8000-000000000002", reply("msg_1", "req_1", "claude-opus-4-6",
			[]any{map[string]any{"type": "thinking", "thinking": "Look at the cache.", "signature": "sig"}}, usage(3))),
		line("2026-11-02T23:30:09Z", "00000000-0000-4000-8000-000000000003", reply("msg_1", "req_1", "claude-opus-4-6",
			[]any{map[string]any{"type": "text", "text": "The cache is fixed."}}, usage(250))),
		line("2026-11-03T00:10:00Z", "00000000-0000-4000-8000-000000000004", map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": "Thanks."}}),
		line("2026-11-03T00:10:05Z", "00000000-0000-4000-8000-000000000005", reply("msg_2", "req_2", "claude-mystery-9",
			[]any{map[string]any{"type": "text", "text": "You are welcome."}}, map[string]any{"input_tokens": 20, "cache_read_input_tokens": 100, "output_tokens": 40})),
	}, "\n") + "\n"
}

// usageDir imports usageTranscript into a new data directory.
func usageDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(t.TempDir(), usageSession+".jsonl")
	if err := os.WriteFile(src, []byte(usageTranscript()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := run(t, "--dir", dir, "import", "claude", src, "--quiet"); code != 0 {
		t.Fatalf("import: %d\n%s%s", code, out, errOut)
	}
	return dir
}

// usageJSON runs bbengine usage with args and --json and decodes the
// report.
func usageJSON(t *testing.T, dir string, args ...string) (*api.UsageReport, string) {
	t.Helper()
	out, errOut, code := run(t, append([]string{"--dir", dir, "usage", "--json", "--tz", "UTC"}, args...)...)
	if code != 0 {
		t.Fatalf("usage %v: exit %d\n%s%s", args, code, out, errOut)
	}
	var rep api.UsageReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("usage --json: %v\n%s", err, out)
	}
	return &rep, out
}

// TestUsageCLI imports a small log and checks bbengine usage --json: the
// last line of a streamed response counts, cached tokens once each, the
// unknown model unpriced with a null cost, and the JSON's shape.
func TestUsageCLI(t *testing.T) {
	dir := usageDir(t)
	rep, out := usageJSON(t, dir, "daily")
	if k, n := rowKeys(rep); !reflect.DeepEqual(k, []string{"2026-11-02", "2026-11-03"}) || !reflect.DeepEqual(n, []int{1, 1}) {
		t.Fatalf("daily rows %v %v\n%s", k, n, out)
	}
	day := rep.Rows[0]
	want := api.UsageTokens{Input: 10, Output: 250, CacheCreation: 1000, CacheRead: 5000, CacheCreation1h: 600, Total: 6260}
	if day.UsageTokens != want {
		t.Errorf("first day %+v, want %+v (the last line's output, cache apart)", day.UsageTokens, want)
	}
	// opus 4.6: 10 in at $5, 5000 reads at $0.5, 400 5-minute writes at
	// $6.25 and 600 1-hour ones at $10, 250 out at $25 (per million).
	if wantCost := (10*5 + 5000*0.5 + 400*6.25 + 600*10 + 250*25) / 1e6; math.Abs(day.CostUSD-wantCost) > 1e-12 {
		t.Errorf("first day cost %v, want %v", day.CostUSD, wantCost)
	}
	if next := rep.Rows[1]; !reflect.DeepEqual(next.Unpriced, []string{"claude-mystery-9"}) || next.CostUSD != 0 || next.Input != 20 || next.CacheRead != 100 {
		t.Errorf("second day %+v", next)
	}
	// The JSON: field names a program can rely on, a null cost for the
	// unpriced model.
	var shape struct {
		Period string `json:"period"`
		TZ     string `json:"tz"`
		Prices struct {
			Date string `json:"date"`
			File string `json:"file"`
		} `json:"prices"`
		Rows []map[string]json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &shape); err != nil {
		t.Fatal(err)
	}
	if shape.Period != "daily" || shape.TZ != "UTC" || shape.Prices.Date == "" || shape.Prices.File == "" || len(shape.Rows) != 2 {
		t.Fatalf("shape %+v", shape)
	}
	for _, f := range []string{"key", "start_ns", "end_ns", "sessions", "calls", "input", "output", "cache_creation", "cache_read", "total", "cost_usd", "models"} {
		if _, ok := shape.Rows[1][f]; !ok {
			t.Errorf("a row has no %q: %s", f, out)
		}
	}
	var models []map[string]json.RawMessage
	json.Unmarshal(shape.Rows[1]["models"], &models)
	if len(models) != 1 || string(models[0]["cost_usd"]) != "null" || string(models[0]["priced"]) != "false" {
		t.Errorf("the unpriced model is %v, want a null cost", models)
	}

	// session, --model, --since.
	rep, _ = usageJSON(t, dir, "session")
	if len(rep.Rows) != 1 || rep.Rows[0].Key != "claude:"+usageSession || rep.Rows[0].Agent != "claude-code" || rep.Rows[0].Calls != 2 {
		t.Errorf("session rows %+v", rep.Rows)
	}
	rep, _ = usageJSON(t, dir, "monthly", "--model", "claude-opus")
	if len(rep.Rows) != 1 || rep.Rows[0].Key != "2026-11" || rep.Total.Calls != 1 || len(rep.Total.Unpriced) != 0 {
		t.Errorf("--model claude-opus: %+v", rep.Total)
	}
	rep, _ = usageJSON(t, dir, "blocks", "--since", "2026-11-03")
	if k, _ := rowKeys(rep); !reflect.DeepEqual(k, []string{"2026-11-03T00:00:00Z"}) {
		t.Errorf("--since 2026-11-03 blocks %v", k)
	}
	rep, _ = usageJSON(t, dir, "--agent", "codex")
	if len(rep.Rows) != 0 || rep.Total.Calls != 0 {
		t.Errorf("--agent codex: %+v", rep)
	}

	// --prices: the table replaces the built-in one.
	prices := writeFile(t, t.TempDir(), "prices.json", `{"date": "2026-12-01", "models": {"claude-mystery-9": {"input": 1, "output": 1, "cache_read": 1}}}`)
	rep, _ = usageJSON(t, dir, "--prices", prices)
	if rep.Prices.File != prices || rep.Prices.Date != "2026-12-01" || !reflect.DeepEqual(rep.Total.Unpriced, []string{"claude-opus-4-6"}) ||
		math.Abs(rep.Total.CostUSD-160/1e6) > 1e-12 {
		t.Errorf("--prices: %+v %v %v", rep.Prices, rep.Total.Unpriced, rep.Total.CostUSD)
	}

	// The table: rows, the unpriced model said so.
	text, errOut, code := run(t, "--dir", dir, "usage", "--tz", "UTC")
	if code != 0 || !strings.Contains(text, "2026-11-02") || !strings.Contains(text, "unpriced") || !strings.Contains(text, "claude-mystery-9") || !strings.Contains(text, "+?") {
		t.Errorf("table: %d\n%s%s", code, text, errOut)
	}
}

func TestUsageCLIBadInput(t *testing.T) {
	dir := usageDir(t)
	bad := writeFile(t, t.TempDir(), "prices.json", "{\n  \"date\": \"2026-12-01\",\n  \"models\": {\n    \"m\": {\"input\": \"free\", \"output\": 1}\n  }\n}\n")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"hourly"}, `no period "hourly"`},
		{[]string{"daily", "weekly"}, "at most one period"},
		{[]string{"--since", "yesterday-ish"}, "--since"},
		{[]string{"--tz", "Mars/Olympus_Mons"}, "--tz"},
		{[]string{"--prices", bad}, bad + `:4: model "m": field "input"`},
		{[]string{"--prices", filepath.Join(t.TempDir(), "none.json")}, "none.json"},
	}
	for _, tt := range tests {
		out, errOut, code := run(t, append([]string{"--dir", dir, "usage"}, tt.args...)...)
		if code == 0 || !strings.Contains(errOut, tt.want) {
			t.Errorf("usage %v: exit %d, stderr %q, want it to say %q\n%s", tt.args, code, errOut, tt.want, out)
		}
	}
}

// TestUsageSurfacesAgree: bbengine usage answers the same in process and
// through a running proxy (api.Remote over loopback).
func TestUsageSurfacesAgree(t *testing.T) {
	dir := usageDir(t)
	prices := writeFile(t, t.TempDir(), "prices.json", `{"date": "2026-12-01", "models": {"claude-opus-4-6": {"input": 2, "output": 3}}}`)
	asks := [][]string{{"daily"}, {"weekly"}, {"monthly"}, {"session"}, {"blocks"}, {"daily", "--model", "claude-mystery"}, {"session", "--prices", prices}}
	want := make([]string, len(asks))
	for i, a := range asks {
		_, want[i] = usageJSON(t, dir, a...)
	}
	local, closeL, err := api.OpenReader(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	wantRep, err := local.Usage(api.UsageRequest{Period: "blocks", TZ: "UTC", Now: 1})
	closeL()
	if err != nil {
		t.Fatal(err)
	}

	_, stop := startSurfaceProxy(t, dir)
	defer stop()
	remote := api.Dial(dir)
	if remote == nil {
		t.Fatal("no running proxy in the lock file")
	}
	got, err := remote.Usage(api.UsageRequest{Period: "blocks", TZ: "UTC", Now: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, wantRep) {
		t.Errorf("api.Remote: %+v\nwant %+v", got, wantRep)
	}
	for i, a := range asks {
		if _, out := usageJSON(t, dir, a...); out != want[i] {
			t.Errorf("usage %v through the proxy:\n%s\nin process:\n%s", a, out, want[i])
		}
	}
	if _, err := remote.Usage(api.UsageRequest{Period: "hourly"}); err == nil || !strings.Contains(err.Error(), "hourly") {
		t.Errorf("a bad period through the proxy: %v", err)
	}
}

func rowKeys(r *api.UsageReport) ([]string, []int) {
	var k []string
	var n []int
	for _, row := range r.Rows {
		k = append(k, row.Key)
		n = append(n, row.Calls)
	}
	return k, n
}
