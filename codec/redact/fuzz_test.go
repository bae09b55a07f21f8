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

// FuzzCut: Cut never panics and returns a cut within b, holding back no
// more than max bytes plus the KiB it may add to reach a token's edge.
func FuzzCut(f *testing.F) {
	f.Add([]byte(`{"content":"DB_PASSWORD then run the build use sk-ant-api03-Qm7vX2pL9sKd4TfR8wYb3NcJ6hGe1ZuA5oVi0qWx key"}`), 40)
	f.Add([]byte("aws_access_key_id = AKIAQYLPMN5HHHFPZAM2\naws_secret"), 16)
	f.Add([]byte(`a\n password \\n x`), 3)
	f.Fuzz(func(t *testing.T, b []byte, max int) {
		if max < 0 || max > 1<<20 {
			return
		}
		cut := Cut(b, max)
		if cut < 0 || cut > len(b) {
			t.Fatalf("Cut(%q, %d) = %d, outside [0, %d]", b, max, cut, len(b))
		}
		if len(b)-cut > max+1<<10 {
			t.Fatalf("Cut(%q, %d) = %d holds %d bytes", b, max, cut, len(b)-cut)
		}
	})
}
