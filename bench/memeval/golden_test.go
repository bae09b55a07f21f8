package memeval

import (
	"bufio"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The golden set is the projects eval over real sessions: the Claude
// Code sessions of the shared golden corpus (goldenDir/claude, six
// working directories from four public repositories), with fact cards
// labelled by hand in testdata/golden/facts.json and next-task queries
// in testdata/golden/queries.json. The cards use the projects set's
// format (testdata/projects/format.md) and are not generated: each was
// read off the transcripts, its status judged by what happened later in
// them. The corpus is not copied into the repository; the tests skip
// when it is missing.

var (
	goldenFactsPath   = filepath.Join("testdata", "golden", "facts.json")
	goldenQueriesPath = filepath.Join("testdata", "golden", "queries.json")
)

// goldenNextStart is when each project's new session starts: after
// every session of the corpus.
var goldenNextStart = time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)

// needGolden skips the test when the golden corpus is missing.
func needGolden(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(goldenDir, "claude")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("%s is missing: the golden set needs the shared corpus", dir)
	}
	return dir
}

// goldenStrings returns every string of every Claude Code line under
// dir, by session ("claude:" and the line's sessionId; subagent
// transcripts carry their parent's).
func goldenStrings(t *testing.T, dir string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var v map[string]any
			if json.Unmarshal(sc.Bytes(), &v) != nil {
				continue
			}
			id, _ := v["sessionId"].(string)
			if id == "" {
				id = strings.TrimSuffix(filepath.Base(path), ".jsonl")
			}
			var walk func(v any)
			walk = func(v any) {
				switch v := v.(type) {
				case string:
					out["claude:"+id] = append(out["claude:"+id], v)
				case []any:
					for _, x := range v {
						walk(x)
					}
				case map[string]any:
					for _, x := range v {
						walk(x)
					}
				}
			}
			walk(v)
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// goldenNext returns the transcript of a project's new session: one
// prompt in the project's working directory, after the corpus.
func goldenNext(p projectInfo) string {
	l := newClaudeLog(strings.TrimPrefix(p.Next, "claude:"), goldenNextStart)
	l.cwd = p.Cwd
	l.user("Picking this repository up again; first get your bearings.")
	return l.String()
}

// TestGoldenFacts checks the hand-labelled cards of the golden set
// against the corpus: each contains text is in its session, statuses
// fit kinds, links point both ways; each project's sessions are in the
// corpus with the project's working directory; every query names a
// card.
func TestGoldenFacts(t *testing.T) {
	dir := needGolden(t)
	f := readFacts(t, goldenFactsPath)
	if len(f.Cards) < 40 {
		t.Errorf("%d cards, want at least 40", len(f.Cards))
	}
	strs := goldenStrings(t, dir)
	inSession := func(session, s string) bool {
		return slices.ContainsFunc(strs[session], func(x string) bool { return strings.Contains(x, s) })
	}
	checkFacts(t, f, inSession)
	projects := map[string]projectInfo{}
	for _, p := range f.Projects {
		projects[p.Cwd] = p
		for _, s := range p.Sessions {
			if !slices.Contains(strs[s], p.Cwd) {
				t.Errorf("project %s: session %s is not in the corpus with working directory %s", p.Name, s, p.Cwd)
			}
		}
		if strs[p.Next] != nil {
			t.Errorf("project %s: new session %s is in the corpus", p.Name, p.Next)
		}
	}
	byID := map[string]*factCard{}
	kinds := map[string]int{}
	for i := range f.Cards {
		c := &f.Cards[i]
		byID[c.ID] = c
		kinds[c.Kind]++
		if p, ok := projects[c.Project]; !ok || !slices.Contains(p.Sessions, c.Session) {
			t.Errorf("card %s: session %s is not one of project %s", c.ID, c.Session, c.Project)
		}
		want := (c.Kind == kindDecision || c.Kind == kindConstraint) && c.Status == "active" || c.Kind == kindThread && c.Status == "open"
		if c.InPack != want {
			t.Errorf("card %s: in_pack %v, want %v for a %s %s", c.ID, c.InPack, want, c.Status, c.Kind)
		}
	}
	for _, d := range f.Distractors {
		if _, ok := projects[d.Project]; !ok {
			t.Errorf("distractor %s: unknown project %s", d.ID, d.Project)
		}
	}
	qb, err := os.ReadFile(goldenQueriesPath)
	if err != nil {
		t.Fatal(err)
	}
	queries := decodeQueries(t, goldenQueriesPath, qb)
	if len(queries) < 60 {
		t.Errorf("%d queries, want at least 60", len(queries))
	}
	asked := map[string]bool{}
	seen := map[string]bool{}
	for _, q := range queries {
		switch {
		case q.ID == "" || seen[q.ID]:
			t.Errorf("query %q: missing or repeated id", q.ID)
		case byID[q.Card] == nil:
			t.Errorf("query %s: no card %q", q.ID, q.Card)
		case q.Q == "":
			t.Errorf("query %s: no question", q.ID)
		case strings.Contains(strings.ToLower(q.Q), strings.ToLower(byID[q.Card].Contains)):
			t.Errorf("query %s: quotes its card's contains text", q.ID)
		}
		seen[q.ID] = true
		asked[q.Card] = true
	}
	for _, c := range f.Cards {
		if !asked[c.ID] {
			t.Errorf("card %s: no query asks it", c.ID)
		}
	}
	t.Logf("%d projects, %d cards %v, %d distractors, %d queries", len(f.Projects), len(f.Cards), kinds, len(f.Distractors), len(queries))
}

// TestGoldenEval asks testdata/golden/queries.json of the golden Claude
// Code sessions the way TestProjectsEval asks the projects set: each
// project's new session is imported beside the corpus, the queries are
// asked as a new task in the card's project would and scored strictly
// and leniently, the store is checked card by card, and each project's
// pack is read. It logs the figures against the goals of issue 19 and
// does not gate on them. Run:
//
//	go test -count=1 -run TestGoldenEval -v ./bench/memeval
func TestGoldenEval(t *testing.T) {
	dir := needGolden(t)
	qb, err := os.ReadFile(goldenQueriesPath)
	if err != nil {
		t.Fatal(err)
	}
	queries := decodeQueries(t, goldenQueriesPath, qb)
	facts := readFacts(t, goldenFactsPath)
	evalProjects(t, "golden eval", facts, queries, func(data string) {
		bbengine(t, "--dir", data, "import", "claude", dir, "--quiet")
		src := t.TempDir()
		for _, p := range facts.Projects {
			if err := os.WriteFile(filepath.Join(src, strings.TrimPrefix(p.Next, "claude:")+".jsonl"), []byte(goldenNext(p)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		bbengine(t, "--dir", data, "import", "claude", src, "--quiet")
	})
}
