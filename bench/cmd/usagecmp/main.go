// Command usagecmp compares `bbengine usage session --json` with ccusage
// 18.0.11's `session --json` on the golden Claude Code corpus, session by
// session, and explains every difference.
//
//	go run ./bench/cmd/usagecmp                 # builds bbengine, prints Markdown
//	go run ./bench/cmd/usagecmp -bin ./bbengine
//
// It imports the corpus (../shared/agentlogs-golden/claude) into a
// temporary data directory with `bbengine import claude` and runs
// `bbengine usage session --json --agent claude-code`. ccusage reads a
// temporary CLAUDE_CONFIG_DIR holding copies of the same files, each
// moved to projects/<source>/<its sessionId>/ (ccusage names a session
// after the directory of its file, so that a session's main file and its
// subagents' files add up to the session bbengine reports; the bytes are
// the same). Both run in UTC.
//
// To explain the output tokens it reads the files itself (the bench, not
// bbengine usage, which reads only the engine): for every response (a
// message.id and requestId pair, which ccusage counts once) the
// output_tokens of its first log line and of its last. ccusage keeps the
// first line, whose count is the partial one of the stream's start;
// bbengine keeps the last (ccusage issues #797, #901, #938). Cost
// differences are split into what the output tokens explain, what 1-hour
// cache writes explain (bbengine prices them at 2x input, ccusage at the
// 5-minute rate), and the rest (the two price tables). It then compares
// `usage blocks` with ccusage's `blocks --json` block by block.
//
// The corpus missing, it says so and exits 0. ccusage is installed with
// `npm install --prefix CACHE ccusage@18.0.11` the first time (as
// importbench does); node and npm must be on PATH.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/bench"
	"github.com/bbengine/bbengine/codec/llm"
)

const ccusageVersion = bench.CCUsageVersion

func main() {
	bin := flag.String("bin", "", "bbengine binary (default: go build it into a temporary directory)")
	cache := flag.String("cache", "", "where ccusage is installed (default: $XDG_CACHE_HOME/bbengine-bench/ccusage-"+ccusageVersion+")")
	golden := flag.String("golden", bench.GoldenClaude, "the golden Claude Code corpus")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after this long")
	flag.Parse()
	if _, err := os.Stat(*golden); errors.Is(err, fs.ErrNotExist) {
		fmt.Printf("usagecmp: skipped: no golden corpus at %s\n", *golden)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := run(ctx, *bin, *cache, *golden); err != nil {
		fmt.Fprintln(os.Stderr, "usagecmp:", err)
		os.Exit(1)
	}
}

// tokens are one side's figures for a session or a model.
type tokens struct {
	In, Out, Create, Read int64
	Cost                  float64
}

func run(ctx context.Context, bin, cache, golden string) error {
	tmp, err := os.MkdirTemp("", "usagecmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if bin == "" {
		bin = filepath.Join(tmp, "bbengine")
		fmt.Fprintln(os.Stderr, "building bbengine…")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, ".")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build: %w", err)
		}
	}
	entry, err := bench.InstallCCUsage(ctx, cache)
	if err != nil {
		return err
	}

	// bbengine: import the corpus as it lies, then ask usage.
	data := filepath.Join(tmp, "data")
	if out, err := command(ctx, nil, bin, "--dir", data, "import", "claude", "--quiet", golden); err != nil {
		return fmt.Errorf("bbengine import: %w\n%s", err, out)
	}
	out, err := command(ctx, []string{"TZ=UTC"}, bin, "--dir", data, "usage", "session", "--json", "--agent", "claude-code", "--tz", "UTC")
	if err != nil {
		return fmt.Errorf("bbengine usage: %w\n%s", err, out)
	}
	var ours api.UsageReport
	if err := json.Unmarshal(out, &ours); err != nil {
		return fmt.Errorf("bbengine usage --json: %w", err)
	}

	// ccusage: the same files, one directory per sessionId.
	cfg := filepath.Join(tmp, "claude")
	resp, err := layout(golden, filepath.Join(cfg, "projects"))
	if err != nil {
		return err
	}
	out, err = command(ctx, []string{"CLAUDE_CONFIG_DIR=" + cfg, "TZ=UTC"}, "node", entry, "session", "--json", "--offline")
	if err != nil {
		return fmt.Errorf("ccusage: %w\n%s", err, out)
	}
	var cc struct {
		Sessions []struct {
			SessionID           string  `json:"sessionId"`
			InputTokens         int64   `json:"inputTokens"`
			OutputTokens        int64   `json:"outputTokens"`
			CacheCreationTokens int64   `json:"cacheCreationTokens"`
			CacheReadTokens     int64   `json:"cacheReadTokens"`
			TotalCost           float64 `json:"totalCost"`
			ModelBreakdowns     []struct {
				ModelName           string  `json:"modelName"`
				InputTokens         int64   `json:"inputTokens"`
				OutputTokens        int64   `json:"outputTokens"`
				CacheCreationTokens int64   `json:"cacheCreationTokens"`
				CacheReadTokens     int64   `json:"cacheReadTokens"`
				Cost                float64 `json:"cost"`
			} `json:"modelBreakdowns"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal(out, &cc); err != nil {
		return fmt.Errorf("ccusage --json: %w", err)
	}

	// Side by side, by session id.
	type pair struct {
		ours, cc tokens
		first    int64 // output of the first line of each response
		last     int64 // and of the last
		models   map[string]*[2]tokens
	}
	rows := map[string]*pair{}
	get := func(id string) *pair {
		p := rows[id]
		if p == nil {
			p = &pair{models: map[string]*[2]tokens{}}
			rows[id] = p
		}
		return p
	}
	model := func(p *pair, name string) *[2]tokens {
		m := p.models[name]
		if m == nil {
			m = &[2]tokens{}
			p.models[name] = m
		}
		return m
	}
	var ours1h int64
	oneHour := map[string]int64{} // model: its 1-hour cache writes, ours
	for _, r := range ours.Rows {
		p := get(strings.TrimPrefix(r.Key, "claude:"))
		p.ours = tokens{r.Input, r.Output, r.CacheCreation, r.CacheRead, r.CostUSD}
		for _, m := range r.Models {
			t := &model(p, m.Model)[0]
			*t = tokens{m.Input, m.Output, m.CacheCreation, m.CacheRead, 0}
			if m.CostUSD != nil {
				t.Cost = *m.CostUSD
			}
			oneHour[m.Model] += m.CacheCreation1h
			ours1h += m.CacheCreation1h
		}
	}
	for _, s := range cc.Sessions {
		p := get(s.SessionID)
		p.cc = tokens{s.InputTokens, s.OutputTokens, s.CacheCreationTokens, s.CacheReadTokens, s.TotalCost}
		for _, m := range s.ModelBreakdowns {
			model(p, m.ModelName)[1] = tokens{m.InputTokens, m.OutputTokens, m.CacheCreationTokens, m.CacheReadTokens, m.Cost}
		}
	}
	for id, r := range resp {
		p := get(id)
		p.first += r.first
		p.last += r.last
	}
	ids := make([]string, 0, len(rows))
	for id, p := range rows {
		if p.ours != (tokens{}) || p.cc != (tokens{}) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)

	fmt.Printf("bbengine usage session vs ccusage %s session, golden Claude Code corpus, same files (%s)\n\n", ccusageVersion, time.Now().UTC().Format(time.RFC3339))
	fmt.Println("| session | input (ours / ccusage) | output (ours / ccusage) | cache create | cache read | cost USD (ours / ccusage) | output: last lines / first lines |")
	fmt.Println("|---|---|---|---|---|---|---|")
	var tot pair
	for _, id := range ids {
		p := rows[id]
		fmt.Printf("| %s | %s | %s | %s | %s | %.4f / %.4f | %d / %d |\n", id[:min(8, len(id))],
			both(p.ours.In, p.cc.In), both(p.ours.Out, p.cc.Out), both(p.ours.Create, p.cc.Create), both(p.ours.Read, p.cc.Read),
			p.ours.Cost, p.cc.Cost, p.last, p.first)
		tot.ours.add(p.ours)
		tot.cc.add(p.cc)
		tot.first += p.first
		tot.last += p.last
	}
	fmt.Printf("| **total** | %s | %s | %s | %s | %.4f / %.4f | %d / %d |\n\n",
		both(tot.ours.In, tot.cc.In), both(tot.ours.Out, tot.cc.Out), both(tot.ours.Create, tot.cc.Create), both(tot.ours.Read, tot.cc.Read),
		tot.ours.Cost, tot.cc.Cost, tot.last, tot.first)

	fmt.Println("Differences:")
	for _, f := range []struct {
		name     string
		ours, cc int64
	}{{"input", tot.ours.In, tot.cc.In}, {"cache create", tot.ours.Create, tot.cc.Create}, {"cache read", tot.ours.Read, tot.cc.Read}} {
		if f.ours == f.cc {
			fmt.Printf("- %s: equal (%d).\n", f.name, f.ours)
		} else {
			fmt.Printf("- %s: DIFFERENT: ours %d, ccusage %d (unexplained).\n", f.name, f.ours, f.cc)
		}
	}
	switch {
	case tot.ours.Out == tot.last && tot.cc.Out == tot.first:
		fmt.Printf("- output: ours %d, ccusage %d (ccusage %.1f%% lower; ours %+.1f%% over ccusage). Explained exactly: "+
			"the last log line of every response sums to %d (ours), the first to %d (ccusage keeps the first line, a partial streaming count; "+
			"ccusage issues #797, #901, #938).\n", tot.ours.Out, tot.cc.Out, 100*float64(tot.ours.Out-tot.cc.Out)/float64(tot.ours.Out),
			100*float64(tot.ours.Out-tot.cc.Out)/float64(tot.cc.Out), tot.last, tot.first)
	default:
		fmt.Printf("- output: ours %d, ccusage %d; last lines sum to %d, first lines to %d: NOT fully explained by first-vs-last line.\n",
			tot.ours.Out, tot.cc.Out, tot.last, tot.first)
	}
	for _, id := range ids {
		p := rows[id]
		if p.ours.In != p.cc.In || p.ours.Create != p.cc.Create || p.ours.Read != p.cc.Read {
			fmt.Printf("  - session %s: input or cache differ: ours %+v, ccusage %+v\n", id, p.ours, p.cc)
		}
		if p.ours.Out != p.last || p.cc.Out != p.first {
			fmt.Printf("  - session %s: output ours %d (last lines %d), ccusage %d (first lines %d)\n", id, p.ours.Out, p.last, p.cc.Out, p.first)
		}
	}

	// Cost, per model: the output tokens at the output price, the 1-hour
	// cache writes at the difference of the two write prices, the rest
	// is the two tables' prices.
	fmt.Printf("- cost: ours $%.4f, ccusage $%.4f (%+.4f). By model:\n", tot.ours.Cost, tot.cc.Cost, tot.ours.Cost-tot.cc.Cost)
	byModel := map[string]*[2]tokens{}
	for _, p := range rows {
		for name, m := range p.models {
			t := byModel[name]
			if t == nil {
				t = &[2]tokens{}
				byModel[name] = t
			}
			t[0].add(m[0])
			t[1].add(m[1])
		}
	}
	prices := llm.BuiltinPrices()
	var names []string
	for name := range byModel {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		m := byModel[name]
		pr, _, ok := prices.Lookup(name)
		if !ok {
			fmt.Printf("  - %s: unpriced in our table (%d tokens); ccusage $%.4f\n", name, m[0].In+m[0].Out+m[0].Create+m[0].Read, m[1].Cost)
			continue
		}
		d := m[0].Cost - m[1].Cost
		out := float64(m[0].Out-m[1].Out) * pr.Output / 1e6
		w1h := pr.CacheWrite1h
		if w1h == 0 {
			w1h = pr.CacheWrite
		}
		long := float64(oneHour[name]) * (w1h - pr.CacheWrite) / 1e6
		rest := d - out - long
		fmt.Printf("  - %s: ours $%.4f, ccusage $%.4f, %+.4f = output tokens %+.4f (%+d at $%g/M) + 1-hour cache writes %+.4f (%d at $%g/M instead of $%g/M) + prices %+.4f",
			name, m[0].Cost, m[1].Cost, d, out, m[0].Out-m[1].Out, pr.Output, long, oneHour[name], w1h, pr.CacheWrite, rest)
		if math.Abs(rest) < 0.0005 {
			fmt.Println(" (same prices)")
		} else {
			fmt.Println(" (ccusage's LiteLLM table differs from ours for this model)")
		}
	}
	fmt.Printf("\nprices: ours %s (%s); ccusage %s --offline (its bundled LiteLLM table). 1-hour cache writes in all: %d.\n", prices.Date, prices.File, ccusageVersion, ours1h)
	return compareBlocks(ctx, bin, data, entry, cfg)
}

// compareBlocks compares `usage blocks` with ccusage's `blocks --json`:
// the same blocks (start, calls, input and cache tokens), output apart.
func compareBlocks(ctx context.Context, bin, data, entry, cfg string) error {
	out, err := command(ctx, []string{"TZ=UTC"}, bin, "--dir", data, "usage", "blocks", "--json", "--agent", "claude-code", "--tz", "UTC")
	if err != nil {
		return fmt.Errorf("bbengine usage blocks: %w\n%s", err, out)
	}
	var ours api.UsageReport
	if err := json.Unmarshal(out, &ours); err != nil {
		return fmt.Errorf("bbengine usage blocks --json: %w", err)
	}
	out, err = command(ctx, []string{"CLAUDE_CONFIG_DIR=" + cfg, "TZ=UTC"}, "node", entry, "blocks", "--json", "--offline")
	if err != nil {
		return fmt.Errorf("ccusage blocks: %w\n%s", err, out)
	}
	var cc struct {
		Blocks []struct {
			StartTime string `json:"startTime"`
			IsGap     bool   `json:"isGap"`
			Entries   int    `json:"entries"`
			Tokens    struct {
				In     int64 `json:"inputTokens"`
				Out    int64 `json:"outputTokens"`
				Create int64 `json:"cacheCreationInputTokens"`
				Read   int64 `json:"cacheReadInputTokens"`
			} `json:"tokenCounts"`
		} `json:"blocks"`
	}
	if err := json.Unmarshal(out, &cc); err != nil {
		return fmt.Errorf("ccusage blocks --json: %w", err)
	}
	type block struct {
		calls                 int
		in, out, create, read int64
	}
	sides := map[string]*[2]block{}
	var starts []string
	side := func(start string) *[2]block {
		b := sides[start]
		if b == nil {
			b = &[2]block{}
			sides[start] = b
			starts = append(starts, start)
		}
		return b
	}
	for _, r := range ours.Rows {
		side(r.Key)[0] = block{r.Calls, r.Input, r.Output, r.CacheCreation, r.CacheRead}
	}
	gaps := 0
	for _, b := range cc.Blocks {
		if b.IsGap {
			gaps++
			continue
		}
		t, err := time.Parse(time.RFC3339, b.StartTime)
		if err != nil {
			return fmt.Errorf("ccusage block start %q: %w", b.StartTime, err)
		}
		side(t.UTC().Format(time.RFC3339))[1] = block{b.Entries, b.Tokens.In, b.Tokens.Out, b.Tokens.Create, b.Tokens.Read}
	}
	slices.Sort(starts)
	fmt.Printf("\n5-hour blocks: bbengine usage blocks vs ccusage blocks (%d gap blocks of ccusage, which hold no calls, left out)\n\n", gaps)
	fmt.Println("| block start (UTC) | calls | input | output (ours / ccusage) | cache create | cache read |")
	fmt.Println("|---|---|---|---|---|---|")
	same := true
	for _, st := range starts {
		b := sides[st]
		o, c := b[0], b[1]
		fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", st, both(int64(o.calls), int64(c.calls)), both(o.in, c.in), both(o.out, c.out), both(o.create, c.create), both(o.read, c.read))
		if o.calls != c.calls || o.in != c.in || o.create != c.create || o.read != c.read {
			same = false
		}
	}
	if same {
		fmt.Println("\n- The same blocks, with the same calls, input and cache tokens; output differs as above (first vs last line of each response).")
	} else {
		fmt.Println("\n- Blocks DIFFER beyond output: a response's time is its last line's for bbengine and its first line's for ccusage, which can move a call across a block's edge.")
	}
	return nil
}

func (t *tokens) add(u tokens) {
	t.In += u.In
	t.Out += u.Out
	t.Create += u.Create
	t.Read += u.Read
	t.Cost += u.Cost
}

// both formats two counts, one when they are equal.
func both(ours, cc int64) string {
	if ours == cc {
		return fmt.Sprintf("%d (=)", ours)
	}
	return fmt.Sprintf("%d / %d", ours, cc)
}

// firstLast is the output_tokens of the first and last line of the
// responses of one session.
type firstLast struct{ first, last int64 }

// layout copies every .jsonl under golden into dst/<source>/<sessionId>/,
// named after its path, and returns per sessionId the output tokens of
// the first and the last line of each response (message.id:requestId,
// once across all files, as ccusage dedups).
func layout(golden, dst string) (map[string]firstLast, error) {
	type line struct {
		SessionID string `json:"sessionId"`
		RequestID string `json:"requestId"`
		Message   *struct {
			ID    string `json:"id"`
			Usage *struct {
				Output int64 `json:"output_tokens"`
			} `json:"usage"`
		} `json:"message"`
	}
	type seen struct {
		session     string
		first, last int64
	}
	responses := map[string]*seen{}
	var order []string
	err := filepath.WalkDir(golden, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".jsonl") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(golden, p)
		source := strings.SplitN(rel, string(filepath.Separator), 2)[0]
		session := "no-session-" + strings.TrimSuffix(filepath.Base(p), ".jsonl")
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var l line
			if json.Unmarshal(sc.Bytes(), &l) != nil {
				continue
			}
			if l.SessionID != "" && strings.HasPrefix(session, "no-session-") {
				session = l.SessionID
			}
			if l.Message == nil || l.Message.Usage == nil || l.Message.ID == "" || l.RequestID == "" {
				continue
			}
			key := l.Message.ID + ":" + l.RequestID
			r := responses[key]
			if r == nil {
				r = &seen{session: cmpOr(l.SessionID, session), first: l.Message.Usage.Output}
				responses[key] = r
				order = append(order, key)
			}
			r.last = l.Message.Usage.Output
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		dir := filepath.Join(dst, source, session)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, strings.ReplaceAll(rel, string(filepath.Separator), "__")), b, 0o644)
	})
	out := map[string]firstLast{}
	for _, k := range order {
		r := responses[k]
		fl := out[r.session]
		fl.first += r.first
		fl.last += r.last
		out[r.session] = fl
	}
	return out, err
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// command runs name with args (env added to the environment) and
// returns its standard output, or its standard error with an error.
func command(ctx context.Context, env []string, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return stderr.Bytes(), err
	}
	return out, nil
}
