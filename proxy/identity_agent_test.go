package proxy

import (
	"testing"

	"github.com/bbengine/bbengine/agents"
)

// sessionAgent is an agent the proxy does not know by itself: it sends
// its session id in a header of its own, as Gemini CLI or opencode would
// once they have a directory under agents/.
type sessionAgent struct{}

func init() { agents.Register(sessionAgent{}) }

func (sessionAgent) Name() string             { return "proxytest" }
func (sessionAgent) Doc() agents.Doc          { return agents.Doc{Title: "proxy test agent"} }
func (sessionAgent) LogDirs(string) []string  { return nil }
func (sessionAgent) IsLog(string) bool        { return false }
func (sessionAgent) SessionHeaders() []string { return []string{"X-Proxytest-Session", "session-id"} }
func (sessionAgent) HookMaxChars() int        { return 0 }
func (sessionAgent) ParseHook([]byte) (agents.HookEvent, error) {
	return agents.HookEvent{}, nil
}
func (sessionAgent) HookAnswer(agents.HookEvent, string) ([]byte, error) { return nil, nil }
func (sessionAgent) Install(*agents.Setup) ([]*agents.Change, error)     { return nil, nil }
func (sessionAgent) Family() agents.Family                               { return agents.Family{Name: "proxytest"} }
func (sessionAgent) SessionFiles(p string) ([]string, error)             { return []string{p}, nil }

// TestIdentityRegisteredAgent: the proxy reads a registered agent's
// session header, after the headers it knows by itself.
func TestIdentityRegisteredAgent(t *testing.T) {
	for _, c := range []struct {
		hdr                map[string]string
		wantID, wantSource string
	}{
		{map[string]string{"X-Proxytest-Session": "pt-1"}, "pt-1", "X-Proxytest-Session"},
		{map[string]string{"X-Proxytest-Session": "pt-1", "X-Claude-Code-Session-Id": "cc-1"}, "cc-1", "X-Claude-Code-Session-Id"},
	} {
		rg := newRig(t, nil)
		rg.post(t, "/v1/messages", `{}`, c.hdr)
		x := only(t, rg.readWAL(t))
		if x.Start.SessionID != c.wantID || x.Start.SessionSource != c.wantSource {
			t.Errorf("%v: session %q from %q, want %q from %q", c.hdr, x.Start.SessionID, x.Start.SessionSource, c.wantID, c.wantSource)
		}
	}
}
