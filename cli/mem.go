package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/index"
	ucli "github.com/urfave/cli/v2"
)

func memCommand() *ucli.Command {
	jsonFlag := &ucli.BoolFlag{Name: "json", Usage: "print JSON"}
	return &ucli.Command{
		Name:  "mem",
		Usage: "search and correct memory: decisions, constraints, task outcomes, open threads, transcript",
		Description: "Memory is derived from the recorded and imported sessions without any LLM: each artifact\n" +
			"points back to the events and WAL offsets it came from. With a proxy running, the\n" +
			"commands ask it; otherwise they open the data directory themselves.",
		Subcommands: []*ucli.Command{
			{
				Name:      "search",
				Usage:     "find artifacts by BM25, ranked with project, scope, recency and type",
				ArgsUsage: "QUERY",
				Description: "Words match their other English forms (tagging finds tag) and identifiers match whole\n" +
					"and by their parts (parseConfig: parse, config). Results of the project come first:\n" +
					"other projects' only with --all-projects or when nothing in the project matches, and\n" +
					"then marked. A superseded decision ranks below what replaced it, which takes its place,\n" +
					"and a closed thread below what closed it. --explain shows how each score came about.",
				Flags: []ucli.Flag{
					&ucli.StringFlag{Name: "session", Usage: "rank this session's artifacts first, and search its project (unless --project)"},
					&ucli.StringFlag{Name: "task", Usage: "rank this task's artifacts first"},
					&ucli.StringFlag{Name: "project", Usage: "search this project first: a directory in it (default: the current directory's project, when it has sessions)"},
					&ucli.BoolFlag{Name: "all-projects", Usage: "after the project's results, other projects' too"},
					&ucli.BoolFlag{Name: "explain", Usage: "show each result's BM25 by term and field, and the factors and rules that ranked it"},
					&ucli.IntFlag{Name: "k", Aliases: []string{"n"}, Value: 10, Usage: "how many cards (at most 100)"},
					&ucli.StringSliceFlag{Name: "type", Usage: "only these types: decision, constraint, outcome, open_thread, transcript (repeatable)"},
					&ucli.BoolFlag{Name: "all", Usage: "include forgotten artifacts"},
					jsonFlag,
				},
				Action: memSearch,
			},
			{
				Name:      "get",
				Usage:     "show one artifact with its provenance",
				ArgsUsage: "ID",
				Flags:     []ucli.Flag{jsonFlag},
				Action:    memGet,
			},
			{
				Name:      "related",
				Usage:     "show an artifact's supersession chain, its neighbours by file, task and symbol, and the events it came from",
				ArgsUsage: "ID",
				Flags:     []ucli.Flag{&ucli.IntFlag{Name: "k", Value: 10, Usage: "how many neighbours"}, jsonFlag},
				Action:    memRelated,
			},
			{
				Name:      "list",
				Usage:     "list the artifacts of a session (or of all sessions)",
				ArgsUsage: "[SESSION]",
				Flags:     []ucli.Flag{&ucli.StringSliceFlag{Name: "type", Usage: "only these types (repeatable)"}, jsonFlag},
				Action:    memList,
			},
			memContextCommand(),
			correctCommand("forget", "hide an artifact (or every artifact of a session) from retrieval; the evidence stays in the WAL"),
			correctCommand("unforget", "undo forget"),
			correctCommand("pin", "rank an artifact higher and keep its session's WAL from retention (a session id pins the session)"),
			correctCommand("unpin", "undo pin"),
		},
	}
}

func parseTypes(c *ucli.Context) ([]engine.ArtifactType, error) {
	var out []engine.ArtifactType
	for _, t := range c.StringSlice("type") {
		if t == "thread" {
			t = string(engine.ArtifactThread)
		}
		if !engine.ArtifactType(t).Valid() {
			return nil, usagef("mem: --type %q: want decision, constraint, outcome, open_thread or transcript", t)
		}
		out = append(out, engine.ArtifactType(t))
	}
	return out, nil
}

func memSearch(c *ucli.Context) error {
	if c.NArg() == 0 {
		return usagef("mem search: give a query, e.g. bbengine mem search \"which cache did we choose\"")
	}
	k := c.Int("k")
	if k < 1 || k > 100 {
		return usagef("mem search: -k %d: want 1 to 100", k)
	}
	types, err := parseTypes(c)
	if err != nil {
		return err
	}
	q := api.SearchRequest{Text: strings.Join(c.Args().Slice(), " "), Session: c.String("session"), Task: c.String("task"),
		K: k, Types: types, IncludeForgotten: c.Bool("all"), AllProjects: c.Bool("all-projects"), Explain: c.Bool("explain")}
	if p := c.String("project"); p != "" {
		if q.Project, err = filepath.Abs(p); err != nil {
			return usagef("mem search: --project %q: %v", p, err)
		}
	} else if wd, err := os.Getwd(); err == nil {
		q.Dir = wd
	}
	m, closeFn, err := openService(c, false)
	if err != nil {
		return err
	}
	defer closeFn()
	start := time.Now()
	rs, err := m.Find(q)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		if rs == nil {
			rs = []index.Result{}
		}
		return writeJSON(c, rs)
	}
	w := c.App.Writer
	if len(rs) == 0 {
		fmt.Fprintln(w, "no matching artifacts")
		return nil
	}
	for i, r := range rs {
		if r.Other && (i == 0 || !rs[i-1].Other) {
			if i == 0 {
				fmt.Fprintln(w, "nothing in this project matches; from other projects:")
			} else {
				fmt.Fprintln(w, "other projects:")
			}
		}
		project := ""
		if r.Other {
			project = "project " + r.Project
			if r.Project == "" {
				project = "no project"
			}
		}
		writeCardIn(w, i+1, r.Card, project)
		if r.Explain != nil {
			writeExplain(w, r.Explain, r.Score)
		}
	}
	fmt.Fprintf(w, "%d cards in %s; bbengine mem get ID shows one\n", len(rs), time.Since(start).Round(time.Microsecond))
	return closeFn()
}

// writeExplain prints how a result's score came about, under its card:
// the BM25 sum by (term, field), the factors, and the ordering rules.
func writeExplain(w io.Writer, e *index.Explanation, score float64) {
	var terms []string
	for _, t := range e.Terms {
		terms = append(terms, fmt.Sprintf("%s@%s %.3f (boost %g × idf %.3f × tf %.3f, freq %d)", t.Term, t.Field, t.Score, t.Boost, t.IDF, t.TF, t.Freq))
	}
	if len(terms) == 0 {
		terms = append(terms, "no term matched")
	}
	fmt.Fprintf(w, "    bm25 %.3f = %s\n", e.BM25, strings.Join(terms, "\n               + "))
	if e.Lifted != "" {
		fmt.Fprintf(w, "    score %.3f: in force, added for %s, which it replaced and which matched; ranks above it\n", score, e.Lifted)
	} else {
		line, s := fmt.Sprintf("%.3f", e.BM25), e.BM25
		for _, f := range e.Factors {
			line += fmt.Sprintf(" × %s %g", f.Name, f.Value)
			s *= f.Value
		}
		fmt.Fprintf(w, "    score %s = %.3f\n", line, s)
		if e.Raised != "" {
			fmt.Fprintf(w, "    in force: replaces %s, which matched better; takes the score it would have in force, %.3f, and ranks above it\n", e.Raised, score)
		}
	}
	if e.Below != "" {
		fmt.Fprintf(w, "    outdated: ranks below %s, which replaced or closed it (score %.3f)\n", e.Below, score)
	}
	if e.Scope != "" {
		fmt.Fprintf(w, "    scope: %s\n", e.Scope)
	}
	if len(e.LeftOut) > 0 {
		fmt.Fprintf(w, "    left out: %s (the project's own name)\n", strings.Join(e.LeftOut, ", "))
	}
}

// writeCard prints a card in three lines.
func writeCard(w io.Writer, n int, cd engine.Card) { writeCardIn(w, n, cd, "") }

// writeCardIn prints a card in three lines; project, when set, labels
// where it comes from.
func writeCardIn(w io.Writer, n int, cd engine.Card, project string) {
	status := cd.Status
	if cd.Pinned {
		status += ", pinned"
	}
	if cd.Forgotten {
		status += ", forgotten"
	}
	if status != "" {
		status = " (" + strings.TrimPrefix(status, ", ") + ")"
	}
	prefix := "  "
	if n > 0 {
		prefix = fmt.Sprintf("%2d.", n)
	}
	score := ""
	if cd.Score != 0 {
		score = fmt.Sprintf("  %.2f", cd.Score)
	}
	fmt.Fprintf(w, "%s %s  %s%s%s  %s\n", prefix, cd.ID, cd.Type, status, score, cd.Title)
	where := "session " + cd.Session
	if project != "" {
		where = project + ", " + where
	}
	if cd.Task != "" {
		where += ", task " + cd.Task
	}
	if cd.Time != 0 {
		where += ", " + time.Unix(0, cd.Time).UTC().Format("2006-01-02 15:04")
	}
	if len(cd.Files) > 0 {
		fs := cd.Files
		if len(fs) > 4 {
			fs = append(fs[:4:4], fmt.Sprintf("+%d", len(cd.Files)-4))
		}
		where += " · " + strings.Join(fs, ", ")
	}
	fmt.Fprintf(w, "    %s\n", where)
	if s := strings.Join(strings.Fields(cd.Snippet), " "); s != "" && s != cd.Title {
		fmt.Fprintf(w, "    %s\n", s)
	}
}

func oneID(c *ucli.Context, cmd string) (string, error) {
	if c.NArg() != 1 {
		return "", usagef("mem %s: give one artifact id (bbengine mem search finds them)", cmd)
	}
	return c.Args().First(), nil
}

func memGet(c *ucli.Context) error {
	id, err := oneID(c, "get")
	if err != nil {
		return err
	}
	m, closeFn, err := openService(c, false)
	if err != nil {
		return err
	}
	defer closeFn()
	a, err := m.Get(id)
	if err != nil {
		return err
	}
	if c.Bool("json") {
		return writeJSON(c, a)
	}
	w := c.App.Writer
	flags := ""
	if a.Forgotten {
		flags += " forgotten"
	}
	if a.Pinned {
		flags += " pinned"
	}
	fmt.Fprintf(w, "%s  %s  %s%s\n%s\n\n", a.ID, a.Type, a.Status, flags, a.Title)
	if d := a.Decision; d != nil {
		if d.Subject != "" {
			fmt.Fprintf(w, "subject: %s\n", d.Subject)
		}
		if d.SupersededBy != "" {
			fmt.Fprintf(w, "superseded by %s, later in the same session\n", d.SupersededBy)
		}
		if len(d.Supersedes) > 0 {
			fmt.Fprintf(w, "supersedes %s\n", strings.Join(d.Supersedes, ", "))
		}
	}
	if r := a.Resolved; r != nil {
		fmt.Fprintf(w, "%s by %s in session %s: %s\n", r.Status, r.By, r.Session, r.Reason)
	}
	if a.Decision != nil && (a.Decision.Subject != "" || a.Decision.SupersededBy != "" || len(a.Decision.Supersedes) > 0) || a.Resolved != nil {
		fmt.Fprintln(w)
	}
	fmt.Fprint(w, a.Text)
	if !strings.HasSuffix(a.Text, "\n") {
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\nsession %s", a.Session)
	if a.Task != "" {
		fmt.Fprintf(w, ", task %s", a.Task)
	}
	if a.Run != "" {
		fmt.Fprintf(w, ", run %s", a.Run)
	}
	fmt.Fprintf(w, "; %s to %s; built by %s\n", stampNs(a.First), stampNs(a.Last), a.Builder)
	if len(a.Files) > 0 {
		fmt.Fprintf(w, "files: %s\n", strings.Join(a.Files, ", "))
	}
	fmt.Fprintf(w, "evidence:\n")
	expired, _ := engine.ExpiredIn(c.String("dir"))
	for _, ev := range a.Evidence {
		fmt.Fprintf(w, "  event %d %s  %s%s\n", ev.Seq, ev.Kind, provString(ev.Prov), expiredNote(expired, ev.Prov))
	}
	return closeFn()
}

func stampNs(ns int64) string {
	if ns == 0 {
		return "?"
	}
	return time.Unix(0, ns).UTC().Format(time.RFC3339)
}

// expiredNote says when retention removed the WAL frames of p, if it
// did: what was derived from them stays.
func expiredNote(rs []engine.ExpiredRange, p engine.Provenance) string {
	if p.First == 0 && p.Last == 0 {
		return ""
	}
	for _, r := range rs {
		if p.First >= r.From && p.First < r.To {
			return " (raw frames expired on " + r.At.Format(time.DateOnly) + ")"
		}
	}
	return ""
}

// provString says where an event came from, in the terms of the
// commands that read it (replay --from, the agent's log file and line).
func provString(p engine.Provenance) string {
	var parts []string
	if p.Exchange != 0 {
		parts = append(parts, fmt.Sprintf("exchange %d", p.Exchange))
	}
	if p.RequestID != "" {
		parts = append(parts, "request "+p.RequestID)
	}
	if p.File != "" {
		parts = append(parts, fmt.Sprintf("%s:%d", p.File, p.Line))
	}
	if p.First != 0 || p.Last != 0 {
		if p.First == p.Last {
			parts = append(parts, fmt.Sprintf("WAL %d", p.First))
		} else {
			parts = append(parts, fmt.Sprintf("WAL %d–%d", p.First, p.Last))
		}
	}
	return strings.Join(parts, ", ")
}

func memRelated(c *ucli.Context) error {
	id, err := oneID(c, "related")
	if err != nil {
		return err
	}
	k := c.Int("k")
	if k < 1 || k > 100 {
		return usagef("mem related: -k %d: want 1 to 100", k)
	}
	m, closeFn, err := openService(c, false)
	if err != nil {
		return err
	}
	defer closeFn()
	r, err := m.Related(api.RelatedRequest{ID: id, K: k})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		if r.Adjacent == nil {
			r.Adjacent = []engine.Card{}
		}
		return writeJSON(c, r)
	}
	w := c.App.Writer
	writeCard(w, 0, r.Artifact)
	section := func(name string, cards []engine.Card) {
		if len(cards) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s:\n", name)
		for i, cd := range cards {
			writeCard(w, i+1, cd)
		}
	}
	section("supersedes", r.Supersedes)
	section("superseded by", r.SupersededBy)
	section("adjacent (same files, task or symbols)", r.Adjacent)
	if len(r.Events) > 0 {
		fmt.Fprintf(w, "\nevents it came from:\n")
		for _, ev := range r.Events {
			what := string(ev.Kind)
			if ev.Role != "" {
				what += " " + ev.Role
			}
			if ev.Tool != nil {
				what += " " + ev.Tool.Name
			}
			fmt.Fprintf(w, "  %d %s  %s\n", ev.Seq, what, provString(ev.Prov))
			if t := strings.TrimSpace(ev.Text); t != "" {
				fmt.Fprintf(w, "     %s\n", firstLineOf(t, 160))
			}
		}
	}
	return closeFn()
}

func firstLineOf(s string, n int) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

func memList(c *ucli.Context) error {
	if c.NArg() > 1 {
		return usagef("mem list: takes at most one session id")
	}
	types, err := parseTypes(c)
	if err != nil {
		return err
	}
	m, closeFn, err := openService(c, false)
	if err != nil {
		return err
	}
	defer closeFn()
	cards, err := m.List(api.ListRequest{Session: c.Args().First(), Types: types})
	if err != nil {
		return err
	}
	if c.Bool("json") {
		if cards == nil {
			cards = []engine.Card{}
		}
		return writeJSON(c, cards)
	}
	if len(cards) == 0 {
		if len(types) > 0 || c.NArg() > 0 {
			fmt.Fprintln(c.App.Writer, "no artifacts match")
		} else {
			fmt.Fprintln(c.App.Writer, "no artifacts (import or record a session first)")
		}
	}
	for _, cd := range cards {
		writeCard(c.App.Writer, 0, cd)
	}
	return closeFn()
}

func correctCommand(op, usage string) *ucli.Command {
	return &ucli.Command{
		Name:      op,
		Usage:     usage,
		ArgsUsage: "ID",
		Flags:     []ucli.Flag{&ucli.StringFlag{Name: "reason", Usage: "why (kept with the correction)"}, &ucli.BoolFlag{Name: "json", Usage: "print JSON"}},
		Action: func(c *ucli.Context) error {
			if c.NArg() != 1 {
				return usagef("mem %s: give one artifact or session id", op)
			}
			m, closeFn, err := openService(c, true)
			if err != nil {
				return err
			}
			defer closeFn()
			out, err := m.Correct(api.Correction{Op: op, ID: c.Args().First(), Reason: c.String("reason")})
			if err != nil {
				return err
			}
			if c.Bool("json") {
				return writeJSON(c, out)
			}
			fmt.Fprintf(c.App.Writer, "%s %s %s: %s (WAL offset %d)\n", past(op), out.Correction.Target, out.Correction.ID, out.Title, out.Offset)
			return closeFn()
		},
	}
}

func past(op string) string {
	switch op {
	case "forget":
		return "forgot"
	case "unforget":
		return "unforgot"
	case "pin":
		return "pinned"
	}
	return "unpinned"
}
