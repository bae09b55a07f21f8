package guard

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestCheck(t *testing.T) {
	p, err := New([]string{"http://localhost:5173/", "chrome-extension://abcdef", "null"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host, origin, site string
		want               int // 0: accepted
	}{
		{"127.0.0.1:8787", "", "", 0},
		{"localhost:8787", "", "", 0},
		{"LOCALHOST.", "", "", 0},
		{"[::1]:8787", "", "", 0},
		{"127.0.0.2", "", "", 0},
		{"", "", "", 0},
		{"127.0.0.1:8787", "", "same-origin", 0},
		{"127.0.0.1:8787", "", "none", 0},
		{"evil.example:8787", "", "", http.StatusMisdirectedRequest},
		{"localhost.evil.example", "", "", http.StatusMisdirectedRequest},
		{"192.168.1.5:8787", "", "", http.StatusMisdirectedRequest},
		{"127.0.0.1:8787", "https://evil.example", "", http.StatusForbidden},
		{"127.0.0.1:8787", "http://localhost:3000", "same-site", http.StatusForbidden},
		{"127.0.0.1:8787", "http://127.0.0.1:8787", "same-origin", http.StatusForbidden},
		{"127.0.0.1:8787", "", "cross-site", http.StatusForbidden},
		{"127.0.0.1:8787", "http://localhost:5173", "cross-site", 0},
		{"127.0.0.1:8787", "HTTP://LocalHost:5173", "", 0},
		{"127.0.0.1:8787", "chrome-extension://abcdef", "", 0},
		{"127.0.0.1:8787", "null", "", 0},
		{"127.0.0.1:8787", "http://localhost:5174", "", http.StatusForbidden},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("POST", "/v1/goal", nil)
		r.Host = tt.host
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		if tt.site != "" {
			r.Header.Set("Sec-Fetch-Site", tt.site)
		}
		got := 0
		if err := p.Check(r); err != nil {
			got = err.(*Refusal).Status
		}
		if got != tt.want {
			t.Errorf("Host %q Origin %q Sec-Fetch-Site %q: %d, want %d", tt.host, tt.origin, tt.site, got, tt.want)
		}
	}
	var none *Policy
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Origin", "http://localhost:5173")
	if none.CheckOrigin(r) == nil {
		t.Error("a nil policy allowed an origin")
	}
}

func TestNewRejects(t *testing.T) {
	for _, o := range []string{"*", "localhost:5173", "http://localhost:5173/app", "http://u:p@localhost", "http://", ""} {
		if _, err := New([]string{o}); err == nil {
			t.Errorf("New(%q): no error", o)
		}
	}
}
