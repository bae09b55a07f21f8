package redact

import (
	"bytes"
	"testing"
)

// nameWordAll is nameWord comparing every word: what nameWord must
// return.
func nameWordAll(b []byte) string {
	for _, w := range secretWords {
		if len(b) >= len(w) && bytes.EqualFold(b[len(b)-len(w):], []byte(w)) {
			return w
		}
	}
	return ""
}

func TestNameWord(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"DB_PASSWORD", "password"},
		{"db_passwd", "passwd"},
		{"Passphrase", "passphrase"},
		{"client_secret", "secret"},
		{"GITHUB_TOKEN", "token"},
		{"api_key", "key"},
		{"aws_credentials", "credentials"},
		{"credential", "credential"},
		{"max_tokens", ""},
		{"type", ""},
		{"keys", ""},
		{"\"key", "key"},
		{"credentialſ", ""}, // U+017F folds to s, but is two bytes
		{"\u212aey", ""},    // the Kelvin sign folds to k
	} {
		if got := nameWord([]byte(tc.in)); got != tc.want || got != nameWordAll([]byte(tc.in)) {
			t.Errorf("nameWord(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func FuzzNameWord(f *testing.F) {
	for _, s := range []string{"password", "TOKEN", "Secret", "api_key", "credentialſ", "\u212aey", "x\xffd"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := nameWord(b), nameWordAll(b); got != want {
			t.Fatalf("nameWord(%q) = %q, want %q", b, got, want)
		}
	})
}
