package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestUIDownChecks: until the engine is open (and for the proxy's whole
// life when derivation is off or paused, or the UI's token could not be
// read), the web UI's paths answer 503 with why, but only after the UI's
// own checks, with its headers: a DNS-rebinding page must not read the
// proxy's status (file paths, process ids).
func TestUIDownChecks(t *testing.T) {
	pe := &proxyEngine{}
	pe.setStatus("paused: open /home/alice/.bbengine/db: held by pid 4242 (recording goes on; retrying every 5s)")
	h := withUI(http.NotFoundHandler(), pe.serveUI)
	req := httptest.NewRequest("GET", "http://rebound.attacker.example:8080/_bb/ui/", nil)
	req.Header.Set("Origin", "http://rebound.attacker.example:8080")
	req.RemoteAddr = "127.0.0.1:5555"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusMisdirectedRequest {
		t.Errorf("a request for host rebound.attacker.example: %d, want 421:\n%s", rec.Code, rec.Body)
	}
	if strings.Contains(rec.Body.String(), "/home/alice") {
		t.Errorf("a rebound page reads derivation's status: %q", rec.Body)
	}
	if rec.Header().Get("Content-Security-Policy") == "" || rec.Header().Get("X-Content-Type-Options") == "" {
		t.Errorf("the 503 lacks the UI's security headers: %v", rec.Header())
	}
	// From this machine's own page: 503, and why.
	req = httptest.NewRequest("GET", "http://127.0.0.1:8080/_bb/ui/", nil)
	req.RemoteAddr = "127.0.0.1:5555"
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "no token") ||
		rec.Header().Get("Content-Security-Policy") == "" {
		t.Errorf("the UI's own request while it is down: %d %q %v", rec.Code, rec.Body, rec.Header())
	}
}
