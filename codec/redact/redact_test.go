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
