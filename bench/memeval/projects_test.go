package memeval

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/cli"
	"github.com/bbengine/bbengine/engine"
)

var (
	update = flag.Bool("update", false, "rewrite testdata/projects/facts.json from the cards declared beside the sessions")
	// projectsQueries is the query file TestProjectsEval asks; the smoke
	// file (testdata/projects/queries_smoke.json) only checks the harness.
	storeMisses     = flag.Bool("projects.storemisses", false, "list the cards whose artifact is not in the store with its type and status")
	projectsDir     = flag.String("projects.dir", "", "data directory to import the projects into and keep, for a look with the CLI afterwards (emptied first)")
	projectsQueries = flag.String("projects.queries", filepath.Join("testdata", "projects", "queries.json"), "query file of the projects eval")
)

var factsPath = filepath.Join("testdata", "projects", "facts.json")

// Goals of the projects eval (issue 19). They are logged, not enforced.
const (
	goalStrictR5    = 0.9
	goalPack        = 0.9
	goalOutdated    = 0.02
	goalCrossSupers = 0.9
)

// buildFacts builds every project and returns its transcripts by session
// uuid and the facts file.
func buildFacts() (map[string]string, factsFile) {
	logs := map[string]string{}
	var f factsFile
	for _, p := range projectSet() {
		info := projectInfo{Name: p.name, Cwd: p.cwd, Next: "claude:" + sessionID(p.n, 9)}
		var last time.Time
		for _, l := range p.logs {
			logs[l.session] = l.String()
			info.Sessions = append(info.Sessions, "claude:"+l.session)
			last = l.t
		}
		// The next session: a new session of the project, one prompt, a
		// day after the last one; its pack is what a new task gets.
		next := newClaudeLog(sessionID(p.n, 9), last.Add(24*time.Hour))
		next.cwd = p.cwd
		next.user("Picking this repository up again; first get your bearings.")
		logs[next.session] = next.String()
		f.Projects = append(f.Projects, info)
		for _, c := range p.cards {
			f.Cards = append(f.Cards, *c)
		}
		f.Distractors = append(f.Distractors, p.not...)
	}
	tags := map[string][]string{}
	for tag, ids := range cardTags {
		for _, id := range ids {
			tags[id] = append(tags[id], tag)
		}
	}
	for i := range f.Cards {
		c := &f.Cards[i]
		c.Tags = append(c.Tags, tags[c.ID]...)
		if len(c.Supersedes)+len(c.SupersededBy) > 0 {
			c.Tags = append(c.Tags, "reversal")
		}
		if len(c.ClosedBy) > 0 {
			c.Tags = append(c.Tags, "closed-later")
		}
		if c.CrossSession {
			c.Tags = append(c.Tags, "cross-session")
		}
		sort.Strings(c.Tags)
	}
	return logs, f
}

// sessionStrings returns every string of a transcript's JSON lines.
func sessionStrings(t *testing.T, body string) []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			out = append(out, v)
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
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		var v any
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatal(err)
		}
		walk(v)
	}
	return out
}

// TestProjectsFacts checks that the fact cards are valid (each contains
// text is in its session, links point both ways, statuses fit kinds)
// and that testdata/projects/facts.json is what the declarations
// generate; -update rewrites it.
func TestProjectsFacts(t *testing.T) {
	logs, f := buildFacts()
	if len(f.Projects) < 20 || len(f.Cards) < 200 {
		t.Errorf("%d projects and %d cards, want at least 20 and 200", len(f.Projects), len(f.Cards))
	}
	multi := 0
	for _, p := range f.Projects {
		if len(p.Sessions) > 1 {
			multi++
		}
	}
	if multi*2 < len(f.Projects) {
		t.Errorf("%d of %d projects have more than one session, want most", multi, len(f.Projects))
	}
	inSession := func(session, s string) bool {
		return slices.ContainsFunc(sessionStrings(t, logs[strings.TrimPrefix(session, "claude:")]), func(x string) bool { return strings.Contains(x, s) })
	}
	checkFacts(t, f, inSession)
	have := map[string]bool{}
	for _, c := range f.Cards {
		have[c.ID] = true
	}
	for tag, ids := range cardTags {
		for _, id := range ids {
			if !have[id] {
				t.Errorf("tag %s: no card %s", tag, id)
			}
		}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if *update {
		if err := os.MkdirAll(filepath.Dir(factsPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(factsPath, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(factsPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, b) {
		t.Errorf("%s is stale: go test -run TestProjectsFacts ./bench/memeval -update", factsPath)
	}
	kinds := map[string]int{}
	cross, inPack := 0, 0
	for _, c := range f.Cards {
		kinds[c.Kind]++
		if c.CrossSession {
			cross++
		}
		if c.InPack {
			inPack++
		}
	}
	t.Logf("%d projects (%d with several sessions), %d cards %v, %d cross-session, %d in pack, %d distractors",
		len(f.Projects), multi, len(f.Cards), kinds, cross, inPack, len(f.Distractors))
}

// checkFacts checks that cards are valid: ids are unique, each status
// fits its kind, each contains text is in its session (inSession), the
// about line does not repeat it, supersession and closing links point
// both ways within the project, and each distractor's text is in its
// session.
func checkFacts(t *testing.T, f factsFile, inSession func(session, s string) bool) {
	t.Helper()
	statuses := map[string][]string{
		kindDecision: {"active", "superseded"}, kindConstraint: {"active", "superseded"},
		kindThread: {"open", "closed"}, kindOutcome: {"success", "fail"}, kindChange: {"success", "fail"},
	}
	byID := map[string]*factCard{}
	for i := range f.Cards {
		c := &f.Cards[i]
		if byID[c.ID] != nil {
			t.Errorf("card %s: repeated id", c.ID)
		}
		byID[c.ID] = c
	}
	for _, c := range f.Cards {
		switch {
		case !slices.Contains(statuses[c.Kind], c.Status):
			t.Errorf("card %s: kind %q status %q", c.ID, c.Kind, c.Status)
		case c.About == "" || c.Contains == "":
			t.Errorf("card %s: needs about and contains", c.ID)
		case !inSession(c.Session, c.Contains):
			t.Errorf("card %s: %q is not in session %s", c.ID, c.Contains, c.Session)
		case strings.Contains(strings.ToLower(c.About), strings.ToLower(c.Contains)):
			t.Errorf("card %s: about repeats the contains text", c.ID)
		}
		if (len(c.SupersededBy) > 0) != (c.Status == "superseded") {
			t.Errorf("card %s: status %s with superseded_by %v", c.ID, c.Status, c.SupersededBy)
		}
		if c.Kind == kindThread && (len(c.ClosedBy) > 0) != (c.Status == "closed") {
			t.Errorf("card %s: status %s with closed_by %v", c.ID, c.Status, c.ClosedBy)
		}
		for _, id := range slices.Concat(c.Supersedes, c.SupersededBy, c.Closes, c.ClosedBy) {
			if byID[id] == nil || byID[id].Project != c.Project {
				t.Errorf("card %s: links to %s, not a card of the project", c.ID, id)
			}
		}
	}
	for _, d := range f.Distractors {
		if !inSession(d.Session, d.Contains) {
			t.Errorf("distractor %s: %q is not in session %s", d.ID, d.Contains, d.Session)
		}
	}
}

// projQuery is one query of testdata/projects/queries.json.
type projQuery struct {
	ID   string `json:"id"`
	Card string `json:"card"`
	Q    string `json:"q"`
}

// kindType is the artifact type that answers a card of a kind.
var kindType = map[string]engine.ArtifactType{
	kindDecision: engine.ArtifactDecision, kindConstraint: engine.ArtifactConstraint,
	kindThread: engine.ArtifactThread, kindOutcome: engine.ArtifactOutcome, kindChange: engine.ArtifactOutcome,
}

// holds reports whether a holds s, case-insensitively, in its title,
// text or files.
func holds(a *engine.Artifact, s string) bool {
	s = strings.ToLower(s)
	return strings.Contains(strings.ToLower(a.Title), s) || strings.Contains(strings.ToLower(a.Text), s) ||
		slices.ContainsFunc(a.Files, func(f string) bool { return strings.Contains(strings.ToLower(f), s) })
}

// matches reports whether a is of the card's type, in its project, and
// holds its text.
func matches(a *engine.Artifact, c *factCard, project map[string]bool) bool {
	return a.Type == kindType[c.Kind] && project[a.Session] && holds(a, c.Contains)
}

// answers reports whether a, read with status, is the card's artifact
// with the card's type and status (a change's outcome may have any
// status). The status is the one memory reports now (a search card's,
// or mem get's), which may differ from the stored artifact's when a
// later session of the project replaced or closed it.
func answers(a *engine.Artifact, status string, c *factCard, project map[string]bool) bool {
	return matches(a, c, project) && (c.Kind == kindChange || status == c.Status)
}

// holdsAny reports whether a holds the text of any of the cards named:
// an artifact that states what replaced an outdated fact may quote the
// fact (a "supersedes" note) without presenting it as current.
func holdsAny(a *engine.Artifact, cards map[string]*factCard, ids []string) bool {
	return slices.ContainsFunc(ids, func(id string) bool { return cards[id] != nil && holds(a, cards[id].Contains) })
}

func current(status string) bool { return status == "active" || status == "open" }

func outdated(status string) bool { return status == "superseded" || status == "closed" }

// projResult is how one query went.
type projResult struct {
	q    projQuery
	c    *factCard
	rank int  // strict: 1-based rank of the card's artifact, 0 if not in the first k
	len5 bool // lenient: the contains text is in a top-5 card
	// stale is set when an outdated card's text came back in the top 5
	// in an artifact of the project with a current status (active,
	// open), unless that artifact also states what replaced it.
	stale bool
	top   []engine.Card
}

// TestProjectsEval asks testdata/projects/queries.json through
// `bbengine mem search`, as a new task in each card's project would,
// and scores it strictly (type and status) and leniently; it also asks
// each project's pack for a new session. It logs the figures against
// the goals and does not gate on them. Run:
//
//	go test -count=1 -run TestProjectsEval -v ./bench/memeval
func TestProjectsEval(t *testing.T) {
	qb, err := os.ReadFile(*projectsQueries)
	if os.IsNotExist(err) {
		t.Skipf("%s is missing (the queries are written separately; -projects.queries=testdata/projects/queries_smoke.json checks the harness)", *projectsQueries)
	}
	if err != nil {
		t.Fatal(err)
	}
	queries := decodeQueries(t, *projectsQueries, qb)
	facts := readFacts(t, factsPath)

	// Import every session, and each project's new session, into a new
	// data directory.
	evalProjects(t, "projects eval", facts, queries, func(dir string) {
		src := t.TempDir()
		logs, _ := buildFacts()
		for id, body := range logs {
			if err := os.WriteFile(filepath.Join(src, id+".jsonl"), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		bbengine(t, "--dir", dir, "import", "claude", src, "--quiet")
	})
}

// decodeQueries decodes a query file, rejecting unknown fields.
func decodeQueries(t *testing.T, name string, b []byte) []projQuery {
	t.Helper()
	var queries []projQuery
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&queries); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return queries
}

// readFacts reads a facts file.
func readFacts(t *testing.T, name string) factsFile {
	t.Helper()
	fb, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var facts factsFile
	if err := json.Unmarshal(fb, &facts); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return facts
}

// evalProjects runs a projects eval: importAll fills a new data
// directory with every session of the facts' projects and each
// project's new session; then the queries are asked as a new task in
// each card's project would, the store is checked card by card, and
// each project's pack for its new session is read. It logs the tables
// under title and does not gate on the goals.
func evalProjects(t *testing.T, title string, facts factsFile, queries []projQuery, importAll func(dir string)) {
	cards := map[string]*factCard{}
	for i := range facts.Cards {
		cards[facts.Cards[i].ID] = &facts.Cards[i]
	}
	projects := map[string]projectInfo{}
	projectSessions := map[string]map[string]bool{}
	for _, p := range facts.Projects {
		projects[p.Cwd] = p
		projectSessions[p.Cwd] = map[string]bool{p.Next: true}
		for _, s := range p.Sessions {
			projectSessions[p.Cwd][s] = true
		}
	}

	dir := t.TempDir()
	if *projectsDir != "" {
		dir = *projectsDir
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
	}
	importAll(dir)
	all := map[string]*engine.Artifact{}
	e, err := engine.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := e.Sessions(engine.SessionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sessions {
		as, err := e.Artifacts(s.ID)
		if err != nil {
			t.Fatal(err)
		}
		for i := range as {
			all[as[i].ID] = &as[i]
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}

	// Scope: the new session of the card's project, and the project
	// itself when mem search knows projects.
	help := helpOf("mem", "search")
	projectFlag := strings.Contains(help, "--project")
	if !projectFlag {
		t.Logf("mem search has no --project flag: queries are scoped only by --session (the project's new session, whose working directory is the project's)")
	}
	contextProject := strings.Contains(helpOf("mem", "context"), "--project")

	var results []projResult
	for _, q := range queries {
		c := cards[q.Card]
		if c == nil || q.Q == "" || q.ID == "" {
			t.Fatalf("query %q: needs an id, a q and a known card (got %q)", q.ID, q.Card)
		}
		p := projects[c.Project]
		args := []string{"--dir", dir, "mem", "search", q.Q, "-k", fmt.Sprint(k), "--json", "--session", p.Next}
		if projectFlag {
			args = append(args, "--project", p.Cwd)
		}
		var top []engine.Card
		if err := json.Unmarshal([]byte(bbengine(t, args...)), &top); err != nil {
			t.Fatalf("%s: %v", q.ID, err)
		}
		r := projResult{q: q, c: c, top: top}
		for i, cd := range top {
			a := all[cd.ID]
			if a == nil {
				continue
			}
			if r.rank == 0 && answers(a, cd.Status, c, projectSessions[c.Project]) {
				r.rank = i + 1
			}
			if i < 5 && holds(a, c.Contains) {
				r.len5 = true
				if outdated(c.Status) && current(cd.Status) && projectSessions[c.Project][a.Session] && !holdsAny(a, cards, slices.Concat(c.SupersededBy, c.ClosedBy)) {
					r.stale = true
				}
			}
		}
		results = append(results, r)
	}
	t.Log(projTable(title, results))

	// Store level: is each card's artifact there with the right status,
	// whatever the query? Supersession across sessions is read here, with
	// the status mem get reports (resolved across the project's sessions
	// where memory does that).
	statuses := map[string]string{}
	statusOf := func(a *engine.Artifact) string {
		if s, ok := statuses[a.ID]; ok {
			return s
		}
		var got struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal([]byte(bbengine(t, "--dir", dir, "mem", "get", a.ID, "--json")), &got); err != nil {
			t.Fatalf("mem get %s: %v", a.ID, err)
		}
		statuses[a.ID] = got.Status
		return got.Status
	}
	var crossN, crossRight, nThreads, dupThreads int
	storeHit := map[string][2]int{}
	for i := range facts.Cards {
		c := &facts.Cards[i]
		found := false
		for _, a := range all {
			if matches(a, c, projectSessions[c.Project]) && (c.Kind == kindChange || statusOf(a) == c.Status) {
				found = true
				break
			}
		}
		if c.Kind == kindThread {
			nThreads++
			n := 0
			for _, a := range all {
				if a.Type == engine.ArtifactThread && projectSessions[c.Project][a.Session] && holds(a, c.Contains) {
					n++
				}
			}
			if n > 1 {
				dupThreads++
			}
		}
		if !found && *storeMisses {
			var near []string
			for _, a := range all {
				if projectSessions[c.Project][a.Session] && holds(a, c.Contains) && a.Type != engine.ArtifactSegment && a.Type != engine.ArtifactOutcome {
					near = append(near, fmt.Sprintf("%s/%s", a.Type, statusOf(a)))
				}
			}
			t.Logf("store miss %s (%s %s) %q; same text as %v", c.ID, c.Kind, c.Status, c.Contains, near)
		}
		h := storeHit[c.Kind]
		h[1]++
		if found {
			h[0]++
		}
		storeHit[c.Kind] = h
		if c.CrossSession {
			crossN++
			if found {
				crossRight++
			}
		}
	}

	// Packs: mem context for each project's new session.
	var packN, packHit, crossPackN, crossPackHit, leakPack, oldN, oldPack int
	leak := map[string]int{}
	packMiss := map[string]int{}
	var perProject strings.Builder
	for _, p := range facts.Projects {
		args := []string{"--dir", dir, "mem", "context", "--session", p.Next}
		if contextProject {
			args = append(args, "--project", p.Cwd)
		}
		rawPack := bbengine(t, args...)
		if *storeMisses && (p.Name == "ledger" || p.Name == "storefront") {
			t.Logf("pack of %s:\n%s", p.Name, rawPack)
		}
		pack := strings.ToLower(rawPack)
		var n, hit int
		for _, c := range facts.Cards {
			if c.Project != p.Cwd {
				continue
			}
			if outdated(c.Status) {
				oldN++
				if strings.Contains(pack, strings.ToLower(c.Contains)) {
					oldPack++
				}
			}
			if !c.InPack {
				continue
			}
			packN++
			n++
			in := strings.Contains(pack, strings.ToLower(c.Contains))
			if in {
				packHit++
				hit++
			} else {
				packMiss[c.Kind]++
				if *storeMisses {
					inStore := false
					for _, a := range all {
						inStore = inStore || matches(a, &c, projectSessions[c.Project])
					}
					t.Logf("pack miss %s (%s %s, in the store: %v) %q", c.ID, c.Kind, c.Status, inStore, c.Contains)
				}
			}
			if c.Session != p.Sessions[len(p.Sessions)-1] {
				crossPackN++
				if in {
					crossPackHit++
				}
			}
		}
		fmt.Fprintf(&perProject, "  %-16s %2d of %2d\n", p.Name, hit, n)
		for _, d := range facts.Distractors {
			if d.Project != p.Cwd {
				continue
			}
			if strings.Contains(pack, strings.ToLower(d.Contains)) {
				leakPack++
			}
			for _, a := range all {
				wrong := a.Type == engine.ArtifactDecision || a.Type == engine.ArtifactConstraint
				if d.Not == "thread" {
					wrong = a.Type == engine.ArtifactThread && a.Status == "open"
				}
				if wrong && projectSessions[p.Cwd][a.Session] && holds(a, d.Contains) {
					leak[d.Not]++
					break
				}
			}
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\nstore: the card's artifact exists with its type and status\n%-12s %5s %6s\n", "kind", "n", "found")
	for _, kd := range []string{kindDecision, kindConstraint, kindThread, kindOutcome, kindChange} {
		h := storeHit[kd]
		fmt.Fprintf(&b, "%-12s %5d %6.3f\n", kd, h[1], ratio(h[0], h[1]))
	}
	cross := ratio(crossRight, crossN)
	pack := ratio(packHit, packN)
	fmt.Fprintf(&b, "\ncross-session supersession right (store): %d of %d = %.3f (goal >= %.2f)\n", crossRight, crossN, cross, goalCrossSupers)
	fmt.Fprintf(&b, "pack coverage: %d of %d = %.3f (goal >= %.2f); of cards from before the last session %d of %d; misses by kind %v\n",
		packHit, packN, pack, goalPack, crossPackHit, crossPackN, packMiss)
	fmt.Fprintf(&b, "outdated facts whose text is in the pack: %d of %d\n", oldPack, oldN)
	fmt.Fprintf(&b, "pack coverage by project:\n%s", perProject.String())
	nots := map[string]int{}
	for _, d := range facts.Distractors {
		nots[d.Not]++
	}
	fmt.Fprintf(&b, "distractors: %d of %d filed as a decision or constraint, %d of %d left as an open thread, %d in a pack\n",
		leak["rule"], nots["rule"], leak["thread"], nots["thread"], leakPack)
	fmt.Fprintf(&b, "thread cards extracted more than once: %d of %d\n", dupThreads, nThreads)
	var s5, old, stale, xn, x5 int
	for _, r := range results {
		hit := r.rank >= 1 && r.rank <= 5
		if hit {
			s5++
		}
		if outdated(r.c.Status) {
			old++
			if r.stale {
				stale++
			}
		}
		if r.c.CrossSession {
			xn++
			if hit {
				x5++
			}
		}
	}
	fmt.Fprintf(&b, "\ngoals (logged, not enforced)\n")
	goal := func(name string, n int, got float64, cmp string, want float64) {
		if n == 0 {
			fmt.Fprintf(&b, "  %-48s %6s  goal %s %.2f  no cases\n", name, "-", cmp, want)
			return
		}
		ok := got >= want
		if cmp == "<=" {
			ok = got <= want
		}
		mark := "below goal"
		if ok {
			mark = "meets goal"
		}
		fmt.Fprintf(&b, "  %-48s %6.3f  goal %s %.2f  %s\n", name, got, cmp, want, mark)
	}
	goal("strict recall@5", len(results), ratio(s5, len(results)), ">=", goalStrictR5)
	goal("pack coverage", packN, pack, ">=", goalPack)
	goal("outdated presented as current (of outdated)", old, ratio(stale, old), "<=", goalOutdated)
	goal("cross-session: strict recall@5 of queries", xn, ratio(x5, xn), ">=", goalCrossSupers)
	goal("cross-session: supersession right in the store", crossN, cross, ">=", goalCrossSupers)
	t.Log(b.String())
	t.Log(projMisses(results))
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// helpOf returns the help text of a command.
func helpOf(cmd ...string) string {
	var out, errb bytes.Buffer
	cli.Main(append(append([]string{"bbengine"}, cmd...), "--help"), &out, &errb)
	return out.String() + errb.String()
}

// projTable renders strict and lenient recall@5 and MRR by kind, for
// the cross-session subset and overall, then the outdated rate.
func projTable(title string, rs []projResult) string {
	groups := map[string][]projResult{}
	for _, r := range rs {
		groups["kind="+r.c.Kind] = append(groups["kind="+r.c.Kind], r)
		groups["status="+r.c.Status] = append(groups["status="+r.c.Status], r)
		for _, tag := range r.c.Tags {
			groups["tag="+tag] = append(groups["tag="+tag], r)
		}
	}
	keys := make([]string, 0, len(groups))
	for g := range groups {
		keys = append(keys, g)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s\n%-22s %4s %9s %9s %9s %6s\n", title, "group", "n", "strict@1", "strict@5", "lenient@5", "MRR")
	row := func(g string, rs []projResult) {
		var n, s1, s5, l5 int
		var rr float64
		for _, r := range rs {
			n++
			if r.rank == 1 {
				s1++
			}
			if r.rank >= 1 && r.rank <= 5 {
				s5++
			}
			if r.len5 {
				l5++
			}
			if r.rank > 0 {
				rr += 1 / float64(r.rank)
			}
		}
		fmt.Fprintf(&b, "%-22s %4d %9.3f %9.3f %9.3f %6.3f\n", g, n, ratio(s1, n), ratio(s5, n), ratio(l5, n), rr/float64(max(n, 1)))
	}
	for _, g := range keys {
		row(g, groups[g])
	}
	row("all", rs)
	var s5, old, stale int
	for _, r := range rs {
		if r.rank >= 1 && r.rank <= 5 {
			s5++
		}
		if outdated(r.c.Status) {
			old++
			if r.stale {
				stale++
			}
		}
	}
	fmt.Fprintf(&b, "\nstrict recall@5 %.3f (goal >= %.2f)\n", ratio(s5, len(rs)), goalStrictR5)
	fmt.Fprintf(&b, "outdated presented as current: %d of %d queries on outdated facts = %.3f, %.3f of all queries (goal <= %.2f)\n",
		stale, old, ratio(stale, old), ratio(stale, len(rs)), goalOutdated)
	return b.String()
}

// projMisses lists the queries without a strict answer in the top 5.
func projMisses(rs []projResult) string {
	var b strings.Builder
	for _, r := range rs {
		if r.rank >= 1 && r.rank <= 5 {
			continue
		}
		fmt.Fprintf(&b, "\nMISS %s (%s %s, card %s, rank %d, lenient %v, stale %v): %q\n  want %s %s containing %q\n",
			r.q.ID, r.c.Kind, r.c.Status, r.c.ID, r.rank, r.len5, r.stale, r.q.Q, kindType[r.c.Kind], r.c.Status, r.c.Contains)
		for i, cd := range r.top[:min(5, len(r.top))] {
			fmt.Fprintf(&b, "  %d. %s %s %s %s\n", i+1, cd.Type, cd.Status, cd.Session, firstLine(cd.Title, 100))
		}
	}
	return b.String()
}

// TestProjectsScoring checks the predicates the projects eval scores
// with: type and status decide a strict answer (any status for a
// change), the project bounds it, and an artifact that states the
// replacement is not the outdated fact presented as current.
func TestProjectsScoring(t *testing.T) {
	project := map[string]bool{"claude:s1": true, "claude:s2": true}
	old := &factCard{ID: "p/old", Kind: kindDecision, Status: "superseded", Contains: "use goose", SupersededBy: []string{"p/new"}}
	cards := map[string]*factCard{"p/old": old, "p/new": {ID: "p/new", Kind: kindDecision, Status: "active", Contains: "move to atlas"}}
	change := &factCard{Kind: kindChange, Status: "success", Contains: "db/schema.hcl"}
	for _, tt := range []struct {
		name          string
		a             engine.Artifact
		c             *factCard
		answers, held bool
	}{
		{"right type and status", engine.Artifact{Type: engine.ArtifactDecision, Status: "superseded", Session: "claude:s1", Title: "Use goose for it"}, old, true, false},
		{"presented as current", engine.Artifact{Type: engine.ArtifactDecision, Status: "active", Session: "claude:s1", Title: "Use goose for it"}, old, false, false},
		{"other type", engine.Artifact{Type: engine.ArtifactSegment, Session: "claude:s1", Text: "user: use goose"}, old, false, false},
		{"other project", engine.Artifact{Type: engine.ArtifactDecision, Status: "superseded", Session: "claude:x", Title: "use goose"}, old, false, false},
		{"replacement quoting the old", engine.Artifact{Type: engine.ArtifactDecision, Status: "active", Session: "claude:s2", Title: "Move to Atlas", Text: "replaces: use goose"}, old, false, true},
		{"change by file, any status", engine.Artifact{Type: engine.ArtifactOutcome, Status: "fail", Session: "claude:s2", Files: []string{"/home/dev/p/db/schema.hcl"}}, change, true, false},
		{"change needs an outcome", engine.Artifact{Type: engine.ArtifactThread, Status: "open", Session: "claude:s2", Files: []string{"db/schema.hcl"}}, change, false, false},
	} {
		if got := answers(&tt.a, tt.a.Status, tt.c, project); got != tt.answers {
			t.Errorf("%s: answers = %v, want %v", tt.name, got, tt.answers)
		}
		if got := holdsAny(&tt.a, cards, tt.c.SupersededBy); got != tt.held {
			t.Errorf("%s: holdsAny = %v, want %v", tt.name, got, tt.held)
		}
	}
}
