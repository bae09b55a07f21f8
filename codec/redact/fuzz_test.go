package redact

import (
	"encoding/json"
	"testing"
)

// FuzzJSON: redacting a JSON document keeps it valid JSON, and never
// panics on any bytes.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{
		`{"text":"key sk-ant-api03-abcdefghijklmnopqrstuvwxyz"}`,
		`{"a":"-----BEGIN RSA PRIVATE KEY-----\nMIIE","b":"x -----END RSA PRIVATE KEY-----"}`,
		`{"password": "hunter22", "url": "postgres://a:Sup3r@db/x"}`,
		`["DB_PASSWORD=\"pa55word\"\n", "AKIAIOSFODNN7EXAMPLE:wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"]`,
		`{"token": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N"}`,
	} {
		f.Add([]byte(s))
	}
	r, _ := New(nil)
	f.Fuzz(func(t *testing.T, b []byte) {
		out := r.JSON(b)
		r.Bytes(b)
		if json.Valid(b) && !json.Valid(out) {
			t.Fatalf("JSON(%q) = %q, not valid JSON", b, out)
		}
	})
}
