package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbengine/bbengine/cli"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/proxy/breaker"
)

// What the breaker fake's model does in a session's main conversation.
const (
	brkLoop     = "loop"     // the same failing Bash call, with a new id each time
	brkFinal    = "final"    // a final answer
	brkProgress = "progress" // a new file written, then read, step after step
)

// brkSteps is how many model calls the progress session makes: 49 tool
// calls, then the final answer.
const brkSteps = 50

// brkFake plays the model for the breaker test's sessions. Each session's
// main conversation is known by its marker in the prompt; what the model
// does there is the session's mode, which the test switches.
type brkFake struct {
	mu    sync.Mutex
	mode  map[string]string // marker → brkLoop, brkFinal or brkProgress
	arg   map[string]string // marker → the command a loop repeats, or the directory a progress session writes in
	calls map[string]int    // marker → main-conversation requests answered
	side  []string
}

func newBrkFake() *brkFake {
	return &brkFake{mode: map[string]string{}, arg: map[string]string{}, calls: map[string]int{}}
}

// set makes the model of the session marked mark behave as mode, with
// arg (kept when empty).
func (f *brkFake) set(mark, mode, arg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode[mark] = mode
	if arg != "" {
		f.arg[mark] = arg
	}
}

// callsOf is how many main-conversation requests of mark the model
// answered.
func (f *brkFake) callsOf(mark string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[mark]
}

func (f *brkFake) answer(s *seen, req *amsgRequest, w http.ResponseWriter) {
	rep := areply{id: fmt.Sprintf("msg_01E2eBrk%06d", s.Seq), model: req.Model, stop: "end_turn",
		usage: ausage{Input: int64(len(s.Body) / 4), Output: 12}}
	first := ""
	if len(req.Messages) > 0 {
		for _, b := range req.Messages[0].blocks() {
			first += b.Text
		}
	}
	f.mu.Lock()
	mark := ""
	for m := range f.mode {
		if strings.Contains(first, m) {
			mark = m
		}
	}
	if mark == "" || !req.hasTool("Bash") {
		f.side = append(f.side, fmt.Sprintf("model=%s tools=%d last=%.80q", req.Model, len(req.Tools), lastUserText(req)))
		f.mu.Unlock()
		rep.blocks = []ablock{{Type: "text", Text: "E2E side answer"}}
		rep.write(w, req.Stream)
		return
	}
	f.calls[mark]++
	n, mode, arg := f.calls[mark], f.mode[mark], f.arg[mark]
	f.mu.Unlock()
	id := fmt.Sprintf("toolu_01E2eBrk%010d", s.Seq)
	switch {
	case mode == brkLoop:
		in, _ := json.Marshal(map[string]string{"command": arg, "description": "List the build output"})
		rep.blocks = []ablock{{Type: "text", Text: "Let me look for the build output again."},
			{Type: "tool_use", ID: id, Name: "Bash", Input: in}}
		rep.stop = "tool_use"
	case mode == brkProgress && n < brkSteps:
		// Odd calls write step-NN.txt, even ones read it back: each step
		// changes a file or brings a result unlike any before.
		if bad := failedResults(req); bad != "" {
			rep.blocks = []ablock{{Type: "text", Text: "E2E MISMATCH: a tool failed: " + bad}}
			break
		}
		file := filepath.Join(arg, fmt.Sprintf("step-%02d.txt", (n+1)/2))
		var in []byte
		name := "Read"
		if n%2 == 1 {
			name = "Write"
			in, _ = json.Marshal(map[string]string{"file_path": file, "content": fmt.Sprintf("step %d of %s\n", (n+1)/2, mark)})
		} else {
			in, _ = json.Marshal(map[string]string{"file_path": file})
		}
		rep.blocks = []ablock{{Type: "tool_use", ID: id, Name: name, Input: in}}
		rep.stop = "tool_use"
	default:
		rep.blocks = []ablock{{Type: "text", Text: "E2E breaker done: " + mark}}
	}
	rep.write(w, req.Stream)
}

// failedResults returns the text of the tool results in the request's
// last message that report an error, or "".
func failedResults(req *amsgRequest) string {
	if len(req.Messages) == 0 {
		return ""
	}
	var bad []string
	for _, b := range req.Messages[len(req.Messages)-1].blocks() {
		if b.Type == "tool_result" && b.IsError {
			bad = append(bad, b.resultText())
		}
	}
	return strings.Join(bad, "; ")
}

// brkRig is what the steps of TestClaudeCodeBreaker share: Claude Code,
// its home, the fake upstream and the data directory of the proxy.
type brkRig struct {
	argv              []string
	home, config, tmp string
	apiKey            string
	tw                *tripwire
	up                *fake
	f                 *brkFake
	dir               string
	px                *bbProxy
	mu                sync.Mutex
	debugN            int
}

// claude runs `claude -p prompt` in work through the proxy, with session
// as X-Bb-Session-Id, and returns what it printed and its exit code.
func (r *brkRig) claude(t *testing.T, work, session, prompt string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r.mu.Lock()
	r.debugN++
	debugFile := filepath.Join(r.tmp, fmt.Sprintf("claude-debug-%d.log", r.debugN))
	r.mu.Unlock()
	all := append([]string{"-p", prompt, "--output-format", "text", "--debug-file", debugFile}, args...)
	cmd := exec.CommandContext(ctx, r.argv[0], append(r.argv[1:len(r.argv):len(r.argv)], all...)...)
	cmd.Dir = work
	cmd.Env = append(claudeEnv(os.Getenv("PATH"), r.home, r.config, r.tmp, "http://"+r.px.addr, r.apiKey,
		"ANTHROPIC_CUSTOM_HEADERS=X-Bb-Session-Id: "+session), r.tw.env()...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("claude %s ran for %v: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond), err)
	logOutput(t, "claude stdout", stdout.Bytes())
	logOutput(t, "claude stderr", stderr.Bytes())
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ctx.Err() == nil {
		code = ee.ExitCode()
	} else if err != nil {
		if b, rerr := os.ReadFile(debugFile); rerr == nil {
			logOutput(t, "claude debug", b)
		}
		t.Fatalf("claude: %v (context: %v)", err, ctx.Err())
	}
	return stdout.String() + stderr.String(), code
}

// sessionRequests counts the requests the upstream received from Claude
// Code's session id (its X-Claude-Code-Session-Id).
func (r *brkRig) sessionRequests(id string) int {
	n := 0
	for _, s := range r.up.requests() {
		if s.Header.Get("X-Claude-Code-Session-Id") == id {
			n++
		}
	}
	return n
}

// status runs `bbengine breaker status SESSION --json`.
func (r *brkRig) status(t *testing.T, session string) breaker.Status {
	t.Helper()
	st := bbJSON[breaker.Status](t, r.dir, "breaker", "status", session)
	t.Logf("breaker status %s: %s %s: %s (live %v, config from %s, counters %+v)", session, st.State, st.Reason, st.Detail, st.Live, st.ConfigFrom, st.Counters)
	return st
}

// metric returns the value of one series on the running proxy's
// /_bb/metrics, 0 when it is absent.
func (r *brkRig) metric(t *testing.T, series string) float64 {
	t.Helper()
	resp, err := http.Get("http://" + r.px.addr + "/_bb/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %q", series, v)
			}
			return f
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return 0
}

// newUUID returns a random version 4 UUID, for Claude Code's
// --session-id.
func newUUID() string {
	h := randomHex(16)
	return h[0:8] + "-" + h[8:12] + "-4" + h[13:16] + "-8" + h[17:20] + "-" + h[20:32]
}

// TestClaudeCodeBreaker is issue 9's acceptance test: Claude Code,
// through `bbengine proxy`, against a scripted model that repeats the
// same failing Bash call.
//
//  1. The breaker opens at the third stagnant call (the default
//     threshold). Call 1 brings the prompt and call 2 the first failed
//     ls; calls 3, 4 and 5 each tell of the same call as the one before,
//     so the upstream sees exactly four requests and the fifth is refused
//     with Anthropic's 429. Claude Code 2.1.330 honours X-Should-Retry:
//     false: it neither retries nor waits for Retry-After; `claude -p`
//     exits 1 at once and prints "API Error: Request rejected (429) · "
//     and the breaker's message.
//  2. The proxy restarts on the same data directory: the session is
//     still open, and its next requests (a plain POST, and Claude Code
//     resuming the session) are refused without reaching the upstream.
//  3. `bbengine breaker reset` lets the resumed session finish.
//  4. `bbengine show` has the trip as @escalate and the reset as @notify.
//  5. A project's bbengine.yaml that sets stagnation_threshold: 5 makes
//     its session (run in a directory below it) trip at the fifth
//     stagnant call instead: six requests reach the upstream.
//  6. A session that makes progress at every step runs 50 model calls,
//     more than every loop threshold, and is never tripped.
func TestClaudeCodeBreaker(t *testing.T) {
	nodeModules := requireNodeModules(t)
	argv, version := claudeCommand(t, nodeModules)
	t.Logf("Claude Code %s", version)
	// Claude Code states its working directory with symbolic links
	// resolved (macOS's /var is /private/var); so does the test.
	tmp, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &brkRig{argv: argv, tmp: tmp, home: filepath.Join(tmp, "home"), config: filepath.Join(tmp, "config"),
		apiKey: "sk-ant-api03-fake" + randomHex(24) + "-E2E", tw: newTripwire(t), f: newBrkFake(), dir: filepath.Join(tmp, "data")}
	work := filepath.Join(tmp, "work")
	proj := filepath.Join(tmp, "project")
	sub := filepath.Join(proj, "cmd", "tool")
	for _, d := range []string{r.home, r.config, work, sub} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r.up = newFake(t, messagesAPI(r.f.answer))
	loopbackOnly(t, r.up.URL)
	r.px = startProxy(t, r.dir, r.up.URL)
	loopbackOnly(t, "http://"+r.px.addr)

	// 1. The loop trips the breaker at the default threshold.
	nonce := randomHex(6)
	mark := "E2E-BRK-LOOP-" + nonce
	cmdline := "ls /nonexistent-" + nonce
	session := "e2e-breaker-loop-" + nonce
	ccSession := newUUID()
	r.f.set(mark, brkLoop, cmdline)
	out, code := r.claude(t, work, session, mark+": find the build output.",
		"--session-id", ccSession, "--allowedTools", "Bash("+cmdline+")")
	wantMsg := "bbengine circuit breaker: session " + session + " is open (stagnation): 3 stagnant calls in a row (threshold 3)"
	if code != 1 || !strings.Contains(out, wantMsg) || !strings.Contains(out, "`bbengine breaker reset "+session+"` resumes it now") {
		t.Fatalf("claude exited %d printing %q, want exit 1 with %q", code, out, wantMsg)
	}
	if n := r.f.callsOf(mark); n != 4 {
		t.Errorf("the upstream answered %d calls of the looping conversation, want 4 (the third stagnant call is the fifth)", n)
	}
	if n := r.sessionRequests(ccSession); n != 4 {
		t.Errorf("the upstream received %d requests of the session, want 4", n)
	}
	if got := r.metric(t, `bbengine_breaker_trips_total{reason="stagnation"}`); got != 1 {
		t.Errorf("trips: %v, want 1", got)
	}
	if got := r.metric(t, `bbengine_breaker_refused_total{reason="stagnation"}`); got != 1 {
		t.Errorf("refused requests: %v, want 1 (Claude Code should not retry)", got)
	}
	wantDetail := fmt.Sprintf(`3 stagnant calls in a row (threshold 3): the same call again: Bash {"command":%q,"description":"List the build output"}`, cmdline)
	st := r.status(t, session)
	checkOpen(t, st, session, wantDetail, "defaults", 3)
	if !st.Live {
		t.Errorf("status of a running proxy: live false")
	}
	if c := st.Counters; c.Calls != 4 || c.Stagnant != 3 || c.SinceProgress != 4 || c.Progressed {
		t.Errorf("counters %+v, want 4 calls, 3 stagnant, 4 since progress, never progressed", c)
	}
	tripped := st
	// The breaker knows the session by X-Bb-Session-Id, not by Claude
	// Code's own id.
	var sout, serr bytes.Buffer
	if code := cli.Main([]string{"bbengine", "--dir", r.dir, "breaker", "status", ccSession, "--json"}, &sout, &serr); code != 1 || !strings.Contains(serr.String(), ccSession) {
		t.Errorf("breaker status of an unknown session: exit %d, %q %q; want 1 and a message naming it", code, sout.String(), serr.String())
	}

	// 2. Across a restart the session stays open.
	r.px.stop(t)
	st = r.status(t, session)
	if st.Live || st.State != exchange.BreakerOpen || st.Reason != "stagnation" || st.Detail != wantDetail || !st.Until.Equal(tripped.Until) || st.Counters.Calls != 4 {
		t.Errorf("status from the records: %+v, want open (stagnation) until %v, not live", st, tripped.Until)
	}
	upstreamN := len(r.up.requests())
	r.px = startProxy(t, r.dir, r.up.URL)
	st = r.status(t, session)
	checkOpen(t, st, session, wantDetail, "defaults", 3)
	if !st.Live || !st.Until.Equal(tripped.Until) {
		t.Errorf("after the restart: live %v, until %v; want live, until %v", st.Live, st.Until, tripped.Until)
	}
	checkRefused(t, r.px.addr, session, wantMsg, tripped.Until)
	out, code = r.claude(t, work, session, mark+": try once more.", "--resume", ccSession, "--allowedTools", "Bash("+cmdline+")")
	if code != 1 || !strings.Contains(out, wantMsg) {
		t.Errorf("claude --resume of the open session exited %d printing %q, want exit 1 with %q", code, out, wantMsg)
	}
	if n := len(r.up.requests()); n != upstreamN {
		t.Errorf("the upstream received %d requests while the session was open", n-upstreamN)
	}
	refused := r.metric(t, `bbengine_breaker_refused_total{reason="stagnation"}`)
	if refused != 2 {
		t.Errorf("refused after the restart: %v, want 2 (the POST and Claude Code's one request)", refused)
	}

	// 3. A reset lets the session go on.
	if out := bb(t, r.dir, "breaker", "reset", session); !strings.Contains(out, session) {
		t.Errorf("breaker reset printed %q", out)
	}
	st = r.status(t, session)
	if st.State != exchange.BreakerClosed || len(st.Transitions) == 0 {
		t.Fatalf("after the reset: %+v", st)
	}
	if last := st.Transitions[len(st.Transitions)-1]; last.Op != "reset" || last.State != exchange.BreakerClosed || last.From != exchange.BreakerOpen {
		t.Errorf("the last transition is %+v, want a reset from open to closed", last)
	}
	r.f.set(mark, brkFinal, "")
	out, code = r.claude(t, work, session, mark+": say where the build output is.", "--resume", ccSession, "--allowedTools", "Bash("+cmdline+")")
	if code != 0 || !strings.Contains(out, "E2E breaker done: "+mark) {
		t.Fatalf("claude --resume after the reset exited %d printing %q", code, out)
	}
	if n := r.f.callsOf(mark); n != 5 {
		t.Errorf("the looping conversation reached the upstream %d times in all, want 5", n)
	}
	st = r.status(t, session)
	if st.State != exchange.BreakerClosed || st.Counters.Calls != 5 {
		t.Errorf("after the resumed run: state %s, %d calls; want closed, 5", st.State, st.Counters.Calls)
	}

	// 4. The timeline shows the trip and the reset.
	checkShowBreaker(t, r.dir, session)

	// 5. A project's own threshold.
	pnonce := randomHex(6)
	pmark := "E2E-BRK-PROJECT-" + pnonce
	pcmd := "ls /nonexistent-" + pnonce
	psession := "e2e-breaker-project-" + pnonce
	projFile := filepath.Join(proj, "bbengine.yaml")
	if err := os.WriteFile(projFile, []byte("circuit_breaker: {stagnation_threshold: 5}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.f.set(pmark, brkLoop, pcmd)
	out, code = r.claude(t, sub, psession, pmark+": find the build output.", "--allowedTools", "Bash("+pcmd+")")
	pMsg := "bbengine circuit breaker: session " + psession + " is open (stagnation): 5 stagnant calls in a row (threshold 5)"
	if code != 1 || !strings.Contains(out, pMsg) {
		t.Fatalf("claude exited %d printing %q, want exit 1 with %q", code, out, pMsg)
	}
	if n := r.f.callsOf(pmark); n != 6 {
		t.Errorf("the upstream answered %d calls of the project's loop, want 6 (the fifth stagnant call is the seventh)", n)
	}
	st = r.status(t, psession)
	checkOpen(t, st, psession, fmt.Sprintf(`5 stagnant calls in a row (threshold 5): the same call again: Bash {"command":%q,"description":"List the build output"}`, pcmd), projFile, 5)
	if c := st.Config; c != nil && (c.NoProgress != 10 || c.NeverProgress != 20 || c.Cooldown != 300) {
		t.Errorf("the project's config %+v: the thresholds it does not set should keep their defaults", *c)
	}

	// 6. No false positive: progress at every step. The real claude -p
	// makes the 50 calls in about 3 s.
	gnonce := randomHex(6)
	gmark := "E2E-BRK-PROGRESS-" + gnonce
	gsession := "e2e-breaker-progress-" + gnonce
	gwork := filepath.Join(tmp, "progress")
	if err := os.MkdirAll(gwork, 0o755); err != nil {
		t.Fatal(err)
	}
	gcc := newUUID()
	r.f.set(gmark, brkProgress, gwork)
	trips := r.metric(t, `bbengine_breaker_trips_total{reason="stagnation"}`)
	out, code = r.claude(t, gwork, gsession, gmark+": write the step files.", "--session-id", gcc, "--allowedTools", "Write", "Read")
	if code != 0 || !strings.Contains(out, "E2E breaker done: "+gmark) {
		t.Fatalf("the progressing session exited %d printing %q", code, out)
	}
	if n := r.f.callsOf(gmark); n != brkSteps {
		t.Errorf("the progressing session made %d model calls, want %d", n, brkSteps)
	}
	st = r.status(t, gsession)
	if st.State != exchange.BreakerClosed || st.Reason != "" || len(st.Transitions) != 0 {
		t.Errorf("the progressing session: %s %s %q, transitions %+v; want closed, never changed", st.State, st.Reason, st.Detail, st.Transitions)
	}
	if n := r.sessionRequests(gcc); n != brkSteps {
		t.Errorf("the upstream received %d requests of the progressing session, want %d", n, brkSteps)
	}
	// The last call brought the result of the last Write.
	c := st.Counters
	if c.Calls != brkSteps || c.Stagnant != 0 || c.SinceProgress != 0 || !c.Progressed || c.Signal != "file changed: "+filepath.Join(gwork, fmt.Sprintf("step-%02d.txt", brkSteps/2)) {
		t.Errorf("the progressing session's counters %+v: want %d calls, progress at the last step", c, brkSteps)
	}
	if got := r.metric(t, `bbengine_breaker_trips_total{reason="stagnation"}`); got != trips {
		t.Errorf("trips went from %v to %v during the progressing session", trips, got)
	}
	for _, name := range []string{"no_progress", "never_progress"} {
		if got := r.metric(t, `bbengine_breaker_trips_total{reason="`+name+`"}`); got != 0 {
			t.Errorf("%s trips: %v", name, got)
		}
	}

	// Every session the breaker knows, open ones first.
	list := bbJSON[[]breaker.Status](t, r.dir, "breaker", "status")
	var got []string
	for _, s := range list {
		got = append(got, s.Session+" "+s.State)
	}
	want := []string{psession + " open", gsession + " closed", session + " closed"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("breaker status lists %q, want %q", got, want)
	}

	r.f.mu.Lock()
	for _, s := range r.f.side {
		t.Logf("side request: %s", s)
	}
	r.f.mu.Unlock()
	if a := r.tw.attempts(); len(a) > 0 {
		t.Errorf("Claude Code tried to reach the outside: %v", a)
	}
	scanFiles(t, r.dir, r.apiKey)
}

// checkOpen checks the status of a session the stagnation rule opened.
func checkOpen(t *testing.T, st breaker.Status, session, detail, from string, threshold int64) {
	t.Helper()
	if st.Session != session || st.State != exchange.BreakerOpen || st.Reason != "stagnation" || st.Detail != detail {
		t.Errorf("status: session %s, %s (%s): %q\nwant %s open (stagnation): %q", st.Session, st.State, st.Reason, st.Detail, session, detail)
	}
	if st.ConfigFrom != from || st.Config == nil || st.Config.Stagnation != threshold {
		t.Errorf("status: config %+v from %q, want stagnation_threshold %d from %q", st.Config, st.ConfigFrom, threshold, from)
	}
	if d := st.Until.Sub(st.Since); d != 300*time.Second {
		t.Errorf("status: open from %v until %v (%v), want the 300 s cooldown", st.Since, st.Until, d)
	}
	if st.Counters.Stagnation == "" || !strings.Contains(detail, st.Counters.Stagnation) {
		t.Errorf("status: counters say the stagnation was %q", st.Counters.Stagnation)
	}
	if len(st.Transitions) == 0 {
		t.Errorf("status: no transitions")
		return
	}
	if last := st.Transitions[len(st.Transitions)-1]; last.Op != "trip" || last.State != exchange.BreakerOpen || last.From != exchange.BreakerClosed || last.Reason != "stagnation" || last.Session != session {
		t.Errorf("the last transition is %+v, want a trip of %s from closed for stagnation", last, session)
	}
}

// checkRefused posts a Messages request of session to the proxy and
// checks it gets Anthropic's 429 with the breaker's message, and the
// headers that tell a client not to retry now and when a probe may pass
// (the breaker opened until then).
func checkRefused(t *testing.T, addr, session, msg string, until time.Time) {
	t.Helper()
	body := `{"model":"claude-sonnet-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"are you there?"}]}`
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/messages", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("X-Api-Key", "sk-ant-api03-fake-e2e-plain-post")
	req.Header.Set("X-Bb-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != http.StatusTooManyRequests || e.Type != "error" || e.Error.Type != "rate_limit_error" || !strings.HasPrefix(e.Error.Message, msg) {
		t.Errorf("POST of the open session: %d %s (%v), want 429 rate_limit_error %q", resp.StatusCode, b, err, msg)
	}
	left := time.Until(until).Seconds()
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || float64(ra) < left-2 || float64(ra) > left+2 {
		t.Errorf("Retry-After %q, want the cooldown left (%.0f s)", resp.Header.Get("Retry-After"), left)
	}
	if got := resp.Header.Get("X-Should-Retry"); got != "false" {
		t.Errorf("X-Should-Retry %q, want false", got)
	}
}

// checkShowBreaker waits for the session's timeline to show the trip as
// @escalate and the reset as @notify.
func checkShowBreaker(t *testing.T, dir, session string) {
	t.Helper()
	var text string
	for deadline := time.Now().Add(20 * time.Second); ; {
		text = bb(t, dir, "show", session)
		if strings.Contains(text, "@escalate") && strings.Contains(text, "@notify") || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var esc, note []string
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "@escalate"):
			esc = append(esc, l)
		case strings.HasPrefix(l, "@notify"):
			note = append(note, l)
		}
	}
	for _, l := range append(esc, note...) {
		t.Logf("bbengine show %s: %s", session, l)
	}
	if len(esc) != 1 || !strings.HasPrefix(esc[0], `@escalate "circuit breaker opened (stagnation): 3 stagnant calls in a row (threshold 3): `) ||
		!strings.Contains(esc[0], " state=open from=closed reason=stagnation calls=4 since_progress=4 stagnant=3 source=proxy until=") {
		t.Errorf("show: @escalate lines %q, want one for the stagnation trip\n%s", esc, text)
	}
	if len(note) != 1 || !strings.HasPrefix(note[0], `@notify "circuit breaker reset: reset by `) ||
		!strings.Contains(note[0], " state=closed from=open reason=manual calls=4 since_progress=0 stagnant=0 ") {
		t.Errorf("show: @notify lines %q, want one for the reset\n%s", note, text)
	}
}
