package webui

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/internal/guard"
	"github.com/bbengine/bbengine/wal"
)

// Prefix is the path the UI is served under.
const Prefix = "/_bb/ui/"

// minToken is the shortest token New accepts.
const minToken = 16

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configure a UI.
type Options struct {
	// Service answers every page. It is required.
	Service api.Service
	// WAL is the log the raw frames pages read. The default is none: the
	// frames pages say the WAL is not open.
	WAL *wal.Log
	// Token is the secret `bbengine ui` gives in the URL, at least 16
	// characters. It is required.
	Token string
	// Version returns a number that changes when the engine derived
	// something new (the proxy gives engine.Engine.Applied): the live
	// stream sends "change" when it moves. The default reads the
	// sessions and fingerprints them.
	Version func() (uint64, error)
	// LiveEvery is how often the live stream looks at Version. The
	// default is one second.
	LiveEvery time.Duration
}

// UI serves the web UI. It implements http.Handler for the paths under
// Prefix.
type UI struct {
	svc     api.Service
	log     *wal.Log
	token   string
	cookie  http.Cookie // the name and value a signed-in browser sends
	csrf    string
	version func() (uint64, error)
	every   time.Duration
	pages   map[string]*template.Template
	static  fs.FS

	// done is closed by Close: live streams end.
	done      chan struct{}
	closeOnce sync.Once
}

// New returns the UI of opts.Service.
func New(opts *Options) (*UI, error) {
	if opts == nil || opts.Service == nil {
		return nil, errors.New("webui: no service")
	}
	if len(opts.Token) < minToken {
		return nil, fmt.Errorf("webui: a token of %d characters: use at least %d random ones", len(opts.Token), minToken)
	}
	u := &UI{svc: opts.Service, log: opts.WAL, token: opts.Token, version: opts.Version, every: opts.LiveEvery, done: make(chan struct{})}
	if u.every <= 0 {
		u.every = time.Second
	}
	if u.version == nil {
		u.version = u.sessionsVersion
	}
	// The cookie's name is per token, so that two UIs on the same host
	// (a proxy's and a short-lived one, on different ports: cookies do
	// not tell ports apart) do not overwrite each other's.
	u.cookie = http.Cookie{Name: "bbui_" + derive(opts.Token, "name")[:12], Value: derive(opts.Token, "cookie")}
	u.csrf = derive(opts.Token, "csrf")
	var err error
	if u.pages, err = parsePages(); err != nil {
		return nil, err
	}
	u.static, _ = fs.Sub(staticFS, "static")
	return u, nil
}

// derive returns the hex HMAC-SHA256 of purpose under token: the cookie
// and the CSRF token are derived, so neither reveals the URL's token.
func derive(token, purpose string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("bbengine webui " + purpose))
	return hex.EncodeToString(m.Sum(nil))
}

// Close ends the live streams. It is safe to call twice.
func (u *UI) Close() error {
	u.closeOnce.Do(func() { close(u.done) })
	return nil
}

// funcs are the helpers the templates call.
var funcs = template.FuncMap{
	"short": shortID,
	"pathEsc": func(s string) string {
		return url.PathEscape(s)
	},
}

// parsePages parses each page template with the layout.
func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("webui: %w", err)
	}
	pages := map[string]*template.Template{}
	for _, name := range []string{"sessions", "timeline", "frames", "error"} {
		t, err := base.Clone()
		if err == nil {
			t, err = t.ParseFS(templateFS, "templates/"+name+".html")
		}
		if err != nil {
			return nil, fmt.Errorf("webui: %w", err)
		}
		pages[name] = t
	}
	rows, err := template.New("rows.html").Funcs(funcs).ParseFS(templateFS, "templates/sessions.html")
	if err != nil {
		return nil, fmt.Errorf("webui: %w", err)
	}
	pages["rows"] = rows
	return pages, nil
}

// csp is every answer's Content-Security-Policy: nothing inline, nothing
// from elsewhere, never in a frame.
const csp = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"

// ServeHTTP checks the request (see the package comment) and answers it.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	if err := guard.CheckHost(r); err != nil {
		ref := err.(*guard.Refusal)
		u.refuse(w, ref.Status, ref.Reason)
		return
	}
	if reason := u.crossSite(r); reason != "" {
		u.refuse(w, http.StatusForbidden, reason)
		return
	}
	if tok, ok := r.URL.Query()["token"]; ok {
		u.signIn(w, r, tok)
		return
	}
	if !u.signedIn(r) {
		u.refuse(w, http.StatusUnauthorized, "bbengine ui: not signed in: open the URL `bbengine ui` prints (it carries a one-time token that sets this browser's cookie)")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if !u.sameOrigin(r) || !u.csrfOK(r) {
			u.refuse(w, http.StatusForbidden, "bbengine ui: refused a "+r.Method+" without this UI's Origin and CSRF token")
			return
		}
		h.Set("Allow", "GET, HEAD")
		u.refuse(w, http.StatusMethodNotAllowed, "bbengine ui: "+r.URL.Path+" only reads: use GET")
		return
	}
	u.route(w, r)
}

// crossSite returns why r comes from another site, or "".
func (u *UI) crossSite(r *http.Request) string {
	if o := r.Header.Get("Origin"); o != "" && !u.sameOrigin(r) {
		return "bbengine ui: refused a request from origin " + o + ": the UI answers only its own pages"
	}
	if strings.EqualFold(strings.TrimSpace(r.Header.Get("Sec-Fetch-Site")), "cross-site") {
		return "bbengine ui: refused a cross-site request (Sec-Fetch-Site: cross-site)"
	}
	return ""
}

// sameOrigin reports whether r's Origin is the UI's own (the scheme and
// the Host r was sent to).
func (u *UI) sameOrigin(r *http.Request) bool {
	o := r.Header.Get("Origin")
	return o != "" && strings.EqualFold(o, "http://"+r.Host)
}

// csrfOK reports whether r carries the CSRF token.
func (u *UI) csrfOK(r *http.Request) bool {
	t := r.Header.Get("X-Bb-Csrf")
	if t == "" {
		r.Body = http.MaxBytesReader(nil, r.Body, 1<<20)
		t = r.PostFormValue("csrf")
	}
	return subtle.ConstantTimeCompare([]byte(t), []byte(u.csrf)) == 1
}

// signedIn reports whether r carries the UI's cookie.
func (u *UI) signedIn(r *http.Request) bool {
	c, err := r.Cookie(u.cookie.Name)
	return err == nil && subtle.ConstantTimeCompare([]byte(c.Value), []byte(u.cookie.Value)) == 1
}

// signIn swaps the URL's token for the cookie and redirects to the URL
// without it, so the token leaves the address bar and the history.
func (u *UI) signIn(w http.ResponseWriter, r *http.Request, tok []string) {
	if r.Method != http.MethodGet || len(tok) != 1 || subtle.ConstantTimeCompare([]byte(tok[0]), []byte(u.token)) != 1 {
		u.refuse(w, http.StatusUnauthorized, "bbengine ui: a wrong token: open the URL `bbengine ui` prints now")
		return
	}
	c := u.cookie
	c.Path = Prefix
	c.HttpOnly = true
	c.SameSite = http.SameSiteStrictMode
	http.SetCookie(w, &c)
	q := r.URL.Query()
	q.Del("token")
	to := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	http.Redirect(w, r, to.String(), http.StatusSeeOther)
}

// refuse answers status with a short page saying why.
func (u *UI) refuse(w http.ResponseWriter, status int, reason string) {
	u.render(w, status, "error", errorPage{Status: status, Title: http.StatusText(status), Reason: reason})
}

// errorPage is the error template's data.
type errorPage struct {
	Status int
	Title  string
	Reason string
	Nav    string
	Live   bool
	Frag   string
}

// route answers a signed-in GET.
func (u *UI) route(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == Prefix || p == strings.TrimSuffix(Prefix, "/"):
		u.serveSessions(w, r)
	case p == Prefix+"live":
		u.serveLive(w, r)
	case strings.HasPrefix(p, Prefix+"s/"):
		u.serveTimeline(w, r, strings.TrimPrefix(p, Prefix+"s/"))
	case strings.HasPrefix(p, Prefix+"x/"):
		u.serveFrames(w, r, strings.TrimPrefix(p, Prefix+"x/"))
	case strings.HasPrefix(p, Prefix+"static/"):
		u.serveStatic(w, r, strings.TrimPrefix(p, Prefix+"static/"))
	default:
		u.refuse(w, http.StatusNotFound, "bbengine ui: no page "+p)
	}
}

// serveStatic answers the stylesheet and the script.
func (u *UI) serveStatic(w http.ResponseWriter, r *http.Request, name string) {
	b, err := fs.ReadFile(u.static, name)
	if err != nil || strings.Contains(name, "/") {
		u.refuse(w, http.StatusNotFound, "bbengine ui: no file "+name)
		return
	}
	switch {
	case strings.HasSuffix(name, ".css"):
		w.Header().Set("Content-Type", "text/css; charset=utf-8")
	case strings.HasSuffix(name, ".js"):
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
	}
	w.Header().Set("Cache-Control", "private, max-age=300")
	w.Write(b)
}

// render executes the page name with data into a buffer, then answers:
// a template error is a 500, never half a page.
func (u *UI) render(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	root := "layout.html"
	if name == "rows" {
		root = "rows"
	}
	if err := u.pages[name].ExecuteTemplate(&buf, root, data); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString("bbengine ui: " + template.HTMLEscapeString(err.Error()))
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// CSRF returns the token a state-changing request must carry.
func (u *UI) CSRF() string { return u.csrf }

// sessionsVersion fingerprints the sessions: the default Version.
func (u *UI) sessionsVersion() (uint64, error) {
	ss, err := u.svc.Sessions(api.SessionsRequest{})
	if err != nil {
		return 0, err
	}
	h := fnv.New64a()
	for i := range ss {
		fmt.Fprintf(h, "%s %d %d %d\n", ss[i].ID, ss[i].Last, ss[i].Events, ss[i].Requests)
	}
	return h.Sum64(), nil
}

// shortID returns the first 12 characters of a long id.
func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
