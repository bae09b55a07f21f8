package webui

// Tests of what a review of the first slice found (and what was mended).

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/codec/frame"
	"github.com/bbengine/bbengine/engine"
)

// TestNonLoopbackPeer: "Loopback only". The proxy may listen beyond
// loopback (--listen 0.0.0.0:8080, a container) and serve the UI there
// too; the Host check reads a header the peer writes, so a peer on
// another machine that sends Host: 127.0.0.1 and a cookie (or a ticket)
// is refused by its RemoteAddr.
func TestNonLoopbackPeer(t *testing.T) {
	r := newRig(t)
	r.send(t, "sess-remote", `[{"role":"user","content":"secret-adjacent text"}]`, "")
	r.serve(t)
	for _, remote := range []string{"192.0.2.10:5555", "[2001:db8::1]:5555"} {
		req := httptest.NewRequest("GET", "http://127.0.0.1:8080"+Prefix+"s/sess-remote", nil)
		req.RemoteAddr = remote
		req.AddCookie(r.ui.testCookie())
		rec := httptest.NewRecorder()
		r.ui.ServeHTTP(rec, req)
		if rec.Code == http.StatusOK {
			t.Errorf("a request from %s (not loopback) was served: %d, %d bytes of the timeline", remote, rec.Code, rec.Body.Len())
		}
		// The token is accepted from there too.
		req = httptest.NewRequest("GET", "http://127.0.0.1:8080"+Prefix+"?token="+Ticket(testToken, time.Now()), nil)
		req.RemoteAddr = remote
		rec = httptest.NewRecorder()
		r.ui.ServeHTTP(rec, req)
		if rec.Header().Get("Set-Cookie") != "" {
			t.Errorf("a request from %s (not loopback) was given the cookie", remote)
		}
	}
}

// TestPrefixWithoutSlash: /_bb/ui is routed to the sessions page
// (webui.go route, server.withUI), but the cookie's Path is /_bb/ui/,
// which a browser does not send for /_bb/ui: signing in at
// /_bb/ui?token=… sets the cookie and redirects to /_bb/ui, which then
// answers 401 for ever.
func TestPrefixWithoutSlash(t *testing.T) {
	r := newRig(t)
	r.serve(t)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	code, body := get(t, c, r.srv.URL+strings.TrimSuffix(Prefix, "/")+"?token="+Ticket(testToken, time.Now()))
	if code != http.StatusOK {
		t.Errorf("signing in at %s?token=… ends in %d: %s", strings.TrimSuffix(Prefix, "/"), code, regexp.MustCompile(`<p class="reason">.*</p>`).FindString(body))
	}
}

// TestSessionIDWithPercent: serveTimeline unescapes the id a
// second time (r.URL.Path is already decoded, then url.PathUnescape),
// so a session whose id holds '%' (X-Bb-Session-Id accepts any
// printable id) cannot be opened from its own link: "job%41" opens
// "jobA" (another session, or 404) and "50%" is a 400.
func TestSessionIDWithPercent(t *testing.T) {
	r := newRig(t)
	ids := []string{"job%41", "50%done", "jobA"}
	for _, id := range ids {
		r.send(t, id, `[{"role":"user","content":"hello from `+id+`"}]`, "")
	}
	r.serve(t)
	c := r.client(t)
	_, list := get(t, c, r.srv.URL+Prefix)
	for _, id := range ids[:2] {
		m := regexp.MustCompile(`<tr class="row" data-id="` + regexp.QuoteMeta(html.EscapeString(id)) + `"(?s:.*?)<a class="sid" href="([^"]+)"`).FindStringSubmatch(list)
		if m == nil {
			t.Fatalf("no row for %q", id)
		}
		code, body := get(t, c, r.srv.URL+html.UnescapeString(m[1]))
		if code != http.StatusOK || !strings.Contains(body, "hello from "+id) {
			t.Errorf("session %q's link %s: %d, shows its own message: %v (%s)", id, m[1], code,
				strings.Contains(body, "hello from "+id), regexp.MustCompile(`<h1>.*</h1>`).FindString(body))
		}
	}
}

// TestFramesAsTheBrowserReadsThem: the raw frames page promises the
// payload "exactly as stored", and TestTimelineToFrames checks it by
// unescaping the markup, not as a browser parses it. An HTML parser
// drops a newline right after <pre> and turns every CR and CRLF into LF
// (HTML §13.2.3.5 and the "pre" start tag rule), and html/template does
// not escape either, so a body that starts with a newline or holds CRLF
// (both valid JSON whitespace, and what a client on Windows sends) is
// shown with other bytes than stored. Checked in Chromium: <pre>\na\r\nb
// has textContent "a\nb".
func TestFramesAsTheBrowserReadsThem(t *testing.T) {
	r := newRig(t)
	body := "\n{\"model\":\"claude-sonnet-4-5\",\r\n\"max_tokens\":256,\r\n\"messages\":[{\"role\":\"user\",\"content\":\"crlf body\"}]}\r\n"
	req, _ := http.NewRequest("POST", r.front.URL+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("X-Bb-Session-Id", "sess-crlf")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	r.serve(t)
	c := r.client(t)
	svc := api.NewLocal(r.e, nil)
	evs, err := svc.Events("sess-crlf", engine.EventFilter{})
	if err != nil || len(evs) == 0 || evs[0].Prov.Exchange == 0 {
		t.Fatalf("events %v, %v", evs, err)
	}
	x, err := svc.Exchange(evs[0].Prov.Exchange)
	if err != nil {
		t.Fatal(err)
	}
	code, fb := get(t, c, fmt.Sprintf("%s%sx/%d", r.srv.URL, Prefix, x.ID))
	if code != 200 {
		t.Fatalf("frames %d", code)
	}
	checked := 0
	api.ExchangeFrames(r.log, x.ID, x.Offsets, func(h frame.Header, p []byte) error {
		if h.Kind != frame.KindRequestBody {
			return nil
		}
		checked++
		m := regexp.MustCompile(fmt.Sprintf(`(?s)id="o%d".*?<pre class="txt payload">(.*?)</pre>`, h.Offset)).FindStringSubmatch(fb)
		if m == nil {
			t.Fatalf("frame @%d not on the page", h.Offset)
		}
		if got := browserPreText(m[1]); got != string(p) {
			t.Errorf("request body frame @%d: a browser shows\n%q\nstored\n%q", h.Offset, got, p)
		}
		return nil
	})
	if checked == 0 {
		t.Fatal("no request body frame")
	}
}

// browserPreText returns the textContent an HTML parser gives the markup
// inside a <pre>: CR and CRLF become LF before tokenizing, a leading LF
// is dropped, then character references are decoded.
func browserPreText(markup string) string {
	markup = strings.ReplaceAll(markup, "\r\n", "\n")
	markup = strings.ReplaceAll(markup, "\r", "\n")
	markup = strings.TrimPrefix(markup, "\n")
	return html.UnescapeString(markup)
}

// TestUnknownExchange: a raw frames link to an exchange the WAL no
// longer holds (retention) or never held answers 500 Internal Server
// Error: api.ReadTrace's "no frames in the WAL" wraps no sentinel, so
// statusOf cannot tell it from a failure. It is a 404 (or a 410 after
// retention), as an unknown session is.
func TestUnknownExchange(t *testing.T) {
	r := newRig(t)
	r.serve(t)
	c := r.client(t)
	code, body := get(t, c, r.srv.URL+Prefix+"x/99999")
	if code != http.StatusNotFound {
		t.Errorf("an unknown exchange: %d, want 404: %s", code, regexp.MustCompile(`<p class="reason">.*</p>`).FindString(body))
	}
}

// TestSameSiteSubresource: only Sec-Fetch-Site: cross-site is
// refused. Every port of 127.0.0.1 (or of localhost) is the same site,
// so a page on another loopback port (a dev server an agent started)
// gets the SameSite=Strict cookie sent with its <img>, <script> or
// no-cors fetch of any UI page, and a browser sends no Origin on a
// no-cors GET. It cannot read the answer, but it can time and size it
// (the ?q= text filter over every transcript's title, id and project is
// an oracle). Nothing but the UI's own pages (same-origin) and the user
// (none) should reach it: refuse same-site subresource requests too.
func TestSameSiteSubresource(t *testing.T) {
	r := newRig(t)
	r.send(t, "sess-leak", `[{"role":"user","content":"hi"}]`, "")
	r.serve(t)
	req := httptest.NewRequest("GET", "http://127.0.0.1:8080"+Prefix+"?q=sess-le", nil)
	req.Header.Set("Sec-Fetch-Site", "same-site")
	req.Header.Set("Sec-Fetch-Mode", "no-cors")
	req.Header.Set("Sec-Fetch-Dest", "image")
	req.AddCookie(r.ui.testCookie())
	rec := httptest.NewRecorder()
	r.ui.ServeHTTP(rec, req)
	if rec.Code == http.StatusOK {
		t.Errorf("an <img> of another loopback port's page was answered %d (%d bytes, %d rows)", rec.Code, rec.Body.Len(), strings.Count(rec.Body.String(), `<tr class="row"`))
	}
}

// TestSnapshot: `bbengine ui` without a proxy holds the directory, so
// nothing else writes it: its pages promise no live updates (no live
// stream attributes, no /live).
func TestSnapshot(t *testing.T) {
	r := newRig(t)
	r.send(t, "sess-snap", `[{"role":"user","content":"hi"}]`, "")
	r.serve(t)
	ui, err := New(&Options{Service: api.NewLocal(r.e, nil), WAL: r.log, Token: testToken, Snapshot: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ui.Close()
	for path, want := range map[string]int{Prefix: 200, Prefix + "live": 404} {
		req := httptest.NewRequest("GET", "http://127.0.0.1:8080"+path, nil)
		req.RemoteAddr = "127.0.0.1:5555"
		req.AddCookie(ui.testCookie())
		rec := httptest.NewRecorder()
		ui.ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("%s: %d, want %d", path, rec.Code, want)
		}
		if strings.Contains(rec.Body.String(), "data-live") {
			t.Errorf("%s: the snapshot's page asks for live updates", path)
		}
	}
}
