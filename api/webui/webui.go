package webui

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"strconv"
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
	// Snapshot serves the pages without live updates: nothing else can
	// write the directory the service holds (`bbengine ui` without a
	// proxy).
	Snapshot bool
	// Health returns the figures of the health page; it is called once
	// per request of the page, from the request's goroutine. The default
	// is none: the page says it was given no figures.
	Health func() Health
}

// UI serves the web UI. It implements http.Handler for the paths under
// Prefix.
type UI struct {
	svc      api.Service
	log      *wal.Log
	token    string
	cookie   string // the cookie's name; its values are sessions'
	csrf     string
	snapshot bool
	health   func() Health

	// mu guards signins (a digest of each signed-in browser's cookie
	// value, to when it expires) and used (the tickets that signed in,
	// to when they expire).
	mu      sync.Mutex
	signins map[string]time.Time
	used    map[string]time.Time
	version func() (uint64, error)
	every   time.Duration
	pages   map[string]*template.Template
	static  fs.FS

	usageCache usageCache

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
	u := &UI{svc: opts.Service, log: opts.WAL, token: opts.Token, version: opts.Version, every: opts.LiveEvery, done: make(chan struct{}),
		snapshot: opts.Snapshot, health: opts.Health, signins: map[string]time.Time{}, used: map[string]time.Time{}}
	if u.every <= 0 {
		u.every = time.Second
	}
	if u.version == nil {
		u.version = u.sessionsVersion
	}
	// The cookie's name is per token, so that two UIs on the same host
	// (a proxy's and a short-lived one, on different ports: cookies do
	// not tell ports apart) do not overwrite each other's.
	u.cookie = "bbui_" + derive(opts.Token, "name")[:12]
	u.csrf = derive(opts.Token, "csrf")
	var err error
	if u.pages, err = parsePages(); err != nil {
		return nil, err
	}
	u.static, _ = fs.Sub(staticFS, "static")
	return u, nil
}

// Signing in. The token (Options.Token) never travels: `bbengine ui`,
// which can read it, puts a ticket in the URL, "<unix seconds>.<nonce>.
// <HMAC of both under the token>". A ticket signs in once, within
// ticketLife of its making; it is then worth nothing in the browser's
// history, the terminal's scrollback or a process list. Signing in
// gives the browser a random cookie value, a session the UI keeps in
// memory for sessionLife (a restart signs every browser out).
const (
	ticketLife  = 2 * time.Minute
	sessionLife = 12 * time.Hour
	// maxSessions bounds the sessions kept; past it the oldest go.
	maxSessions = 256
)

// Ticket returns a ticket that signs a browser in to the UI whose token
// is token, made at now.
func Ticket(token string, now time.Time) string {
	var b [12]byte
	rand.Read(b[:])
	body := strconv.FormatInt(now.Unix(), 10) + "." + hex.EncodeToString(b[:])
	return body + "." + derive(token, "ticket "+body)
}

// checkTicket reports why ticket does not sign in at now, or "".
func (u *UI) checkTicket(ticket string, now time.Time) string {
	body, mac, ok := strings.Cut(strings.TrimSpace(ticket), ".")
	if ok {
		var nonce string
		nonce, mac, ok = strings.Cut(mac, ".")
		body += "." + nonce
	}
	if !ok || subtle.ConstantTimeCompare([]byte(mac), []byte(derive(u.token, "ticket "+body))) != 1 {
		return "a wrong ticket"
	}
	secs, _, _ := strings.Cut(body, ".")
	t, err := strconv.ParseInt(secs, 10, 64)
	made := time.Unix(t, 0)
	if err != nil || now.Sub(made) > ticketLife || made.Sub(now) > time.Minute {
		return "an expired ticket (a ticket signs in within " + ticketLife.String() + " of `bbengine ui`)"
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for k, exp := range u.used {
		if now.After(exp) {
			delete(u.used, k)
		}
	}
	if _, seen := u.used[body]; seen {
		return "a ticket that already signed in (each signs in once)"
	}
	u.used[body] = made.Add(ticketLife + time.Minute)
	return ""
}

// newSession returns a new cookie value, kept in signins until
// now+sessionLife.
func (u *UI) newSession(now time.Time) string {
	var b [24]byte
	rand.Read(b[:])
	v := hex.EncodeToString(b[:])
	u.mu.Lock()
	defer u.mu.Unlock()
	for k, exp := range u.signins {
		if now.After(exp) {
			delete(u.signins, k)
		}
	}
	for len(u.signins) >= maxSessions {
		oldest, when := "", time.Time{}
		for k, exp := range u.signins {
			if oldest == "" || exp.Before(when) {
				oldest, when = k, exp
			}
		}
		delete(u.signins, oldest)
	}
	u.signins[digest(v)] = now.Add(sessionLife)
	return v
}

// digest names a cookie value in signins: a lookup by the digest does
// not time the secret's bytes.
func digest(v string) string {
	s := sha256.Sum256([]byte(v))
	return string(s[:])
}

// derive returns the hex HMAC-SHA256 of purpose under token: the CSRF
// token and the tickets are derived, so none reveals the token.
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
	// pre escapes a text for a <pre> that the template opens with a
	// newline (an HTML parser drops a newline right after <pre>), with
	// CR as a character reference (a parser turns CR and CRLF into LF):
	// the browser shows the text's exact characters.
	"pre": func(s string) template.HTML {
		return template.HTML(strings.ReplaceAll(template.HTMLEscapeString(s), "\r", "&#13;"))
	},
}

// parsePages parses each page template with the layout.
func parsePages() (map[string]*template.Template, error) {
	base, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("webui: %w", err)
	}
	pages := map[string]*template.Template{}
	for _, name := range []string{"sessions", "timeline", "frames", "memory", "artifact", "search", "pack", "health", "usage", "error"} {
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
const csp = "default-src 'self'; img-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'"

// setHeaders sets the headers of every answer.
func setHeaders(h http.Header) {
	h.Set("Content-Security-Policy", csp)
	h.Set("X-Content-Type-Options", "nosniff")
	// same-origin, not no-referrer: under no-referrer a browser sends
	// "Origin: null" with a form's POST, which the Origin check refuses.
	// No referrer leaves the UI either way.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
}

// precheck returns the status and the reason to refuse r with before
// anything else, or 0: a peer not on loopback (the proxy may listen
// beyond it, --listen 0.0.0.0, and the UI is this machine's alone,
// whatever Host the peer writes), a Host that is not loopback (DNS
// rebinding), another site or port.
func precheck(r *http.Request) (int, string) {
	if !loopbackPeer(r) {
		return http.StatusForbidden, "bbengine ui: the web UI answers this machine only (loopback)"
	}
	if err := guard.CheckHost(r); err != nil {
		ref := err.(*guard.Refusal)
		return ref.Status, ref.Reason
	}
	if reason := crossSite(r); reason != "" {
		return http.StatusForbidden, reason
	}
	return 0, ""
}

// Unavailable answers a request for the UI while it is not up, with the
// checks and headers of UI.ServeHTTP first: 503, and why.
func Unavailable(w http.ResponseWriter, r *http.Request, why string) {
	setHeaders(w.Header())
	status, reason := precheck(r)
	if status == 0 {
		status, reason = http.StatusServiceUnavailable, "bbengine ui: the web UI is not up: "+why
		w.Header().Set("Retry-After", "2")
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintln(w, reason)
}

// ServeHTTP checks the request (see the package comment) and answers it.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	setHeaders(h)
	if status, reason := precheck(r); status != 0 {
		u.refuse(w, status, reason)
		return
	}
	if r.URL.Path == strings.TrimSuffix(Prefix, "/") {
		// The cookie's path is Prefix: a browser would not send it here.
		to := url.URL{Path: Prefix, RawQuery: r.URL.RawQuery}
		http.Redirect(w, r, to.String(), http.StatusSeeOther)
		return
	}
	if tok, ok := r.URL.Query()["token"]; ok {
		u.signIn(w, r, tok)
		return
	}
	if !u.signedIn(r) {
		u.refuse(w, http.StatusUnauthorized, "bbengine ui: not signed in: open the URL `bbengine ui` prints (it carries a ticket that signs this browser in once, within "+ticketLife.String()+")")
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		if !sameOrigin(r) || !u.csrfOK(r) {
			u.refuse(w, http.StatusForbidden, "bbengine ui: refused a "+r.Method+" without this UI's Origin and CSRF token")
			return
		}
		if r.Method == http.MethodPost && r.URL.Path == correctPath {
			u.serveCorrect(w, r)
			return
		}
		h.Set("Allow", "GET, HEAD")
		u.refuse(w, http.StatusMethodNotAllowed, "bbengine ui: "+r.URL.Path+" only reads: use GET")
		return
	}
	u.route(w, r)
}

// crossSite returns why r comes from another site, or "".
func crossSite(r *http.Request) string {
	if o := r.Header.Get("Origin"); o != "" && !sameOrigin(r) {
		return "bbengine ui: refused a request from origin " + o + ": the UI answers only its own pages"
	}
	// Every port of 127.0.0.1 is the same site: only the UI's own pages
	// (same-origin) and the user (none) may reach it, not a page of
	// another loopback port embedding it.
	switch s := strings.ToLower(strings.TrimSpace(r.Header.Get("Sec-Fetch-Site"))); s {
	case "", "same-origin", "none":
	default:
		return "bbengine ui: refused a request from another site or port (Sec-Fetch-Site: " + s + ")"
	}
	return ""
}

// loopbackPeer reports whether r comes from this machine's loopback.
func loopbackPeer(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sameOrigin reports whether r's Origin is the UI's own (the scheme and
// the Host r was sent to).
func sameOrigin(r *http.Request) bool {
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

// signedIn reports whether r carries the cookie of a live session.
func (u *UI) signedIn(r *http.Request) bool {
	c, err := r.Cookie(u.cookie)
	if err != nil {
		return false
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	exp, ok := u.signins[digest(c.Value)]
	return ok && time.Now().Before(exp)
}

// signIn swaps the URL's ticket for a session cookie and redirects to the
// URL without it.
func (u *UI) signIn(w http.ResponseWriter, r *http.Request, tok []string) {
	if r.Method != http.MethodGet || len(tok) != 1 {
		u.refuse(w, http.StatusUnauthorized, "bbengine ui: a sign-in is one GET with one ticket: open the URL `bbengine ui` prints now")
		return
	}
	now := time.Now()
	if why := u.checkTicket(tok[0], now); why != "" {
		u.refuse(w, http.StatusUnauthorized, "bbengine ui: "+why+": run `bbengine ui` again and open the URL it prints")
		return
	}
	c := http.Cookie{Name: u.cookie, Value: u.newSession(now), Path: Prefix, MaxAge: int(sessionLife / time.Second),
		HttpOnly: true, SameSite: http.SameSiteStrictMode}
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
	case p == Prefix:
		u.serveSessions(w, r)
	case p == Prefix+"live" && !u.snapshot:
		u.serveLive(w, r)
	case strings.HasPrefix(p, Prefix+"s/"):
		u.serveTimeline(w, r, strings.TrimPrefix(p, Prefix+"s/"))
	case strings.HasPrefix(p, Prefix+"x/"):
		u.serveFrames(w, r, strings.TrimPrefix(p, Prefix+"x/"))
	case p == Prefix+"m/":
		u.serveMemory(w, r)
	case strings.HasPrefix(p, Prefix+"a/"):
		u.serveArtifact(w, r, strings.TrimPrefix(p, Prefix+"a/"))
	case p == Prefix+"search":
		u.serveSearch(w, r)
	case p == Prefix+"pack":
		u.servePack(w, r)
	case p == correctPath:
		w.Header().Set("Allow", "POST")
		u.refuse(w, http.StatusMethodNotAllowed, "bbengine ui: a correction is a POST of the memory pages' forms")
	case p == Prefix+"text":
		u.serveText(w, r)
	case p == Prefix+"health":
		u.serveHealth(w, r)
	case p == Prefix+"usage":
		u.serveUsage(w, r)
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
