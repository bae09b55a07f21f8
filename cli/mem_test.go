package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/index"
)

// memoryTranscript is a Claude Code transcript of two tasks: an LRU
// decision, a constraint, a failing test; then an ARC decision that
// replaces the LRU one and a passing test.
func memoryTranscript() string {
	var lines []string
	n := 0
	t := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	add := func(m map[string]any) {
		n++
		t = t.Add(2 * time.Second)
		m["uuid"] = fmt.Sprintf("00000000-0000-4000-8000-%012d", n)
		m["sessionId"], m["timestamp"], m["cwd"], m["version"] = "33333333-2222-4333-8444-555555555555", t.Format(time.RFC3339Nano), "/repo", "2.1.39"
		b, _ := json.Marshal(m)
		lines = append(lines, string(b))
	}
	user := func(s string) {
		add(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": s}})
	}
	reply := func(content ...map[string]any) {
		add(map[string]any{"type": "assistant", "requestId": fmt.Sprintf("req_%d", n), "message": map[string]any{
			"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
			"content": content, "stop_reason": "end_turn", "usage": map[string]any{"input_tokens": 900, "output_tokens": 90}}})
	}
	result := func(id, out string, isErr bool) {
		add(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": id, "content": out, "is_error": isErr}}}})
	}
	txt := func(s string) map[string]any { return map[string]any{"type": "text", "text": s} }
	use := func(id, name string, in map[string]any) map[string]any {
		return map[string]any{"type": "tool_use", "id": id, "name": name, "input": in}
	}
	user("Add a cache in front of the session store. Never store session tokens in the cache.")
	reply(txt("We decided to use an LRU cache for the session store because lookups repeat."),
		use("toolu_1", "Edit", map[string]any{"file_path": "store/cache.go", "old_string": "package store\n", "new_string": "package store\n\ntype lruCache struct{}\n"}))
	result("toolu_1", "The file store/cache.go has been updated.", false)
	reply(use("toolu_2", "Bash", map[string]any{"command": "go test ./store"}))
	result("toolu_2", "Exit code 1\n--- FAIL: TestSessionStoreEviction (0.00s)\nFAIL\texample.com/store\t0.01s", true)
	reply(txt("The cache is in, but TestSessionStoreEviction fails."))
	user("Make the eviction test pass.")
	reply(txt("We decided to use an ARC cache instead of an LRU cache, since scans evict hot entries."),
		use("toolu_3", "Edit", map[string]any{"file_path": "store/cache.go", "old_string": "type lruCache struct{}\n", "new_string": "type arcCache struct{}\n"}))
	result("toolu_3", "The file store/cache.go has been updated.", false)
	reply(use("toolu_4", "Bash", map[string]any{"command": "go test ./store"}))
	result("toolu_4", "ok  \texample.com/store\t0.02s", false)
	reply(txt("TestSessionStoreEviction passes with the ARC cache."))
	return strings.Join(lines, "\n") + "\n"
}

func memJSON[T any](t *testing.T, args ...string) T {
	t.Helper()
	out, errs, code := run(t, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("%v: exit %d\n%s", args, code, errs)
	}
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%v: %v\n%s", args, err, out)
	}
	return v
}

func TestMem(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, t.TempDir(), "33333333-2222-4333-8444-555555555555.jsonl", memoryTranscript())
	if out, errs, code := run(t, "--dir", dir, "import", "claude", src, "--quiet"); code != 0 {
		t.Fatalf("import: %d\n%s%s", code, out, errs)
	}
	all := memJSON[[]engine.Card](t, "--dir", dir, "mem", "list")
	types := map[engine.ArtifactType]int{}
	for _, c := range all {
		types[c.Type]++
	}
	if types[engine.ArtifactDecision] != 2 || types[engine.ArtifactOutcome] != 2 || types[engine.ArtifactConstraint] != 1 ||
		types[engine.ArtifactThread] != 1 || types[engine.ArtifactSegment] == 0 {
		t.Fatalf("mem list types = %v", types)
	}

	cards := memJSON[[]engine.Card](t, "--dir", dir, "mem", "search", "which cache did we choose for the session store")
	if len(cards) == 0 || cards[0].Type != engine.ArtifactDecision || !strings.Contains(cards[0].Title, "ARC") {
		t.Fatalf("search: top card %+v", cards)
	}
	arc := cards[0].ID
	cards = memJSON[[]engine.Card](t, "--dir", dir, "mem", "search", "TestSessionStoreEviction", "--type", "open_thread")
	if len(cards) != 1 || cards[0].Status != "closed" {
		t.Fatalf("search failing test thread: %+v", cards)
	}

	out, errs, code := run(t, "--dir", dir, "mem", "get", arc[:9])
	if code != 0 || !strings.Contains(out, "Decision (active)") || !strings.Contains(out, "scans evict hot entries") ||
		!strings.Contains(out, ".jsonl:") || !strings.Contains(out, "WAL ") {
		t.Fatalf("mem get: %d\n%s%s", code, out, errs)
	}
	rel := memJSON[api.Related](t, "--dir", dir, "mem", "related", arc)
	if len(rel.Supersedes) != 1 || !strings.Contains(rel.Supersedes[0].Title, "LRU") || len(rel.Events) == 0 || len(rel.Adjacent) == 0 {
		t.Fatalf("mem related: %+v", rel)
	}

	// Forget the ARC decision: hidden from search, kept in the WAL, and
	// still forgotten after a rebuild.
	if out, errs, code := run(t, "--dir", dir, "mem", "forget", arc, "--reason", "test"); code != 0 || !strings.Contains(out, "forgot artifact "+arc) {
		t.Fatalf("mem forget: %d\n%s%s", code, out, errs)
	}
	hidden := func() bool {
		for _, c := range memJSON[[]engine.Card](t, "--dir", dir, "mem", "search", "ARC cache", "-k", "50") {
			if c.ID == arc {
				return false
			}
		}
		return true
	}
	if !hidden() {
		t.Fatal("a forgotten artifact is still found")
	}
	withAll := memJSON[[]engine.Card](t, "--dir", dir, "mem", "search", "ARC cache", "--all")
	if len(withAll) == 0 || withAll[0].ID != arc || !withAll[0].Forgotten {
		t.Fatalf("search --all does not find the forgotten artifact: %+v", withAll)
	}
	for _, args := range [][]string{{"rebuild"}, {"rebuild", "--derived"}, {"rebuild", "--index"}} {
		if out, errs, code := run(t, append([]string{"--dir", dir}, args...)...); code != 0 || !strings.Contains(out, "indexed") {
			t.Fatalf("%v: %d\n%s%s", args, code, out, errs)
		}
		if !hidden() {
			t.Fatalf("after %v the forgotten artifact is found again", args)
		}
	}
	if _, _, code := run(t, "--dir", dir, "mem", "unforget", arc); code != 0 || hidden() {
		t.Fatal("unforget did not bring the artifact back")
	}

	// Bad input.
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"mem", "search"}, 2, "give a query"},
		{[]string{"mem", "get", "dec-nosuch"}, 1, `no artifact "dec-nosuch"`},
		{[]string{"mem", "forget", "nosuch"}, 1, `no artifact or session "nosuch"`},
		{[]string{"mem", "search", "x", "--type", "fact"}, 2, `--type "fact"`},
		{[]string{"mem", "search", "x", "-k", "0"}, 2, "-k 0"},
	} {
		_, errs, code := run(t, append([]string{"--dir", dir}, c.args...)...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d %q, want %d and %q", c.args, code, errs, c.code, c.want)
		}
	}
}

// TestMemSearchProject checks mem search's project scope on two projects
// holding the same memory: --project (a directory inside one too), the
// current directory's project by default, --all-projects with the other
// project's results after and labelled, a project with no match falling
// back to the others, and --explain.
func TestMemSearchProject(t *testing.T) {
	dir := t.TempDir()
	projA, projB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	src := t.TempDir()
	for _, p := range []struct{ cwd, session string }{
		{projA, "33333333-2222-4333-8444-555555555555"},
		{projB, "44444444-2222-4333-8444-555555555555"},
	} {
		tr := strings.ReplaceAll(memoryTranscript(), `"cwd":"/repo"`, `"cwd":"`+p.cwd+`"`)
		tr = strings.ReplaceAll(tr, "33333333-2222-4333-8444-555555555555", p.session)
		writeFile(t, src, p.session+".jsonl", tr)
	}
	if out, errs, code := run(t, "--dir", dir, "import", "claude", src, "--quiet"); code != 0 {
		t.Fatalf("import: %d\n%s%s", code, out, errs)
	}
	search := func(args ...string) []index.Result {
		t.Helper()
		return memJSON[[]index.Result](t, append([]string{"--dir", dir, "mem", "search", "ARC cache"}, args...)...)
	}
	projects := func(rs []index.Result) (in, other []string) {
		for _, r := range rs {
			if r.Other {
				other = append(other, r.Project)
			} else {
				in = append(in, r.Project)
			}
		}
		return in, other
	}
	only := func(l []string, p string) bool {
		return len(l) > 0 && !slices.ContainsFunc(l, func(s string) bool { return s != p })
	}
	for _, arg := range []string{projA, filepath.Join(projA, "internal", "x")} {
		in, other := projects(search("--project", arg))
		if !only(in, projA) || len(other) != 0 {
			t.Errorf("--project %s: results of %v, others %v; want %s's only", arg, in, other, projA)
		}
	}
	in, other := projects(search("--project", projB, "--all-projects", "-k", "50"))
	if !only(in, projB) || !only(other, projA) {
		t.Errorf("--all-projects: results of %v, then others %v; want %s's then %s's", in, other, projB, projA)
	}
	in, other = projects(search("--project", t.TempDir()))
	if len(in) != 0 || len(other) == 0 {
		t.Errorf("--project with no sessions: %v, others %v; want the others' only", in, other)
	}
	// The current directory's project by default; none outside every
	// project.
	sub := filepath.Join(projB, "cmd")
	if err := os.MkdirAll(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	if in, other := projects(search()); !only(in, projB) || len(other) != 0 {
		t.Errorf("in %s: results of %v, others %v; want %s's only", sub, in, other, projB)
	}
	t.Chdir(t.TempDir())
	if in, other := projects(search()); !slices.Contains(in, projA) || !slices.Contains(in, projB) || len(other) != 0 {
		t.Errorf("outside the projects: results of %v, others %v; want both, unlabelled", in, other)
	}

	out, errs, code := run(t, "--dir", dir, "mem", "search", "lookups for the session store cache", "--project", projA, "--all-projects", "--explain")
	if code != 0 {
		t.Fatalf("--explain: exit %d\n%s", code, errs)
	}
	for _, want := range []string{"bm25 ", "@title", "idf", "× type decision 1.5", "other projects:", "project " + projB, "in force: replaces", "outdated: "} {
		if !strings.Contains(out, want) {
			t.Errorf("--explain output lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = run(t, "--dir", dir, "mem", "search", "ARC cache", "--project", t.TempDir())
	if !strings.Contains(out, "nothing in this project matches; from other projects:") {
		t.Errorf("no match in the project: output lacks the label:\n%s", out)
	}
}
