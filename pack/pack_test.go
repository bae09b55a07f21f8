package pack

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/engine"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// session builds a synthetic session of n tasks: each with an outcome,
// two decisions (the first of every third task superseded by the
// second), a constraint, an open thread (every other one closed) and
// segs transcript segments.
func session(n, segs int, seed uint64) []engine.Artifact {
	r := rand.New(rand.NewPCG(seed, 1))
	words := strings.Fields("cache queue parser retry backoff index schema migration token budget worker pool lexer config " +
		"router handler middleware logger metrics tracing storage bucket shard replica snapshot compaction")
	phrase := func(k int) string {
		var b []string
		for range k {
			b = append(b, words[r.IntN(len(words))])
		}
		return strings.Join(b, " ")
	}
	var out []engine.Artifact
	for t := 1; t <= n; t++ {
		task := fmt.Sprintf("task-%04d", t)
		ts := int64(t) * 1e9
		file := fmt.Sprintf("internal/%s/%s.go", words[t%len(words)], words[(t*7)%len(words)])
		base := engine.Artifact{Session: "s1", Task: task, TaskN: t, First: ts, Last: ts, Builder: engine.MemoryVersion}
		o := base
		o.ID, o.Type, o.Status, o.Title = fmt.Sprintf("out-%012x", t), engine.ArtifactOutcome, "success", "Task "+task
		if t%5 == 0 {
			o.Status = "fail"
		}
		o.Files = []string{file}
		o.Outcome = &engine.Outcome{Status: o.Status, Reason: "tests still fail", Prompt: "please " + phrase(6),
			Summary: []string{"Implemented the " + phrase(3) + " in " + file + ".", "Ran go test ./... after " + phrase(2) + "."},
			Files:   []engine.FileChange{{Path: file, Op: "edit"}}}
		out = append(out, o)
		for d := range 2 {
			a := base
			a.ID, a.Type, a.Status = fmt.Sprintf("dec-%06x%06x", t, d), engine.ArtifactDecision, "active"
			a.Decision = &engine.Decision{Statement: "Use " + phrase(2) + " for the " + phrase(2) + " in " + file + ".", Rationale: "it is " + phrase(3)}
			a.Title, a.Text, a.Files = a.Decision.Statement, a.Decision.Statement, []string{file}
			if t%3 == 0 && d == 0 {
				a.Status, a.Decision.SupersededBy = "superseded", fmt.Sprintf("dec-%06x%06x", t, 1)
			}
			out = append(out, a)
		}
		c := base
		c.ID, c.Type, c.Status = fmt.Sprintf("con-%012x", t), engine.ArtifactConstraint, "active"
		scope := "task"
		if t%10 == 1 {
			scope = "session"
		}
		c.Constraint = &engine.Constraint{Statement: "The " + phrase(2) + " must never " + phrase(2) + ".", Modal: "must not", Scope: scope}
		c.Title, c.Text = c.Constraint.Statement, c.Constraint.Statement
		out = append(out, c)
		th := base
		th.ID, th.Type, th.Status = fmt.Sprintf("thr-%012x", t), engine.ArtifactThread, "open"
		if t%2 == 0 {
			th.Status = "closed"
		}
		th.Thread = &engine.Thread{Kind: "todo", Text: "handle " + phrase(3), File: file}
		th.Title, th.Text = "TODO: "+th.Thread.Text, th.Thread.Text
		out = append(out, th)
		for s := range segs {
			g := base
			g.ID, g.Type, g.Title = fmt.Sprintf("seg-%06x%06x", t, s), engine.ArtifactSegment, phrase(5)
			g.Text = strings.Repeat(phrase(20)+". ", 6)
			out = append(out, g)
		}
	}
	return out
}

func TestBuildBudgets(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for i := range 60 {
		arts := session(1+r.IntN(80), 0, uint64(i))
		b := BudgetFor(MinTotal + r.IntN(3000))
		if i%3 == 0 {
			b = DefaultBudget()
		}
		if i%7 == 0 {
			b.Decisions, b.Pointers = 0, 0
		}
		in := &Input{Session: "s1", Task: "fix the retry backoff in the queue worker", Artifacts: arts, Budget: b,
			Goal: strings.Repeat("Build a durable job queue with retries. ", 1+r.IntN(40))}
		p, err := Build(in)
		if err != nil {
			t.Fatal(err)
		}
		md := p.Markdown()
		if n := Count(md); n > b.Total || n != p.Tokens {
			t.Errorf("case %d: %d tokens (pack says %d), budget %d", i, n, p.Tokens, b.Total)
		}
		if len(md) > DefaultMaxChars {
			t.Errorf("case %d: %d characters", i, len(md))
		}
		sum := func(items []Item) (n int) {
			for _, it := range items {
				if it.Tokens != Count(renderItem(it)) {
					t.Errorf("case %d: item %s says %d tokens, is %d", i, it.ID, it.Tokens, Count(renderItem(it)))
				}
				n += it.Tokens
			}
			return n
		}
		impl := 0
		for _, it := range p.Implemented {
			impl += Count(renderTask(it))
		}
		// Implemented and pointers keep to their budgets; decisions,
		// constraints and threads may take what the pack leaves of its
		// total, but a section with no budget stays out.
		for _, c := range []struct {
			name      string
			used, max int
		}{{"implemented", impl, b.Implemented},
			{"pointers", Count(pointersHeading + strings.Join(p.Pointers, ", ") + "\n"), max(b.Pointers, Count(pointersHeading+"\n"))}} {
			if c.used > c.max {
				t.Errorf("case %d: %s use %d tokens of %d", i, c.name, c.used, c.max)
			}
		}
		for _, c := range []struct {
			name         string
			used, budget int
		}{{"decisions", sum(p.Decisions), b.Decisions}, {"constraints", sum(p.Constraints), b.Constraints}, {"open threads", sum(p.Threads), b.Threads}} {
			if c.budget == 0 && c.used > 0 {
				t.Errorf("case %d: %s use %d tokens of none", i, c.name, c.used)
			}
		}
		if sum(p.Decisions) > b.Decisions || sum(p.Constraints) > b.Constraints || sum(p.Threads) > b.Threads {
			// Spilled over: only into room the total left.
			spilled := 0
			for _, id := range p.Pointers {
				if !strings.HasPrefix(id, "out-") {
					spilled++
				}
			}
			if room := b.Total - Count(md); room > b.Pointers+150 && len(md) < DefaultMaxChars-600 && spilled > 0 {
				t.Errorf("case %d: %d tokens left unused while %d decisions, constraints or threads are pointers", i, room, spilled)
			}
		}
	}
}

func TestDefaultPackFitsClaudeHook(t *testing.T) {
	// Long texts everywhere: the default budget still keeps the pack
	// well under Claude Code's 10,000-character cap.
	arts := session(200, 0, 3)
	for i := range arts {
		if arts[i].Decision != nil {
			arts[i].Decision.Statement = strings.Repeat("Use the write-ahead log for every durable state change. ", 20)
		}
	}
	p, err := Build(&Input{Session: "s1", Task: "x", Artifacts: arts, Budget: DefaultBudget(), Goal: strings.Repeat("goal ", 2000)})
	if err != nil {
		t.Fatal(err)
	}
	if md := p.Markdown(); len(md) >= DefaultMaxChars || p.Tokens > 1200 {
		t.Errorf("default pack: %d characters, %d tokens", len(md), p.Tokens)
	}
}

func TestBuildDeterministic(t *testing.T) {
	arts := session(40, 2, 1)
	in := &Input{Session: "s1", Task: "tune the cache eviction", Artifacts: arts, Budget: DefaultBudget(), Goal: "a fast cache"}
	p1, err := Build(in)
	if err != nil {
		t.Fatal(err)
	}
	j1, _ := json.Marshal(p1)
	shuffled := append([]engine.Artifact(nil), arts...)
	rand.New(rand.NewPCG(9, 9)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	in2 := *in
	in2.Artifacts = shuffled
	p2, err := Build(&in2)
	if err != nil {
		t.Fatal(err)
	}
	j2, _ := json.Marshal(p2)
	if string(j1) != string(j2) || p1.Markdown() != p2.Markdown() {
		t.Errorf("the order of the artifacts changed the pack:\n%s\n%s", j1, j2)
	}
	if Key(in) != Key(&in2) {
		t.Error("Key depends on the artifacts' order")
	}
	in3 := *in
	in3.Budget = BudgetFor(800)
	if Key(in) == Key(&in3) {
		t.Error("Key ignores the budget")
	}
}

// small is a hand-written session: what is in force, what is not.
func small() []engine.Artifact {
	mk := func(id string, typ engine.ArtifactType, status string, taskN int, text string) engine.Artifact {
		return engine.Artifact{ID: id, Type: typ, Status: status, Session: "s1", Task: fmt.Sprintf("turn-%d", taskN), TaskN: taskN,
			Title: text, Text: text, First: int64(taskN), Last: int64(taskN)}
	}
	old := mk("dec-000000000001", engine.ArtifactDecision, "superseded", 1, "Use SQLite for the job queue.")
	old.Decision = &engine.Decision{Statement: old.Text, SupersededBy: "dec-000000000002"}
	cur := mk("dec-000000000002", engine.ArtifactDecision, "active", 2, "Use BoltDB for the job queue instead of SQLite.")
	cur.Decision = &engine.Decision{Statement: cur.Text, Rationale: "no SQL is needed", Supersedes: []string{old.ID}}
	cache := mk("dec-000000000003", engine.ArtifactDecision, "active", 1, "Use an LRU for the template cache in render/cache.go.")
	cache.Decision = &engine.Decision{Statement: cache.Text}
	cache.Files = []string{"render/cache.go"}
	gone := mk("dec-000000000004", engine.ArtifactDecision, "active", 2, "Use tabs in the Makefile.")
	gone.Decision = &engine.Decision{Statement: gone.Text}
	gone.Forgotten = true
	rule := mk("con-000000000001", engine.ArtifactConstraint, "active", 1, "The queue must never drop a job.")
	rule.Constraint = &engine.Constraint{Statement: rule.Text, Modal: "must not", Scope: "session"}
	open := mk("thr-000000000001", engine.ArtifactThread, "open", 2, "TODO: retry failed jobs with backoff.")
	open.Thread = &engine.Thread{Kind: "todo", Text: "retry failed jobs with backoff.", File: "queue/queue.go"}
	shut := mk("thr-000000000002", engine.ArtifactThread, "closed", 1, "failing test: go test ./queue")
	shut.Thread = &engine.Thread{Kind: "failing_test", Text: "go test ./queue fails"}
	o1 := mk("out-000000000001", engine.ArtifactOutcome, "fail", 1, "turn-1")
	o1.Outcome = &engine.Outcome{Status: "fail", Reason: "tests still fail", Prompt: "Write a job queue.", Summary: []string{"Wrote queue/queue.go with SQLite."},
		Files: []engine.FileChange{{Path: "queue/queue.go", Op: "write"}}}
	o2 := mk("out-000000000002", engine.ArtifactOutcome, "success", 2, "turn-2")
	o2.Outcome = &engine.Outcome{Status: "success", Prompt: "Switch the queue to BoltDB.", Summary: []string{"Moved the queue to BoltDB; go test ./... passes."},
		Files: []engine.FileChange{{Path: "queue/queue.go", Op: "edit"}, {Path: "go.mod", Op: "edit"}}}
	seg := mk("seg-000000000001", engine.ArtifactSegment, "", 2, "user: switch the queue")
	return []engine.Artifact{old, cur, cache, gone, rule, open, shut, o1, o2, seg}
}

func TestBuildContent(t *testing.T) {
	p, err := Build(&Input{Session: "s1", Task: "speed up render/cache.go", TaskID: "turn-3", Artifacts: small(), Budget: DefaultBudget(),
		Goal: "A job queue service.", GoalSource: "run"})
	if err != nil {
		t.Fatal(err)
	}
	md := p.Markdown()
	for _, want := range []string{"<bbengine-context-pack session=\"s1\" task=\"turn-3\"", "Goal: A job queue service.",
		"Use BoltDB for the job queue instead of SQLite. (no SQL is needed) [dec-000000000002]",
		"The queue must never drop a job. (session-wide) [con-000000000001]", "todo: retry failed jobs with backoff. (queue/queue.go) [thr-000000000001]",
		"turn-2 (success) [out-000000000002] files: queue/queue.go, go.mod", "at most one memory_search and two memory_get", "</bbengine-context-pack>"} {
		if !strings.Contains(md, want) {
			t.Errorf("pack lacks %q:\n%s", want, md)
		}
	}
	for _, not := range []string{"dec-000000000001", "Use SQLite for the job queue.", "Makefile", "thr-000000000002", "seg-000000000001"} {
		if strings.Contains(md, not) {
			t.Errorf("pack holds %q (superseded, forgotten, closed or a segment):\n%s", not, md)
		}
	}
	// The task names render/cache.go: that decision ranks first.
	if len(p.Decisions) != 2 || p.Decisions[0].ID != "dec-000000000003" {
		t.Errorf("decisions = %+v", p.Decisions)
	}
	// Implemented is oldest first.
	if len(p.Implemented) != 2 || p.Implemented[0].Task != "turn-1" || p.Implemented[0].Bullets[len(p.Implemented[0].Bullets)-1] != "fail: tests still fail" {
		t.Errorf("implemented = %+v", p.Implemented)
	}
}

func TestBuildSmallBudgetPointers(t *testing.T) {
	// With room for one decision and no total left over, the rest
	// become pointers.
	b := DefaultBudget()
	b.Decisions = Count("- Use an LRU for the template cache in render/cache.go. [dec-000000000003]\n")
	full, err := Build(&Input{Session: "s1", Task: "render/cache.go", Artifacts: small(), Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	// The other decision spills into what the pack leaves of its total.
	if len(full.Decisions) != 2 || full.Omitted["decisions"] != 0 || full.Decisions[1].ID != "dec-000000000002" {
		t.Errorf("with room left: decisions %+v, omitted %v", full.Decisions, full.Omitted)
	}
	b.Total = full.Tokens - full.Decisions[1].Tokens + b.Pointers - 10
	p, err := Build(&Input{Session: "s1", Task: "render/cache.go", Artifacts: small(), Budget: b})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Decisions) != 1 || p.Omitted["decisions"] != 1 || !strings.Contains(strings.Join(p.Pointers, ","), "dec-000000000002") {
		t.Errorf("decisions %+v, omitted %v, pointers %v", p.Decisions, p.Omitted, p.Pointers)
	}
}

func TestBuildErrors(t *testing.T) {
	for _, b := range []Budget{{Total: 10}, {Total: 1000, Decisions: -1}, {Total: 1000, MaxChars: 10}} {
		if _, err := Build(&Input{Session: "s", Budget: b}); err == nil {
			t.Errorf("budget %+v accepted", b)
		}
	}
	p, err := Build(&Input{Session: "s", Budget: DefaultBudget()})
	if err != nil || !p.Empty() {
		t.Errorf("empty input: %v, %+v", err, p)
	}
}

func TestGolden(t *testing.T) {
	p, err := Build(&Input{Session: "s1", Task: "add retries to the queue worker", TaskID: "turn-3", Artifacts: small(), Budget: DefaultBudget(),
		Goal: "A job queue service that never loses work.", GoalSource: "run", Checkpoint: "Queue on BoltDB; retries next.", State: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	j, _ := json.MarshalIndent(p, "", "  ")
	for name, got := range map[string][]byte{"pack.md": []byte(p.Markdown()), "pack.json": append(j, '\n')} {
		file := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(file, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (go test ./pack -update writes it)", err)
		}
		if string(got) != string(want) {
			t.Errorf("%s differs (go test ./pack -update rewrites it):\n%s", file, got)
		}
	}
}

// TestBuildProject: what earlier sessions of the project left in force
// joins the pack, each item saying where it comes from; the project's
// outcomes, and anything of the session itself, come from the session.
// A new session (no artifacts of its own) gets the project's alone.
func TestBuildProject(t *testing.T) {
	day := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC).UnixNano()
	earlier := func(id string, typ engine.ArtifactType, status, text string) engine.Artifact {
		return engine.Artifact{ID: id, Type: typ, Status: status, Session: "s0", Task: "turn-1", TaskN: 1, Title: text, Text: text, First: day, Last: day}
	}
	atlas := earlier("dec-0000000000a1", engine.ArtifactDecision, "active", "Use Atlas for the schema migrations.")
	atlas.Decision = &engine.Decision{Statement: atlas.Text}
	prod := earlier("con-0000000000a1", engine.ArtifactConstraint, "active", "Nobody runs migrations against prod by hand.")
	prod.Constraint = &engine.Constraint{Statement: prod.Text, Modal: "never", Scope: "session"}
	flaky := earlier("thr-0000000000a1", engine.ArtifactThread, "open", "failing test: go test ./store")
	flaky.Thread = &engine.Thread{Kind: "failing_test", Text: "go test ./store fails", Test: "go test ./store"}
	done := earlier("out-0000000000a1", engine.ArtifactOutcome, "success", "turn-1")
	done.Outcome = &engine.Outcome{Status: "success", Prompt: "Add the users table.", Summary: []string{"Added it."}}
	self := earlier("dec-0000000000a2", engine.ArtifactDecision, "active", "A decision of the session itself, from the project index.")
	self.Session = "s1"
	self.Decision = &engine.Decision{Statement: self.Text}
	teammate := earlier("con-0000000000a2", engine.ArtifactConstraint, "active", "Only edit files under docs/.")
	teammate.Constraint = &engine.Constraint{Statement: teammate.Text, Modal: "only", Scope: "subagent"}
	again := earlier("dec-0000000000a3", engine.ArtifactDecision, "active", "Use BoltDB for the job queue instead of SQLite.")
	again.Decision = &engine.Decision{Statement: again.Text}
	project := []engine.Artifact{atlas, prod, flaky, done, self, again, teammate}

	p, err := Build(&Input{Session: "s1", Task: "add a column to users", Artifacts: small(), Project: project, ProjectState: "p1", Budget: DefaultBudget()})
	if err != nil {
		t.Fatal(err)
	}
	md := p.Markdown()
	for _, want := range []string{
		"Use Atlas for the schema migrations. (from session s0, 2026-11-20) [dec-0000000000a1]",
		"Nobody runs migrations against prod by hand. (session-wide; from session s0, 2026-11-20) [con-0000000000a1]",
		"failing_test: go test ./store fails (go test ./store; from session s0, 2026-11-20) [thr-0000000000a1]",
		"Use BoltDB for the job queue instead of SQLite.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("pack lacks %q:\n%s", want, md)
		}
	}
	if strings.Count(md, "Use BoltDB for the job queue") != 1 || strings.Contains(md, "dec-0000000000a3") {
		t.Errorf("a statement made in two sessions is not one item, the session's own:\n%s", md)
	}
	for _, not := range []string{"out-0000000000a1", "dec-0000000000a2", "con-0000000000a2"} {
		if strings.Contains(md, not) {
			t.Errorf("pack holds %s:\n%s", not, md)
		}
	}
	if Key(&Input{Session: "s1", ProjectState: "p1"}) == Key(&Input{Session: "s1", ProjectState: "p2"}) {
		t.Error("the pack key does not change with the project's state")
	}

	fresh, err := Build(&Input{Session: "s2", Project: project, ProjectState: "p1", Budget: DefaultBudget()})
	if err != nil {
		t.Fatal(err)
	}
	if len(fresh.Decisions) != 3 || len(fresh.Constraints) != 1 || len(fresh.Threads) != 1 || len(fresh.Implemented) != 0 {
		t.Errorf("a new session's pack: %d decisions, %d constraints, %d threads, %d tasks; want the project's 3, 1, 1 and none",
			len(fresh.Decisions), len(fresh.Constraints), len(fresh.Threads), len(fresh.Implemented))
	}
}
