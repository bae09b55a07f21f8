package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/engine"
	"github.com/bbengine/bbengine/pack"
)

// projectTranscript is a Claude Code session of the project /repo/app
// (cwd), starting at start, with the prompts and replies given in turn.
func projectTranscript(session string, start time.Time, cwd string, turns ...string) string {
	var lines []string
	t := start
	for i, text := range turns {
		t = t.Add(5 * time.Second)
		m := map[string]any{"uuid": fmt.Sprintf("%s-%04d", session[:23], i), "sessionId": session, "timestamp": t.Format(time.RFC3339Nano),
			"cwd": cwd, "version": "2.1.39"}
		if i%2 == 0 {
			m["type"], m["message"] = "user", map[string]any{"role": "user", "content": text}
		} else {
			m["type"], m["requestId"] = "assistant", fmt.Sprintf("req_%s_%d", session[:8], i)
			m["message"] = map[string]any{"id": fmt.Sprintf("msg_%s_%d", session[:8], i), "type": "message", "role": "assistant",
				"model": "claude-sonnet-4-5-20250929", "content": []any{map[string]any{"type": "text", "text": text}}, "stop_reason": "end_turn",
				"usage": map[string]any{"input_tokens": 900, "output_tokens": 90}}
		}
		b, _ := json.Marshal(m)
		lines = append(lines, string(b))
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestProjectMemory: a decision replaced in a later session of the same
// project is found as superseded, below what replaced it, says why in
// mem get, and stays out of the pack of a new session of the project,
// which carries the decision in force, its origin, and the project's
// rules; another project's pack has none of it.
func TestProjectMemory(t *testing.T) {
	dir := t.TempDir()
	src := t.TempDir()
	day := time.Date(2026, 11, 10, 9, 0, 0, 0, time.UTC)
	one := "55555555-0000-4000-8000-000000000001"
	two := "55555555-0000-4000-8000-000000000002"
	writeFile(t, src, one+".jsonl", projectTranscript(one, day, "/repo/app",
		"Set up the schema migrations. For the migrations, use goose. Never run migrations against prod by hand.",
		"Done: goose runs the migrations from db/migrations."))
	writeFile(t, src, two+".jsonl", projectTranscript(two, day.Add(48*time.Hour), "/repo/app",
		"The migrations need checksums. For the migrations, use Atlas.",
		"Done: Atlas runs the migrations now."))
	other := "55555555-0000-4000-8000-000000000003"
	writeFile(t, src, other+".jsonl", projectTranscript(other, day, "/elsewhere",
		"For the migrations, use Flyway.", "Done."))
	if out, errs, code := run(t, "--dir", dir, "import", "claude", src, "--quiet"); code != 0 {
		t.Fatalf("import: %d\n%s%s", code, out, errs)
	}

	cards := memJSON[[]engine.Card](t, "--dir", dir, "mem", "search", "which tool runs the migrations", "--type", "decision", "-k", "10")
	pos := map[string]int{}
	var goose, atlas engine.Card
	for i, c := range cards {
		switch {
		case strings.Contains(c.Title, "goose"):
			goose, pos["goose"] = c, i
		case strings.Contains(c.Title, "Atlas"):
			atlas, pos["atlas"] = c, i
		}
	}
	if goose.ID == "" || atlas.ID == "" {
		t.Fatalf("search: %+v", cards)
	}
	if goose.Status != "superseded" || atlas.Status != "active" || pos["atlas"] > pos["goose"] {
		t.Fatalf("search: goose %s at %d, Atlas %s at %d; want goose superseded below Atlas", goose.Status, pos["goose"], atlas.Status, pos["atlas"])
	}
	out, errs, code := run(t, "--dir", dir, "mem", "get", goose.ID)
	if code != 0 || !strings.Contains(out, "superseded by "+atlas.ID+" in session claude:"+two) || !strings.Contains(out, "subject: migration tool") || strings.Contains(out, "Decision (active)") {
		t.Fatalf("mem get: %d\n%s%s", code, out, errs)
	}
	a := memJSON[engine.Artifact](t, "--dir", dir, "mem", "get", goose.ID)
	if a.Status != "superseded" || a.Resolved == nil || a.Resolved.By != atlas.ID {
		t.Fatalf("mem get --json: status %s, resolved %+v", a.Status, a.Resolved)
	}

	listed := false
	for _, c := range memJSON[[]engine.Card](t, "--dir", dir, "mem", "list", "claude:"+one, "--type", "decision") {
		if c.ID == goose.ID {
			listed = c.Status == "superseded"
		}
	}
	if !listed {
		t.Error("mem list does not show the goose decision superseded")
	}

	// A new session of the project (not recorded yet).
	p := memJSON[pack.Pack](t, "--dir", dir, "mem", "context", "--session", "brand-new", "--project", "/repo/app")
	md := strings.Join(func() (s []string) {
		for _, it := range append(p.Decisions, p.Constraints...) {
			s = append(s, it.Text+" | "+it.From)
		}
		return s
	}(), "\n")
	if !strings.Contains(md, "use Atlas") || strings.Contains(md, "goose") || !strings.Contains(md, "Never run migrations against prod by hand") ||
		!strings.Contains(md, "from session claude:"+two) && !strings.Contains(md, "session claude:"+two) {
		t.Fatalf("a new session's pack:\n%s", md)
	}
	elsewhere := memJSON[pack.Pack](t, "--dir", dir, "mem", "context", "--session", "another-new", "--project", "/elsewhere")
	for _, it := range append(elsewhere.Decisions, elsewhere.Constraints...) {
		if strings.Contains(it.Text, "Atlas") || strings.Contains(it.Text, "prod") {
			t.Fatalf("another project's pack has %q", it.Text)
		}
	}
	if len(elsewhere.Decisions) != 1 || !strings.Contains(elsewhere.Decisions[0].Text, "Flyway") {
		t.Fatalf("another project's pack: %+v", elsewhere.Decisions)
	}
}

// TestProjectSearchAnswerFirst: a question one session left open and
// the later session's task that answered it both match a search; the
// answer comes first and the closed question right below it, whichever
// matched better, and nothing else comes between them.
func TestProjectSearchAnswerFirst(t *testing.T) {
	dir := t.TempDir()
	src := t.TempDir()
	day := time.Date(2026, 11, 10, 9, 0, 0, 0, time.UTC)
	one := "55555555-0000-4000-8000-000000000011"
	two := "55555555-0000-4000-8000-000000000012"
	writeFile(t, src, one+".jsonl", projectTranscript(one, day, "/repo/ledger",
		"Add the postings table for money amounts.",
		"The postings table is added. Before I go on: should money amounts be stored as integer minor units or as NUMERIC(20,4)? Amounts, amounts, money, stored."))
	writeFile(t, src, two+".jsonl", projectTranscript(two, day.Add(48*time.Hour), "/repo/ledger",
		"About the open question from last week: int64 minor units.",
		"Done: postings keep int64 minor units.",
		"Also log each posting with its currency.",
		"Done: every posting logs its amount and currency."))
	if out, errs, code := run(t, "--dir", dir, "import", "claude", src, "--quiet"); code != 0 {
		t.Fatalf("import: %d\n%s%s", code, out, errs)
	}
	for _, q := range []string{"how are money amounts stored", "int64 minor units posting"} {
		cards := memJSON[[]engine.Card](t, "--dir", dir, "mem", "search", q, "-k", "10", "--session", "claude:"+two)
		var titles []string
		for _, c := range cards {
			titles = append(titles, string(c.Type)+" "+c.Status+": "+c.Title)
		}
		qi := slices.IndexFunc(cards, func(c engine.Card) bool {
			return c.Type == engine.ArtifactThread && strings.Contains(c.Title, "NUMERIC")
		})
		if qi < 0 || cards[qi].Status != "closed" {
			t.Fatalf("%q: no closed question:\n%s", q, strings.Join(titles, "\n"))
		}
		a := memJSON[engine.Artifact](t, "--dir", dir, "mem", "get", cards[qi].ID)
		if a.Resolved == nil || a.Resolved.Session != "claude:"+two {
			t.Fatalf("%q: the question's resolution %+v", q, a.Resolved)
		}
		if ai := slices.IndexFunc(cards, func(c engine.Card) bool { return c.ID == a.Resolved.By }); ai < 0 || qi != ai+1 {
			t.Errorf("%q: answer %s at %d, question at %d; want the question right below it:\n%s", q, a.Resolved.By, ai, qi, strings.Join(titles, "\n"))
		}
	}
}
