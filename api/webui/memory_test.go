package webui

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
)

// The decisions of the memory session: the second replaces the first.
const (
	decision1 = "We decided to use SQLite instead of Postgres for the job queue because it needs no server."
	decision2 = "Switch from SQLite to BoltDB for the job queue, since we need no SQL."
)

// memorySession records a two-request session through the proxy whose
// user messages state decision1, then decision2.
func (r *rig) memorySession(t testing.TB, session string) {
	t.Helper()
	first := `{"role":"user","content":"Set up the job queue. ` + decision1 + `"}`
	r.send(t, session, "["+first+"]", "text:The job queue runs on SQLite now.")
	r.send(t, session, "["+first+`,{"role":"assistant","content":"The job queue runs on SQLite now."},{"role":"user","content":"`+decision2+`"}]`, "text:Done: BoltDB.")
}

// hrefs returns the href of every element of body with class cls.
func hrefs(body, cls string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<a class="`+cls+`" href="([^"]*)"`).FindAllStringSubmatch(body, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

// decisionCards returns the memory page's decision cards: id to the
// card's markup.
func decisionCards(body string) map[string]string {
	out := map[string]string{}
	for _, m := range regexp.MustCompile(`(?s)<li class="ev card c-decision" data-id="([^"]+)">(.*?)</li>`).FindAllStringSubmatch(body, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// TestMemoryToFrames: a session recorded through the proxy whose user
// states a decision, then replaces it. Its memory page lists both with
// their chain; the decision's page links its evidence into the timeline
// and down to the raw frames of its exchange, which hold the words.
func TestMemoryToFrames(t *testing.T) {
	r := newRig(t)
	r.memorySession(t, "sess-memory")
	r.serve(t)
	c := r.client(t)

	// The timeline's header links the session's memory.
	code, tl := get(t, c, r.srv.URL+Prefix+"s/sess-memory")
	if code != 200 {
		t.Fatalf("timeline: %d", code)
	}
	m := regexp.MustCompile(`<a id="memory" href="([^"]+)"`).FindStringSubmatch(tl)
	if m == nil {
		t.Fatal("the timeline does not link the session's memory")
	}
	code, mem := get(t, c, r.srv.URL+html.UnescapeString(m[1]))
	if code != 200 {
		t.Fatalf("memory page %s: %d\n%s", m[1], code, mem)
	}
	cards := decisionCards(mem)
	var bolt, sqlite string
	for id, card := range cards {
		switch {
		case strings.Contains(card, "BoltDB"):
			bolt = id
		case strings.Contains(card, "SQLite"):
			sqlite = id
		}
	}
	if bolt == "" || sqlite == "" {
		t.Fatalf("the memory page lists the decisions %v, want the SQLite and the BoltDB one\n%s", cards, mem)
	}
	if !strings.Contains(cards[sqlite], "superseded by") || !strings.Contains(cards[sqlite], shortID(bolt)) {
		t.Errorf("the SQLite decision's card does not say BoltDB's replaced it: %s", cards[sqlite])
	}
	if !strings.Contains(cards[bolt], "supersedes") {
		t.Errorf("the BoltDB decision's card does not say what it replaced: %s", cards[bolt])
	}

	// The decision's page: its chain and its evidence.
	code, art := get(t, c, r.srv.URL+artifactURL(bolt))
	if code != 200 {
		t.Fatalf("artifact %s: %d", bolt, code)
	}
	if !strings.Contains(art, "supersession chain") || !strings.Contains(art, artifactURL(sqlite)) {
		t.Errorf("the BoltDB decision's page does not show the chain to %s", sqlite)
	}
	want, err := r.svc.Get(bolt)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Evidence) == 0 {
		t.Fatal("the decision has no evidence")
	}
	ev := want.Evidence[0]
	tls, frs := hrefs(art, "seq timeline"), hrefs(art, "frames")
	if len(tls) != len(want.Evidence) || len(frs) != len(want.Evidence) {
		t.Fatalf("evidence links: timeline %v, frames %v; want %d of each", tls, frs, len(want.Evidence))
	}
	if got, want := tls[0], eventURL("sess-memory", ev.Seq); got != want {
		t.Errorf("evidence link %q, want %q", got, want)
	}
	code, at := get(t, c, r.srv.URL+tls[0])
	if code != 200 || !strings.Contains(at, `id="e`+itoa(ev.Seq)+`"`) {
		t.Errorf("the evidence link answers %d without the event e%d", code, ev.Seq)
	}
	code, fr := get(t, c, r.srv.URL+frs[0])
	if code != 200 {
		t.Fatalf("frames %s: %d", frs[0], code)
	}
	marked := regexp.MustCompile(`(?s)<li class="frame mark" id="o\d+">.*?</li>`).FindAllString(fr, -1)
	found := false
	for _, f := range marked {
		if strings.Contains(html.UnescapeString(f), decision2) {
			found = true
		}
	}
	if !found {
		t.Errorf("none of the %d marked frames of exchange %d holds the decision's words", len(marked), ev.Prov.Exchange)
	}
	if !strings.Contains(fr, `href="`+html.EscapeString(eventURL("sess-memory", ev.Seq))+`"`) {
		t.Errorf("the frames page does not link back to event %d", ev.Seq)
	}
}

// TestProjectMemory: without a session the page lists the projects;
// an unknown session is a 404.
func TestProjectMemory(t *testing.T) {
	r := newRig(t)
	r.memorySession(t, "sess-memory")
	r.serve(t)
	c := r.client(t)
	if code, body := get(t, c, r.srv.URL+Prefix+"m/"); code != 200 || !strings.Contains(body, "Pick a project") {
		t.Errorf("memory without a session: %d", code)
	}
	if code, _ := get(t, c, r.srv.URL+Prefix+"m/?session=nope"); code != http.StatusNotFound {
		t.Errorf("memory of an unknown session: %d, want 404", code)
	}
	if code, body := get(t, c, r.srv.URL+Prefix+"m/?project=/nowhere"); code != 200 || !strings.Contains(body, "no session has the project") {
		t.Errorf("memory of an unknown project: %d", code)
	}
	if code, _ := get(t, c, r.srv.URL+Prefix+"a/0000nope"); code != http.StatusNotFound {
		t.Errorf("an unknown artifact: %d, want 404", code)
	}
}

// TestSearchPage: the search finds the decision, with the query's words
// marked, linking its page; a query holding markup is escaped.
func TestSearchPage(t *testing.T) {
	r := newRig(t)
	r.memorySession(t, "sess-memory")
	r.serve(t)
	c := r.client(t)
	code, body := get(t, c, r.srv.URL+Prefix+"search?q=BoltDB+queue&type=decision")
	if code != 200 {
		t.Fatalf("search: %d\n%s", code, body)
	}
	rs, err := r.svc.Find(api.SearchRequest{Text: "BoltDB queue", K: 10, Types: []engine.ArtifactType{engine.ArtifactDecision}})
	if err != nil || len(rs) == 0 {
		t.Fatalf("Find: %v, %v", rs, err)
	}
	links := hrefs(body, "rtitle")
	if len(links) != len(rs) || links[0] != artifactURL(rs[0].ID) {
		t.Errorf("results link %v, want %d starting with %s", links, len(rs), artifactURL(rs[0].ID))
	}
	for _, w := range []string{"<mark>BoltDB</mark>", "<mark>queue</mark>"} {
		if !strings.Contains(body, w) {
			t.Errorf("the results do not hold %s", w)
		}
	}
	code, body = get(t, c, r.srv.URL+Prefix+"search?q="+qesc("<script>alert(1)</script> BoltDB <img src=x onerror=alert(1)>"))
	if code != 200 {
		t.Fatalf("search with markup: %d", code)
	}
	for _, bad := range []string{"<script>alert", "<img src=x", "<mark>script</mark>>"} {
		if strings.Contains(body, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") || !strings.Contains(body, "<mark>BoltDB</mark>") {
		t.Errorf("the query is not shown escaped, or BoltDB not marked")
	}
	if code, _ := get(t, c, r.srv.URL+Prefix+"search?q=x&k=1000"); code != http.StatusBadRequest {
		t.Errorf("k 1000: %d, want 400", code)
	}
}

// TestMark: the query's whole words, any case, inside <mark>; the rest
// escaped.
func TestMark(t *testing.T) {
	for _, tc := range []struct{ text, query, want string }{
		{"Use SQLite, not Postgres.", "sqlite", "Use <mark>SQLite</mark>, not Postgres."},
		{"SQLiteDB is not SQLite", "SQLite", "SQLiteDB is not <mark>SQLite</mark>"},
		{"<b>bold</b> & bold", "bold", "&lt;b&gt;<mark>bold</mark>&lt;/b&gt; &amp; <mark>bold</mark>"},
		{`a "script" <script>`, "<script>", `a &#34;<mark>script</mark>&#34; &lt;<mark>script</mark>&gt;`},
		{"café über", "CAFÉ", "<mark>café</mark> über"},
		{"nothing here", "", "nothing here"},
	} {
		if got := string(mark(tc.text, queryWords(tc.query))); got != tc.want {
			t.Errorf("mark(%q, %q) = %q, want %q", tc.text, tc.query, got, tc.want)
		}
	}
}

// TestPackPreview: the page shows exactly the pack Service.Context gives
// for the same request, with its tokens against the budget.
func TestPackPreview(t *testing.T) {
	r := newRig(t)
	r.memorySession(t, "sess-memory")
	r.serve(t)
	c := r.client(t)
	for _, tc := range []struct {
		query string
		req   api.ContextRequest
	}{
		{"session=sess-memory&task=" + qesc("add a retry to the job queue <b>now</b>"), api.ContextRequest{Session: "sess-memory", Task: "add a retry to the job queue <b>now</b>"}},
		{"session=sess-memory&budget=300", api.ContextRequest{Session: "sess-memory", Budget: 300}},
	} {
		code, body := get(t, c, r.srv.URL+Prefix+"pack?"+tc.query)
		if code != 200 {
			t.Fatalf("pack %s: %d\n%s", tc.query, code, body)
		}
		want, err := r.svc.Context(tc.req)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?s)<pre class="txt payload" id="pack">\n(.*?)</pre>`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no pack on the page")
		}
		if got := html.UnescapeString(m[1]); got != want.Markdown() {
			t.Errorf("pack %s:\n%s\nwant\n%s", tc.query, got, want.Markdown())
		}
		if !strings.Contains(want.Markdown(), "BoltDB") {
			t.Errorf("the pack does not carry the decision in force:\n%s", want.Markdown())
		}
		tokens := regexp.MustCompile(`<dd id="tokens"[^>]*>(.*?)</dd>`).FindStringSubmatch(body)
		if tokens == nil || tokens[1] != itoa(uint64(want.Tokens))+" of a budget of "+itoa(uint64(want.Budget.Total)) {
			t.Errorf("tokens line %q; the pack has %d of %d", tokens, want.Tokens, want.Budget.Total)
		}
	}
	// A session not recorded yet gets its brief alone, as from mem
	// context.
	if code, body := get(t, c, r.srv.URL+Prefix+"pack?session=nope"); code != 200 || !strings.Contains(body, `id="note"`) {
		t.Errorf("pack of a session not recorded: %d", code)
	}
	if code, _ := get(t, c, r.srv.URL+Prefix+"pack?session=sess-memory&budget=-1"); code != http.StatusBadRequest {
		t.Errorf("a negative budget: %d, want 400", code)
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

func qesc(s string) string { return url.QueryEscape(s) }
