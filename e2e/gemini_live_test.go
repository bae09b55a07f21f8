package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The real Gemini CLI (0.61) sends no session id: the proxy joins each
// of its requests to the session whose conversation it continues. These
// tests run `gemini -p` offline through a `bbengine proxy` built from
// the repository, against a scripted fake Gemini API, and check that a
// run with several tool calls is one session holding every call and its
// result, and that two runs at once stay two sessions.

// gemLiveMark names a run in its prompt; the fake reads it back from
// every request of the run.
var gemLiveMark = regexp.MustCompile(`gemlive-run-[0-9]+`)

// gemLiveTwin finds, in twins mode, which twin a request is of by the
// ids of the calls the fake gave it.
var gemLiveTwin = regexp.MustCompile(`call-(twin[ab])-`)

// gemLiveFake is the scripted Gemini API. Each run lists its work
// directory and reads two files, one tool call a turn, then answers.
type gemLiveFake struct {
	mu    sync.Mutex
	work  map[string]string // run mark -> work directory
	calls []string          // every call, as "METHOD path?query"
	// started counts the runs whose first turn arrived; while it is
	// under wait, first turns are held back so that the runs interleave.
	started map[string]bool
	wait    int
	cond    *sync.Cond
	// failAt, when not 0, is the turn (counted from 1) whose first
	// attempt is answered 503, once a run.
	failAt int
	// noIDs sends functionCalls without ids, as the Gemini API may: the
	// CLI then answers each under an id of its own (synth_…).
	noIDs  bool
	failed map[string]bool
	// seqs lists each run's requests, by their index among all.
	seqs map[string][]int
	// turns keeps the bodies of each run's requests, by turn.
	turns map[string]map[int][][]byte
	// twins: the runs send the same prompt from the same directory,
	// so their first requests may be the same bytes. The first that
	// arrives is twina, the second twinb, and each is told by the call
	// ids in its later requests; twinb makes its calls in the reverse
	// order, so the two conversations differ from the first reply on.
	twins bool
	twinN int
}

func newGemLiveFake() *gemLiveFake {
	f := &gemLiveFake{work: map[string]string{}, started: map[string]bool{}, failed: map[string]bool{},
		seqs: map[string][]int{}, turns: map[string]map[int][][]byte{}}
	f.cond = sync.NewCond(&f.mu)
	return f
}

// gemLiveRequest is the part of a Gemini request the fake reads.
type gemLiveRequest struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			Text             string          `json:"text"`
			FunctionCall     json.RawMessage `json:"functionCall"`
			FunctionResponse json.RawMessage `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
}

func (f *gemLiveFake) answer(s *seen, w http.ResponseWriter) {
	f.mu.Lock()
	f.calls = append(f.calls, s.Method+" "+s.Path+"?"+s.Query)
	f.mu.Unlock()
	switch {
	case strings.HasSuffix(s.Path, ":countTokens"):
		writeJSON(w, 200, `{"totalTokens":42}`)
		return
	case strings.HasSuffix(s.Path, ":generateContent"):
		// The CLI's own side calls (routing, next-speaker checks) ask
		// for JSON: one answer fits them all.
		text := `{"reasoning":"the task is done","next_speaker":"user","model_choice":"flash"}`
		writeJSON(w, 200, `{"candidates":[{"content":{"role":"model","parts":[{"text":`+jsonString(text)+`}]},"finishReason":"STOP","index":0}],`+
			`"usageMetadata":{"promptTokenCount":20,"candidatesTokenCount":10,"totalTokenCount":30},"modelVersion":"gemini-2.5-flash"}`)
		return
	case strings.HasSuffix(s.Path, ":streamGenerateContent"):
	default:
		writeJSON(w, 404, `{"error":{"code":404,"message":"not found","status":"NOT_FOUND"}}`)
		return
	}
	var req gemLiveRequest
	if err := json.Unmarshal(s.Body, &req); err != nil {
		writeJSON(w, 400, `{"error":{"code":400,"message":"bad json","status":"INVALID_ARGUMENT"}}`)
		return
	}
	mark := gemLiveMark.FindString(string(s.Body))
	results := 0
	for _, c := range req.Contents {
		for _, p := range c.Parts {
			if len(p.FunctionResponse) > 0 {
				results++
			}
		}
	}
	f.mu.Lock()
	if f.twins {
		if m := gemLiveTwin.FindStringSubmatch(string(s.Body)); m != nil {
			mark = m[1]
		} else {
			mark = fmt.Sprintf("twin%c", 'a'+f.twinN)
			f.twinN++
		}
	}
	work := f.work[mark]
	f.seqs[mark] = append(f.seqs[mark], s.Seq)
	if f.turns[mark] == nil {
		f.turns[mark] = map[int][][]byte{}
	}
	f.turns[mark][results+1] = append(f.turns[mark][results+1], s.Body)
	if f.failAt == results+1 && !f.failed[mark] {
		f.failed[mark] = true
		f.mu.Unlock()
		writeJSON(w, 503, `{"error":{"code":503,"message":"The model is overloaded. Please try again later.","status":"UNAVAILABLE"}}`)
		return
	}
	if results == 0 && !f.started[mark] {
		f.started[mark] = true
		f.cond.Broadcast()
		deadline := time.Now().Add(30 * time.Second)
		for len(f.started) < f.wait && time.Now().Before(deadline) {
			go func() { time.Sleep(100 * time.Millisecond); f.cond.Broadcast() }()
			f.cond.Wait()
		}
	}
	f.mu.Unlock()
	// Calls carry ids, as the Gemini API's do; the CLI sends them back
	// with each functionResponse.
	id := `"id":` + jsonString(fmt.Sprintf("call-%s-%d", mark, results+1)) + `,`
	if f.noIDs {
		id = ""
	}
	script := []string{
		`{"functionCall":{` + id + `"name":"list_directory","args":{"dir_path":` + jsonString(work) + `}}}`,
		`{"functionCall":{` + id + `"name":"read_file","args":{"file_path":` + jsonString(filepath.Join(work, "notes.txt")) + `}}}`,
		`{"functionCall":{` + id + `"name":"read_file","args":{"file_path":` + jsonString(filepath.Join(work, "plan.txt")) + `}}}`,
	}
	if mark == "twinb" {
		slices.Reverse(script)
	}
	var part string
	switch {
	case results < len(script):
		part = script[results]
	default:
		part = `{"text":` + jsonString("GEMLIVE done: "+mark+" read both files.") + `}`
	}
	usage := `"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":12,"totalTokenCount":112}`
	writeSSE(w, []string{
		`data: {"candidates":[{"content":{"role":"model","parts":[` + part + `]},"finishReason":"STOP","index":0}],` + usage + `,"modelVersion":"gemini-2.5-pro"}` + "\r\n\r\n",
	})
}

// gemLiveCommand returns the Gemini CLI's path, skipping when node or
// the CLI is missing.
func gemLiveCommand(t *testing.T) string {
	t.Helper()
	requireNode(t)
	dir := requireNodeModules(t)
	bin := filepath.Join(dir, "node_modules", ".bin", "gemini")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("the Gemini CLI is not installed: %v", err)
	}
	return bin
}

// gemLiveProxy is `bbengine proxy`, the binary, recording into dir with
// every Gemini call going to upstream.
type gemLiveProxy struct {
	cmd  *exec.Cmd
	addr string
	out  syncBuffer
	done chan error
}

func gemLiveStartProxy(t *testing.T, bin, dir, upstream string) *gemLiveProxy {
	t.Helper()
	p := &gemLiveProxy{done: make(chan error, 1)}
	p.cmd = exec.Command(bin, "--dir", dir, "proxy", "--listen", "127.0.0.1:0", "--upstream", "gemini="+upstream,
		"--sync", "none", "--shutdown-timeout", "5s")
	p.cmd.Stderr = &p.out
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			p.out.Write([]byte(line + "\n"))
			if i := strings.Index(line, "listening on http://"); i >= 0 && !sent {
				a, _, _ := strings.Cut(line[i+len("listening on http://"):], " ")
				addr <- a
				sent = true
			}
		}
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() { p.stop(t) })
	select {
	case p.addr = <-addr:
	case <-time.After(30 * time.Second):
		t.Fatalf("bbengine proxy did not start:\n%s", p.out.String())
	}
	loopbackOnly(t, "http://"+p.addr)
	return p
}

// stop stops the proxy as Ctrl-C does, so that it derives what is left
// and lets the data directory go.
func (p *gemLiveProxy) stop(t *testing.T) {
	t.Helper()
	if p.cmd.Process == nil || p.done == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-p.done:
		if err != nil {
			t.Errorf("bbengine proxy: %v\n%s", err, p.out.String())
		}
	case <-time.After(30 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
		t.Errorf("bbengine proxy did not stop on SIGINT:\n%s", p.out.String())
	}
	p.done = nil
}

// gemLiveRun is one `gemini -p` run in its own home and work directory.
type gemLiveRun struct {
	// mark names the run in its prompt and its files; a twin learns
	// its own from its answer (wait).
	mark, home, work string
	files            string // the mark in its files' contents
	twin             bool
	cmd              *exec.Cmd
	stdout, stderr   bytes.Buffer
}

var gemLiveDone = regexp.MustCompile(`GEMLIVE done: (\S+) read both files`)

func gemLiveNewRun(t *testing.T, f *gemLiveFake, n int) *gemLiveRun {
	t.Helper()
	tmp := t.TempDir()
	r := &gemLiveRun{mark: fmt.Sprintf("gemlive-run-%d", n), home: filepath.Join(tmp, "home"), work: filepath.Join(tmp, "work")}
	r.files = r.mark
	for _, d := range []string{filepath.Join(r.home, ".gemini"), r.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"notes.txt": "notes of " + r.mark + ": the queue is durable\n",
		"plan.txt":  "plan of " + r.mark + ": ship on Friday\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(r.work, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	settings := `{
  "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
  "general": {"disableAutoUpdate": true, "disableUpdateNag": true, "enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "ui": {"hideTips": true, "hideBanner": true}
}`
	if err := os.WriteFile(filepath.Join(r.home, ".gemini", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.work[r.mark] = r.work
	f.mu.Unlock()
	return r
}

func (r *gemLiveRun) start(t *testing.T, ctx context.Context, gemini, baseURL string, tw *tripwire) {
	t.Helper()
	prompt := "Task " + r.mark + ": list this directory, then read notes.txt and plan.txt, and sum them up."
	r.cmd = exec.CommandContext(ctx, gemini, "-p", prompt, "--yolo", "--skip-trust", "-m", "gemini-2.5-pro", "--output-format", "text")
	r.cmd.Dir = r.work
	r.cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + r.home, "TMPDIR=" + filepath.Dir(r.home),
		"GEMINI_API_KEY=fake-gemini-key", "GOOGLE_GEMINI_BASE_URL=" + baseURL,
		"GEMINI_CLI_NO_RELAUNCH=true", "NO_COLOR=1", "TERM=dumb", "CI=1",
	}, tw.env()...)
	r.cmd.WaitDelay = 5 * time.Second
	r.cmd.Stdout, r.cmd.Stderr = &r.stdout, &r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
}

func (r *gemLiveRun) wait(t *testing.T) {
	t.Helper()
	err := r.cmd.Wait()
	logOutput(t, r.mark+" stdout", r.stdout.Bytes())
	logOutput(t, r.mark+" stderr", r.stderr.Bytes())
	if err != nil {
		t.Fatalf("gemini %s: %v", r.mark, err)
	}
	if r.twin {
		m := gemLiveDone.FindStringSubmatch(r.stdout.String())
		if m == nil {
			t.Fatalf("gemini %s printed %q, want GEMLIVE done", r.mark, r.stdout.String())
		}
		r.mark = m[1]
		return
	}
	if want := "GEMLIVE done: " + r.mark; !strings.Contains(r.stdout.String(), want) {
		t.Fatalf("gemini %s printed %q, want it to contain %q", r.mark, r.stdout.String(), want)
	}
}

// gemLiveTimeline is the part of `show --format json` read here.
type gemLiveTimeline struct {
	Events []struct {
		Kind string `json:"kind"`
		Tool *struct {
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"tool"`
	} `json:"events"`
}

// gemLiveCheckSession checks that session holds the run's three tool
// calls, each with its result.
func gemLiveCheckSession(t *testing.T, bin, dir, session string, r *gemLiveRun) {
	t.Helper()
	out, err := exec.Command(bin, "--dir", dir, "show", session, "--format", "json").CombinedOutput()
	if err != nil {
		t.Fatalf("bbengine show %s: %v\n%s", session, err, out)
	}
	var tl gemLiveTimeline
	if err := json.Unmarshal(out, &tl); err != nil {
		t.Fatalf("bbengine show %s: %v\n%s", session, err, out)
	}
	calls, results := map[string]string{}, map[string]bool{}
	for _, e := range tl.Events {
		if e.Tool == nil {
			continue
		}
		switch e.Kind {
		case "tool_call":
			calls[e.Tool.ID] = e.Tool.Name
		case "tool_result":
			results[e.Tool.ID] = true
		}
	}
	for _, e := range tl.Events {
		if e.Tool != nil {
			t.Logf("event %s %s %s", e.Kind, e.Tool.ID, e.Tool.Name)
		}
	}
	names := map[string]int{}
	for id, name := range calls {
		names[name]++
		if !results[id] {
			t.Errorf("%s: tool call %s (%s) has no result in session %s", r.mark, id, name, session)
		}
	}
	for id := range results {
		if _, ok := calls[id]; !ok {
			t.Errorf("%s: tool result %s has no call in session %s", r.mark, id, session)
		}
	}
	if names["list_directory"] != 1 || names["read_file"] != 2 {
		t.Errorf("%s: tool calls in session %s: %v, want list_directory once and read_file twice\n%s", r.mark, session, names, out)
	}
	if !bytes.Contains(out, []byte("notes of "+r.files)) || !bytes.Contains(out, []byte("plan of "+r.files)) {
		t.Errorf("%s: session %s lacks the files' contents read by the tools", r.mark, session)
	}
}

// gemLiveSession is the part of `sessions --json` read here.
type gemLiveSession struct {
	ID       string `json:"id"`
	Source   string `json:"source"`
	Requests int    `json:"requests"`
	Agent    string `json:"agent"`
}

// gemLiveSessions lists the sessions in dir.
func gemLiveSessions(t *testing.T, bin, dir string) []gemLiveSession {
	t.Helper()
	out, err := exec.Command(bin, "--dir", dir, "sessions", "--json").Output()
	if err != nil {
		t.Fatalf("bbengine sessions: %v", err)
	}
	var list []gemLiveSession
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("bbengine sessions --json: %v\n%s", err, out)
	}
	t.Logf("sessions: %s", out)
	return list
}

// TestGeminiLiveSessions: one Gemini CLI run with three tool calls is one
// session; two runs at once are two; a run whose request the upstream
// answers 503 once, and the CLI retries, is still one; with calls sent
// without ids (the CLI answers them under synth_… ids) every call still
// has its result.
func TestGeminiLiveSessions(t *testing.T) {
	gemini := gemLiveCommand(t)
	bin := buildBBEngine(t, t.TempDir())
	for _, c := range []struct {
		name         string
		n, failAt    int
		twins, noIDs bool
	}{{"runs=1", 1, 0, false, false}, {"runs=2", 2, 0, false, false}, {"retry", 1, 2, false, false}, {"twins", 2, 0, true, false}, {"noids", 1, 0, false, true}} {
		n := c.n
		t.Run(c.name, func(t *testing.T) {
			f := newGemLiveFake()
			f.wait, f.failAt, f.twins, f.noIDs = n, c.failAt, c.twins, c.noIDs
			up := newFake(t, f.answer)
			loopbackOnly(t, up.URL)
			tw := newTripwire(t)
			dir := filepath.Join(t.TempDir(), "data")
			px := gemLiveStartProxy(t, bin, dir, up.URL)
			runs := make([]*gemLiveRun, n)
			for i := range runs {
				runs[i] = gemLiveNewRun(t, f, i+1)
				if c.twins {
					// The same prompt, home and work directory.
					if i > 0 {
						runs[i] = &gemLiveRun{mark: runs[0].mark, home: runs[0].home, work: runs[0].work}
					}
					runs[i].twin, runs[i].files = true, runs[0].mark
					// Under the fake's lock: the race detector cannot see
					// that the CLI runs, and so its requests, start later.
					f.mu.Lock()
					f.work["twina"], f.work["twinb"] = runs[0].work, runs[0].work
					f.mu.Unlock()
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
			defer cancel()
			for _, r := range runs {
				r.start(t, ctx, gemini, "http://"+px.addr, tw)
			}
			for _, r := range runs {
				r.wait(t)
			}
			f.mu.Lock()
			calls := f.calls
			f.mu.Unlock()
			for _, c := range calls {
				t.Logf("upstream got %s", c)
			}
			if a := tw.attempts(); len(a) > 0 {
				t.Errorf("the Gemini CLI tried to reach the outside: %v", a)
			}
			f.mu.Lock()
			if c.twins {
				a, b := f.turns["twina"][1], f.turns["twinb"][1]
				if len(a) != 1 || len(b) != 1 {
					t.Fatalf("first turns: %d of twina, %d of twinb, want one each", len(a), len(b))
				}
				t.Logf("the twins' first requests are the same bytes: %v", bytes.Equal(a[0], b[0]))
			}
			if n == 2 {
				// The barrier in the fake held each first turn until
				// both runs had sent theirs: the runs interleave.
				a, b := f.seqs[runs[0].mark], f.seqs[runs[1].mark]
				if c.twins {
					a, b = f.seqs["twina"], f.seqs["twinb"]
				}
				if len(a) == 0 || len(b) == 0 || a[0] > b[len(b)-1] || b[0] > a[len(a)-1] {
					t.Errorf("the runs did not interleave: requests %v and %v", a, b)
				}
			}
			if c.failAt != 0 {
				tries := f.turns[runs[0].mark][c.failAt]
				if len(tries) < 2 {
					t.Fatalf("turn %d was sent %d times, want a retry after the 503", c.failAt, len(tries))
				}
				t.Logf("turn %d sent %d times; the retry resent the same body: %v", c.failAt, len(tries), bytes.Equal(tries[0], tries[1]))
			}
			total := len(calls)
			f.mu.Unlock()
			px.stop(t)

			list := gemLiveSessions(t, bin, dir)
			if len(list) != n {
				t.Fatalf("%d sessions, want %d", len(list), n)
			}
			gemLiveCheckRuns(t, bin, dir, list, runs)
			sum := 0
			for _, s := range list {
				sum += s.Requests
				if s.Requests < 4 {
					t.Errorf("session %s holds %d requests, want every model call of its run (4 or more)", s.ID, s.Requests)
				}
			}
			if sum != total {
				t.Errorf("the sessions hold %d requests, the upstream got %d", sum, total)
			}
			if keep := os.Getenv("BBENGINE_GEMINI_PAIR"); keep != "" && c.name == "runs=1" {
				gemLiveKeepPair(t, dir, runs[0].home, keep)
			}
			gemLiveImportJoins(t, bin, dir, runs, total)
		})
	}
}

// gemLiveKeepPair copies the proxy's WAL in dir and the log the run in
// home wrote to keep/wal and keep/session.jsonl: the pair
// engine/testdata/merge/gemini-cli-0.61.0 was made so.
func gemLiveKeepPair(t *testing.T, dir, home, keep string) {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*.jsonl"))
	if err != nil || len(logs) != 1 {
		t.Fatalf("the run's logs: %v, %v", logs, err)
	}
	segs, err := filepath.Glob(filepath.Join(dir, "wal", "*.wal"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("the WAL's segments: %v, %v", segs, err)
	}
	if err := os.MkdirAll(filepath.Join(keep, "wal"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile := func(src, dst string) {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range segs {
		copyFile(s, filepath.Join(keep, "wal", filepath.Base(s)))
	}
	copyFile(logs[0], filepath.Join(keep, "session.jsonl"))
}

// gemLiveImportJoins imports the logs the runs wrote into the directory
// their proxied sessions are in: each log joins its run's session by
// content (the CLI sends no session id), so each run is still one
// session, whose tool calls each have their result once, and each call
// counts once.
func gemLiveImportJoins(t *testing.T, bin, dir string, runs []*gemLiveRun, total int) {
	t.Helper()
	var homes []string
	for _, r := range runs {
		if !slices.Contains(homes, r.home) {
			homes = append(homes, r.home)
		}
	}
	merged := 0
	for _, h := range homes {
		cmd := exec.Command(bin, "--dir", dir, "import", "gemini", "--all", "--check")
		cmd.Env = append(os.Environ(), "HOME="+h, "GEMINI_CLI_HOME=")
		out, err := cmd.CombinedOutput()
		t.Logf("bbengine import gemini --all --check (HOME=%s):\n%s", h, out)
		if err != nil {
			t.Fatalf("bbengine import gemini: %v", err)
		}
		if !bytes.Contains(out, []byte("nothing lost")) {
			t.Errorf("import --check did not say nothing lost")
		}
		var m int
		if i := bytes.Index(out, []byte("merged ")); i >= 0 {
			fmt.Sscanf(string(out[i:]), "merged %d", &m)
		}
		merged += m
	}
	if merged != len(runs) {
		t.Errorf("the imports merged %d sessions with proxied ones, want %d", merged, len(runs))
	}
	list := gemLiveSessions(t, bin, dir)
	if len(list) != len(runs) {
		t.Fatalf("%d sessions after the import, want %d: each log joins its run's session", len(list), len(runs))
	}
	sum := 0
	for _, s := range list {
		sum += s.Requests
	}
	if sum != total {
		t.Errorf("after the import the sessions hold %d requests, the upstream got %d: a call counted twice or lost", sum, total)
	}
	gemLiveCheckRuns(t, bin, dir, list, runs)
}

// gemLiveCheckRuns checks that each run's mark is in exactly one of the
// sessions of list, which holds the run's calls and results.
func gemLiveCheckRuns(t *testing.T, bin, dir string, list []gemLiveSession, runs []*gemLiveRun) {
	t.Helper()
	for _, r := range runs {
		var in []string
		for _, s := range list {
			out, err := exec.Command(bin, "--dir", dir, "show", s.ID, "--format", "json").Output()
			if err != nil {
				t.Fatalf("bbengine show %s: %v", s.ID, err)
			}
			if bytes.Contains(out, []byte(r.mark)) {
				in = append(in, s.ID)
			}
		}
		if len(in) != 1 {
			t.Fatalf("%s is in sessions %v, want exactly one", r.mark, in)
		}
		gemLiveCheckSession(t, bin, dir, in[0], r)
	}
}

// TestGeminiLiveFork: two requests without a session id that go on from
// the same conversation in two ways join its session, where the engine
// records the second as a fork (a new thread), not a merge; a
// conversation that shares nothing is a session of its own.
func TestGeminiLiveFork(t *testing.T) {
	bin := buildBBEngine(t, t.TempDir())
	up := newFake(t, func(s *seen, w http.ResponseWriter) {
		writeSSE(w, []string{`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP","index":0}],` +
			`"usageMetadata":{"promptTokenCount":5,"candidatesTokenCount":1,"totalTokenCount":6},"modelVersion":"gemini-2.5-pro"}` + "\r\n\r\n"})
	})
	loopbackOnly(t, up.URL)
	dir := filepath.Join(t.TempDir(), "data")
	px := gemLiveStartProxy(t, bin, dir, up.URL)
	body := func(turns ...string) string {
		var b strings.Builder
		b.WriteString(`{"contents":[`)
		for i, s := range turns {
			role := "user"
			if i%2 == 1 {
				role = "model"
			}
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"role":%q,"parts":[{"text":%q}]}`, role, s)
		}
		b.WriteString(`],"systemInstruction":{"parts":[{"text":"You are a test."}]}}`)
		return b.String()
	}
	for _, b := range []string{
		body("gemlive fork: pick a colour"),
		body("gemlive fork: pick a colour", "ok", "why blue?"),
		body("gemlive fork: pick a colour", "ok", "pick another one"),
		body("gemlive other: unrelated"),
	} {
		resp, err := http.Post("http://"+px.addr+"/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", "application/json", strings.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	px.stop(t)
	list := gemLiveSessions(t, bin, dir)
	if len(list) != 2 {
		t.Fatalf("%d sessions, want 2 (the forked conversation and the unrelated one)", len(list))
	}
	var forked string
	for _, s := range list {
		if s.Requests == 3 {
			forked = s.ID
		} else if s.Requests != 1 {
			t.Errorf("session %s holds %d requests, want 3 or 1", s.ID, s.Requests)
		}
	}
	if forked == "" {
		t.Fatalf("no session holds the 3 requests of the forked conversation")
	}
	out, err := exec.Command(bin, "--dir", dir, "show", forked, "--format", "json").Output()
	if err != nil {
		t.Fatalf("bbengine show: %v", err)
	}
	var tl struct {
		Session struct {
			Threads int `json:"threads"`
		} `json:"session"`
		Events []struct {
			Kind   string `json:"kind"`
			Thread int    `json:"thread"`
			Prov   struct {
				Exchange uint64 `json:"exchange"`
			} `json:"prov"`
			Rewrite *struct {
				Kind string `json:"kind"`
				Kept int    `json:"kept"`
			} `json:"rewrite"`
		} `json:"events"`
	}
	if err := json.Unmarshal(out, &tl); err != nil {
		t.Fatalf("show --format json: %v\n%s", err, out)
	}
	forks := 0
	for _, e := range tl.Events {
		if e.Kind == "rewrite" && e.Rewrite != nil {
			if e.Rewrite.Kind != "fork" || e.Rewrite.Kept != 2 || e.Thread != 2 {
				t.Errorf("rewrite %+v on thread %d, want a fork keeping 2 messages, on thread 2", *e.Rewrite, e.Thread)
			}
			forks++
		}
	}
	if forks != 1 || tl.Session.Threads != 2 {
		t.Errorf("%d fork rewrites, %d threads, want 1 and 2\n%s", forks, tl.Session.Threads, out)
	}
	// trace tells how each request's session was found.
	sources := map[string]int{}
	seen := map[uint64]bool{}
	for _, e := range tl.Events {
		if x := e.Prov.Exchange; x != 0 && !seen[x] {
			seen[x] = true
			tr, err := exec.Command(bin, "--dir", dir, "trace", fmt.Sprint(x), "--bodies=false").Output()
			if err != nil {
				t.Fatalf("bbengine trace %d: %v", x, err)
			}
			m := regexp.MustCompile(`session=(\S+) \((\S+)\)`).FindSubmatch(tr)
			if m == nil || string(m[1]) != forked {
				t.Fatalf("bbengine trace %d: no session %s in\n%s", x, forked, tr)
			}
			sources[string(m[2])]++
		}
	}
	if sources["minted"] != 1 || sources["continued"] != 2 || len(sources) != 2 {
		t.Errorf("session sources of the 3 requests: %v, want minted once and continued twice", sources)
	}
}
