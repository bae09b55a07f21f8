package proxy

import (
	"bytes"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/bbengine/bbengine/codec/exchange"
)

// sensitiveHeaders are replaced by [redacted:<kind>] in what is recorded;
// they are always forwarded unchanged.
var sensitiveHeaders = map[string]string{
	"Authorization":             "authorization",
	"Proxy-Authorization":       "authorization",
	"X-Api-Key":                 "api_key",
	"Api-Key":                   "api_key",
	"Anthropic-Api-Key":         "api_key",
	"Openai-Api-Key":            "api_key",
	"X-Goog-Api-Key":            "api_key",
	"Cf-Aig-Authorization":      "authorization",
	"X-Auth-Token":              "token",
	"X-Amz-Security-Token":      "token",
	"Cookie":                    "cookie",
	"Set-Cookie":                "cookie",
	"Chatgpt-Account-Id":        "account_id",
	"Www-Authenticate":          "authorization",
	"Proxy-Authenticate":        "authorization",
	"Anthropic-Organization-Id": "organization",
	"Openai-Organization":       "organization",
}

// sensitiveQuery are query parameters redacted in the recorded query.
var sensitiveQuery = map[string]bool{"key": true, "api_key": true, "apikey": true, "access_token": true, "token": true}

// A Rule finds one kind of secret in body bytes.
type Rule struct {
	Kind string // written as [redacted:Kind]
	Re   *regexp.Regexp
	// Lits are literals every match contains; a text holding none of
	// them is not searched (most chunks hold none, and a regexp search
	// costs microseconds per chunk). Empty means always search.
	Lits []string
	// Boundary requires the byte before a match not to be a word byte,
	// so "disk-usage-report" is not an sk- key. (A leading \b in the
	// regexp would cost the regexp its fast literal-prefix scan.)
	Boundary bool
}

// builtinRules find well-known key formats. Every match is a run of token
// bytes (see isTokenByte); the private key block is handled apart.
var builtinRules = []Rule{
	{"anthropic_key", regexp.MustCompile(`sk-ant-[A-Za-z0-9_\-]{16,}`), []string{"sk-ant-"}, true},
	{"openai_key", regexp.MustCompile(`sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}`), []string{"sk-"}, true},
	{"github_token", regexp.MustCompile(`(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}`), []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, true},
	{"aws_access_key", regexp.MustCompile(`(?:AKIA|ASIA)[0-9A-Z]{16}`), []string{"AKIA", "ASIA"}, true},
	{"google_api_key", regexp.MustCompile(`AIza[0-9A-Za-z_\-]{35}`), []string{"AIza"}, true},
	{"slack_token", regexp.MustCompile(`xox[abprs]-[A-Za-z0-9\-]{10,}`), []string{"xox"}, true},
	{"stripe_key", regexp.MustCompile(`(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}`), []string{"_live_", "_test_"}, true},
}

var pemBlock = regexp.MustCompile(`-----BEGIN[A-Z ]*PRIVATE KEY-----[\s\S]*?-----END[A-Z ]*PRIVATE KEY-----`)

// Redactor replaces secrets in recorded bytes. It is safe for concurrent
// use.
type Redactor struct {
	rules []Rule
}

// NewRedactor returns a redactor with the built-in rules plus extra
// patterns, each "kind=regexp" or a bare regexp (kind "custom").
func NewRedactor(extra []string) (*Redactor, error) {
	r := &Redactor{rules: append([]Rule(nil), builtinRules...)}
	for _, p := range extra {
		kind, expr, ok := strings.Cut(p, "=")
		if !ok || !isKind(kind) {
			kind, expr = "custom", p
		}
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("redaction pattern %q: %v", p, err)
		}
		rule := Rule{Kind: kind, Re: re}
		if prefix, _ := re.LiteralPrefix(); prefix != "" {
			rule.Lits = []string{prefix}
		}
		r.rules = append(r.rules, rule)
	}
	return r, nil
}

func isKind(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// Bytes returns b with every secret replaced. It returns b itself when
// nothing matched.
func (r *Redactor) Bytes(b []byte) []byte {
	out := b
	if bytes.Contains(out, []byte("PRIVATE KEY-----")) {
		out = pemBlock.ReplaceAll(out, []byte("[redacted:private_key]"))
	}
	for i := range r.rules {
		out = r.rules[i].apply(out)
	}
	return out
}

// apply replaces the rule's matches in b, returning b when there are none.
func (rule *Rule) apply(b []byte) []byte {
	if len(rule.Lits) > 0 {
		found := false
		for _, l := range rule.Lits {
			if bytes.Contains(b, []byte(l)) {
				found = true
				break
			}
		}
		if !found {
			return b
		}
	}
	locs := rule.Re.FindAllIndex(b, -1)
	if locs == nil {
		return b
	}
	var out []byte
	prev := 0
	for _, l := range locs {
		if rule.Boundary && l[0] > 0 && isWordByte(b[l[0]-1]) {
			continue
		}
		out = append(out, b[prev:l[0]]...)
		out = append(out, "[redacted:"...)
		out = append(out, rule.Kind...)
		out = append(out, ']')
		prev = l[1]
	}
	if out == nil {
		return b
	}
	return append(out, b[prev:]...)
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// String is Bytes for a string. A string holding none of the rules'
// literals (most header values) is returned without copying.
func (r *Redactor) String(s string) string {
	if !r.maybe(s) {
		return s
	}
	return string(r.Bytes([]byte(s)))
}

// maybe reports whether s could hold a secret: a literal of some rule, a
// rule without literals, or a private key marker.
func (r *Redactor) maybe(s string) bool {
	if strings.Contains(s, "PRIVATE KEY-----") {
		return true
	}
	for _, rule := range r.rules {
		if len(rule.Lits) == 0 {
			return true
		}
		for _, l := range rule.Lits {
			if strings.Contains(s, l) {
				return true
			}
		}
	}
	return false
}

// Headers returns a copy of h fit for the log: sensitive headers replaced
// by a marker, X-Bb-* headers dropped, body rules applied to the rest.
func (r *Redactor) Headers(h http.Header) exchange.Headers {
	out := make(exchange.Headers, len(h))
	for k, vs := range h {
		if strings.HasPrefix(k, "X-Bb-") {
			continue
		}
		if kind, ok := sensitiveHeaders[k]; ok {
			red := make([]string, len(vs))
			for i := range vs {
				red[i] = "[redacted:" + kind + "]"
			}
			out[k] = red
			continue
		}
		cp := make([]string, len(vs))
		for i, v := range vs {
			cp[i] = r.String(v)
		}
		out[k] = cp
	}
	return out
}

// Query returns the raw query with secret parameters redacted.
func (r *Redactor) Query(raw string) string {
	if raw == "" {
		return ""
	}
	q, err := url.ParseQuery(raw)
	if err != nil {
		return r.String(raw)
	}
	changed := false
	for k, vs := range q {
		if sensitiveQuery[strings.ToLower(k)] {
			for i := range vs {
				vs[i] = "[redacted:api_key]"
			}
			changed = true
		}
	}
	if !changed {
		return r.String(raw)
	}
	return r.String(q.Encode())
}

// isTokenByte reports whether c can be part of a secret matched by a rule:
// secrets are runs of these bytes, so a chunk can be cut safely after any
// other byte.
func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '-' || c == '+' || c == '/' || c == '=' || c == '.'
}

// maxHold bounds how many bytes a stream holds back waiting for the rest
// of a possible secret; maxPEM how long a private key block may be.
const (
	maxHold = 4 << 10
	maxPEM  = 64 << 10
)

// stream redacts a body that arrives in chunks, so that a secret split
// across two chunks is still found: it holds back the trailing run of
// token bytes (and an unfinished private key block) until the next chunk
// or the end. It is not safe for concurrent use.
type stream struct {
	r    *Redactor
	held []byte // bytes waiting for the next chunk
	buf  []byte // held + the new chunk
}

// chunk returns the redacted bytes of p that are ready to record; at the
// end call it with last set to flush what is held. The result may alias p
// or the stream's buffer: copy it before the next call.
func (s *stream) chunk(p []byte, last bool) []byte {
	data := p
	if len(s.held) > 0 {
		s.buf = append(append(s.buf[:0], s.held...), p...)
		data = s.buf
	}
	cut := len(data)
	if !last {
		for cut > 0 && isTokenByte(data[cut-1]) && len(data)-cut < maxHold {
			cut--
		}
		// Never cut inside a private key block: hold it from its BEGIN.
		if i := bytes.LastIndex(data[:cut], []byte("-----BEGIN")); i >= 0 && !pemClosed(data[i:cut]) && len(data)-i < maxPEM {
			cut = i
		}
	}
	out := s.r.Bytes(data[:cut])
	s.held = append(s.held[:0], data[cut:]...)
	return out
}

// pemClosed reports whether b, which starts a PEM block, holds its whole
// END line ("-----END … KEY-----").
func pemClosed(b []byte) bool {
	j := bytes.Index(b, []byte("-----END"))
	return j >= 0 && bytes.Contains(b[j+len("-----END"):], []byte("-----"))
}
