package breaker

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bbengine/bbengine/codec/exchange"
	"github.com/bbengine/bbengine/codec/llm"
)

// convo builds Anthropic Messages request bodies of a growing
// conversation, as an agent sends them.
type convo struct {
	system string
	msgs   []map[string]any
	n      int
}

func newConvo(prompt string) *convo {
	c := &convo{system: "You are an agent.\nWorking directory: /nonexistent/project\n"}
	c.user(prompt)
	return c
}

func (c *convo) user(text string) {
	c.msgs = append(c.msgs, map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": text}}})
}

// step adds an assistant turn calling name with input, and its result.
func (c *convo) step(name string, input map[string]any, result string, isErr bool) {
	c.n++
	id := fmt.Sprintf("toolu_%03d", c.n)
	c.msgs = append(c.msgs,
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "text", "text": "Let me try this."},
			map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}}},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": id, "content": result, "is_error": isErr},
			map[string]any{"type": "text", "text": "<system-reminder>stay on task</system-reminder>", "cache_control": map[string]any{"type": "ephemeral"}}}})
}

// answer adds a final assistant answer.
func (c *convo) answer(text string) {
	c.msgs = append(c.msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": text}}})
}

func (c *convo) body() []byte {
	b, err := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 1024, "stream": true,
		"system": []any{map[string]any{"type": "text", "text": c.system}}, "messages": c.msgs,
		"tools": []any{map[string]any{"name": "Bash", "input_schema": map[string]any{"type": "object"}}}})
	if err != nil {
		panic(err)
	}
	return b
}

// clock is a settable time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type recorder struct {
	mu   sync.Mutex
	recs []exchange.Breaker
}

func (r *recorder) record(b exchange.Breaker) error {
	if _, err := exchange.AppendBreaker(nil, b); err != nil {
		return err
	}
	r.mu.Lock()
	r.recs = append(r.recs, b)
	r.mu.Unlock()
	return nil
}

func (r *recorder) ops() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ops []string
	for _, b := range r.recs {
		ops = append(ops, b.Op+":"+b.Reason)
	}
	return strings.Join(ops, " ")
}

func newTest(t *testing.T, cfg Config) (*Breaker, *clock, *recorder) {
	t.Helper()
	clk := &clock{t: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}
	rec := &recorder{}
	b := New(Options{Config: cfg, Now: clk.now, Record: rec.record, Logf: t.Logf})
	return b, clk, rec
}

func admit(b *Breaker, session string, body []byte) Verdict {
	return b.Admit(Call{Session: session, API: llm.AnthropicMessages, Body: body})
}

// loop sends the same failing call again and again and returns the
// number of the first refused request (1-based), or 0.
func loop(t *testing.T, b *Breaker, session string, c *convo, n int) int {
	t.Helper()
	for i := 1; i <= n; i++ {
		if v := admit(b, session, c.body()); v.Refuse {
			return i
		}
		c.step("Bash", map[string]any{"command": "make build"}, "make: *** [build] Error 2", true)
	}
	return 0
}

func TestStagnationTrips(t *testing.T) {
	b, _, rec := newTest(t, Defaults())
	c := newConvo("build the project")
	// Request 1 is the prompt; requests 2..4 carry one, two, three
	// identical failed calls; the third repeat (request 5) is stagnant for
	// the third time in a row.
	if got := loop(t, b, "s1", c, 10); got != 5 {
		t.Fatalf("refused request %d, want 5 (3 stagnant calls in a row)", got)
	}
	st, ok := b.Status("s1")
	if !ok || st.State != exchange.BreakerOpen || st.Reason != "stagnation" {
		t.Fatalf("status %+v", st)
	}
	if !strings.Contains(st.Detail, `Bash {"command":"make build"}`) || !strings.Contains(st.Detail, "threshold 3") {
		t.Errorf("detail does not name the repeated call and threshold: %q", st.Detail)
	}
	if st.Counters.Calls != 4 || st.Counters.Stagnant != 3 {
		t.Errorf("counters %+v, want 4 calls passed and 3 stagnant", st.Counters)
	}
	v := admit(b, "s1", c.body())
	if !v.Refuse || v.RetryAfter != 300*time.Second || !strings.Contains(v.Message, "bbengine breaker reset s1") {
		t.Errorf("verdict %+v", v)
	}
	if got := rec.ops(); got != "trip:stagnation" {
		t.Errorf("records %q", got)
	}
	// Another session is unaffected.
	if v := admit(b, "s2", newConvo("other work").body()); v.Refuse {
		t.Errorf("session s2 refused: %+v", v)
	}
}

func TestProgressNeverTrips(t *testing.T) {
	b, clk, _ := newTest(t, Defaults())
	c := newConvo("write fifty modules")
	for i := 1; i <= 60; i++ {
		if v := admit(b, "s", c.body()); v.Refuse {
			t.Fatalf("request %d refused: %s", i, v.Message)
		}
		clk.add(10 * time.Second)
		switch i % 3 {
		case 0: // a new file
			c.step("Write", map[string]any{"file_path": fmt.Sprintf("/p/m%d.go", i), "content": "package m"}, "File created successfully", false)
		case 1: // reading something new
			c.step("Read", map[string]any{"file_path": fmt.Sprintf("/p/r%d.go", i)}, fmt.Sprintf("contents of r%d", i), false)
		default: // a failing build, then an edit fixing it
			c.step("Bash", map[string]any{"command": "go build ./..."}, fmt.Sprintf("./m.go:%d: undefined: x\nExit code 1", i), true)
		}
	}
	st, _ := b.Status("s")
	if st.State != exchange.BreakerClosed || st.Counters.Calls != 60 || st.Counters.Signal == "" {
		t.Errorf("status %+v", st)
	}
}

func TestNoProgressAfterProgress(t *testing.T) {
	b, _, _ := newTest(t, Defaults())
	c := newConvo("fix it")
	admit(b, "s", c.body())
	c.step("Edit", map[string]any{"file_path": "/p/a.go", "old_string": "a", "new_string": "b"}, "The file /p/a.go has been updated.", false)
	refused := 0
	for i := 1; i <= 15 && refused == 0; i++ {
		if v := admit(b, "s", c.body()); v.Refuse {
			refused = i
			break
		}
		// Different commands, different errors: no repeat, no progress.
		c.step("Bash", map[string]any{"command": fmt.Sprintf("try %d", i)}, fmt.Sprintf("error %d", i), true)
	}
	// Request 1 carries the edit (progress); requests 2..11 carry ten
	// failures.
	if refused != 11 {
		t.Fatalf("refused request %d, want 11", refused)
	}
	st, _ := b.Status("s")
	if st.Reason != "no_progress" || !strings.Contains(st.Detail, "file changed: /p/a.go") {
		t.Errorf("status %s: %s", st.Reason, st.Detail)
	}
}

func TestNeverProgress(t *testing.T) {
	b, _, _ := newTest(t, Defaults())
	c := newConvo("explore")
	refused := 0
	for i := 1; i <= 30; i++ {
		if v := admit(b, "s", c.body()); v.Refuse {
			refused = i
			break
		}
		c.step("Bash", map[string]any{"command": fmt.Sprintf("ls /x%d", i)}, fmt.Sprintf("ls: /x%d: No such file", i), true)
	}
	if refused != 21 {
		t.Fatalf("refused request %d, want 21 (the one carrying the 20th call without any progress)", refused)
	}
	if st, _ := b.Status("s"); st.Reason != "never_progress" {
		t.Errorf("reason %s", st.Reason)
	}
}

func TestRetryAndSideCalls(t *testing.T) {
	b, _, _ := newTest(t, Defaults())
	c := newConvo("build")
	admit(b, "s", c.body())
	for i := 0; i < 3; i++ {
		c.step("Bash", map[string]any{"command": "make"}, "Error 2", true)
		// Each request is sent three times (client retries), with side
		// calls of the agent between them: neither counts.
		for range 3 {
			if v := admit(b, "s", c.body()); v.Refuse {
				t.Fatalf("step %d refused: %s", i, v.Message)
			}
			admit(b, "s", newConvo(fmt.Sprintf("Write a title for this chat %d", i)).body())
		}
	}
	st, _ := b.Status("s")
	if st.Counters.Stagnant != 2 || st.State != exchange.BreakerClosed {
		t.Errorf("counters %+v state %s, want 2 stagnant, closed", st.Counters, st.State)
	}
	// A new prompt from the person starts a new loop.
	c.answer("I could not build it.")
	c.user("try again with the debug flags")
	admit(b, "s", c.body())
	for range 2 {
		c.step("Bash", map[string]any{"command": "make"}, "Error 2", true)
		if v := admit(b, "s", c.body()); v.Refuse {
			t.Fatalf("refused after a new prompt: %s", v.Message)
		}
	}
}

func TestHalfOpen(t *testing.T) {
	b, clk, rec := newTest(t, Defaults())
	c := newConvo("build")
	if got := loop(t, b, "s", c, 10); got != 5 {
		t.Fatalf("refused %d", got)
	}
	clk.add(299 * time.Second)
	if v := admit(b, "s", c.body()); !v.Refuse || v.RetryAfter != time.Second {
		t.Fatalf("before the cooldown: %+v", v)
	}
	clk.add(time.Second)
	if v := admit(b, "s", c.body()); v.Refuse {
		t.Fatalf("the probe was refused: %s", v.Message)
	}
	if st, _ := b.Status("s"); st.State != exchange.BreakerHalfOpen {
		t.Fatalf("state %s", st.State)
	}
	// The probe repeats the failure: open again.
	c.step("Bash", map[string]any{"command": "make build"}, "make: *** [build] Error 2", true)
	if v := admit(b, "s", c.body()); !v.Refuse || v.Reason != "probe_no_progress" {
		t.Fatalf("after a fruitless probe: %+v", v)
	}
	clk.add(300 * time.Second)
	if v := admit(b, "s", c.body()); v.Refuse {
		t.Fatalf("second probe refused: %s", v.Message)
	}
	c.step("Edit", map[string]any{"file_path": "/p/Makefile", "old_string": "x", "new_string": "y"}, "The file /p/Makefile has been updated.", false)
	if v := admit(b, "s", c.body()); v.Refuse {
		t.Fatalf("progress after the probe refused: %s", v.Message)
	}
	if got, want := rec.ops(), "trip:stagnation half-open:stagnation trip:probe_no_progress half-open:probe_no_progress close:probe_progress"; got != want {
		t.Errorf("records\n got %s\nwant %s", got, want)
	}
}

func TestCaps(t *testing.T) {
	cfg := Defaults()
	cfg.MaxCalls = 5
	cfg.Run.MaxCostUSD = 1
	cfg.Pricing = map[string]llm.Price{"my-model": {Input: 1000, Output: 1000}}
	b, _, _ := newTest(t, cfg)
	for i := 1; i <= 6; i++ {
		v := admit(b, "a", newConvo(fmt.Sprintf("task %d", i)).body())
		if v.Refuse != (i == 6) {
			t.Fatalf("request %d: %+v", i, v)
		}
		if i == 6 && (v.Reason != "max_calls" || v.RetryAfter != 300*time.Second) {
			t.Errorf("cap verdict %+v", v)
		}
	}
	// A run's cost cap, from the configured price.
	call := Call{Session: "b", Run: "r1", API: llm.AnthropicMessages, Body: newConvo("x").body()}
	if v := b.Admit(call); v.Refuse {
		t.Fatal(v.Message)
	}
	b.Usage("b", "r1", "my-model-1", exchange.Usage{InputTokens: 600, OutputTokens: 500})
	call.Body = newConvo("y").body()
	v := b.Admit(call)
	if !v.Refuse || v.Reason != "run_max_cost" || !strings.Contains(v.Message, "run r1 cost $1.10 (cap $1.00)") {
		t.Errorf("run cost cap: %+v", v)
	}
}

func TestManualTripResetRestore(t *testing.T) {
	b, clk, rec := newTest(t, Defaults())
	c := newConvo("work")
	admit(b, "s", c.body())
	if _, err := b.Trip("s", ""); err == nil {
		t.Error("a trip without a reason was accepted")
	}
	if _, err := b.Trip("bad\nid", "x"); err == nil {
		t.Error("an invalid session id was accepted")
	}
	if _, err := b.Trip("s", "stop it, it is deleting files"); err != nil {
		t.Fatal(err)
	}
	clk.add(24 * time.Hour)
	v := admit(b, "s", c.body())
	if !v.Refuse || v.RetryAfter != 0 || !strings.Contains(v.Message, "Only a reset") {
		t.Fatalf("after a manual trip: %+v", v)
	}
	// A new breaker restored from the records is still open.
	b2 := New(Options{Config: Defaults(), Now: clk.now, Record: rec.record})
	b2.Restore(rec.recs)
	if v := admit(b2, "s", c.body()); !v.Refuse || v.Reason != "manual" {
		t.Fatalf("after restore: %+v", v)
	}
	if _, err := b2.Reset("s", "test"); err != nil {
		t.Fatal(err)
	}
	if v := admit(b2, "s", c.body()); v.Refuse {
		t.Fatalf("after reset: %s", v.Message)
	}
	st, _ := b2.Status("s")
	if len(st.Transitions) != 2 || st.Transitions[1].Op != "reset" {
		t.Errorf("transitions %+v", st.Transitions)
	}
	// Snapshot writes the counters that changed since.
	b2.Snapshot()
	if last := rec.recs[len(rec.recs)-1]; last.Op != "snapshot" || last.Counters.Calls != 2 {
		t.Errorf("snapshot %+v", last)
	}
	// A change whose record cannot be written holds, and says so.
	b4 := New(Options{Config: Defaults(), Now: clk.now, Record: func(exchange.Breaker) error { return errors.New("disk full") }})
	if st, err := b4.Trip("s", "stop"); err == nil || !strings.Contains(err.Error(), "disk full") || st.State != exchange.BreakerOpen {
		t.Errorf("trip with a failing record: %+v, %v", st, err)
	}
	// A breaker restored from all of them says the same.
	b3 := New(Options{Config: Defaults(), Now: clk.now})
	b3.Restore(rec.recs)
	if fr, ok := b3.Status("s"); !ok || fr.State != exchange.BreakerClosed || fr.Reason != "manual" || len(fr.Transitions) != 2 || fr.Counters.Calls != 2 {
		t.Errorf("restored %+v", fr)
	}
}

func TestProjectConfig(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "cmd", "tool")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, ProjectFile)
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		// A new modification time even on coarse clocks.
		later := time.Now().Add(time.Duration(len(s)) * time.Second)
		os.Chtimes(file, later, later)
	}
	write("circuit_breaker:\n  stagnation_threshold: 1\n")
	b, _, _ := newTest(t, Defaults())
	c := newConvo("build")
	c.system = "Working directory: " + sub + "\n"
	if got := loop(t, b, "s", c, 10); got != 3 {
		t.Fatalf("refused %d, want 3 (threshold 1 from %s)", got, file)
	}
	st, _ := b.Status("s")
	if st.ConfigFrom != file || st.Config.Stagnation != 1 || st.Config.NoProgress != 10 {
		t.Errorf("config %+v from %s", st.Config, st.ConfigFrom)
	}
	// An edit takes effect; a bad file falls back to the global
	// thresholds and says why.
	write("circuit_breaker:\n  stagnation_treshold: 5\n")
	st, _ = b.Status("s")
	if st.ConfigError == "" || !strings.Contains(st.ConfigError, file+":2: unknown setting circuit_breaker.stagnation_treshold") || st.Config.Stagnation != 3 {
		t.Errorf("bad project file: %q %+v", st.ConfigError, st.Config)
	}
	// The client's X-Bb-Project names the project for a session whose
	// requests do not.
	b2, _, _ := newTest(t, Defaults())
	write("circuit_breaker:\n  stagnation_threshold: 2\n")
	c2 := newConvo("build")
	c2.system = "no directory here"
	refused := 0
	for i := 1; i <= 10 && refused == 0; i++ {
		if v := b2.Admit(Call{Session: "p", API: llm.AnthropicMessages, Body: c2.body(), Project: sub}); v.Refuse {
			refused = i
		}
		c2.step("Bash", map[string]any{"command": "make"}, "Error", true)
	}
	if refused != 4 {
		t.Errorf("with X-Bb-Project: refused %d, want 4", refused)
	}
}

func TestOverlay(t *testing.T) {
	base := Defaults()
	cfg, found, err := Overlay(base, "c.yaml", strings.NewReader("dir: /x\ncircuit_breaker:\n  max_loops_no_progress: 100\n  run:\n    max_calls: 7\n  pricing:\n    my-model: {input: 2, output: 8}\n"), false)
	if err != nil || !found || cfg.NoProgress != 100 || cfg.Stagnation != 3 || cfg.Run.MaxCalls != 7 || cfg.Pricing["my-model"].Output != 8 {
		t.Fatalf("overlay %+v %v %v", cfg, found, err)
	}
	for _, tc := range []struct{ doc, want string }{
		{"dir: /x\n", ""},
		{"circuit_breaker:\n  cooldown_period_seconds: -1\n", "c.yaml:2: circuit_breaker: cooldown_period_seconds is -1"},
		{"circuit_breaker:\n  run:\n    max_cals: 3\n", "c.yaml:3: unknown setting circuit_breaker.run.max_cals"},
		{"circuit_breaker:\n  pricing:\n    m: {inptu: 1}\n", "c.yaml:3: unknown setting circuit_breaker.pricing.m.inptu"},
		{"circuit_breaker:\n  max_calls: many\n", "c.yaml: circuit_breaker: yaml: unmarshal errors:\n  line 2"},
		{"circuit_breaker: [1]\n", "c.yaml:1: circuit_breaker must be a mapping"},
		{"other: 1\ncircuit_breaker: {}\n", "only"},
	} {
		_, _, err := Overlay(base, "c.yaml", strings.NewReader(tc.doc), tc.want == "only")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.doc, err)
		case tc.want == "only" && (err == nil || !strings.Contains(err.Error(), `c.yaml:1: unknown key "other"`)):
			t.Errorf("%q: %v", tc.doc, err)
		case tc.want != "" && tc.want != "only" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%q:\n got %v\nwant %s…", tc.doc, err, tc.want)
		}
	}
	if cfg, _, _ := Overlay(base, "c.yaml", strings.NewReader("circuit_breaker:\n  enabled: false\n"), true); cfg.Enabled {
		t.Error("enabled: false did not turn it off")
	}
}

func TestDisabled(t *testing.T) {
	cfg := Defaults()
	cfg.Enabled = false
	b, _, rec := newTest(t, cfg)
	if got := loop(t, b, "s", newConvo("build"), 30); got != 0 || rec.ops() != "" {
		t.Errorf("a disabled breaker refused request %d, records %q", got, rec.ops())
	}
}

// TestProtocols drives the same stuck loop in each protocol's own shape.
func TestProtocols(t *testing.T) {
	type shape struct {
		api  llm.API
		body func(n int) []byte // n identical failed calls so far
	}
	mk := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	shapes := map[string]shape{
		"openai-chat": {llm.OpenAIChat, func(n int) []byte {
			msgs := []any{map[string]any{"role": "system", "content": "be useful"}, map[string]any{"role": "user", "content": "build it"}}
			for i := range n {
				id := fmt.Sprintf("call_%d", i)
				msgs = append(msgs,
					map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": id, "type": "function",
						"function": map[string]any{"name": "shell", "arguments": `{"command":["make"]}`}}}},
					map[string]any{"role": "tool", "tool_call_id": id, "content": "make: *** Error 2\nExit code: 2"})
			}
			return mk(map[string]any{"model": "gpt-5", "messages": msgs, "stream": true})
		}},
		"openai-responses": {llm.OpenAIResponses, func(n int) []byte {
			items := []any{map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "build it"}}}}
			for i := range n {
				id := fmt.Sprintf("call_%d", i)
				items = append(items,
					map[string]any{"type": "reasoning", "summary": []any{}},
					map[string]any{"type": "function_call", "call_id": id, "name": "shell", "arguments": `{"command":["make"]}`},
					map[string]any{"type": "function_call_output", "call_id": id, "output": "Process exited with code 2\nmake: *** Error 2"})
			}
			return mk(map[string]any{"model": "gpt-5", "instructions": "be useful", "input": items, "stream": true})
		}},
		"gemini": {llm.Gemini, func(n int) []byte {
			contents := []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "build it"}}}}
			for range n {
				contents = append(contents,
					map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "run_shell_command", "args": map[string]any{"command": "make"}}}}},
					map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": "run_shell_command",
						"response": map[string]any{"output": "Error: make failed\nExit Code: 2"}}}}})
			}
			return mk(map[string]any{"contents": contents})
		}},
	}
	for name, sh := range shapes {
		t.Run(name, func(t *testing.T) {
			b, _, _ := newTest(t, Defaults())
			refused := 0
			for n := 0; n < 10 && refused == 0; n++ {
				if v := b.Admit(Call{Session: "s", API: sh.api, Body: sh.body(n)}); v.Refuse {
					refused = n + 1
				}
			}
			if refused != 5 {
				t.Fatalf("refused request %d, want 5", refused)
			}
			if st, _ := b.Status("s"); st.Reason != "stagnation" || !strings.Contains(st.Detail, "make") {
				t.Errorf("%s: %s", st.Reason, st.Detail)
			}
		})
	}
}

// FuzzAdmit feeds arbitrary bodies in every protocol: the breaker never
// panics, and a body it cannot read is only counted.
func FuzzAdmit(f *testing.F) {
	c := newConvo("build")
	f.Add(c.body())
	c.step("Bash", map[string]any{"command": "make"}, "Error", true)
	f.Add(c.body())
	f.Add([]byte(`{"input":[{"type":"function_call","call_id":"a","name":"x","arguments":"{}"},{"type":"function_call_output","call_id":"a","output":"e"}]}`))
	f.Add([]byte(`{"contents":[{"role":"model","parts":[{"functionCall":{"name":"x"}}]}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant"},1,"x",null]}`))
	f.Add([]byte(`{"messages":[`))
	f.Fuzz(func(t *testing.T, body []byte) {
		b := New(Options{Config: Defaults()})
		for _, api := range []llm.API{llm.AnthropicMessages, llm.OpenAIChat, llm.OpenAIResponses, llm.Gemini} {
			for range 2 {
				if v := b.Admit(Call{Session: "s", API: api, Body: body}); v.Refuse {
					t.Fatalf("%s: refused after two calls: %s", api, v.Message)
				}
			}
		}
	})
}

// BenchmarkAdmit measures judging a long agent conversation (about 350
// KiB), against decoding the whole request (llm.DecodeRequest), which is
// what a breaker that did not skip the history would pay.
func BenchmarkAdmit(b *testing.B) {
	c := newConvo("build the project")
	c.system = strings.Repeat("You are Claude Code. ", 1000)
	for i := range 60 {
		c.step("Bash", map[string]any{"command": fmt.Sprintf("go test ./pkg%d/...", i)}, strings.Repeat("ok  \tgithub.com/x/y\t0.1s\n", 150), false)
	}
	body := c.body()
	b.Run("admit", func(b *testing.B) {
		br := New(Options{Config: Defaults()})
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			br.Admit(Call{Session: "s", API: llm.AnthropicMessages, Body: body})
		}
	})
	// A growing conversation admitted turn by turn, as an agent sends it:
	// each body resends the last one and adds a step (60 turns, the last
	// one the body above); ns/op is per body.
	turns := make([][]byte, 0, 60)
	g := newConvo("build the project")
	g.system = c.system
	for i := range 60 {
		g.step("Bash", map[string]any{"command": fmt.Sprintf("go test ./pkg%d/...", i)}, strings.Repeat("ok  \tgithub.com/x/y\t0.1s\n", 150), false)
		turns = append(turns, g.body())
	}
	var total int64
	for _, t := range turns {
		total += int64(len(t))
	}
	growing := func(b *testing.B, fresh bool) {
		b.ReportAllocs()
		b.SetBytes(total / int64(len(turns)))
		var br *Breaker
		i := 0
		for b.Loop() {
			if i%len(turns) == 0 || fresh {
				br = New(Options{Config: Defaults()}) // a new session, or no memory at all
			}
			br.Admit(Call{Session: "s", API: llm.AnthropicMessages, Body: turns[i%len(turns)]})
			i++
		}
	}
	b.Run("admit-growing", func(b *testing.B) { growing(b, false) })
	b.Run("baseline=admit-growing-no-memory", func(b *testing.B) { growing(b, true) })
	b.Run("baseline=decode-whole", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := llm.DecodeRequest(llm.AnthropicMessages, body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
