package proxy

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// staller is an upstream that stalls: before its headers (/v1/head) or
// after the first event of a stream (/v1/stream), until the proxy gives
// up on it. stalled receives a value once it stalls.
func staller(t *testing.T) (*httptest.Server, chan struct{}) {
	stalled := make(chan struct{}, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		if r.URL.Path == "/v1/stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_s\",\"model\":\"m\"}}\n\n")
			w.(http.Flusher).Flush()
		}
		stalled <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	}))
	t.Cleanup(srv.Close)
	return srv, stalled
}

// timedOut returns the exchanges of m with the timeout error frame of
// stage naming flag, and checks that every exchange without a timeout
// completed.
func timedOut(t *testing.T, m map[uint64]*recorded, stage, flag string) []*recorded {
	t.Helper()
	var out []*recorded
	for _, x := range m {
		if len(x.Errors) == 1 && x.Errors[0].Stage == stage && strings.Contains(x.Errors[0].Error, flag) {
			out = append(out, x)
			continue
		}
		if len(x.Errors) == 1 && strings.HasPrefix(x.Errors[0].Error, "timeout: ") {
			continue // another kind of timeout
		}
		if x.End == nil || !x.End.Complete || len(x.Errors) != 0 {
			t.Errorf("exchange %d (%s): errors %+v end %+v", x.ID, x.Start.Path, x.Errors, x.End)
		}
	}
	return out
}

// TestUpstreamTimeouts: an upstream that sends no headers gets 504 after
// --upstream-header-timeout, and a stream that stops mid-way is cut after
// --stream-idle-timeout; each is an error frame of its exchange, and a
// client running at the same time completes.
func TestUpstreamTimeouts(t *testing.T) {
	up, stalled := staller(t)
	rg := newRig(t, &Options{HeaderTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond,
		Upstreams: map[string]string{"stall": up.URL}})
	type result struct {
		status int
		body   string
		err    error
	}
	results := make(chan result, 2)
	for _, path := range []string{"/stall/v1/head", "/stall/v1/stream"} {
		go func() {
			resp, err := client.Post(rg.srv.URL+path, "application/json", strings.NewReader(`{"model":"m","stream":true}`))
			if err != nil {
				results <- result{err: err}
				return
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			results <- result{resp.StatusCode, string(b), err}
		}()
	}
	<-stalled
	<-stalled
	// Both are stalled now; another client is not held up.
	resp, body := rg.post(t, "/v1/messages", `{"model":"claude-sonnet-4","stream":true}`, map[string]string{"Anthropic-Version": "2023-06-01"})
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "message_stop") {
		t.Fatalf("the other client: %d %s", resp.StatusCode, body)
	}
	var head, stream result
	for range 2 {
		r := <-results
		if strings.Contains(r.body, "message_start") {
			stream = r
		} else {
			head = r
		}
	}
	if head.status != http.StatusGatewayTimeout || !strings.Contains(head.body, "--upstream-header-timeout") {
		t.Errorf("no headers: %d %q %v, want 504 naming --upstream-header-timeout", head.status, head.body, head.err)
	}
	if stream.status != http.StatusOK || stream.err == nil {
		t.Errorf("stalled stream: %d %v, want the stream cut", stream.status, stream.err)
	}
	got := rg.readWAL(t)
	if len(got) != 3 {
		t.Fatalf("%d exchanges, want 3", len(got))
	}
	if h := timedOut(t, got, "upstream", "--upstream-header-timeout"); len(h) != 1 || h[0].End == nil || h[0].End.Status != 504 {
		t.Errorf("header timeout not recorded: %+v", h)
	}
	if s := timedOut(t, got, "response", "--stream-idle-timeout"); len(s) != 1 || s[0].End == nil || s[0].End.Complete {
		t.Errorf("idle timeout not recorded: %+v", s)
	}
}

// TestClientBodyTimeout: a client that stops sending its request body
// gets 408 after --client-body-timeout, nothing goes upstream, the
// exchange has an error frame, and a client running at the same time
// completes.
func TestClientBodyTimeout(t *testing.T) {
	rg := newRig(t, &Options{BodyTimeout: 300 * time.Millisecond})
	conn, err := net.Dial("tcp", strings.TrimPrefix(rg.srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"+
		"Anthropic-Version: 2023-06-01\r\nContent-Length: 1000\r\n\r\n{\"model\":\"claude-sonnet-4\",")
	resp, body := rg.post(t, "/v1/messages", `{"model":"claude-sonnet-4","stream":true}`, map[string]string{"Anthropic-Version": "2023-06-01"})
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "message_stop") {
		t.Fatalf("the other client: %d %s", resp.StatusCode, body)
	}
	stalled, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(stalled.Body)
	if stalled.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "--client-body-timeout") {
		t.Errorf("stalled body: %d %s, want 408 naming --client-body-timeout", stalled.StatusCode, b)
	}
	rg.up.mu.Lock()
	n := len(rg.up.requests)
	rg.up.mu.Unlock()
	if n != 1 {
		t.Errorf("%d requests upstream, want only the other client's", n)
	}
	got := rg.readWAL(t)
	if x := timedOut(t, got, "request", "--client-body-timeout"); len(x) != 1 || x[0].End == nil || x[0].End.Status != 408 || string(x[0].RequestBody) != `{"model":"claude-sonnet-4",` {
		t.Errorf("body timeout not recorded: %+v", x)
	}
}
