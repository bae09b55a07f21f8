package webui

import (
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/engine"
)

// TestRefusals: the checks every request passes before a page.
func TestRefusals(t *testing.T) {
	r := newRig(t)
	r.send(t, "sess-refusals", `[{"role":"user","content":"hello"}]`, "")
	r.serve(t)
	c := r.client(t)
	u, _ := url.Parse(r.srv.URL + Prefix)
	cookies := c.Jar.Cookies(u)
	for _, tc := range []struct {
		name    string
		method  string
		path    string
		host    string
		origin  string
		site    string
		csrf    string
		cookie  bool
		want    int
		wantMsg string
	}{
		{name: "no cookie", method: "GET", path: Prefix, want: 401, wantMsg: "not signed in"},
		{name: "no cookie, timeline", method: "GET", path: Prefix + "s/sess-refusals", want: 401},
		{name: "no cookie, static", method: "GET", path: Prefix + "static/ui.js", want: 401},
		{name: "no cookie, memory", method: "GET", path: Prefix + "m/?session=sess-refusals", want: 401},
		{name: "no cookie, artifact", method: "GET", path: Prefix + "a/abc", want: 401},
		{name: "no cookie, search", method: "GET", path: Prefix + "search?q=hello", want: 401},
		{name: "no cookie, pack", method: "GET", path: Prefix + "pack?session=sess-refusals", want: 401},
		{name: "no cookie, health", method: "GET", path: Prefix + "health", want: 401},
		{name: "signed in, health", method: "GET", path: Prefix + "health", cookie: true, want: 200},
		{name: "bad host, health", method: "GET", path: Prefix + "health", host: "evil.example:80", cookie: true, want: 421},
		{name: "cross-site origin, health", method: "GET", path: Prefix + "health", origin: "http://evil.example", cookie: true, want: 403},
		{name: "cross-site fetch, health", method: "GET", path: Prefix + "health", site: "cross-site", cookie: true, want: 403},
		{name: "no cookie, usage", method: "GET", path: Prefix + "usage", want: 401},
		{name: "signed in, usage", method: "GET", path: Prefix + "usage?period=weekly", cookie: true, want: 200},
		{name: "bad host, usage", method: "GET", path: Prefix + "usage", host: "evil.example:80", cookie: true, want: 421},
		{name: "cross-site origin, usage", method: "GET", path: Prefix + "usage", origin: "http://evil.example", cookie: true, want: 403},
		{name: "cross-site fetch, usage", method: "GET", path: Prefix + "usage", site: "cross-site", cookie: true, want: 403},
		{name: "signed in, memory", method: "GET", path: Prefix + "m/?session=sess-refusals", cookie: true, want: 200},
		{name: "signed in, search", method: "GET", path: Prefix + "search?q=hello", cookie: true, want: 200},
		{name: "signed in, pack", method: "GET", path: Prefix + "pack?session=sess-refusals", cookie: true, want: 200},
		{name: "cross-site search", method: "GET", path: Prefix + "search?q=hello", site: "cross-site", cookie: true, want: 403},
		{name: "bad host, pack", method: "GET", path: Prefix + "pack?session=sess-refusals", host: "evil.example:80", cookie: true, want: 421},
		{name: "signed in", method: "GET", path: Prefix, cookie: true, want: 200},
		{name: "bad host", method: "GET", path: Prefix, host: "evil.example:80", cookie: true, want: 421},
		{name: "rebound host", method: "GET", path: Prefix, host: "attacker.test", cookie: true, want: 421},
		{name: "cross-site origin GET", method: "GET", path: Prefix, origin: "http://evil.example", cookie: true, want: 403},
		{name: "cross-site fetch", method: "GET", path: Prefix, site: "cross-site", cookie: true, want: 403},
		{name: "cross-site origin POST", method: "POST", path: Prefix, origin: "http://evil.example", cookie: true, want: 403},
		{name: "cross-site POST with csrf", method: "POST", path: Prefix, origin: "http://evil.example", csrf: r.ui.CSRF(), cookie: true, want: 403},
		{name: "POST without origin", method: "POST", path: Prefix, csrf: r.ui.CSRF(), cookie: true, want: 403},
		{name: "POST without csrf", method: "POST", path: Prefix, origin: "self", cookie: true, want: 403},
		{name: "POST with a wrong csrf", method: "POST", path: Prefix, origin: "self", csrf: "00", cookie: true, want: 403},
		{name: "POST, nothing to change", method: "POST", path: Prefix, origin: "self", csrf: r.ui.CSRF(), cookie: true, want: 405},
		{name: "POST without cookie", method: "POST", path: Prefix, origin: "self", csrf: r.ui.CSRF(), want: 401},
		{name: "correct without cookie", method: "POST", path: correctPath, origin: "self", csrf: r.ui.CSRF(), want: 401},
		{name: "correct cross-site with csrf", method: "POST", path: correctPath, origin: "http://evil.example", csrf: r.ui.CSRF(), cookie: true, want: 403},
		{name: "correct from another port", method: "POST", path: correctPath, origin: "self", site: "same-site", csrf: r.ui.CSRF(), cookie: true, want: 403},
		{name: "correct without csrf", method: "POST", path: correctPath, origin: "self", cookie: true, want: 403},
		{name: "correct without origin", method: "POST", path: correctPath, csrf: r.ui.CSRF(), cookie: true, want: 403},
		{name: "correct, bad host", method: "POST", path: correctPath, host: "evil.example:80", origin: "self", csrf: r.ui.CSRF(), cookie: true, want: 421},
		{name: "correct by GET", method: "GET", path: correctPath, cookie: true, want: 405},
		{name: "correct, nothing asked", method: "POST", path: correctPath, origin: "self", csrf: r.ui.CSRF(), cookie: true, want: 400},
		{name: "wrong token", method: "GET", path: Prefix + "?token=nope", want: 401},
		{name: "token on POST", method: "POST", path: Prefix + "?token=" + Ticket(testToken, time.Now()), origin: "self", want: 401},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequest(tc.method, r.srv.URL+tc.path, nil)
			req.RequestURI = ""
			if tc.host != "" {
				req.Host = tc.host
			}
			switch tc.origin {
			case "":
			case "self":
				req.Header.Set("Origin", r.srv.URL)
			default:
				req.Header.Set("Origin", tc.origin)
			}
			if tc.site != "" {
				req.Header.Set("Sec-Fetch-Site", tc.site)
			}
			if tc.csrf != "" {
				req.Header.Set("X-Bb-Csrf", tc.csrf)
			}
			if tc.cookie {
				for _, ck := range cookies {
					req.AddCookie(ck)
				}
			}
			resp, err := http.DefaultTransport.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
			if resp.Header.Get("Set-Cookie") != "" {
				t.Errorf("a refused or plain request set a cookie: %s", resp.Header.Get("Set-Cookie"))
			}
			for k, v := range map[string]string{"Content-Security-Policy": csp, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin"} {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

// TestSignIn: the URL's token is swapped for an HttpOnly, SameSite=Strict
// cookie and a redirect to the URL without it.
func TestSignIn(t *testing.T) {
	r := newRig(t)
	r.serve(t)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	ticket := Ticket(testToken, time.Now())
	resp, err := c.Get(r.srv.URL + Prefix + "s/abc?token=" + ticket + "&page=2")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if got, want := resp.Header.Get("Location"), Prefix+"s/abc?page=2"; got != want {
		t.Errorf("Location %q, want %q", got, want)
	}
	cs := resp.Cookies()
	if len(cs) != 1 {
		t.Fatalf("cookies %v", cs)
	}
	ck := cs[0]
	raw := resp.Header.Get("Set-Cookie")
	for _, want := range []string{"HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(raw, want) {
			t.Errorf("Set-Cookie %q lacks %s", raw, want)
		}
	}
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != Prefix {
		t.Errorf("cookie %+v: want HttpOnly, SameSite=Strict, Path=%s", ck, Prefix)
	}
	if strings.Contains(ck.Value, testToken) || strings.Contains(ck.Name, testToken) || strings.Contains(ck.Value, ticket) {
		t.Errorf("the cookie carries the token or the ticket: %s", ck)
	}
	if ck.MaxAge <= 0 || ck.MaxAge > int(sessionLife/time.Second) {
		t.Errorf("cookie Max-Age %d, want a session of at most %v", ck.MaxAge, sessionLife)
	}
	// The ticket signed in once: again, or the token itself, it does not
	// (a URL in the history, the scrollback or a process list).
	for _, tok := range []string{ticket, testToken} {
		resp, err := c.Get(r.srv.URL + Prefix + "?token=" + tok)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) > 0 {
			t.Errorf("signing in again with %q: %d, cookies %v; want 401 and none", tok, resp.StatusCode, resp.Cookies())
		}
	}
	// An old ticket does not sign in.
	resp, err = c.Get(r.srv.URL + Prefix + "?token=" + Ticket(testToken, time.Now().Add(-ticketLife-time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("an expired ticket: %d, want 401", resp.StatusCode)
	}

	// The cookie alone now opens the pages.
	req, _ := http.NewRequest("GET", r.srv.URL+Prefix, nil)
	req.AddCookie(ck)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("with the cookie: %d", resp.StatusCode)
	}
}

// TestInert: a session whose tool output and reply hold a script, a
// javascript: link and an img onerror renders them as text.
func TestInert(t *testing.T) {
	r := newRig(t)
	r.xssSession(t, "sess-xss")
	r.serve(t)
	c := r.client(t)
	for _, path := range []string{Prefix, Prefix + "s/sess-xss", Prefix + "?q=" + url.QueryEscape("<script>")} {
		code, body := get(t, c, r.srv.URL+path)
		if code != 200 {
			t.Fatalf("%s: %d\n%s", path, code, body)
		}
		checkInert(t, path, body)
	}
	_, body := get(t, c, r.srv.URL+Prefix+"s/sess-xss")
	if n := strings.Count(body, "&lt;script&gt;alert(1)&lt;/script&gt;"); n < 3 {
		t.Errorf("the escaped script shows %d times in the timeline, want the user message, the tool call, its result and the reply", n)
	}
	for _, want := range []string{"tool call Bash", "tool result", "model call claude-sonnet-4-5", "usage"} {
		if !strings.Contains(body, want) {
			t.Errorf("timeline lacks %q", want)
		}
	}
	// The raw frames hold the same bytes, escaped too.
	m := regexp.MustCompile(`href="(/_bb/ui/x/[^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no raw frames link")
	}
	code, fb := get(t, c, r.srv.URL+html.UnescapeString(m[1]))
	if code != 200 {
		t.Fatalf("frames: %d\n%s", code, fb)
	}
	checkInert(t, "frames", fb)
}

// checkInert fails when body holds markup an attacker could have put
// there, or anything the CSP would block.
func checkInert(t *testing.T, where, body string) {
	t.Helper()
	for _, bad := range []string{"<script>alert", "<img", `href="javascript:`, "<a href=\"javascript", " style=\""} {
		if strings.Contains(body, bad) {
			t.Errorf("%s: page holds %q", where, bad)
		}
	}
	if n, want := strings.Count(body, "<script"), strings.Count(body, `<script src="/_bb/ui/static/ui.js" defer></script>`); n != want || n > 1 {
		t.Errorf("%s: %d script elements, want only the one of ui.js", where, n)
	}
	if regexp.MustCompile(`<[a-z]+[^>]*\son[a-z]+=`).MatchString(body) {
		t.Errorf("%s: an inline event handler attribute", where)
	}
}

// TestTimelineToFrames: the timeline shows the events of a recorded
// session, each recorded one links to its exchange's frames, and the
// frames page shows the stored bytes of each frame exactly, with a link
// back to the event.
func TestTimelineToFrames(t *testing.T) {
	r := newRig(t)
	r.send(t, "sess-tl", `[{"role":"user","content":"Where does the cache live? <b>bold</b>"}]`, "")
	r.send(t, "sess-tl", `[{"role":"user","content":"Where does the cache live? <b>bold</b>"},{"role":"assistant","content":"Done."},{"role":"user","content":"And its TTL?"}]`, "")
	r.serve(t)
	c := r.client(t)
	svc := api.NewLocal(r.e, nil)
	evs, err := svc.Events("sess-tl", engine.EventFilter{})
	if err != nil || len(evs) < 6 {
		t.Fatalf("events %d, %v", len(evs), err)
	}
	code, body := get(t, c, r.srv.URL+Prefix+"s/sess-tl")
	if code != 200 {
		t.Fatalf("timeline %d", code)
	}
	for _, e := range evs {
		if !strings.Contains(body, fmt.Sprintf(`id="e%d"`, e.Seq)) {
			t.Errorf("timeline lacks event %d (%s)", e.Seq, e.Kind)
		}
	}
	for _, want := range []string{"Where does the cache live? &lt;b&gt;bold&lt;/b&gt;", "And its TTL?", "Done."} {
		if !strings.Contains(body, want) {
			t.Errorf("timeline lacks %q", want)
		}
	}
	// The last user message's event links to its exchange's frames.
	var ev engine.Event
	for _, e := range evs {
		if e.Kind == engine.KindMessage && e.Text == "And its TTL?" {
			ev = e
		}
	}
	if ev.Prov.Exchange == 0 {
		t.Fatalf("no event of the second request: %+v", evs)
	}
	link := regexp.MustCompile(fmt.Sprintf(`id="e%d"(?s:.*?)href="(/_bb/ui/x/%d\?[^"]+)"`, ev.Seq, ev.Prov.Exchange)).FindStringSubmatch(body)
	if link == nil {
		t.Fatalf("event %d has no link to exchange %d's frames", ev.Seq, ev.Prov.Exchange)
	}
	code, fb := get(t, c, r.srv.URL+html.UnescapeString(link[1]))
	if code != 200 {
		t.Fatalf("frames %d: %s", code, fb)
	}
	back := fmt.Sprintf(`href="/_bb/ui/s/sess-tl?at=%d#e%d"`, ev.Seq, ev.Seq)
	if !strings.Contains(fb, back) {
		t.Errorf("frames page lacks the link back %s", back)
	}
	x, err := svc.Exchange(ev.Prov.Exchange)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	err = api.ExchangeFrames(r.log, x.ID, x.Offsets, func(h frame.Header, p []byte) error {
		n++
		m := regexp.MustCompile(fmt.Sprintf(`(?s)id="o%d".*?<pre class="txt payload">(.*?)</pre>`, h.Offset)).FindStringSubmatch(fb)
		if len(p) == 0 {
			return nil
		}
		if m == nil {
			t.Errorf("frame @%d (%s) not on the page", h.Offset, h.Kind)
			return nil
		}
		if got := browserPreText(m[1]); got != string(p) {
			t.Errorf("frame @%d (%s): page shows\n%q\nstored\n%q", h.Offset, h.Kind, got, p)
		}
		if h.Kind == frame.KindRequestBody && !strings.Contains(string(p), "And its TTL?") {
			t.Errorf("request body frame @%d: %q", h.Offset, p)
		}
		return nil
	})
	if err != nil || n < 4 {
		t.Fatalf("frames %d, %v", n, err)
	}
	// The event's own frames are marked.
	if !strings.Contains(fb, fmt.Sprintf(`class="frame mark" id="o%d"`, ev.Prov.First)) {
		t.Errorf("frame @%d of the event is not marked", ev.Prov.First)
	}
}

// TestSessionsFilters: the list filters by agent, project, date and
// text, and pages.
func TestSessionsFilters(t *testing.T) {
	r := newRig(t)
	for i := range 3 {
		r.send(t, fmt.Sprintf("sess-f%d", i), `[{"role":"user","content":"hi"}]`, "")
	}
	r.serve(t)
	c := r.client(t)
	today := time.Now().Format(time.DateOnly)
	tomorrow := time.Now().AddDate(0, 0, 1).Format(time.DateOnly)
	for _, tc := range []struct {
		query string
		want  int
	}{
		{"", 3},
		{"q=f1", 1},
		{"q=SESS-F", 3},
		{"q=nothing", 0},
		{"agent=nope", 0},
		{"from=" + today, 3},
		{"from=" + tomorrow, 0},
		{"to=" + today, 3},
		{"project=/nowhere", 0},
		{"page=9", 3},
	} {
		code, body := get(t, c, r.srv.URL+Prefix+"?"+tc.query)
		if code != 200 {
			t.Fatalf("%s: %d", tc.query, code)
		}
		if got := strings.Count(body, `<tr class="row"`); got != tc.want {
			t.Errorf("?%s: %d rows, want %d", tc.query, got, tc.want)
		}
		code, frag := get(t, c, r.srv.URL+Prefix+"?frag=rows&"+tc.query)
		if code != 200 || strings.Contains(frag, "<html") || strings.Count(frag, `<tr class="row"`) != tc.want {
			t.Errorf("?frag=rows&%s: %d, %q", tc.query, code, frag)
		}
	}
}

// TestLive: the live stream says "change" when the version moves, and
// ends when the UI closes.
func TestLive(t *testing.T) {
	r := newRig(t)
	r.serve(t)
	var v atomic.Uint64
	ui, err := New(&Options{Service: api.NewLocal(r.e, nil), Token: testToken, LiveEvery: 10 * time.Millisecond,
		Version: func() (uint64, error) { return v.Load(), nil }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ui)
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+Prefix+"live", nil)
	req.AddCookie(ui.testCookie())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	buf := make([]byte, 4096)
	read := func() string {
		n, _ := resp.Body.Read(buf)
		return string(buf[:n])
	}
	if got := read(); !strings.Contains(got, "event: hello") {
		t.Fatalf("first event %q", got)
	}
	v.Store(7)
	if got := read(); !strings.Contains(got, "event: change\ndata: 7") {
		t.Fatalf("second event %q", got)
	}
	ui.Close()
	if got := read(); got != "" {
		t.Errorf("after Close: %q", got)
	}
}

// TestRowWithoutTime: a session none of whose records has a time shows
// no start, not the Unix epoch.
func TestRowWithoutTime(t *testing.T) {
	if r := rowOf(&engine.Session{ID: "claude:summary-only"}); r.Start != "—" || r.Duration != "—" || strings.Contains(r.StartFull, "1970") {
		t.Errorf("row %+v", r)
	}
	if r := rowOf(&engine.Session{ID: "s", First: time.Date(2026, 4, 18, 13, 10, 0, 0, time.Local).UnixNano()}); r.Start != "2026-04-18 13:10" {
		t.Errorf("row start %q", r.Start)
	}
}
