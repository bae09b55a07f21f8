package webui

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/engine"
)

// BenchmarkTimeline measures the server time of a 5,000-event session's
// timeline, recorded through the proxy and derived by the engine: its
// first window, and the window holding its middle event.
func BenchmarkTimeline(b *testing.B) {
	r := newRig(b)
	r.send(b, "sess-long", longMessages(5000), "")
	r.serve(b)
	evs, err := r.e.Events("sess-long", engine.EventFilter{})
	if err != nil || len(evs) < 5000 {
		b.Fatalf("events %d, %v", len(evs), err)
	}
	ck := r.ui.testCookie()
	for _, bc := range []struct{ name, path string }{
		{"window=first", Prefix + "s/sess-long"},
		{"window=middle", fmt.Sprintf("%ss/sess-long?at=%d", Prefix, evs[len(evs)/2].Seq)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for b.Loop() {
				w := httptest.NewRecorder()
				req := httptest.NewRequest("GET", bc.path, nil)
				req.Host = "127.0.0.1:1"
				req.RemoteAddr = "127.0.0.1:40000" // a loopback peer
				req.AddCookie(ck)
				r.ui.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatalf("status %d", w.Code)
				}
				n = w.Body.Len()
			}
			b.SetBytes(int64(n))
		})
	}
}

// manySessions is a service of n sessions and nothing else.
type manySessions struct {
	api.Service
	ss   []engine.Session
	byID map[string]int // index in ss
}

// Breakers: no session of the benchmark has a breaker record.
func (m manySessions) Breakers(string) ([]engine.BreakerRecord, error) { return nil, nil }

func (m manySessions) Sessions(api.SessionsRequest) ([]engine.Session, error) {
	return append([]engine.Session(nil), m.ss...), nil
}

// Usage gives each session 12 calls, reading only the sessions
// req.Sessions names when it names some, as api.Local does.
func (m manySessions) Usage(req api.UsageRequest) (*api.UsageReport, error) {
	var ss []engine.Session
	if len(req.Sessions) == 0 {
		ss = m.ss
	}
	for _, id := range req.Sessions {
		if i, ok := m.byID[id]; ok {
			ss = append(ss, m.ss[i])
		}
	}
	calls := make([][]engine.CallUsage, len(ss))
	for i := range ss {
		for j := range 12 {
			calls[i] = append(calls[i], engine.CallUsage{Time: ss[i].First + int64(j), Model: "claude-sonnet-4-5",
				Usage: engine.Usage{Input: 12000, CacheRead: 10000, Output: 300}})
		}
	}
	return api.UsageOf(req, ss, calls)
}

// BenchmarkSessions measures the sessions page over 10,000 sessions:
// filtering, sorting and rendering one page with its sessions' costs
// (the service's own reading of them is not in it).
func BenchmarkSessions(b *testing.B) {
	now := time.Now().UnixNano()
	ss := make([]engine.Session, 10000)
	for i := range ss {
		ss[i] = engine.Session{ID: fmt.Sprintf("session-%05d", i), Agent: []string{"claude-code", "codex", "gemini-cli"}[i%3],
			CWD: fmt.Sprintf("/home/dev/project-%d", i%40), First: now - int64(i)*int64(time.Minute), Last: now - int64(i)*int64(time.Minute) + int64(30*time.Second),
			Requests: 12, Events: 80}
	}
	byID := map[string]int{}
	for i := range ss {
		byID[ss[i].ID] = i
	}
	ui, err := New(&Options{Service: manySessions{ss: ss, byID: byID}, Token: testToken})
	if err != nil {
		b.Fatal(err)
	}
	ck := ui.testCookie()
	for _, bc := range []struct{ name, query string }{
		{"filter=none", ""},
		{"filter=text", "?q=project-7&agent=codex&page=2"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				req := httptest.NewRequest("GET", Prefix+bc.query, nil)
				req.Host = "127.0.0.1:1"
				req.RemoteAddr = "127.0.0.1:40000" // a loopback peer
				req.AddCookie(ck)
				ui.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatalf("status %d", w.Code)
				}
			}
		})
	}
}
