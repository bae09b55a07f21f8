package redact

import (
	"bytes"
	"math"
	"strings"
)

// An assignment is a value given to a secret-looking name, in any of the
// shapes config and code take:
//
//	DB_PASSWORD=hunter22           env, ini, shell
//	password: "hunter22"           yaml
//	"api_key": "k8Fz...Q2"         JSON (also \"...\" inside a JSON string)
//	client_secret = 'k8Fz...Q2'    toml, Python
//	token := "k8Fz...Q2"           Go
//
// Only the value is replaced. A password name's literal value is a
// secret; a token, key or secret name's value must also look random
// (at least 12 bytes, letters and digits, high entropy), so that
// "token_type": "bearer" or a setting's name survives. A value that is a
// reference, not a literal, is kept: os.Getenv("X"), ${X}, {{ .X }},
// cfg.Password, await getToken().

// secretWords are the last words of secret-looking names, lower case. A
// name must end with one (so "max_tokens" and "token_type" are not
// secret names); "key" only as one of keyNames.
var secretWords = []string{"password", "passwd", "passphrase", "secret", "token", "key", "credential", "credentials"}

// keyNames are the names ending in "key" that hold secrets, lower case
// with '_', '-' and '.' removed.
var keyNames = []string{"apikey", "accesskey", "secretkey", "privatekey", "signingkey", "encryptionkey", "masterkey", "clientkey", "authkey", "secretaccesskey"}

// wordCases holds each secret word in lower, upper and title case: the
// literals searched for (bytes.Index is much faster than folding case).
var wordCases = func() [][]byte {
	var out [][]byte
	for _, w := range secretWords {
		out = append(out, []byte(w), []byte(strings.ToUpper(w)), []byte(strings.ToUpper(w[:1])+w[1:]))
	}
	return out
}()

// nameWord returns the secret word b ends with, matched without regard
// to case, or "". It is asked at every ':' and '=' of a text (each key
// of a JSON document): only the words ending in b's last letter are
// compared. A match is ASCII (a word's bytes fold to no other
// character of as many bytes), so that letter's lower case is b's last
// byte with bit 0x20 set.
func nameWord(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	last := b[len(b)-1] | 0x20
	for _, w := range secretWords {
		if w[len(w)-1] == last && len(b) >= len(w) && bytes.EqualFold(b[len(b)-len(w):], []byte(w)) {
			return w
		}
	}
	return ""
}

// maybeAssignment reports whether s holds a secret word in a case
// assignments searches for.
func maybeAssignment(s string) bool {
	for _, w := range wordCases {
		if strings.Contains(s, string(w)) {
			return true
		}
	}
	return false
}

// span is a value to replace.
type span struct {
	from, to int
	kind     string
}

// assignments replaces the values of secret assignments in b, returning b
// when there are none. It looks at each separator (two fast byte scans)
// and reads the name before it, so text with no secret-looking name
// costs little.
func assignments(b []byte) []byte {
	var spans []span
	for _, sep := range []byte{':', '='} {
		for off := 0; ; {
			k := bytes.IndexByte(b[off:], sep)
			if k < 0 {
				break
			}
			k += off
			off = k + 1
			if sep == '=' && k > 0 && b[k-1] == ':' {
				continue // := is read at its ':'
			}
			j := k
			for j > 0 && (b[j-1] == ' ' || b[j-1] == '\t') {
				j--
			}
			if j > 0 && (b[j-1] == '"' || b[j-1] == '\'') {
				j--
				if j > 0 && b[j-1] == '\\' {
					j--
				}
			}
			w := nameWord(b[:j])
			if w == "" {
				continue
			}
			if sp, ok := assignment(b, j-len(w), j, w); ok {
				spans = append(spans, sp)
			}
		}
	}
	if spans == nil {
		return b
	}
	for i := 1; i < len(spans); i++ {
		for j := i; j > 0 && spans[j].from < spans[j-1].from; j-- {
			spans[j], spans[j-1] = spans[j-1], spans[j]
		}
	}
	var out []byte
	prev := 0
	for _, sp := range spans {
		if sp.from < prev {
			continue
		}
		out = append(out, b[prev:sp.from]...)
		out = appendMarker(out, sp.kind)
		prev = sp.to
	}
	return append(out, b[prev:]...)
}

func isNameByte(c byte) bool {
	return isWordByte(c) || c == '-' || c == '.'
}

// assignment reads the assignment whose name's last word, word in lower
// case, is b[i:j] and returns the span of its value if that is a secret.
func assignment(b []byte, i, j int, word string) (span, bool) {
	if j >= len(b) || isNameByte(b[j]) {
		return span{}, false
	}
	s := i
	for s > 0 && isNameByte(b[s-1]) && i-s < 128 {
		s--
	}
	kind := "secret"
	switch word {
	case "password", "passwd", "passphrase":
		kind = "password"
	case "key":
		var buf [128]byte
		norm := buf[:0]
		for _, c := range b[s:j] {
			switch {
			case c >= 'A' && c <= 'Z':
				norm = append(norm, c+'a'-'A')
			case c == '_' || c == '-' || c == '.':
			default:
				norm = append(norm, c)
			}
		}
		ok := false
		for _, k := range keyNames {
			if bytes.HasSuffix(norm, []byte(k)) {
				ok = true
				break
			}
		}
		if !ok {
			return span{}, false
		}
		if bytes.HasSuffix(norm, []byte("secretaccesskey")) || bytes.Contains(norm, []byte("awssecret")) {
			kind = "aws_secret_key"
		}
	}
	k := j
	// The name's closing quote: "name", 'name' or \"name\" in JSON text.
	if k+1 < len(b) && b[k] == '\\' && b[k+1] == '"' {
		k += 2
	} else if k < len(b) && (b[k] == '"' || b[k] == '\'') {
		k++
	}
	n := skipBlank(b, k)
	spaced := n > k
	k = n
	if k >= len(b) {
		return span{}, false
	}
	sep := b[k]
	switch {
	case sep == ':' && k+1 < len(b) && b[k+1] == '=':
		k += 2
		sep = '='
	case sep == ':' && k+1 < len(b) && b[k+1] == ':', sep == '=' && k+1 < len(b) && (b[k+1] == '=' || b[k+1] == '>'):
		return span{}, false // ::, ==, =>
	case sep == ':' || sep == '=':
		k++
	default:
		return span{}, false
	}
	n = skipBlank(b, k)
	spaced = spaced || n > k
	k = n
	var quote []byte
	switch {
	case k+1 < len(b) && b[k] == '\\' && b[k+1] == '"':
		quote = []byte(`\"`)
	case k < len(b) && (b[k] == '"' || b[k] == '\''):
		quote = b[k : k+1]
	}
	from := k + len(quote)
	to := from
	if quote != nil {
		e := bytes.Index(b[from:min(len(b), from+maxValue+len(quote))], quote)
		if e < 0 {
			return span{}, false
		}
		to = from + e
		if bytes.IndexByte(b[from:to], '\n') >= 0 {
			return span{}, false
		}
	} else {
		for to < len(b) && to-from <= maxValue && !endsValue(b[to]) {
			to++
		}
		if to-from > maxValue {
			return span{}, false
		}
		// In code (a spaced separator), an expression goes on after its
		// first word: await f(), a + b. NAME=value is env or shell.
		if n := skipBlank(b, to); spaced && n > to && n < len(b) && (isWordByte(b[n]) || b[n] == '(' || b[n] == '+') {
			return span{}, false
		}
		if to < len(b) && b[to] == '(' {
			return span{}, false
		}
	}
	v := b[from:to]
	if !literal(v, quote != nil) {
		return span{}, false
	}
	if kind == "password" {
		if len(v) < 4 || quote == nil && sep == ':' && !hasNonLetter(v) {
			return span{}, false
		}
	} else if !random(v) {
		return span{}, false
	}
	return span{from, to, kind}, true
}

// maxValue bounds the length of an assigned secret.
const maxValue = 1024

func skipBlank(b []byte, k int) int {
	for k < len(b) && (b[k] == ' ' || b[k] == '\t') {
		k++
	}
	return k
}

// endsValue reports whether c ends an unquoted value.
func endsValue(c byte) bool {
	switch c {
	case ' ', '\t', '\r', '\n', '"', '\'', '`', ',', ';', '&', ')', ']', '}', '\\', '(', '<', '>':
		return true
	}
	return c < ' ' || c == 0x7f
}

// placeholders are values that stand for a secret without being one.
var placeholders = map[string]bool{
	"null": true, "none": true, "nil": true, "true": true, "false": true, "undefined": true,
	"required": true, "optional": true, "string": true, "password": true, "passwd": true, "secret": true,
	"token": true, "changeme": true, "example": true, "redacted": true, "hidden": true, "empty": true,
	"your_password": true, "your-password": true, "yourpassword": true, "xxxx": true, "****": true, "%s": true, "%v": true,
}

// literal reports whether v is a literal value, not a reference to one,
// a template or a placeholder.
func literal(v []byte, quoted bool) bool {
	if len(v) == 0 || bytes.ContainsAny(v, "$[{}<>") || v[0] == '!' || v[0] == '*' && bytes.Count(v, []byte("*")) == len(v) {
		return false
	}
	if placeholders[strings.ToLower(string(v))] {
		return false
	}
	same := true
	for _, c := range v {
		if c != v[0] {
			same = false
			break
		}
	}
	if same && len(v) > 1 {
		return false
	}
	if !quoted && dottedPath(v) {
		return false
	}
	return true
}

// dottedPath reports whether v is an identifier path like cfg.Password.
func dottedPath(v []byte) bool {
	dots := 0
	start := true
	for _, c := range v {
		switch {
		case c == '.':
			if start {
				return false
			}
			dots++
			start = true
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_':
			start = false
		case c >= '0' && c <= '9':
			if start {
				return false
			}
		default:
			return false
		}
	}
	return dots > 0 && !start
}

func hasNonLetter(v []byte) bool {
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return true
		}
	}
	return false
}

// random reports whether v looks like a generated secret: at least 12
// bytes, letters and digits, and at least 3 bits of entropy per byte.
func random(v []byte) bool {
	if len(v) < 12 {
		return false
	}
	var letter, digit bool
	var n [256]int
	for _, c := range v {
		n[c]++
		switch {
		case c >= '0' && c <= '9':
			digit = true
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			letter = true
		}
	}
	if !letter || !digit {
		return false
	}
	h := 0.0
	for _, c := range n {
		if c > 0 {
			p := float64(c) / float64(len(v))
			h -= p * math.Log2(p)
		}
	}
	return h >= 3
}
