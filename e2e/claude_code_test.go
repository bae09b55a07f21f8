package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbengine/bbengine/api"
	"github.com/bbengine/bbengine/cli"
	"github.com/bbengine/bbengine/codec/census"
	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/engine"
)

// ccMarker is in the prompt; the fake recognises the main conversation by
// it (side requests, such as title generation, carry no tools).
const ccMarker = "E2E-MARKER-7d1c"

// ccFake plays the model for one Claude Code session: first a Bash
// tool_use (echo hello), then, once its tool_result is back, a Read of a
// file in the project, then final text quoting both results.
type ccFake struct {
	note, nonce string
	mu          sync.Mutex
	usage       map[int]ausage // by X-E2e-Seq, for /v1/messages
	side        []string       // what the side requests were
}

const (
	ccBashID = "toolu_01E2eBashEchoHello0000"
	ccReadID = "toolu_01E2eReadNoteFile00000"
)

func (c *ccFake) finalText(bash, read ablock) string {
	if bash.IsError || strings.TrimSpace(bash.resultText()) != "hello" || read.IsError || !strings.Contains(read.resultText(), c.nonce) {
		return fmt.Sprintf("E2E MISMATCH: bash result %q (error %v), read result %q (error %v)", bash.resultText(), bash.IsError, read.resultText(), read.IsError)
	}
	return "E2E done: bash said hello; the note says " + c.nonce + "."
}

func (c *ccFake) answer(s *seen, req *amsgRequest, w http.ResponseWriter) {
	rep := areply{id: fmt.Sprintf("msg_01E2e%06d", s.Seq), model: req.Model, stop: "end_turn",
		usage: ausage{Input: int64(len(s.Body) / 4), Output: 7}}
	results := req.toolResults()
	bash, haveBash := results[ccBashID]
	read, haveRead := results[ccReadID]
	switch {
	case !req.hasTool("Bash") || !strings.Contains(req.allText(), ccMarker):
		// A side request: title, topic, quota probe and the like.
		c.mu.Lock()
		c.side = append(c.side, fmt.Sprintf("model=%s max_tokens=%d stream=%v tools=%d", req.Model, req.MaxTokens, req.Stream, len(req.Tools)))
		c.mu.Unlock()
		rep.blocks = []ablock{{Type: "text", Text: "E2E side answer"}}
		rep.usage.Output = 3
	case !haveBash:
		rep.blocks = []ablock{
			{Type: "text", Text: "I will run the command."},
			{Type: "tool_use", ID: ccBashID, Name: "Bash", Input: json.RawMessage(`{"command":"echo hello","description":"Print hello"}`)},
		}
		rep.stop = "tool_use"
		rep.usage.CacheCreation = 1200
		rep.usage.Output = 31
	case !haveRead:
		in, _ := json.Marshal(map[string]string{"file_path": c.note})
		rep.blocks = []ablock{{Type: "tool_use", ID: ccReadID, Name: "Read", Input: in}}
		rep.stop = "tool_use"
		rep.usage.CacheRead = 1200
		rep.usage.Output = 23
	default:
		rep.blocks = []ablock{{Type: "text", Text: c.finalText(bash, read)}}
		rep.usage.CacheRead = 2400
		rep.usage.Output = 17
	}
	c.mu.Lock()
	c.usage[s.Seq] = rep.usage
	c.mu.Unlock()
	rep.write(w, req.Stream)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// claudeCommand returns how to run the installed Claude Code: the native
// binary that npm's postinstall put at node_modules/.bin/claude, or, when
// install scripts did not run, `node cli-wrapper.cjs`, the package's own
// fallback launcher. It also returns the version the command reports.
func claudeCommand(t *testing.T, dir string) ([]string, string) {
	t.Helper()
	pkg := filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code")
	if _, err := os.Stat(pkg); err != nil {
		t.Fatalf("Claude Code is not installed (run `npm ci --prefix e2e/node`): %v", err)
	}
	var errs []string
	for _, argv := range [][]string{
		{filepath.Join(dir, "node_modules", ".bin", "claude")},
		{"node", filepath.Join(pkg, "cli-wrapper.cjs")},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		out, err := exec.CommandContext(ctx, argv[0], append(argv[1:], "--version")...).CombinedOutput()
		cancel()
		if err == nil && strings.Contains(string(out), "Claude Code") {
			return argv, strings.TrimSpace(string(out))
		}
		errs = append(errs, fmt.Sprintf("%s --version: %v %q", strings.Join(argv, " "), err, out))
	}
	t.Fatalf("cannot run Claude Code: %s", strings.Join(errs, "; "))
	return nil, ""
}

// TestClaudeCode runs a whole tool-using Claude Code session, offline,
// through the proxy to a fake Messages API.
func TestClaudeCode(t *testing.T) {
	dir := requireNodeModules(t)
	argv, version := claudeCommand(t, dir)
	t.Logf("Claude Code %s", version)
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	config := filepath.Join(tmp, "config")
	work := filepath.Join(tmp, "work")
	for _, d := range []string{home, config, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	nonce := "nonce-" + randomHex(8)
	note := filepath.Join(work, "note.txt")
	if err := os.WriteFile(note, []byte(nonce+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	apiKey := "sk-ant-api03-fake" + randomHex(24) + "-E2E"

	cc := &ccFake{note: note, nonce: nonce, usage: map[int]ausage{}}
	up := newFake(t, messagesAPI(cc.answer))
	rg := newRig(t, up.URL)
	tw := newTripwire(t)
	loopbackOnly(t, up.URL)
	loopbackOnly(t, rg.srv.URL)

	debugFile := filepath.Join(tmp, "claude-debug.log")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prompt := ccMarker + ": run `echo hello` with the Bash tool, then read note.txt, then say what both said."
	// --dangerously-skip-permissions refuses to run as root (CI is
	// root); allowing exactly the two tools works for any user.
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], "-p", prompt,
		"--output-format", "text",
		"--allowedTools", "Bash(echo hello)", "Read",
		"--debug-file", debugFile,
	)...)
	cmd.Dir = work
	cmd.Env = append(claudeEnv(os.Getenv("PATH"), home, config, tmp, rg.srv.URL, apiKey), tw.env()...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	elapsed := time.Since(start)
	t.Logf("claude ran for %v", elapsed.Round(time.Millisecond))
	logOutput(t, "claude stdout", stdout.Bytes())
	logOutput(t, "claude stderr", stderr.Bytes())
	reqs := up.requests()
	for _, s := range reqs {
		t.Logf("upstream got #%d %s %s?%s (%d bytes) -> %d, %d bytes", s.Seq, s.Method, s.Path, s.Query, len(s.Body), s.Status, len(s.Sent))
	}
	if a := tw.attempts(); len(a) > 0 {
		t.Errorf("Claude Code tried to reach the outside: %v", a)
	}
	if err != nil || ctx.Err() != nil {
		if b, rerr := os.ReadFile(debugFile); rerr == nil {
			logOutput(t, "claude debug", b)
		}
		t.Fatalf("claude: %v (context: %v)", err, ctx.Err())
	}
	want := "E2E done: bash said hello; the note says " + nonce + "."
	if !strings.Contains(stdout.String(), want) {
		t.Fatalf("claude printed %q, want it to contain %q", stdout.String(), want)
	}

	// Claude Code's own transcript.
	logs, _ := filepath.Glob(filepath.Join(config, "projects", "*", "*.jsonl"))
	if len(logs) == 0 {
		t.Fatalf("no JSONL transcript under %s", filepath.Join(config, "projects"))
	}
	sessions := map[string]bool{}
	for _, l := range logs {
		for id := range jsonlSessions(t, l) {
			sessions[id] = true
		}
	}
	if len(sessions) != 1 {
		t.Fatalf("transcripts %v name sessions %v, want exactly one", logs, sessions)
	}
	var session string
	for id := range sessions {
		session = id
	}
	t.Logf("Claude Code session %s, transcript %v", session, logs)

	// The WAL.
	ex := rg.readWAL(t)
	if len(ex) != len(reqs) {
		t.Errorf("WAL holds %d exchanges, the upstream saw %d requests", len(ex), len(reqs))
	}
	mainLoop := 0
	for _, x := range ex {
		checkExchange(t, x, reqs)
		if x.Start == nil || x.End == nil {
			continue
		}
		t.Logf("WAL exchange %d: %s %s provider=%s model=%s stream=%v session=%s (from %s) status=%d usage=%+v",
			x.ID, x.Start.Method, x.Start.Path, x.Start.Provider, x.Start.Model, x.Start.Stream, x.Start.SessionID, x.Start.SessionSource, x.End.Status, x.End.Usage)
		if x.Start.Provider != "anthropic" {
			t.Errorf("exchange %d: provider %q", x.ID, x.Start.Provider)
		}
		if x.Start.SessionID != session || x.End.SessionID != session {
			t.Errorf("exchange %d (%s): proxy recorded session %q (source %q), Claude Code's is %q", x.ID, x.Start.Path, x.Start.SessionID, x.Start.SessionSource, session)
		}
		if h := x.Start.Headers["X-Api-Key"]; len(h) != 1 || h[0] != "[redacted:api_key]" {
			t.Errorf("exchange %d: recorded X-Api-Key %v", x.ID, h)
		}
		if x.Start.Path == "/v1/messages" {
			// The body carries the same id (metadata.user_id, a JSON
			// string with session_id), the proxy's fallback source.
			if bs := bodySession(x.RequestBody); bs != session {
				t.Errorf("exchange %d: metadata.user_id names session %q, want %q", x.ID, bs, session)
			}
			cc.mu.Lock()
			u, ok := cc.usage[seqOf(x)]
			cc.mu.Unlock()
			// The proxy's total is input + output (cache tokens apart).
			want := exchange.Usage{InputTokens: u.Input, OutputTokens: u.Output, CacheReadTokens: u.CacheRead, CacheCreationTokens: u.CacheCreation, TotalTokens: u.Input + u.Output + u.CacheRead + u.CacheCreation} // Anthropic input excludes cached tokens; the total counts them
			if !ok || x.End.Usage == nil || *x.End.Usage != want {
				t.Errorf("exchange %d: usage %+v, the upstream sent %+v (answered: %v)", x.ID, x.End.Usage, want, ok)
			}
			if strings.Contains(string(x.RequestBody), ccMarker) {
				mainLoop++
				if !x.Start.Stream {
					t.Errorf("exchange %d: main-loop request not recorded as streaming", x.ID)
				}
			}
		}
	}
	if mainLoop < 3 {
		t.Errorf("the WAL holds %d main-loop /v1/messages exchanges, want at least 3 (tool_use, tool_use, final)", mainLoop)
	}
	cc.mu.Lock()
	t.Logf("side requests: %v", cc.side)
	cc.mu.Unlock()

	// What Claude Code sent: header names and the session header.
	names := map[string]bool{}
	for _, s := range reqs {
		for k := range s.Header {
			names[k] = true
		}
		if got := s.Header.Get("X-Api-Key"); got != apiKey && s.Method == http.MethodPost {
			t.Errorf("upstream #%d got X-Api-Key %q, want the client's key unchanged", s.Seq, got)
		}
		if got := s.Header.Get("X-Claude-Code-Session-Id"); got != "" && got != session {
			t.Errorf("upstream #%d got X-Claude-Code-Session-Id %q, the transcript says %q", s.Seq, got, session)
		}
	}
	var hn []string
	for k := range names {
		hn = append(hn, k)
	}
	sort.Strings(hn)
	t.Logf("request headers Claude Code sent: %s", strings.Join(hn, ", "))
	if len(reqs) > 0 {
		h := reqs[0].Header
		t.Logf("first request: User-Agent %q, X-Claude-Code-Session-Id %q, Anthropic-Beta %q", h.Get("User-Agent"), h.Get("X-Claude-Code-Session-Id"), h.Get("Anthropic-Beta"))
	}

	// The canonical timeline: bbengine show, as a user runs it.
	checkShow(t, rg.dir, session, prompt, note, nonce, cc)

	// Claude Code's own transcript, imported beside the recorded traffic.
	checkImport(t, rg.dir, filepath.Join(config, "projects"), session, nonce)

	// And into the recorded data directory (the recorder closed, as the
	// session is over): one session, each call once.
	rg.stop(t)
	if err := rg.log.Close(); err != nil {
		t.Fatal(err)
	}
	checkMergedImport(t, rg.dir, filepath.Join(config, "projects"), session, prompt, cc)

	// The key never reaches the WAL's files, nor anything derived.
	scanFiles(t, rg.dir, apiKey)
}

// checkShow runs bbengine sessions and show on the recorded data
// directory and checks the timeline against what the fake upstream did.
func checkShow(t *testing.T, dir, session, prompt, note, nonce string, cc *ccFake) {
	t.Helper()
	run := func(args ...string) string {
		var out, errb bytes.Buffer
		if code := cli.Main(append([]string{"bbengine", "--dir", dir}, args...), &out, &errb); code != 0 {
			t.Fatalf("bbengine %v: exit %d: %s", args, code, errb.String())
		}
		return out.String()
	}
	var list []engine.Session
	if err := json.Unmarshal([]byte(run("sessions", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != session || list[0].Agent != "claude-code" {
		t.Fatalf("sessions: %+v, want one claude-code session %s", list, session)
	}
	s := list[0]
	// Token totals equal what the fake upstream reported, summed over
	// every model call (Anthropic's input excludes cached tokens; the
	// engine's includes them).
	var want engine.Usage
	cc.mu.Lock()
	for _, u := range cc.usage {
		want.Input += u.Input + u.CacheRead + u.CacheCreation
		want.Output += u.Output
		want.CacheRead += u.CacheRead
		want.CacheCreation += u.CacheCreation
	}
	calls := len(cc.usage)
	cc.mu.Unlock()
	if s.Usage.Input != want.Input || s.Usage.Output != want.Output || s.Usage.CacheRead != want.CacheRead || s.Usage.CacheCreation != want.CacheCreation {
		t.Errorf("session usage %+v, the upstream reported %+v", s.Usage, want)
	}
	if s.Requests < calls {
		t.Errorf("session counts %d requests, the upstream answered %d model calls", s.Requests, calls)
	}
	text := run("show", session)
	t.Logf("bbengine show %s:\n%s", session, text)
	for _, w := range []string{
		"format: bbox/1",
		"id: " + session,
		"client_version: claude-cli/",
		"\nu: ",
		prompt,
		"t:Bash id=" + ccBashID + " command=\"echo hello\" description=\"Print hello\" → hello",
		"t:Read id=" + ccReadID + " file_path=" + note + " → ",
		nonce,
		"a: E2E done: bash said hello; the note says " + nonce + ".",
		"# metrics step=1 ",
		"@end ",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("bbengine show lacks %q", w)
		}
	}
	// Claude Code sends the prompt after a <system-reminder> in the
	// same user message; it must appear once, inside a u: block.
	if n := strings.Count(text, prompt); n != 1 {
		t.Errorf("the prompt appears %d times, want once", n)
	} else if i := strings.Index(text, prompt); strings.LastIndex(text[:i], "\nu: ") < strings.LastIndex(text[:i], "\n#") {
		t.Errorf("the prompt is not part of a u: message")
	}
	if strings.Count(text, "id="+ccBashID) != 1 || strings.Count(text, "id="+ccReadID) != 1 {
		t.Errorf("each tool call should appear once")
	}
	// The timeline is valid bbox/1.
	file := filepath.Join(t.TempDir(), "session.bbox")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := cli.Main([]string{"bbengine", "validate", file}, &out, &errb); code != 0 {
		t.Errorf("bbengine validate: exit %d\n%s%s", code, out.String(), errb.String())
	}
	// Rebuilding from the WAL gives the same timeline.
	run("rebuild")
	if again := run("show", session); again != text {
		t.Errorf("show after rebuild differs")
	}
}

// checkImport imports Claude Code's transcript of the session into a
// data directory of its own (the rig's proxy still writes the recorded
// one) and checks that every tool call and result the proxy recorded in
// dir is in it.
func checkImport(t *testing.T, dir, projects, session, nonce string) {
	t.Helper()
	importDir := t.TempDir()
	run := func(args ...string) (string, string) {
		var out, errb bytes.Buffer
		d := importDir
		if len(args) > 1 && args[1] == session {
			d = dir
		}
		if code := cli.Main(append([]string{"bbengine", "--dir", d}, args...), &out, &errb); code != 0 {
			t.Fatalf("bbengine %v: exit %d:\n%s%s", args, code, out.String(), errb.String())
		}
		return out.String(), errb.String()
	}
	out, errs := run("import", "claude", projects, "--check")
	t.Logf("bbengine import claude --check:\n%s%s", out, errs)
	if !strings.Contains(out, "nothing lost") {
		t.Errorf("import --check did not pass")
	}
	text, _ := run("show", "claude:"+session)
	t.Logf("bbengine show claude:%s:\n%s", session, text)
	for _, w := range []string{"t:Bash id=" + ccBashID + " ", "→ hello", "t:Read id=" + ccReadID + " ", nonce, "a: E2E done: bash said hello"} {
		if !strings.Contains(text, w) {
			t.Errorf("the imported session lacks %q", w)
		}
	}
	census := func(id string) census.Counts {
		j, _ := run("show", id, "--format", "json")
		var v struct {
			Session engine.Session `json:"session"`
			Events  []engine.Event `json:"events"`
		}
		if err := json.Unmarshal([]byte(j), &v); err != nil {
			t.Fatal(err)
		}
		return engine.Census(&v.Session, v.Events)
	}
	live, imported := census(session), census("claude:"+session)
	if live.ToolCalls != imported.ToolCalls || live.ToolResults != imported.ToolResults || imported.ToolCalls < 2 {
		t.Errorf("tool calls/results: proxy recorded %d/%d, the import has %d/%d", live.ToolCalls, live.ToolResults, imported.ToolCalls, imported.ToolResults)
	}
}

// checkMergedImport imports Claude Code's transcript into the data
// directory that recorded the session (docs/design/merge.md, [R1]): the
// proxied session and its log are then one session, whose calls count
// once and whose timeline holds each fact once, with both provenances.
func checkMergedImport(t *testing.T, dir, projects, session, prompt string, cc *ccFake) {
	t.Helper()
	var stderr string
	run := func(args ...string) string {
		var out, errb bytes.Buffer
		if code := cli.Main(append([]string{"bbengine", "--dir", dir}, args...), &out, &errb); code != 0 {
			t.Fatalf("bbengine %v: exit %d:\n%s%s", args, code, out.String(), errb.String())
		}
		stderr = errb.String()
		return out.String()
	}
	out := run("import", "claude", projects, "--check")
	t.Logf("bbengine import claude --check (into the recorded directory):\n%s%s", stderr, out)
	if !strings.Contains(out, "nothing lost") {
		t.Errorf("import --check did not pass on the import side of the merged session")
	}
	if !strings.Contains(stderr, "merged 1 sessions with proxied ones") {
		t.Errorf("import does not say it merged the session")
	}
	var list []engine.Session
	if err := json.Unmarshal([]byte(run("sessions", "--json")), &list); err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != session || list[0].Merged == nil {
		t.Fatalf("sessions after the import: %+v, want session %s once, merged", list, session)
	}
	s := list[0]
	t.Logf("merged: %+v", *s.Merged)
	if got, want := strings.Join(s.Merged.Members, " "), session+" claude:"+session; got != want {
		t.Errorf("members %q, want %q", got, want)
	}
	if s.CWD == "" || s.Import == nil {
		t.Errorf("the merged summary lacks the log's cwd (%q) or import info (%v)", s.CWD, s.Import)
	}
	var unmerged []engine.Session
	if err := json.Unmarshal([]byte(run("sessions", "--json", "--unmerged")), &unmerged); err != nil {
		t.Fatal(err)
	}
	if len(unmerged) != 2 {
		t.Errorf("sessions --unmerged lists %d, want the 2 sides", len(unmerged))
	}

	// usage: every call the fake answered, once.
	var want api.UsageTokens
	cc.mu.Lock()
	calls := len(cc.usage)
	for _, u := range cc.usage {
		want.Input += u.Input
		want.Output += u.Output
		want.CacheRead += u.CacheRead
		want.CacheCreation += u.CacheCreation
	}
	cc.mu.Unlock()
	var rep api.UsageReport
	if err := json.Unmarshal([]byte(run("usage", "session", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	got := rep.Total
	t.Logf("usage session: %d rows, %d calls, input %d, output %d, cache read %d, cache write %d; the fake answered %d calls: %+v",
		len(rep.Rows), got.Calls, got.Input, got.Output, got.CacheRead, got.CacheCreation, calls, want)
	if len(rep.Rows) != 1 || got.Calls != calls || got.Input != want.Input || got.Output != want.Output ||
		got.CacheRead != want.CacheRead || got.CacheCreation != want.CacheCreation {
		t.Errorf("usage counts %d rows, %d calls %+v; the fake answered %d calls %+v once", len(rep.Rows), got.Calls, got.UsageTokens, calls, want)
	}

	// show: one timeline, each fact once, both provenances.
	text := run("show", session)
	t.Logf("bbengine show %s (merged):\n%s", session, text)
	// Once as a message (the log's records quote it too), the reminder
	// Claude Code sent in front of it apart.
	if n := strings.Count(text, "\nu: "+prompt); n != 1 {
		t.Errorf("the prompt is %d u: messages, want one", n)
	}
	if !strings.Contains(text, "\nu: <system-reminder>") {
		t.Errorf("the reminder in front of the prompt is not a message of its own")
	}
	if strings.Count(text, "t:Bash id="+ccBashID) != 1 || strings.Count(text, "t:Read id="+ccReadID) != 1 {
		t.Errorf("each tool call should appear once")
	}
	if other := run("show", "claude:"+session); other != text {
		t.Errorf("show claude:%s differs from show %s", session, session)
	}
	var v struct {
		Session engine.Session `json:"session"`
		Events  []engine.Event `json:"events"`
	}
	if err := json.Unmarshal([]byte(run("show", session, "--format", "json")), &v); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	paired, live, imported := 0, 0, 0
	for _, ev := range v.Events {
		if ev.Tool != nil {
			seen[string(ev.Kind)+" "+ev.Tool.ID]++
		}
		if ev.Kind == engine.KindModelCall && ev.Call != nil && ev.Call.ResponseID != "" {
			seen["call "+ev.Call.ResponseID]++
		}
		switch {
		case len(ev.Also) > 0:
			paired++
			sides := ev.Prov.Side + "+" + ev.Also[0].Prov.Side
			if sides != "response+import" && sides != "request+import" && sides != "import+request" {
				t.Errorf("event %d pairs sides %s", ev.Seq, sides)
			}
			if ev.Kind == engine.KindModelCall && (ev.Call == nil || ev.Call.UpstreamID == "" || ev.Call.UpstreamID != ev.Also[0].Prov.RequestID) {
				t.Errorf("model call %d: upstream id %v, the log's request id %q", ev.Seq, ev.Call, ev.Also[0].Prov.RequestID)
			}
		case ev.Prov.Side == "import":
			imported++
		default:
			live++
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("%s appears %d times in the merged timeline", k, n)
		}
	}
	t.Logf("merged timeline: %d events, %d paired, %d live only, %d log only", len(v.Events), paired, live, imported)
	if paired < 13 || live == 0 || imported == 0 {
		t.Errorf("merged timeline: %d paired (want at least 13: 3 calls with their output, 2 results, the prompt), %d live only, %d log only", paired, live, imported)
	}
	// Memory: each artifact once, under the merged id ([R1] listed the
	// decision, the outcome and the transcript twice).
	var cards []engine.Card
	if err := json.Unmarshal([]byte(run("mem", "list", "--json")), &cards); err != nil {
		t.Fatal(err)
	}
	titles := map[string]int{}
	for _, cd := range cards {
		titles[string(cd.Type)+" "+cd.Title]++
		if cd.Session != session {
			t.Errorf("artifact %s (%s) belongs to %s, want the merged session %s", cd.ID, cd.Type, cd.Session, session)
		}
	}
	t.Logf("mem list: %d artifacts: %v", len(cards), titles)
	if len(cards) == 0 {
		t.Errorf("no artifacts for the merged session")
	}
	for k, n := range titles {
		if n != 1 {
			t.Errorf("artifact %q listed %d times", k, n)
		}
	}
	// Search (the index) finds them once too.
	var found []api.Result
	if err := json.Unmarshal([]byte(run("mem", "search", "--json", "echo hello")), &found); err != nil {
		t.Fatal(err)
	}
	hits := map[string]int{}
	for _, r := range found {
		hits[string(r.Card.Type)+" "+r.Card.Title]++
		if r.Card.Session != session {
			t.Errorf("search found %s of session %s", r.Card.ID, r.Card.Session)
		}
	}
	t.Logf("mem search \"echo hello\": %d results", len(found))
	if len(found) == 0 {
		t.Errorf("mem search found nothing")
	}
	for k, n := range hits {
		if n != 1 {
			t.Errorf("search found %q %d times", k, n)
		}
	}
	run("rebuild")
	if again := run("show", session); again != text {
		t.Errorf("show of the merged session after rebuild differs")
	}
	if again := run("mem", "list", "--json"); len(again) == 0 {
		t.Errorf("no artifacts after rebuild")
	}
}

// jsonlSessions returns the sessionId values in a Claude Code transcript.
func jsonlSessions(t *testing.T, path string) map[string]bool {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var line struct {
			SessionID string `json:"sessionId"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.SessionID != "" {
			out[line.SessionID] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// bodySession returns the session_id inside a Messages body's
// metadata.user_id.
func bodySession(body []byte) string {
	var req amsgRequest
	if json.Unmarshal(body, &req) != nil {
		return ""
	}
	var uid struct {
		SessionID string `json:"session_id"`
	}
	json.Unmarshal([]byte(req.Metadata.UserID), &uid)
	return uid.SessionID
}

// claudeEnv is the whole environment a test gives Claude Code: its own
// home, config and temp directories, the base URL and key, and no
// telemetry, error reports, updates or other nonessential traffic.
func claudeEnv(path, home, config, tmp, baseURL, apiKey string, more ...string) []string {
	env := []string{
		"PATH=" + path,
		"HOME=" + home,
		"CLAUDE_CONFIG_DIR=" + config,
		"TMPDIR=" + tmp,
		"SHELL=/bin/bash",
		"LANG=C.UTF-8",
		"ANTHROPIC_BASE_URL=" + baseURL,
		"ANTHROPIC_API_KEY=" + apiKey,
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_BUG_COMMAND=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	}
	return append(env, more...)
}
