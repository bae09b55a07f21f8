package agents

import (
	"strings"
	"testing"
)

func TestDoctorBaseURL(t *testing.T) {
	const proxy = "http://127.0.0.1:8787"
	other := func(u string) bool { return u == "http://127.0.0.1:9999" }
	for _, tc := range []struct {
		name, proxy, base, suffix string
		sev                       Severity
		in                        string
	}{
		{"unset", proxy, "", "", Warn, "is not set"},
		{"the proxy", proxy, proxy, "", OK, "the running proxy"},
		{"trailing slash, localhost", proxy, "http://localhost:8787/", "", OK, "the running proxy"},
		{"with /v1", proxy, proxy + "/v1", "/v1", OK, "the running proxy"},
		{"without /v1", proxy, proxy, "/v1", Warn, "need the path " + proxy + "/v1"},
		{"another path", proxy, "http://localhost:8787/x", "", Warn, "need the path " + proxy},
		{"provider", proxy, "https://api.anthropic.com", "", Warn, "do not go through"},
		{"another proxy", proxy, "http://127.0.0.1:9999", "", Warn, "another data directory"},
		{"nothing there", proxy, "http://127.0.0.1:1", "", Fail, "no bbengine proxy answers"},
		{"no proxy runs", "", "http://127.0.0.1:8787", "", Fail, "no bbengine proxy answers"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := &DoctorEnv{Proxy: tc.proxy, IsProxy: other}
			f := BaseURLFinding(env, "claude", "ANTHROPIC_BASE_URL", tc.base, tc.suffix, "install")
			if f.Severity != tc.sev || !strings.Contains(f.Message, tc.in) {
				t.Errorf("got %s %q, want %s with %q", f.Severity, f.Message, tc.sev, tc.in)
			}
			if f.Severity != OK && f.Fix == "" {
				t.Errorf("%s without a fix: %q", f.Severity, f.Message)
			}
			if f.Agent != "claude" || f.Check != "base-url" {
				t.Errorf("finding of %s %s", f.Agent, f.Check)
			}
		})
	}
}
