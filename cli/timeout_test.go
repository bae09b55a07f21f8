package cli

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/proxy"
)

// TestTimeoutsShown: with short timeouts, an upstream that sends no
// headers, a stream that stalls and a client that stops sending its body
// each end in an error event that show and trace print, naming the flag;
// a client at the same time completes.
func TestTimeoutsShown(t *testing.T) {
	stalled := make(chan struct{}, 2)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Stall") == "" {
			sseAnswer(w, r)
			return
		}
		io.ReadAll(r.Body)
		if r.Header.Get("X-Stall") == "stream" {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_s\",\"model\":\"claude-sonnet-4\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n")
			w.(http.Flusher).Flush()
		}
		stalled <- struct{}{}
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	}))
	defer up.Close()
	dir := t.TempDir()
	addr, _, stop := startProxy(t, dir, proxy.Options{Upstreams: map[string]string{"anthropic": up.URL},
		HeaderTimeout: 300 * time.Millisecond, IdleTimeout: 300 * time.Millisecond, BodyTimeout: 300 * time.Millisecond}, false)
	body := `{"model":"claude-sonnet-4","stream":true,"messages":[{"role":"user","content":"ping"}]}`
	ids := map[string]string{}
	done := make(chan struct{}, 2)
	for _, stall := range []string{"head", "stream"} {
		go func() {
			defer func() { done <- struct{}{} }()
			req, _ := http.NewRequest("POST", "http://"+addr+"/v1/messages", strings.NewReader(body))
			req.Header.Set("X-Stall", stall)
			req.Header.Set("X-Bb-Session-Id", "stall-"+stall)
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				io.ReadAll(resp.Body)
				resp.Body.Close()
			}
		}()
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nX-Bb-Session-Id: stall-body\r\n"+
		"Anthropic-Version: 2023-06-01\r\nContent-Length: 1000\r\n\r\n{\"model\":\"claude-sonnet-4\",")
	<-stalled
	<-stalled
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/messages", strings.NewReader(body))
	req.Header.Set("X-Bb-Session-Id", "fine")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "message_stop") {
		t.Fatalf("the other client: %d %s", resp.StatusCode, b)
	}
	<-done
	<-done
	if r, err := http.ReadResponse(bufio.NewReader(conn), nil); err != nil || r.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("stalled body: %v %v", r, err)
	} else {
		ids["body"] = r.Header.Get("X-Bb-Exchange-Id")
	}
	stop()
	for sess, flag := range map[string]string{"stall-head": "--upstream-header-timeout", "stall-stream": "--stream-idle-timeout", "stall-body": "--client-body-timeout"} {
		out, errs, code := run(t, "--dir", dir, "show", sess)
		if code != 0 || !strings.Contains(out, "error stage=") || !strings.Contains(out, flag) {
			t.Errorf("show %s: %d, no error event naming %s:\n%s%s", sess, code, flag, out, errs)
		}
	}
	if out, errs, code := run(t, "--dir", dir, "show", "fine"); code != 0 || strings.Contains(out, "error stage=") || !strings.Contains(out, "a: pong") {
		t.Errorf("show fine: %d\n%s%s", code, out, errs)
	}
	if out, errs, code := run(t, "--dir", dir, "trace", ids["body"]); code != 0 || !strings.Contains(out, "--client-body-timeout") {
		t.Errorf("trace %s: %d\n%s%s", ids["body"], code, out, errs)
	}
}
