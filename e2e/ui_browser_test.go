package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api/webui"
	"github.com/bbengine/bbengine/server"
	"github.com/bbengine/bbengine/wal"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// The web UI's browser tests drive headless Chromium (Debian's chromium
// package, which .ci/run installs) against a real proxy on 127.0.0.1
// recording traffic from a fake Anthropic upstream. They skip when no
// browser is found. BBENGINE_UI_SCREENSHOT=<file> also writes the
// timeline's screenshot there (docs/ui-timeline.png).

// uiDecision is a user message that states a decision.
const uiDecision = "We decided to use BoltDB for the job queue because it needs no server."

// jsQuote quotes s for a JavaScript string literal.
func jsQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// uiXSS is tool output and model text that must render inert.
const uiXSS = `<script>alert(1)</script> <a href="javascript:alert(1)">click</a> <img src=x onerror=alert(1)>`

// findChromium returns the path of a Chromium or Chrome, or skips.
func findChromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium or Chrome found (apt-get install chromium)")
	return ""
}

// uiProxy is a proxy started as `bbengine proxy` starts it, in this
// process, with a fake upstream that answers a coding session.
type uiProxy struct {
	dir, addr, token string
}

func startUIProxy(t testing.TB) *uiProxy {
	t.Helper()
	up := newFake(t, answerCoding)
	px := &uiProxy{dir: t.TempDir()}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	var logs syncBuffer
	cfg := server.Config{Dir: px.dir, Listen: "127.0.0.1:0", Sync: wal.SyncInterval, Shutdown: 5 * time.Second}
	cfg.Proxy.Upstreams = map[string]string{"anthropic": up.URL}
	go func() { done <- server.Run(ctx, io.Discard, &logs, cfg, ready) }()
	select {
	case px.addr = <-ready:
	case err := <-done:
		cancel()
		t.Fatalf("proxy: %v\n%s", err, logs.String())
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("proxy: %v\n%s", err, logs.String())
		}
	})
	b, err := os.ReadFile(filepath.Join(px.dir, server.UITokenFile))
	if err != nil {
		t.Fatal(err)
	}
	px.token = strings.TrimSpace(string(b))
	return px
}

// answerCoding answers like a coding model: a thinking block and a Bash
// call first, then, once the tool result is in, a text that repeats it.
func answerCoding(s *seen, w http.ResponseWriter) {
	var req amsgRequest
	json.Unmarshal(s.Body, &req)
	var content []any
	if res := req.toolResults(); len(res) > 0 {
		content = []any{map[string]any{"type": "text", "text": "The tests pass. The cache keeps entries for an hour (`ttl = time.Hour` in cache/cache.go); the tool printed:\n\n" + res["toolu_01"].resultText()}}
	} else {
		content = []any{
			map[string]any{"type": "thinking", "thinking": "The user wants to know whether the cache tests pass. Run them first, then read the TTL.", "signature": "sig-1"},
			map[string]any{"type": "text", "text": "Let me run the cache tests."},
			map[string]any{"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": map[string]any{"command": "go test ./cache/...", "description": "Run the cache tests"}},
		}
	}
	b, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("msg_%02d", s.Seq), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
		"content": content, "stop_reason": "end_turn", "usage": map[string]any{"input_tokens": 1800 + 300*s.Seq, "output_tokens": 90, "cache_read_input_tokens": 1200}})
	writeJSON(w, 200, string(b))
}

// send posts one Messages request of session through the proxy and
// returns the body it sent.
func (px *uiProxy) send(t testing.TB, session, messages string) string {
	t.Helper()
	body := `{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":` + messages + `}`
	req, _ := http.NewRequest("POST", "http://"+px.addr+"/v1/messages", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("User-Agent", "claude-cli/2.1.0 (external, cli)")
	req.Header.Set("X-Bb-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("proxy answered %d", resp.StatusCode)
	}
	return body
}

// codingSession records a two-request session: a question, a Bash call,
// its result (out) and the answer. It returns the second request's body.
func (px *uiProxy) codingSession(t *testing.T, session, out string) string {
	t.Helper()
	q := `{"role":"user","content":"Do the cache tests pass, and how long does the cache keep entries?"}`
	px.send(t, session, "["+q+"]")
	res, _ := json.Marshal(out)
	return px.send(t, session, "["+q+`,{"role":"assistant","content":[{"type":"thinking","thinking":"The user wants to know whether the cache tests pass. Run them first, then read the TTL.","signature":"sig-1"},{"type":"text","text":"Let me run the cache tests."},{"type":"tool_use","id":"toolu_01","name":"Bash","input":{"command":"go test ./cache/...","description":"Run the cache tests"}}]},`+
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":`+string(res)+`}]}]`)
}

// TestUIBrowser drives headless Chromium through the UI: refused without
// the cookie, signed in by the token URL, a session recorded meanwhile
// appears live, an event's raw frames link shows the stored bytes, and
// a session full of markup renders inert.
func TestUIBrowser(t *testing.T) {
	chrome := findChromium(t)
	px := startUIProxy(t)
	base := "http://" + px.addr + "/_bb/ui/"

	actx, cancelA := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chrome), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900),
		// A name that resolves to the proxy's loopback address, as a
		// DNS rebinding attack makes one.
		chromedp.Flag("host-resolver-rules", "MAP rebound.test 127.0.0.1"))...)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelT := context.WithTimeout(ctx, 4*time.Minute)
	defer cancelT()
	var shot func(string)
	do := func(steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		// Derivation runs at nice 19: on a machine busy with other
		// tests a new session may take long to show.
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := chromedp.Do(sctx, steps...); err != nil {
			shot("failed")
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var dialogs []string
	opening := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range opening {
			if err != nil {
				return
			}
			mu.Lock()
			dialogs = append(dialogs, ev.Message)
			mu.Unlock()
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
		}
	}()
	shots := t.ArtifactDir()
	shot = func(name string) {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Errorf("screenshot %s: %v", name, err)
			return
		}
		os.WriteFile(filepath.Join(shots, name+".png"), png, 0o600)
	}
	location := func() string {
		loc, err := chromedp.Run(ctx, chromedp.Location())
		if err != nil {
			t.Fatal(err)
		}
		return loc
	}

	// Without the cookie: refused.
	do(chromedp.Navigate(base))
	text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "401") || !strings.Contains(text, "not signed in") {
		t.Fatalf("without the cookie the page says %q", text)
	}
	shot("refused")

	// The token URL signs in and leaves the address bar without it.
	do(chromedp.Navigate(base+"?token="+webui.Ticket(px.token, time.Now())), chromedp.WaitVisible(chromedp.ID("live")))
	if loc := location(); loc != base {
		t.Errorf("after signing in the URL is %q, want %q", loc, base)
	}

	// A session recorded now appears without a reload.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.bbMarker = 1, true`)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	body := px.codingSession(t, "live-session-1", "ok  \texample.com/cache\t0.012s\nPASS")
	do(chromedp.WaitVisible(chromedp.CSS(`tr[data-id="live-session-1"]`)))
	t.Logf("the new session showed %v after it was recorded", time.Since(start).Round(time.Millisecond))
	if marked, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.bbMarker === 1`)); err != nil || !marked {
		t.Errorf("the page reloaded to show the new session (%v)", err)
	}
	shot("sessions")

	// Timeline: open the session, then the raw frames of its tool
	// result (from the second request).
	do(chromedp.Click(chromedp.CSS(`tr[data-id="live-session-1"] a.sid`)), chromedp.WaitVisible(chromedp.CSS(`li.ev`)))
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("li.ev").length`)); err != nil || n < 8 {
		t.Errorf("the timeline shows %d events (%v)", n, err)
	}
	shot("timeline")
	if f := os.Getenv("BBENGINE_UI_SCREENSHOT"); f != "" {
		do(chromedp.EmulateViewport(1100, 860))
		png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, png, 0o644); err != nil {
			t.Fatal(err)
		}
		do(chromedp.ResetViewport())
	}
	evID, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(function(){const a=document.querySelectorAll("li.k-tool_result a.frames"); return a[a.length-1].closest("li").id})()`))
	if err != nil {
		t.Fatal(err)
	}
	do(chromedp.Click(chromedp.CSS("#"+evID+" a.frames")), chromedp.WaitVisible(chromedp.ID("back")))
	frames, err := chromedp.Run(ctx, chromedp.Evaluate[[]struct{ Kind, Payload string }](`Array.from(document.querySelectorAll("li.frame.mark")).map(li => ({Kind: li.querySelector(".lbl").textContent, Payload: (li.querySelector("pre.payload")||{}).textContent||""}))`))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range frames {
		if f.Kind == "request-body" {
			found = true
			if f.Payload != body {
				t.Errorf("the request body frame shows\n%q\nsent\n%q", f.Payload, body)
			}
		}
	}
	if !found {
		t.Errorf("no marked request-body frame among %+v", frames)
	}
	shot("frames")
	// And back to the event.
	do(chromedp.Click(chromedp.ID("back")), chromedp.WaitVisible(chromedp.CSS(`li.ev`)))
	if loc := location(); !strings.HasSuffix(loc, "#"+evID) {
		t.Errorf("back to %q, want the event %s", loc, evID)
	}

	// A session full of markup renders as text.
	px.codingSession(t, "xss-session", uiXSS)
	do(chromedp.Navigate(base))
	do(chromedp.WaitVisible(chromedp.CSS(`tr[data-id="xss-session"]`)))
	do(chromedp.Navigate(base + "s/xss-session"))
	do(chromedp.WaitVisible(chromedp.CSS(`li.k-tool_result`)))
	injected, err := chromedp.Run(ctx, chromedp.Evaluate[struct{ Scripts, Imgs, JSLinks, Shown int }](`({
		Scripts: document.scripts.length,
		Imgs: document.querySelectorAll("img").length,
		JSLinks: Array.from(document.querySelectorAll("a")).filter(a => a.href.startsWith("javascript:")).length,
		Shown: Array.from(document.querySelectorAll("pre.txt")).filter(p => p.textContent.includes("<script>alert(1)</script>")).length,
	})`))
	if err != nil {
		t.Fatal(err)
	}
	if injected.Scripts != 1 || injected.Imgs != 0 || injected.JSLinks != 0 {
		t.Errorf("injected elements: %+v (want only ui.js)", injected)
	}
	if injected.Shown < 2 {
		t.Errorf("the markup shows as text in %d places, want the tool result and the answer at least", injected.Shown)
	}
	shot("xss")

	// Memory: a session whose user states a decision. From the decision's
	// card to its evidence event, to the raw frame holding its words.
	memBody := px.send(t, "memory-session", `[{"role":"user","content":"`+uiDecision+`"}]`)
	waitFor := func(url, sel string) {
		t.Helper()
		// The proxy derives memory and syncs its index in the
		// background: load the page again until it shows.
		deadline := time.Now().Add(time.Minute)
		for {
			do(chromedp.Navigate(url))
			n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(`+jsQuote(sel)+`).length`))
			if err == nil && n > 0 {
				return
			}
			if time.Now().After(deadline) {
				shot("memory-missing")
				t.Fatalf("%s shows no %s after a minute (%v)", url, sel, err)
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	waitFor(base+"s/memory-session", `a#memory`)
	do(chromedp.Click(chromedp.ID("memory")), chromedp.WaitVisible(chromedp.CSS(`h1`)))
	waitFor(location(), `li.c-decision`)
	shot("memory")
	do(chromedp.Click(chromedp.CSS(`li.c-decision a.aid`)), chromedp.WaitVisible(chromedp.CSS(`li.evidence`)))
	artURL := location()
	shot("artifact")
	do(chromedp.Click(chromedp.CSS(`li.evidence a.timeline`)), chromedp.WaitVisible(chromedp.CSS(`li.ev:target`)))
	target, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("li.ev:target pre.txt").textContent`))
	if err != nil || !strings.Contains(target, uiDecision) {
		t.Errorf("the evidence link shows the event %q (%v), want the decision's message", target, err)
	}
	do(chromedp.Navigate(artURL), chromedp.WaitVisible(chromedp.CSS(`li.evidence a.frames`)))
	do(chromedp.Click(chromedp.CSS(`li.evidence a.frames`)), chromedp.WaitVisible(chromedp.ID("back")))
	frames, err = chromedp.Run(ctx, chromedp.Evaluate[[]struct{ Kind, Payload string }](`Array.from(document.querySelectorAll("li.frame.mark")).map(li => ({Kind: li.querySelector(".lbl").textContent, Payload: (li.querySelector("pre.payload")||{}).textContent||""}))`))
	if err != nil {
		t.Fatal(err)
	}
	found = false
	for _, f := range frames {
		if f.Kind == "request-body" {
			found = f.Payload == memBody
		}
	}
	if !found {
		t.Errorf("the decision's raw frames hold no request-body frame equal to the body sent %q: %+v", memBody, frames)
	}
	shot("decision-frames")

	// Search finds it, the query's words marked.
	waitFor(base+"search?q="+url.QueryEscape("BoltDB job queue")+"&type=decision", `li.c-decision mark`)
	marks, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("li.c-decision .ctitle mark")).map(m => m.textContent)`))
	if err != nil || !slices.Contains(marks, "BoltDB") {
		t.Errorf("the search result marks %q (%v), want BoltDB", marks, err)
	}
	shot("search")

	// The pack preview is what `bbengine mem context` prints.
	task := "add a retry to the job queue"
	do(chromedp.Navigate(base+"pack?session=memory-session&task="+url.QueryEscape(task)), chromedp.WaitVisible(chromedp.ID("pack")))
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("pack").textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if want := bb(t, px.dir, "mem", "context", "--session", "memory-session", "--task", task); shown != want {
		t.Errorf("the pack preview shows\n%s\nmem context prints\n%s", shown, want)
	}
	shot("pack")

	// Forget from the decision's page: the correction is in the proxy's
	// WAL and memory at once, as `bbengine mem forget` would have it.
	decID := artURL[strings.LastIndex(artURL, "/")+1:]
	do(chromedp.Navigate(artURL), chromedp.WaitVisible(chromedp.CSS(`form.correct button[value="forget"]`)))
	do(chromedp.SendKeys(chromedp.CSS(`form.correct input[name="reason"]`), "decided in the meeting instead"),
		chromedp.Click(chromedp.CSS(`form.correct button[value="forget"]`)),
		chromedp.WaitVisible(chromedp.CSS(`form.correct button[value="unforget"]`)))
	if loc := location(); loc != artURL {
		t.Errorf("after forget the browser is at %s, want %s", loc, artURL)
	}
	shot("forgotten")
	got := bbJSON[struct {
		Forgotten bool `json:"forgotten"`
	}](t, px.dir, "mem", "get", decID)
	if !got.Forgotten {
		t.Errorf("after the UI's forget, bbengine mem get %s says it is not forgotten", decID)
	}
	do(chromedp.Click(chromedp.CSS(`form.correct button[value="unforget"]`)),
		chromedp.WaitVisible(chromedp.CSS(`form.correct button[value="forget"]`)))

	// Health: the proxy's added latency drawn as SVG, one bar per bucket.
	do(chromedp.Navigate(base+"health"), chromedp.WaitVisible(chromedp.CSS(`svg.hist`)))
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("svg.hist rect.bar").length`))
	if err != nil || bars == 0 {
		t.Errorf("the health page draws %d bars (%v)", bars, err)
	}
	shot("health")

	// Usage: tokens and cost drawn as SVG, the costliest sessions linked.
	do(chromedp.Navigate(base+"usage"), chromedp.WaitVisible(chromedp.CSS(`svg.chart`)))
	usage, err := chromedp.Run(ctx, chromedp.Evaluate[struct{ Charts, Sessions int }](`({Charts: document.querySelectorAll("svg.chart").length,
		Sessions: document.querySelectorAll("a[href^='/_bb/ui/s/']").length})`))
	if err != nil || usage.Charts < 2 || usage.Sessions == 0 {
		t.Errorf("the usage page: %+v (%v), want two charts and session links", usage, err)
	}
	shot("usage")
	// A rebound name (rebound.test resolves to 127.0.0.1) is refused,
	// cookie or not.
	_, port, _ := strings.Cut(px.addr, ":")
	do(chromedp.Navigate("http://rebound.test:" + port + "/_bb/ui/"))
	if text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body"))); err != nil || !strings.Contains(text, "421") {
		t.Errorf("a rebound Host shows %q (%v), want 421", text, err)
	}
	shot("rebound")

	// A page of another loopback port (the same site: the cookie goes
	// with it) posts a forget of the decision: refused.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><form method="post" action="%scorrect"><input name="id" value="%s"><input name="op" value="forget"><button id="go">go</button></form>`, base, decID)
	}))
	defer evil.Close()
	do(chromedp.Navigate(evil.URL), chromedp.Click(chromedp.ID("go")), chromedp.WaitVisible(chromedp.CSS("h1")))
	if text, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body"))); err != nil || !strings.Contains(text, "403") {
		t.Errorf("another port's form posted to the UI shows %q (%v), want 403", text, err)
	}
	shot("cross-site")
	if got := bbJSON[struct {
		Forgotten bool `json:"forgotten"`
	}](t, px.dir, "mem", "get", decID); got.Forgotten {
		t.Errorf("another port's form forgot %s", decID)
	}

	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	if len(dialogs) > 0 {
		t.Errorf("dialogs opened: %q", dialogs)
	}
	mu.Unlock()
}
