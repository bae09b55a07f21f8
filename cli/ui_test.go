package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/api/webui"
	"github.com/bbengine/bbengine/internal/bytesize"
	"github.com/bbengine/bbengine/proxy"
)

// TestUICommand: with a proxy running, `bbengine ui` prints the URL of
// the proxy's UI, whose token signs the browser in; with none, it serves
// the UI itself on loopback until its context ends.
func TestUICommand(t *testing.T) {
	dir := t.TempDir()
	up := sseUpstream(t)
	addr, _, stop := startProxy(t, dir, proxy.Options{Upstreams: map[string]string{"anthropic": up.URL}}, false)
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/messages", strings.NewReader(`{"model":"claude-sonnet-4","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"ping"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Bb-Session-Id", "ui-cli-session")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	// The proxy's engine opens after its listener: wait for its
	// endpoint, as a user who runs `bbengine ui` a moment later does.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if r := api.Dial(dir); r != nil && r.Proxy != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the proxy never published its endpoint")
		}
	}
	var out, errb syncBuffer
	// Bounded: a ui that serves by itself (it found no proxy) runs
	// until its context ends.
	uctx, ucancel := context.WithTimeout(context.Background(), time.Minute)
	defer ucancel()
	if code := MainContext(uctx, []string{"bbengine", "--dir", dir, "ui", "--no-open"}, &out, &errb); code != 0 || uctx.Err() != nil {
		t.Fatalf("ui: exit %d (%v)\n%s", code, uctx.Err(), errb.String())
	}
	u := strings.TrimSpace(out.String())
	if !strings.HasPrefix(u, "http://"+addr+"/_bb/ui/?token=") {
		t.Fatalf("ui printed %q, want the proxy's UI at %s", u, addr)
	}
	waitPage(t, u, "ui-cli-session")
	// The proxy's own endpoints still answer beside the UI.
	if resp, err := http.Get("http://" + addr + "/_bb/health"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("health: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	stop()

	ctx, cancel := context.WithCancel(context.Background())
	var out2, errb2 syncBuffer
	done := make(chan int, 1)
	go func() { done <- MainContext(ctx, []string{"bbengine", "--dir", dir, "ui", "--no-open"}, &out2, &errb2) }()
	var u2 string
	for deadline := time.Now().Add(20 * time.Second); u2 == ""; {
		if s := out2.String(); strings.HasSuffix(s, "\n") {
			u2 = strings.TrimSpace(s)
		}
		if time.Now().After(deadline) {
			t.Fatalf("ui printed no URL: %q\n%s", out2.String(), errb2.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.HasPrefix(u2, "http://127.0.0.1:") || strings.HasPrefix(u2, "http://"+addr) {
		t.Fatalf("ui printed %q, want its own loopback server", u2)
	}
	c := waitPage(t, u2, "ui-cli-session")
	// Its health page shows the sizes measured here, says that no proxy
	// runs, and shows no recording or latency figure.
	resp, err = c.Get(strings.Replace(u2[:strings.Index(u2, "?")], webui.Prefix, webui.Prefix+"health", 1))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	health := string(b)
	var walBytes int64
	ents, err := os.ReadDir(filepath.Join(dir, "wal"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() {
			walBytes += info.Size()
		}
	}
	for _, want := range []string{"No proxy is running for " + dir, `id="norecording"`, `id="nolatency"`,
		fmt.Sprintf(`<dd id="walsize">%s (%d bytes)</dd>`, bytesize.Format(walBytes), walBytes), `<dd id="dirsize">`,
		`<dd id="lag">0 bytes behind the WAL: caught up</dd>`} {
		if resp.StatusCode != 200 || !strings.Contains(health, want) {
			t.Errorf("the snapshot's health page (%s) lacks %s:\n%s", resp.Status, want, health)
		}
	}
	for _, bad := range []string{`id="recorded"`, `<svg`, `id="first-count"`} {
		if strings.Contains(health, bad) {
			t.Errorf("the snapshot's health page shows %s, which only a proxy measures", bad)
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("ui: exit %d\n%s", code, errb2.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ui did not stop")
	}
}

// waitPage opens u (a token URL) as a browser would, following the
// redirect with the cookie, until the page holds want; it returns the
// signed-in client.
func waitPage(t *testing.T, u, want string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	var body string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		if resp.StatusCode == 200 && strings.Contains(body, want) {
			if strings.Contains(resp.Request.URL.RawQuery, "token") {
				t.Errorf("the page kept the token in its URL: %s", resp.Request.URL)
			}
			return c
		}
	}
	t.Fatalf("%s never showed %q:\n%s", u, want, body)
	return nil
}
