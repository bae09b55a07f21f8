package redact

import "testing"

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
