package breaker

import (
	"bytes"
	"encoding/json"
	"fmt"
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
