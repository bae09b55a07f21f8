package redact

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	r, err := New([]string{"internal=corp-[0-9]{6}"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, want string }{
		{"key sk-ant-api03-abcdefghijklmnopqrstuvwxyz here", "key [redacted:anthropic_key] here"},
		{"export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789", "export GITHUB_TOKEN=[redacted:github_token]"},
		{"disk-usage-report-sk-abcdefghijklmnopqrstuvwxyz", "disk-usage-report-sk-abcdefghijklmnopqrstuvwxyz"},
		{"ticket corp-123456", "ticket [redacted:internal]"},
		{"nothing secret", "nothing secret"},
		{"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----", "[redacted:private_key]"},
	} {
		if got := r.String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if _, err := New([]string{"bad=("}); err == nil {
		t.Error("New accepted an invalid pattern")
	}
}

func TestPEMHold(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{"no key here", -1},
		{"x -----BEGIN RSA PRIVATE KEY-----\nMIIE", 2},
		{"x -----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- y", -1},
		{"x -----BEGIN RSA PRI", 2},                             // may still become a header
		{"-----BEGIN CERTIFICATE-----\nMIIB", -1},               // not a private key
		{"-----BEGINPRIVATE KEY-----END-----ENDPRIVATE KEY", 0}, // "-----END-----" is no end line
		{"-----BEGIN PRIVATE KEY-----a-----END PRIVATE KEY----- -----BEGIN PRIVATE KEY-----b", 54},
	} {
		if got := PEMHold([]byte(c.in)); got != c.want {
			t.Errorf("PEMHold(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

// TestCutLongJSONLine: a request body is one line of JSON, its text's
// lines joined by \n escapes. When that line holds a secret word and is
// longer than max, Cut holds max bytes; the cut must still not fall
// inside a token (here an Anthropic key that straddles len-max).
func TestCutLongJSONLine(t *testing.T) {
	const key = "sk-ant-api03-Qm7vX2pL9sKd4TfR8wYb3NcJ6hGe1ZuA5oVi0qWx"
	for shift := 0; shift < len(key); shift += 3 {
		pre := `{"messages":[{"role":"user","content":"export DB_PASSWORD from the vault first ` + strings.Repeat("then run the build and the tests ", 200) + ` use `
		b := []byte(pre + key + " key and go on")
		max := len(b) - len(pre) - shift // len(b)-max falls inside the key
		cut := Cut(b, max)
		if cut > len(pre) && cut < len(pre)+len(key) {
			t.Fatalf("shift %d: cut at %d, inside the key at [%d,%d)", shift, cut, len(pre), len(pre)+len(key))
		}
	}
	// The last line of a JSON string ends at its last \n escape.
	b := []byte(`{"content":"a password here\nplain text after the line break and more`)
	if got, want := lineStart(b), strings.LastIndex(string(b), `\n`)+2; got != want {
		t.Errorf("lineStart = %d, want %d", got, want)
	}
}
