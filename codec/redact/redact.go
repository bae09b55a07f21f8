package redact

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
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
	// Group, when not 0, is the submatch that is the secret: only it is
	// replaced, the context around it is kept.
	Group int
}

// builtinRules find well-known key formats. Every match is a run of token
// bytes (see isTokenByte); the private key block is handled apart.
var builtinRules = []Rule{
	{Kind: "anthropic_key", Re: regexp.MustCompile(`sk-ant-[A-Za-z0-9_\-]{16,}`), Lits: []string{"sk-ant-"}, Boundary: true},
	{Kind: "openai_key", Re: regexp.MustCompile(`sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}`), Lits: []string{"sk-"}, Boundary: true},
	{Kind: "github_token", Re: regexp.MustCompile(`(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}`), Lits: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}, Boundary: true},
	{Kind: "gitlab_token", Re: regexp.MustCompile(`glpat-[A-Za-z0-9_\-]{20,}`), Lits: []string{"glpat-"}, Boundary: true},
	// An AWS secret key is 40 base64 bytes; it is only told apart from
	// other such runs by what precedes it: its variable name (an
	// assignment, see assign.go), or the access key id it is paired with
	// (credentials files, CSV exports, id:secret strings). This rule runs
	// before aws_access_key, which would hide the id.
	// The id may already be a marker: the proxy redacted it in one
	// stream event, the secret came in the next, and the canonical text
	// joins them.
	{Kind: "aws_secret_key", Re: regexp.MustCompile(`(?:(?:AKIA|ASIA)[0-9A-Z]{16}|\[redacted:aws_access_key\])[^A-Za-z0-9/+=]{1,8}(?:[A-Za-z0-9_ ]{0,40}[^A-Za-z0-9/+=]{1,8}){0,2}([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|$)`), Lits: []string{"AKIA", "ASIA", "[redacted:aws_access_key]"}, Group: 1},
	{Kind: "aws_access_key", Re: regexp.MustCompile(`(?:AKIA|ASIA)[0-9A-Z]{16}`), Lits: []string{"AKIA", "ASIA"}, Boundary: true},
	{Kind: "google_api_key", Re: regexp.MustCompile(`AIza[0-9A-Za-z_\-]{35}`), Lits: []string{"AIza"}, Boundary: true},
	{Kind: "google_oauth", Re: regexp.MustCompile(`ya29\.[0-9A-Za-z_\-]{20,}|GOCSPX-[0-9A-Za-z_\-]{24,}`), Lits: []string{"ya29.", "GOCSPX-"}, Boundary: true},
	{Kind: "slack_token", Re: regexp.MustCompile(`xox[abposre]-[A-Za-z0-9\-]{10,}|xapp-[0-9]-[A-Za-z0-9\-]{10,}`), Lits: []string{"xox", "xapp-"}, Boundary: true},
	{Kind: "slack_webhook", Re: regexp.MustCompile(`hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_\-]{20,}`), Lits: []string{"hooks.slack.com/"}},
	{Kind: "stripe_key", Re: regexp.MustCompile(`(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,}`), Lits: []string{"sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"}, Boundary: true},
	{Kind: "npm_token", Re: regexp.MustCompile(`npm_[A-Za-z0-9]{36}`), Lits: []string{"npm_"}, Boundary: true},
	{Kind: "huggingface_token", Re: regexp.MustCompile(`hf_[A-Za-z]{34}`), Lits: []string{"hf_"}, Boundary: true},
	{Kind: "jwt", Re: regexp.MustCompile(`eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]*`), Lits: []string{"eyJ"}, Boundary: true},
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
	// lits indexes the rules' literals and the private key marker;
	// ruleLits[i] are the indices of rule i's, pemLit the marker's.
	lits     *litTable
	ruleLits [][]int
	pemLit   int
	// maybeLits indexes every literal Maybe looks for; maybeAll is set
	// when a rule has none (Maybe is then always true).
	maybeLits *litTable
	maybeAll  bool
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
	r.lits = &litTable{}
	r.pemLit = r.lits.add("PRIVATE KEY-----")
	for _, rule := range r.rules {
		var idx []int
		for _, l := range rule.Lits {
			idx = append(idx, r.lits.add(l))
		}
		r.ruleLits = append(r.ruleLits, idx)
	}
	r.maybeLits = &litTable{}
	r.maybeLits.add("PRIVATE KEY-----")
	r.maybeLits.add("://")
	for _, w := range wordCases {
		r.maybeLits.add(string(w))
	}
	for _, rule := range r.rules {
		r.maybeAll = r.maybeAll || len(rule.Lits) == 0
		for _, l := range rule.Lits {
			r.maybeLits.add(l)
		}
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
	var t litSet
	r.lits.scan(&t, b)
	if r.lits.contains(&t, out, r.pemLit) {
		out = pemBlock.ReplaceAll(out, []byte("[redacted:private_key]"))
		r.lits.scan(&t, out)
	}
	for i := range r.rules {
		if !r.maybe(&t, out, i) {
			continue
		}
		if o := r.rules[i].apply(out); len(o) != len(out) {
			out = o
			r.lits.scan(&t, out)
		}
	}
	return assignments(urlPasswords(out))
}

// maybe reports whether rule i may match b: it has no literals, or b
// contains one of them. t is b's literal set.
func (r *Redactor) maybe(t *litSet, b []byte, i int) bool {
	if len(r.ruleLits[i]) == 0 {
		return true
	}
	for _, k := range r.ruleLits[i] {
		if r.lits.contains(t, b, k) {
			return true
		}
	}
	return false
}

// litTable finds which of a redactor's literals a text contains in one
// pass over it: at each byte pair some literal starts with, the literals
// starting with that pair are compared there. Text from coding sessions
// has such a pair every few dozen bytes ("sk", "gh", "ey"), but one pass
// with a comparison at each costs a fraction of one bytes.Contains per
// literal (some thirty) over the whole text.
type litTable struct {
	lits []string
	// start has bit a<<8|b set when some literal starts with a, b;
	// first holds 1 + the index of the first such literal, next the
	// next literal with the same first pair (1 + index, 0 ends).
	start [1 << 16 / 64]uint64
	first [1 << 16]uint8
	next  []uint8
}

// maxTableLits is how many literals a litTable indexes; any more (custom
// rules) are searched with bytes.Contains.
const maxTableLits = 255

// litSet is what litTable.scan found in a text: bit k for literal k.
type litSet struct{ found [4]uint64 }

// add adds lit to the table (once) and returns its index.
func (lt *litTable) add(lit string) int {
	if i := slices.Index(lt.lits, lit); i >= 0 {
		return i
	}
	lt.lits = append(lt.lits, lit)
	k := len(lt.lits) - 1
	lt.next = append(lt.next, 0)
	if len(lit) < 2 || k >= maxTableLits {
		return k
	}
	h := uint16(lit[0])<<8 | uint16(lit[1])
	lt.start[h>>6] |= 1 << (h & 63)
	lt.next[k] = lt.first[h]
	lt.first[h] = uint8(k + 1)
	return k
}

// scan makes t the set of lt's literals that b contains.
func (lt *litTable) scan(t *litSet, b []byte) {
	t.found = [4]uint64{}
	for i := 1; i < len(b); i++ {
		h := uint16(b[i-1])<<8 | uint16(b[i])
		if lt.start[h>>6]&(1<<(h&63)) == 0 {
			continue
		}
		for j := lt.first[h]; j != 0; j = lt.next[j-1] {
			k := int(j - 1)
			if t.found[k>>6]&(1<<(k&63)) == 0 && hasPrefix(b[i-1:], lt.lits[k]) {
				t.found[k>>6] |= 1 << (k & 63)
			}
		}
	}
}

// any reports whether s contains one of lt's literals.
func (lt *litTable) any(s string) bool {
	for i := 1; i < len(s); i++ {
		h := uint16(s[i-1])<<8 | uint16(s[i])
		if lt.start[h>>6]&(1<<(h&63)) == 0 {
			continue
		}
		for j := lt.first[h]; j != 0; j = lt.next[j-1] {
			if strings.HasPrefix(s[i-1:], lt.lits[j-1]) {
				return true
			}
		}
	}
	for k, lit := range lt.lits {
		if (len(lit) < 2 || k >= maxTableLits) && strings.Contains(s, lit) {
			return true
		}
	}
	return false
}

// contains reports whether b, the text t was scanned from, contains
// literal k.
func (lt *litTable) contains(t *litSet, b []byte, k int) bool {
	if lit := lt.lits[k]; len(lit) < 2 || k >= maxTableLits {
		return bytes.Contains(b, []byte(lit))
	}
	return t.found[k>>6]&(1<<(k&63)) != 0
}

func hasPrefix(b []byte, s string) bool { return len(b) >= len(s) && string(b[:len(s)]) == s }

// apply replaces the rule's matches in b, returning b when there are
// none.
func (rule *Rule) apply(b []byte) []byte {
	var locs [][]int
	if rule.Group > 0 {
		locs = rule.Re.FindAllSubmatchIndex(b, -1)
	} else {
		locs = rule.Re.FindAllIndex(b, -1)
	}
	if locs == nil {
		return b
	}
	var out []byte
	prev := 0
	for _, l := range locs {
		if rule.Boundary && l[0] > 0 && isWordByte(b[l[0]-1]) {
			continue
		}
		from, to := l[0], l[1]
		if g := rule.Group; g > 0 {
			if l[2*g] < 0 {
				continue
			}
			from, to = l[2*g], l[2*g+1]
		}
		out = append(out, b[prev:from]...)
		out = appendMarker(out, rule.Kind)
		prev = to
	}
	if out == nil {
		return b
	}
	return append(out, b[prev:]...)
}

func appendMarker(dst []byte, kind string) []byte {
	dst = append(dst, "[redacted:"...)
	dst = append(dst, kind...)
	return append(dst, ']')
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
// rule without literals, a private key marker, a URL ("://") or a
// secret word in one of the cases assignments searches for. It looks for
// them all in one pass over s.
func (r *Redactor) Maybe(s string) bool {
	return r.maybeAll || r.maybeLits.any(s)
}

// IsTokenByte reports whether c can be part of a key matched by a
// built-in format rule.
func IsTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '-' || c == '+' || c == '/' || c == '=' || c == '.'
}

// Cut returns how much of b, the bytes a stream has seen so far, can be
// redacted now without splitting a secret that may continue in the bytes
// to come: b[Cut(b, max):] should wait for them. It holds back the
// trailing run of non-space bytes, the last line when it may hold an
// assignment (name, separator and value never span lines), and an AWS
// key id that its secret may follow, but never more than max bytes.
// Private key blocks are apart (see PEMHold).
func Cut(b []byte, max int) int {
	lo := len(b) - max
	if lo < 0 {
		lo = 0
	}
	cut := len(b)
	for cut > lo && !isSpace(b[cut-1]) {
		cut--
	}
	cut = lineCut(b, cut, lo)
	w := min(max0(lo, cut-256), cut)
	moved := false
	for _, id := range []string{"AKIA", "ASIA"} {
		if i := bytes.Index(b[w:cut], []byte(id)); i >= 0 {
			cut, moved = w+i, true
		}
	}
	// Rules look at the byte before a match: cut after a space.
	for cut > lo && !isSpace(b[cut-1]) {
		cut--
	}
	if moved {
		// A key id moved the cut back into a line that may name a secret
		// ("DB_PASSWORD = AKIA…"): that line stays whole too.
		cut = lineCut(b, cut, lo)
	}
	return cut
}

// lineCut moves cut back to the start of the line it ends, when that
// line holds a secret word (a rule may match from there to past cut),
// but not before lo unless the line is longer than the hold: then it
// cuts where a secret cannot continue across (after white space or a
// line break), even if that holds up to a KiB more.
func lineCut(b []byte, cut, lo int) int {
	ls := lineStart(b[:cut])
	if ls >= cut || !hasSecretWord(b[ls:cut]) {
		return cut
	}
	cut = max0(ls, lo)
	if cut == lo && ls < lo {
		for i := lo; i > 0 && i > lo-1<<10; i-- {
			if isSpace(b[i-1]) || b[i-1] == 'n' && i >= 2 && b[i-2] == '\\' {
				return i
			}
		}
	}
	return cut
}

// lineStart is where the last line of b starts: after its last newline,
// or after its last \n escape, the line break of text inside a JSON
// string (a request body's lines are all on one line of JSON).
func lineStart(b []byte) int {
	ls := bytes.LastIndexByte(b, '\n') + 1
	if i := bytes.LastIndex(b, []byte(`\n`)); i >= 0 && i+2 > ls {
		ls = i + 2
	}
	return ls
}

func max0(a, b int) int {
	if a > b {
		return a
	}
	return b
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// hasSecretWord reports whether b holds a secret word in any case, as the
// rules match them (nameWord folds case): a line that holds one is held
// back whole, so that a value after it is never split.
func hasSecretWord(b []byte) bool {
	for _, w := range secretWords {
		if containsFold(b, w) {
			return true
		}
	}
	return false
}

// containsFold reports whether b contains w, a lower-case ASCII word,
// without regard to case. It finds the candidates by w's first letter in
// either case at memory speed (bytes.IndexByte).
func containsFold(b []byte, w string) bool {
	lo, up := w[0], w[0]-'a'+'A'
	nl, nu := -1, -1 // the next position of each, -1 when unknown
	for i := 0; i+len(w) <= len(b); {
		if nl < i {
			if nl = bytes.IndexByte(b[i:], lo); nl >= 0 {
				nl += i
			} else {
				nl = len(b)
			}
		}
		if nu < i {
			if nu = bytes.IndexByte(b[i:], up); nu >= 0 {
				nu += i
			} else {
				nu = len(b)
			}
		}
		j := min(nl, nu)
		if j+len(w) > len(b) {
			return false
		}
		if bytes.EqualFold(b[j:j+len(w)], []byte(w)) {
			return true
		}
		i = j + 1
	}
	return false
}

// urlPasswords replaces the password of each URL in b that has one,
// scheme://user:password@host, returning b when there is none.
func urlPasswords(b []byte) []byte {
	var out []byte
	prev := 0
	for off := 0; ; {
		i := bytes.Index(b[off:], []byte("://"))
		if i < 0 {
			break
		}
		i += off + 3
		off = i
		colon := -1
		for k := i; k < len(b) && k-i <= 384; k++ {
			c := b[k]
			if c == ':' && colon < 0 {
				colon = k
				continue
			}
			if c == '@' {
				if colon > i && k > colon+1 {
					out = append(out, b[prev:colon+1]...)
					out = appendMarker(out, "url_password")
					prev = k
					off = k
				}
				break
			}
			if c <= ' ' || c == '/' || c == '"' || c == '\'' || c == '<' || c == '>' || c == '\\' || c == '?' || c == '#' {
				break
			}
		}
	}
	if out == nil {
		return b
	}
	return append(out, b[prev:]...)
}
