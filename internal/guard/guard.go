package guard

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// Policy is the set of origins whose browser requests are accepted.
type Policy struct {
	allow map[string]bool
}

// New returns the policy allowing origins, each "scheme://host[:port]"
// (as a browser writes an Origin header, e.g. http://localhost:5173)
// or "null". It rejects anything else, naming it.
func New(origins []string) (*Policy, error) {
	p := &Policy{allow: map[string]bool{}}
	for _, o := range origins {
		n, err := normalize(o)
		if err != nil {
			return nil, fmt.Errorf("--allow-origin %q: %w", o, err)
		}
		p.allow[n] = true
	}
	return p, nil
}

// normalize returns an origin as compared: scheme and host in lower
// case, no trailing slash.
func normalize(o string) (string, error) {
	if o == "null" {
		return o, nil
	}
	u, err := url.Parse(strings.TrimSuffix(strings.TrimSpace(o), "/"))
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("want an origin: scheme://host[:port] with no path, such as http://localhost:5173")
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host), nil
}

// Refusal is why a request was refused, and the HTTP status to answer.
type Refusal struct {
	Status int
	Reason string
}

func (r *Refusal) Error() string { return r.Reason }

// LoopbackHost reports whether host (a Host header, with or without a
// port) names this machine: localhost or a loopback address. An empty
// Host (HTTP/1.0, never a browser) counts as loopback.
func LoopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" || host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckHost returns a *Refusal (421) unless r's Host names loopback.
func CheckHost(r *http.Request) error {
	if LoopbackHost(r.Host) {
		return nil
	}
	return &Refusal{Status: http.StatusMisdirectedRequest, Reason: fmt.Sprintf(
		"bbengine: refused a request for host %q: this endpoint answers only localhost, 127.0.0.1 or [::1] "+
			"(a web page rebinding its name to this machine looks like this); use http://127.0.0.1:PORT", r.Host)}
}

// CheckOrigin returns a *Refusal (403) when r comes from a web page
// whose origin is not allowed: it carries an Origin header not on the
// list, or Sec-Fetch-Site: cross-site without an allowed Origin.
func (p *Policy) CheckOrigin(r *http.Request) error {
	origin := r.Header.Get("Origin")
	if origin != "" {
		if n, err := normalize(origin); err == nil && p != nil && p.allow[n] {
			return nil
		}
		return &Refusal{Status: http.StatusForbidden, Reason: fmt.Sprintf(
			"bbengine: refused a browser request from origin %s: requests from web pages are refused "+
				"unless the proxy is started with --allow-origin %s", origin, origin)}
	}
	if strings.EqualFold(strings.TrimSpace(r.Header.Get("Sec-Fetch-Site")), "cross-site") {
		return &Refusal{Status: http.StatusForbidden, Reason: "bbengine: refused a cross-site browser request " +
			"(Sec-Fetch-Site: cross-site, no Origin): requests from web pages are refused unless --allow-origin names their origin"}
	}
	return nil
}

// Check is CheckHost then CheckOrigin: what a control surface asks.
func (p *Policy) Check(r *http.Request) error {
	if err := CheckHost(r); err != nil {
		return err
	}
	return p.CheckOrigin(r)
}

// Handler returns h behind Check: a refused request gets its status and
// {"error": reason} and never reaches h.
func (p *Policy) Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := p.Check(r); err != nil {
			WriteRefusal(w, err.(*Refusal))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// WriteRefusal answers ref as {"error": reason}.
func WriteRefusal(w http.ResponseWriter, ref *Refusal) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(ref.Status)
	json.NewEncoder(w).Encode(map[string]string{"error": ref.Reason})
}
