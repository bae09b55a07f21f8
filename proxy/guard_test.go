package proxy

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestBrowserRefused: a web page's cross-site request (a text/plain POST
// needs no preflight) is refused with 403 before it is forwarded or
// recorded, as is one with Sec-Fetch-Site: cross-site; --allow-origin
// lets a named origin through; agents (no Origin) pass.
func TestBrowserRefused(t *testing.T) {
	rg := newRig(t, &Options{AllowOrigins: []string{"http://localhost:5173"}})
	body := `{"model":"claude-sonnet-4","stream":true,"messages":[{"role":"user","content":"injected by a web page"}]}`
	for _, hdr := range []map[string]string{
		{"Origin": "https://evil.example", "Content-Type": "text/plain"},
		{"Origin": "null"},
		{"Origin": "http://localhost:3000"},
		{"Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"},
	} {
		resp, b := rg.post(t, "/v1/messages", body, hdr)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), "--allow-origin") {
			t.Errorf("%v: %d %s, want 403 naming --allow-origin", hdr, resp.StatusCode, b)
		}
	}
	// The refusal is in the provider's shape, so the client shows it.
	resp, b := rg.post(t, "/v1/chat/completions", `{}`, map[string]string{"Origin": "https://evil.example"})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), `"error":{`) {
		t.Errorf("openai shape: %d %s", resp.StatusCode, b)
	}
	rg.up.mu.Lock()
	n := len(rg.up.requests)
	rg.up.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d refused requests reached the upstream", n)
	}
	resp, b = rg.post(t, "/v1/messages", body, map[string]string{"Origin": "http://LOCALHOST:5173", "Sec-Fetch-Site": "cross-site"})
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "message_stop") {
		t.Errorf("allowed origin: %d %s", resp.StatusCode, b)
	}
	resp, b = rg.post(t, "/v1/messages", body, map[string]string{"X-Bb-Session-Id": "agent"})
	if resp.StatusCode != http.StatusOK {
		t.Errorf("agent: %d %s", resp.StatusCode, b)
	}
	got := rg.readWAL(t)
	if len(got) != 2 {
		t.Fatalf("%d exchanges recorded, want 2 (the allowed origin's and the agent's)", len(got))
	}
	agents := 0
	for _, x := range got {
		if x.Start.SessionID == "agent" {
			agents++
		}
	}
	if agents != 1 {
		t.Errorf("the agent's exchange is not among those recorded")
	}
}

// TestOwnEndpointsGuarded: /_bb/ answers only loopback Host names (DNS
// rebinding) and no web page, and only reads.
func TestOwnEndpointsGuarded(t *testing.T) {
	rg := newRig(t, nil)
	get := func(method, host string, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest(method, rg.srv.URL+"/_bb/health", nil)
		if host != "" {
			req.Host = host
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	for _, host := range []string{"", "localhost:8787", "127.0.0.1:8787", "[::1]:8787", "localhost", "127.0.0.1"} {
		if code, b := get("GET", host, nil); code != http.StatusOK {
			t.Errorf("Host %q: %d %s", host, code, b)
		}
	}
	for _, host := range []string{"evil.example", "evil.example:8787", "localhost.evil.example:8787", "10.0.0.1:8787"} {
		if code, b := get("GET", host, nil); code != http.StatusMisdirectedRequest || !strings.Contains(b, "127.0.0.1") {
			t.Errorf("Host %q: %d %s, want 421", host, code, b)
		}
	}
	if code, b := get("GET", "", map[string]string{"Origin": "https://evil.example"}); code != http.StatusForbidden {
		t.Errorf("foreign Origin: %d %s, want 403", code, b)
	}
	if code, b := get("POST", "", nil); code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d %s, want 405", code, b)
	}
}
