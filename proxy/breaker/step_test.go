package breaker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/bbengine/bbengine/codec/llm"
)

func TestWorkingDir(t *testing.T) {
	// request returns a Messages request body and its system prompt:
	// system is the prompt's text; env, when set, is a message of role
	// system after the prompt, where Claude Code 2.1.330 states its
	// environment.
	request := func(system, env string) (sys, body []byte) {
		sys, _ = json.Marshal([]any{map[string]any{"type": "text", "text": system, "cache_control": map[string]any{"type": "ephemeral"}}})
		msgs := []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "build it"}}}}
		if env != "" {
			msgs = append(msgs, map[string]any{"role": "system", "content": []any{map[string]any{"type": "text", "text": env}}})
		}
		// Agents do not escape < and > as encoding/json does by default.
		var b bytes.Buffer
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false)
		if err := e.Encode(map[string]any{"model": "claude-opus-4-5", "messages": msgs, "system": json.RawMessage(sys)}); err != nil {
			t.Fatal(err)
		}
		return sys, b.Bytes()
	}
	const env2_1_330 = "# Environment\nYou have been invoked in the following environment: \n - Primary working directory: %s\n - Is a git repository: false\n - Platform: linux\n"
	for _, tc := range []struct {
		name, system, env, want string
	}{
		{"claude-code-2.1.330", "You are a Claude agent.", fmt.Sprintf(env2_1_330, "/home/ana/shop"), "/home/ana/shop"},
		{"space", "You are a Claude agent.", fmt.Sprintf(env2_1_330, "/home/ana/my shop"), "/home/ana/my shop"},
		{"relative", "You are a Claude agent.", fmt.Sprintf(env2_1_330, "shop"), ""},
		{"claude-code-env", "<env>\nWorking directory: /home/ana/shop\nIs directory a git repo: Yes\n</env>", "", "/home/ana/shop"},
		{"codex", "You are Codex.", "<environment_context>\n  <cwd>/srv/app</cwd>\n</environment_context>", "/srv/app"},
		{"none", "You are an agent.", "", ""},
	} {
		sys, body := request(tc.system, tc.env)
		if got := workingDir(sys, body); got != tc.want {
			t.Errorf("%s: workingDir = %q, want %q", tc.name, got, tc.want)
		}
		// Admit reads it from the whole request.
		if st, ok := readStep(llm.AnthropicMessages, body); !ok || st.cwd != tc.want {
			t.Errorf("%s: readStep: cwd %q (readable %v), want %q", tc.name, st.cwd, ok, tc.want)
		}
	}
}

// systemFirst is c's body with the system prompt before the conversation
// (Go's encoding/json sorts map keys: body puts it after).
func (c *convo) systemFirst() []byte {
	b, err := json.Marshal(struct {
		System   []any            `json:"system"`
		Model    string           `json:"model"`
		Messages []map[string]any `json:"messages"`
		Stream   bool             `json:"stream"`
	}{[]any{map[string]any{"type": "text", "text": c.system}}, "claude-sonnet-4-5", c.msgs, true})
	if err != nil {
		panic(err)
	}
	return b
}

// TestReadStepResent: reading a session's bodies with the memory of its
// earlier ones (the resent history checked by hash) finds what reading
// each body whole finds, over growing conversations of two threads, with
// the system prompt before or after the conversation, a changed system
// prompt, a compacted history and a retried request.
func TestReadStepResent(t *testing.T) {
	for _, order := range []string{"system-after", "system-first"} {
		main, sub := newConvo("build the project"), newConvo("explore the code")
		bodyOf := func(c *convo) []byte {
			if order == "system-first" {
				return c.systemFirst()
			}
			return c.body()
		}
		var prev []*scanned
		resent, n := 0, 0
		read := func(body []byte) {
			t.Helper()
			n++
			want, wok := readStep(llm.AnthropicMessages, body)
			got, ok, next, before := readStepFrom(llm.AnthropicMessages, body, prev)
			if ok != wok || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s, body %d: with memory %+v %v; whole %+v %v", order, n, got, ok, want, wok)
			}
			if before != nil {
				resent++
			}
			if next != nil {
				l := []*scanned{next}
				for _, s := range prev {
					if s != before && len(l) < maxScans {
						l = append(l, s)
					}
				}
				prev = l
			}
		}
		for i := range 40 {
			read(bodyOf(main))
			read(bodyOf(main)) // a retry
			main.step("Bash", map[string]any{"command": fmt.Sprintf("make test%d", i)}, strings.Repeat("ok\n", i), i%3 == 0)
			if i%4 == 0 {
				read(bodyOf(sub))
				sub.step("Read", map[string]any{"file_path": fmt.Sprintf("/x/f%d.go", i)}, "package x", false)
			}
			switch i {
			case 10:
				main.system = "You are an agent.\nWorking directory: /elsewhere\n"
			case 20:
				main.msgs = append(main.msgs[:1:1], main.msgs[len(main.msgs)-2:]...) // compacted
			case 30:
				main.answer("done")
				main.user("now the docs")
			}
		}
		read([]byte(`{"model":"m","messages":[{"role":"user","content":"x"}],"system":"a","system":"b"}`))
		read([]byte(`{"model":"m","messages":[{"role":"user","content":"x"}]} trailing`))
		if resent < n/2 {
			t.Errorf("%s: %d of %d bodies read with memory, want most", order, resent, n)
		}
	}
}

// TestAdmitResentMemory: the breaker remembers a session's last bodies
// and reads the next one with that memory.
func TestAdmitResentMemory(t *testing.T) {
	b := New(Options{Config: Defaults()})
	c := newConvo("build")
	for i := range 5 {
		b.Admit(Call{Session: "s", API: llm.AnthropicMessages, Body: c.body()})
		c.step("Bash", map[string]any{"command": fmt.Sprint(i)}, "ok", false)
	}
	_, ok, _, before := readStepFrom(llm.AnthropicMessages, c.body(), b.recall("s"))
	if !ok || before == nil {
		t.Errorf("the next body of the session is not read with memory (readable %v)", ok)
	}
	if got := len(b.recall("s")); got != 1 {
		t.Errorf("one thread: %d bodies remembered, want 1", got)
	}
}
