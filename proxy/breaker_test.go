package proxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/frame"
)

// loopBody is an Anthropic request after n identical failed Bash calls.
func loopBody(n int) string {
	msgs := []any{map[string]any{"role": "user", "content": "build it"}}
	for i := range n {
		id := fmt.Sprintf("toolu_%d", i)
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": "make"}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": "make: *** Error 2", "is_error": true}}})
	}
	b, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4", "max_tokens": 100, "stream": true, "messages": msgs})
	return string(b)
}

// TestBreakerRefuses: a stuck session is refused with each provider's
// own 429 and never reaches the upstream; other sessions and a stream in
// flight are untouched; trips show in the metrics and the WAL.
func TestBreakerRefuses(t *testing.T) {
	rg := newRig(t, nil)
	loop := map[string]string{"X-Bb-Session-Id": "loop", "Anthropic-Version": "2023-06-01"}
	for n := 0; n < 4; n++ {
		resp, _ := rg.post(t, "/v1/messages", loopBody(n), loop)
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", n+1, resp.StatusCode)
		}
	}
	resp, body := rg.post(t, "/v1/messages", loopBody(4), loop)
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "300" || resp.Header.Get("X-Should-Retry") != "false" {
		t.Fatalf("request 5: %d Retry-After %q X-Should-Retry %q", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("X-Should-Retry"))
	}
	var ae struct {
		Type  string `json:"type"`
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal(body, &ae); err != nil || ae.Type != "error" || ae.Error.Type != "rate_limit_error" ||
		!strings.Contains(ae.Error.Message, "session loop is open (stagnation)") || !strings.Contains(ae.Error.Message, "bbengine breaker reset loop") {
		t.Fatalf("Anthropic error body %s", body)
	}
	rg.up.mu.Lock()
	seen := len(rg.up.requests)
	rg.up.mu.Unlock()
	if seen != 4 {
		t.Errorf("upstream saw %d requests, want 4: the refused one must not reach it", seen)
	}

	// A manual trip, in OpenAI's and Gemini's shapes: no Retry-After,
	// since only a reset lets the session through.
	if _, err := rg.p.Breaker().Trip("oa", "runaway"); err != nil {
		t.Fatal(err)
	}
	resp, body = rg.post(t, "/v1/chat/completions", `{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]}`, map[string]string{"X-Bb-Session-Id": "oa"})
	var oe struct {
		Error struct{ Message, Type, Code string }
	}
	if json.Unmarshal(body, &oe); resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "" || oe.Error.Code != "too_many_requests" || !strings.Contains(oe.Error.Message, "runaway") {
		t.Errorf("OpenAI refusal %d %q: %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if _, err := rg.p.Breaker().Trip("gm", "runaway"); err != nil {
		t.Fatal(err)
	}
	resp, body = rg.post(t, "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, map[string]string{"X-Bb-Session-Id": "gm"})
	if resp.StatusCode != 429 || !strings.Contains(string(body), `"status":"RESOURCE_EXHAUSTED"`) {
		t.Errorf("Gemini refusal %d: %s", resp.StatusCode, body)
	}

	// Another session goes on.
	if resp, _ := rg.post(t, "/v1/messages", loopBody(0), map[string]string{"X-Bb-Session-Id": "other"}); resp.StatusCode != 200 {
		t.Errorf("session other: %d", resp.StatusCode)
	}

	// A stream in flight when its session trips runs to its end; the
	// session's next request is refused.
	req, _ := http.NewRequest("POST", rg.srv.URL+"/v1/slow", strings.NewReader(loopBody(0)))
	req.Header.Set("X-Bb-Session-Id", "slow")
	sresp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	first := make([]byte, 8)
	if _, err := io.ReadFull(sresp.Body, first); err != nil {
		t.Fatal(err)
	}
	if _, err := rg.p.Breaker().Trip("slow", "stop"); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(sresp.Body)
	sresp.Body.Close()
	if err != nil || !strings.HasSuffix(string(rest), "data: 199\n\n") {
		t.Errorf("the stream in flight was cut: %v, ends %q", err, tail(string(rest)))
	}
	if resp, _ := rg.post(t, "/v1/messages", loopBody(1), map[string]string{"X-Bb-Session-Id": "slow"}); resp.StatusCode != 429 {
		t.Errorf("after the trip: %d", resp.StatusCode)
	}

	mresp, err := http.Get(rg.srv.URL + "/_bb/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	for _, want := range []string{`bbengine_breaker_trips_total{reason="stagnation"} 1`, `bbengine_breaker_trips_total{reason="manual"} 3`,
		`bbengine_breaker_refused_total{reason="stagnation"} 1`, `bbengine_breaker_refused_total{reason="manual"} 3`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %s", want)
		}
	}

	// The WAL holds each trip, and the refused exchange with its 429.
	xs := rg.readWAL(t)
	refused := 0
	for _, x := range xs {
		if x.End != nil && x.End.Status == 429 && x.Start.SessionID == "loop" {
			refused++
			if len(x.Errors) != 1 || x.Errors[0].Stage != "breaker" {
				t.Errorf("refused exchange errors %+v", x.Errors)
			}
		}
	}
	if refused != 1 {
		t.Errorf("%d refused exchanges of session loop recorded, want 1", refused)
	}
	r := rg.log.NewReader()
	defer r.Close()
	var trips, snapshots []string
	for r.Next() {
		if r.Header().Kind != frame.KindBreaker {
			continue
		}
		p, err := r.Payload()
		if err != nil {
			t.Fatal(err)
		}
		b, err := exchange.DecodeBreaker(p)
		if err != nil {
			t.Fatalf("breaker frame at %d: %v", r.Offset(), err)
		}
		if b.Op == "snapshot" {
			snapshots = append(snapshots, b.Session)
			continue
		}
		trips = append(trips, b.Session+":"+b.Reason)
	}
	if got := strings.Join(trips, " "); got != "loop:stagnation oa:manual gm:manual slow:manual" {
		t.Errorf("breaker frames %q", got)
	}
	// Close wrote the counters of the sessions that changed since their
	// last record: other's always (loop's when the usage of its last
	// forwarded call came after its trip).
	if !slices.Contains(snapshots, "other") {
		t.Errorf("snapshots of %q, want other's", snapshots)
	}
}

func tail(s string) string {
	if len(s) > 40 {
		return s[len(s)-40:]
	}
	return s
}

// TestBreakerBodySession: a session named only in the body
// (metadata.user_id, older Claude Code) is judged too.
func TestBreakerBodySession(t *testing.T) {
	rg := newRig(t, nil)
	if _, err := rg.p.Breaker().Trip("body-ses", "stop"); err != nil {
		t.Fatal(err)
	}
	body := strings.Replace(loopBody(0), `"model"`, `"metadata":{"user_id":"{\"session_id\":\"body-ses\"}"},"model"`, 1)
	if resp, b := rg.post(t, "/v1/messages", body, nil); resp.StatusCode != 429 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
}
