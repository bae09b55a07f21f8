package webui

import (
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
)

// formField returns the value of the hidden input name of the correction
// form of card id on page body.
func formField(t *testing.T, body, id, name string) string {
	t.Helper()
	forms := regexp.MustCompile(`(?s)<form class="correct" method="post" action="([^"]+)">(.*?)</form>`).FindAllStringSubmatch(body, -1)
	for _, f := range forms {
		if f[1] != correctPath || !strings.Contains(f[2], `name="id" value="`+id+`"`) {
			continue
		}
		m := regexp.MustCompile(`name="` + name + `" value="([^"]*)"`).FindStringSubmatch(f[2])
		if m == nil {
			t.Fatalf("the form of %s has no %s", id, name)
		}
		return html.UnescapeString(m[1])
	}
	t.Fatalf("no correction form for %s in\n%s", id, body)
	return ""
}

// post sends a correction form as a browser does (its Origin is the UI's)
// and returns the status and where it redirects.
func (r *rig) post(t *testing.T, c *http.Client, form url.Values) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", r.srv.URL+correctPath, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", r.srv.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, resp.Header.Get("Location"), b.String()
}

// TestCorrect: the memory page's forms forget, unforget, pin and unpin a
// decision recorded through the proxy. Each correction is a memory frame
// in the WAL (as `bbengine mem forget` writes it), memory and search see
// it at once, and the browser comes back to the page it was on.
func TestCorrect(t *testing.T) {
	r := newRig(t)
	r.memorySession(t, "sess-correct")
	r.serve(t)
	c := r.client(t)
	memPage := memoryURL("sess-correct", "")
	code, mem := get(t, c, r.srv.URL+memPage)
	if code != 200 {
		t.Fatalf("memory page: %d", code)
	}
	var bolt string
	for id, card := range decisionCards(mem) {
		if strings.Contains(card, "BoltDB") {
			bolt = id
		}
	}
	if bolt == "" {
		t.Fatalf("no BoltDB decision on\n%s", mem)
	}
	if got := formField(t, mem, bolt, "csrf"); got != r.ui.CSRF() {
		t.Fatalf("the form's CSRF token %q is not the UI's", got)
	}
	if got := formField(t, mem, bolt, "back"); got != memPage {
		t.Errorf("the form comes back to %q, want %q", got, memPage)
	}
	found := func() bool {
		res, err := r.svc.Find(api.SearchRequest{Text: "BoltDB job queue", Session: "sess-correct", K: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range res {
			if x.Card.ID == bolt {
				return true
			}
		}
		return false
	}
	if !found() {
		t.Fatal("the search does not find the decision before any correction")
	}

	form := url.Values{"csrf": {r.ui.CSRF()}, "id": {bolt}, "back": {memPage}, "op": {"forget"}, "reason": {"we went with SQLite after all"}}
	code, loc, body := r.post(t, c, form)
	if code != http.StatusSeeOther || loc != memPage {
		t.Fatalf("forget: %d to %q, want 303 to %q\n%s", code, loc, memPage, body)
	}
	a, err := r.svc.Get(bolt)
	if err != nil || !a.Forgotten {
		t.Fatalf("after forget: forgotten %v, %v", a.Forgotten, err)
	}
	if found() {
		t.Error("the search still finds the forgotten decision")
	}
	_, mem = get(t, c, r.srv.URL+memPage)
	card := decisionCards(mem)[bolt]
	if !strings.Contains(card, `<span class="tag">forgotten</span>`) || !strings.Contains(card, `value="unforget"`) || strings.Contains(card, `value="forget"`) {
		t.Errorf("the forgotten decision's card:\n%s", card)
	}

	// The WAL holds the correction with its reason, as the CLI writes it.
	var got []exchange.Correction
	rd := r.log.NewReader()
	defer rd.Close()
	for rd.Next() {
		if rd.Header().Kind != frame.KindMemory {
			continue
		}
		p, err := rd.Payload()
		if err != nil {
			t.Fatal(err)
		}
		if cr, err := exchange.DecodeCorrection(p); err == nil {
			got = append(got, cr)
		}
	}
	if err := rd.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Op != "forget" || got[0].ID != bolt || got[0].Reason != "we went with SQLite after all" {
		t.Errorf("the WAL's corrections: %+v", got)
	}

	for _, step := range []struct {
		op                string
		forgotten, pinned bool
	}{{"unforget", false, false}, {"pin", false, true}, {"unpin", false, false}} {
		form.Set("op", step.op)
		form.Set("back", artifactURL(bolt))
		if code, loc, body := r.post(t, c, form); code != http.StatusSeeOther || loc != artifactURL(bolt) {
			t.Fatalf("%s: %d to %q\n%s", step.op, code, loc, body)
		}
		a, err := r.svc.Get(bolt)
		if err != nil || a.Forgotten != step.forgotten || a.Pinned != step.pinned {
			t.Errorf("after %s: forgotten %v pinned %v (%v)", step.op, a.Forgotten, a.Pinned, err)
		}
		_, art := get(t, c, r.srv.URL+artifactURL(bolt))
		if want := map[bool]string{true: `value="unpin"`, false: `value="pin"`}[step.pinned]; !strings.Contains(art, want) {
			t.Errorf("after %s the artifact page's form has no %s", step.op, want)
		}
	}
	if !found() {
		t.Error("the search does not find the decision after unforget")
	}

	// A form that asks for nothing a correction is, names nothing, or
	// names what does not exist changes nothing; a redirect never leaves
	// the UI.
	for _, tc := range []struct {
		name     string
		set      url.Values
		want     int
		location string
	}{
		{"bad op", url.Values{"op": {"delete"}}, 400, ""},
		{"no id", url.Values{"id": {""}}, 400, ""},
		{"unknown id", url.Values{"id": {"dec-000000000000"}}, 404, ""},
		{"back elsewhere", url.Values{"back": {"https://evil.example/"}}, 303, artifactURL(bolt)},
		{"back protocol-relative", url.Values{"back": {"//evil.example" + Prefix}}, 303, artifactURL(bolt)},
		{"back out of the UI", url.Values{"back": {"/_bb/metrics"}}, 303, artifactURL(bolt)},
		{"back up and out", url.Values{"back": {Prefix + "../metrics"}}, 303, artifactURL(bolt)},
		{"back climbing in its fragment", url.Values{"back": {Prefix + "a/x#/../../../../v1/models"}}, 303, Prefix + "a/x"},
		{"a session's id as an artifact", url.Values{"id": {"sess-correct"}}, 404, ""},
		{"a session pinned", url.Values{"id": {"sess-correct"}, "target": {"session"}}, 303, ""},
		{"an unknown target", url.Values{"target": {"project"}}, 400, ""},
	} {
		f := url.Values{"csrf": {r.ui.CSRF()}, "id": {bolt}, "back": {memPage}, "op": {"pin"}}
		for k, v := range tc.set {
			f[k] = v
		}
		code, loc, body := r.post(t, c, f)
		if code != tc.want || tc.location != "" && loc != tc.location {
			t.Errorf("%s: %d to %q, want %d to %q\n%s", tc.name, code, loc, tc.want, tc.location, body)
		}
		if code == http.StatusSeeOther {
			// Undo the pin for the next case.
			f.Set("op", "unpin")
			r.post(t, c, f)
		}
	}
}

// TestCorrectSession: a decision forgotten with its whole session
// (bbengine mem forget SESSION) offers to unforget the session, not the
// artifact, which would change nothing; that form brings the session's
// memory back. A form about an artifact never forgets a session.
func TestCorrectSession(t *testing.T) {
	r := newRig(t)
	r.memorySession(t, "sess-whole")
	r.serve(t)
	c := r.client(t)
	if _, err := r.svc.Correct(api.Correction{Op: "forget", Target: "session", ID: "sess-whole"}); err != nil {
		t.Fatal(err)
	}
	memPage := memoryURL("sess-whole", "")
	_, mem := get(t, c, r.srv.URL+memPage)
	cards := decisionCards(mem)
	if len(cards) == 0 {
		t.Fatalf("no decision cards on\n%s", mem)
	}
	for id, card := range cards {
		if !strings.Contains(card, "unforget the session") || strings.Contains(card, `name="id" value="`+id+`"`) {
			t.Errorf("the card of %s, forgotten with its session:\n%s", id, card)
		}
	}
	code, loc, body := r.post(t, c, url.Values{"csrf": {r.ui.CSRF()}, "target": {"session"}, "id": {"sess-whole"}, "op": {"unforget"}, "back": {memPage}})
	if code != http.StatusSeeOther || loc != memPage {
		t.Fatalf("unforget the session: %d to %q\n%s", code, loc, body)
	}
	for id := range cards {
		if a, err := r.svc.Get(id); err != nil || a.Forgotten || a.SessionForgotten {
			t.Errorf("%s after the session's unforget: forgotten %v (session %v), %v", id, a.Forgotten, a.SessionForgotten, err)
		}
	}
	// An artifact form naming the session forgets nothing.
	if code, _, _ := r.post(t, c, url.Values{"csrf": {r.ui.CSRF()}, "id": {"sess-whole"}, "op": {"forget"}}); code != http.StatusNotFound {
		t.Errorf("an artifact forget of a session's id: %d, want 404", code)
	}
	for id := range cards {
		if a, _ := r.svc.Get(id); a.Forgotten {
			t.Errorf("%s is forgotten by an artifact form naming its session", id)
		}
	}
}

// TestCorrectSnapshot: a snapshot (`bbengine ui` without a proxy) shows
// no forms and refuses a correction with what to run instead.
func TestCorrectSnapshot(t *testing.T) {
	r := newRig(t)
	r.memorySession(t, "sess-snapfix")
	r.serve(t)
	ui, err := New(&Options{Service: api.NewLocal(r.e, nil), WAL: r.log, Token: testToken, Snapshot: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Close()
	ck := ui.testCookie()
	req := httptest.NewRequest("GET", "http://127.0.0.1:8080"+memoryURL("sess-snapfix", ""), nil)
	req.RemoteAddr = "127.0.0.1:5555"
	req.AddCookie(ck)
	rec := httptest.NewRecorder()
	ui.ServeHTTP(rec, req)
	if rec.Code != 200 || strings.Contains(rec.Body.String(), `class="correct"`) || !strings.Contains(rec.Body.String(), "read-only snapshot") {
		t.Errorf("the snapshot's memory page: %d, forms %v\n%s", rec.Code, strings.Contains(rec.Body.String(), `class="correct"`), rec.Body.String())
	}
	form := url.Values{"csrf": {ui.CSRF()}, "id": {"dec-x"}, "op": {"forget"}}
	req = httptest.NewRequest("POST", "http://127.0.0.1:8080"+correctPath, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "http://127.0.0.1:8080")
	req.RemoteAddr = "127.0.0.1:5555"
	req.AddCookie(ck)
	rec = httptest.NewRecorder()
	ui.ServeHTTP(rec, req)
	if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "bbengine mem forget ID") {
		t.Errorf("a correction to the snapshot: %d\n%s", rec.Code, rec.Body.String())
	}
}
