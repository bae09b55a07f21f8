package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/wal"
)

func TestRedactorRules(t *testing.T) {
	r, err := NewRedactor([]string{"internal=corp-[0-9]{6}", `plain[0-9]+`})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ in, want string }{
		{"key sk-ant-api03-abcdefghijklmnopqrstuvwx end", "key [redacted:anthropic_key] end"},
		{"sk-proj-abcdefghijklmnopqrstuvwxyz0123", "[redacted:openai_key]"},
		{"ghp_abcdefghijklmnopqrstuvwxyz0123456789", "[redacted:github_token]"},
		{"AKIAIOSFODNN7EXAMPLE", "[redacted:aws_access_key]"},
		{"corp-123456 and plain42", "[redacted:internal] and [redacted:custom]"},
		{"-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----", "[redacted:private_key]"},
		{"sk-short is fine, so is a plain sentence", "sk-short is fine, so is a plain sentence"},
		{"see disk-usage-report-2024-01-01-final.txt and task-management-guidelines-v2", "see disk-usage-report-2024-01-01-final.txt and task-management-guidelines-v2"},
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if _, err := NewRedactor([]string{"bad=("}); err == nil || !strings.Contains(err.Error(), `redaction pattern "bad=("`) {
		t.Errorf("bad pattern: %v", err)
	}
	h := r.Headers(http.Header{"Authorization": {"Bearer x"}, "X-Bb-Task-Id": {"t"}, "User-Agent": {"claude-cli/2"}, "X-Note": {"sk-ant-api03-abcdefghijklmnopqrstuvwx"}})
	if h["Authorization"][0] != "[redacted:authorization]" || h["X-Bb-Task-Id"] != nil || h["User-Agent"][0] != "claude-cli/2" || h["X-Note"][0] != "[redacted:anthropic_key]" {
		t.Errorf("headers: %v", h)
	}
	if q := r.Query("alt=sse&key=AIzaSecret"); q != "alt=sse&key=%5Bredacted%3Aapi_key%5D" {
		t.Errorf("query: %q", q)
	}
}

// chunked redacts b split at the given cut points through a stream.
func chunked(r *Redactor, b []byte, cuts []int) string {
	s := stream{r: r}
	var out strings.Builder
	prev := 0
	for _, c := range cuts {
		if c <= prev || c >= len(b) {
			continue
		}
		out.Write(s.chunk(b[prev:c], false))
		prev = c
	}
	out.Write(s.chunk(b[prev:], false))
	out.Write(s.chunk(nil, true))
	return out.String()
}

// FuzzRedactStream: however a body is cut into chunks, the streaming
// redactor records exactly what redacting the whole body at once would,
// so no secret escapes at a chunk boundary.
func FuzzRedactStream(f *testing.F) {
	f.Add([]byte(`{"content":"use sk-ant-api03-abcdefghijklmnopqrstuvwxyz please"}`), uint16(20), uint16(7))
	f.Add([]byte("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY----- ghp_abcdefghijklmnopqrstuvwxyz0123456789"), uint16(10), uint16(3))
	f.Add([]byte("data: AKIAIOSFODNN7EXAMPLE\n\n"), uint16(13), uint16(1))
	f.Add([]byte("AKIAIOSFODNN7EXAMPLE\n wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nDB_PASSWORD = hunter22\n"), uint16(21), uint16(5))
	f.Add([]byte(`{"password": "correcthorse", "url": "postgres://a:Sup3r@db/x", "jwt": "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjg"}`), uint16(9), uint16(4))
	r, _ := NewRedactor(nil)
	f.Fuzz(func(t *testing.T, b []byte, first, step uint16) {
		if len(b) > maxHold {
			return // a run of token bytes longer than maxHold is cut by design
		}
		var cuts []int
		for c := int(first); c < len(b) && step > 0; c += int(step) {
			cuts = append(cuts, c)
		}
		want := string(r.Bytes(append([]byte(nil), b...)))
		// The same bytes are redacted; which rule names a key that two
		// rules match (sk-ant-… is also an sk-… key) may depend on what
		// stands before it in the chunk: compare without the names.
		if got := chunked(r, b, cuts); unnamed(got) != unnamed(want) {
			t.Fatalf("chunked %q\n got %q\nwant %q", b, got, want)
		}
	})
}

var redactedName = regexp.MustCompile(`\[redacted:[a-z_]+\]`)

// unnamed is s with every [redacted:NAME] as [redacted].
func unnamed(s string) string { return redactedName.ReplaceAllString(s, "[redacted]") }

func TestSessionGoal(t *testing.T) {
	r, err := NewRedactor(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"Ship the session cache", "Ship the session cache"},
		{"%C3%89crire%20la%20doc", "Écrire la doc"},
		{"raise coverage to 90%", "raise coverage to 90%"},
		{"50%25 done", "50% done"},
		{"  two\tlines%0Aof goal  ", "two lines of goal"},
		{"bad \xff byte", "bad \uFFFD byte"},
		{"key sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA here", "key [redacted:anthropic_key] here"},
		{strings.Repeat("é", 2000), strings.Repeat("é", 1024)},
	} {
		if got := sessionGoal(r, tc.in); got != tc.want {
			t.Errorf("sessionGoal(%.40q) = %.60q, want %.60q", tc.in, got, tc.want)
		}
	}
}

// TestStreamLongSecrets: a secret of 512 bytes or more is redacted
// wherever the stream is cut.
func TestStreamLongSecrets(t *testing.T) {
	r, _ := NewRedactor(nil)
	payload := strings.Repeat("Qm7vX2pL9sKd4TfR8wYb3NcJ6hGe1ZuA5oVi0qWx", 14) // 560 bytes
	for _, c := range []struct{ name, secret, core string }{
		{"jwt", "eyJhbGciOiJIUzI1NiJ9.eyJ" + payload + ".sig0123456789", payload},
		{"assignment", `"password": "` + payload[:520] + `"`, payload[:520]},
		{"pem", "-----BEGIN PRIVATE KEY-----\n" + payload + "\n" + payload + "\n-----END PRIVATE KEY-----", payload},
	} {
		body := []byte("data: {\"type\":\"content_block_delta\",\"text\":\"see " + c.secret + " ok\"}\n\n")
		for i := 1; i < len(body); i++ {
			got := chunked(r, body, []int{i})
			if strings.Contains(got, c.core[:40]) {
				t.Fatalf("%s cut at %d: %q", c.name, i, got)
			}
		}
	}
}

// TestUpstreamUserinfo: an upstream URL's user and password are never
// shown: not in Health, Upstreams, nor an error about a bad URL.
func TestUpstreamUserinfo(t *testing.T) {
	log, err := wal.Open(t.TempDir(), &wal.Options{Sync: wal.SyncNone})
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	p, err := New(log, &Options{Upstreams: map[string]string{"corp": "https://alice:Hunter2pw@llm.example/v1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	b, _ := json.Marshal(p.Health())
	if got := string(b); strings.Contains(got, "Hunter2pw") || strings.Contains(got, "alice") || !strings.Contains(got, "https://llm.example/v1") {
		t.Errorf("health: %s", got)
	}
	if got := fmt.Sprint(p.Upstreams()); strings.Contains(got, "Hunter2pw") || strings.Contains(got, "alice") {
		t.Errorf("upstreams: %s", got)
	}
	_, err = New(log, &Options{Upstreams: map[string]string{"bad": "ftp://alice:Hunter2pw@llm.example/"}})
	if err == nil || strings.Contains(err.Error(), "Hunter2pw") || strings.Contains(err.Error(), "alice") {
		t.Errorf("bad upstream: %v", err)
	}
	for in, want := range map[string]string{
		"https://u:p@h/x":     "https://h/x",
		"http://h:1/a@b":      "http://h:1/a@b",
		"%zz://u:p@h/x":       "%zz://h/x",
		"no url":              "no url",
		"https://user@h:8080": "https://h:8080",
	} {
		if got := StripUserinfo(in); got != want {
			t.Errorf("StripUserinfo(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestHeaderCleanCache: header values found clean are remembered, values
// with a secret never are, and each is redacted the same every time.
func TestHeaderCleanCache(t *testing.T) {
	r, err := NewRedactor(nil)
	if err != nil {
		t.Fatal(err)
	}
	secret := "token ghp_CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC"
	h := http.Header{"User-Agent": {"claude-cli/2.0.1"}, "X-Custom": {secret}, "Long": {strings.Repeat("a", maxCleanLen+1)}}
	for range 3 {
		out := r.Headers(h)
		if got := out["X-Custom"][0]; strings.Contains(got, "ghp_") || !strings.Contains(got, "[redacted:") {
			t.Fatalf("X-Custom recorded as %q", got)
		}
		if out["User-Agent"][0] != "claude-cli/2.0.1" {
			t.Fatalf("User-Agent %q", out["User-Agent"])
		}
	}
	if _, ok := r.clean.Load("claude-cli/2.0.1"); !ok {
		t.Error("a clean value was not remembered")
	}
	r.clean.Range(func(k, _ any) bool {
		if strings.Contains(k.(string), "ghp_") || len(k.(string)) > maxCleanLen {
			t.Errorf("remembered %q", k)
		}
		return true
	})
	if n := r.nclean.Load(); n != 1 {
		t.Errorf("%d values remembered, want 1", n)
	}
}
