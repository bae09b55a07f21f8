// Package redact finds secrets in text and replaces each with a marker,
// [redacted:<kind>]: well-known key formats (Anthropic, OpenAI, GitHub,
// AWS, Google, Slack, Stripe keys, private key blocks) plus patterns a
// user adds. The proxy applies it to everything it records, and the
// engine to everything it derives into memory and indexes. A Redactor is
// safe for concurrent use.
package redact

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

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

// pemHeader and pemEnd are the two ends of pemBlock.
var (
	pemHeader = regexp.MustCompile(`^-----BEGIN[A-Z ]*PRIVATE KEY-----`)
	pemEnd    = regexp.MustCompile(`-----END[A-Z ]*PRIVATE KEY-----`)
)

// PEMHold returns the offset of the first private key block in b that
// has not ended (or of a "-----BEGIN" at the end of b that may still
// become one), or -1 when there is none. A stream that redacts chunk by
// chunk holds back b from there, so that the block is redacted whole. It
// reads blocks as pemBlock does: each header to the first end after it.
func PEMHold(b []byte) int {
	for i := 0; ; {
		j := bytes.Index(b[i:], []byte("-----BEGIN"))
		if j < 0 {
			return -1
		}
		start := i + j
		rest := b[start:]
		if h := pemHeader.FindIndex(rest); h != nil {
			e := pemEnd.FindIndex(rest[h[1]:])
			if e == nil {
				return start
			}
			i = start + h[1] + e[1]
			continue
		}
		if maybeHeader(rest[len("-----BEGIN"):]) {
			return start
		}
		i = start + len("-----BEGIN")
	}
}

// maybeHeader reports whether tail, what follows "-----BEGIN" up to the
// end of the bytes seen, could still grow into a private key header:
// only upper-case letters, spaces and dashes.
func maybeHeader(tail []byte) bool {
	for _, c := range tail {
		if !(c >= 'A' && c <= 'Z' || c == ' ' || c == '-') {
			return false
		}
	}
	return true
}

// Redactor replaces secrets in recorded bytes. It is safe for concurrent
// use.
type Redactor struct {
	rules []Rule
}

// New returns a redactor with the built-in rules plus extra
// patterns, each "kind=regexp" or a bare regexp (kind "custom").
func New(extra []string) (*Redactor, error) {
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
	if !r.Maybe(s) {
		return s
	}
	return string(r.Bytes([]byte(s)))
}

// Maybe reports whether s could hold a secret: a literal of some rule, a
// rule without literals, or a private key marker.
func (r *Redactor) Maybe(s string) bool {
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

// IsTokenByte reports whether c can be part of a secret matched by a rule:
// secrets are runs of these bytes, so a chunk can be cut safely after any
// other byte.
func IsTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '-' || c == '+' || c == '/' || c == '=' || c == '.'
}
