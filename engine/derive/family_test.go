package derive

import "testing"

// TestAgentOf checks the families derivation names proxied sessions by,
// as agents/all registers them (linked by importers_test.go): the first
// family whose words the User-Agent or Originator holds, else the first
// product's name.
func TestAgentOf(t *testing.T) {
	for _, c := range []struct {
		ua, originator string
		agent, client  string
	}{
		{"claude-cli/2.1.330 (external, cli)", "", "claude-code", "claude-cli/2.1.330"},
		{"Claude-Code/1.0", "", "claude-code", "Claude-Code/1.0"},
		{"codex_cli_rs/0.125.0 (Ubuntu 24.4.0; x86_64)", "codex_cli_rs", "codex", "codex_cli_rs/0.125.0"},
		{"reqwest/0.12", "codex_exec", "codex", "reqwest/0.12"},
		{"GeminiCLI/0.11.0 (linux; x64) google-genai-sdk/1.16.0", "", "gemini-cli", "GeminiCLI/0.11.0"},
		{"opencode/0.15 ai-sdk/5", "", "opencode", "opencode/0.15"},
		{"Anthropic/Python 0.40.0", "", "anthropic-sdk", "Anthropic/Python"},
		{"OpenAI/JS 4.77.0", "", "openai-sdk", "OpenAI/JS"},
		{"aider/0.86.1", "", "aider", "aider/0.86.1"},
		{"curl/8.5.0", "", "curl", "curl/8.5.0"},
		{"", "", "", ""},
	} {
		agent, client := agentOf(c.ua, c.originator)
		if agent != c.agent || client != c.client {
			t.Errorf("agentOf(%q, %q) = %q, %q; want %q, %q", c.ua, c.originator, agent, client, c.agent, c.client)
		}
	}
}

// TestAgentCLI checks which sessions' system prompts are a coding
// agent's own: those of a coding agent's family, and those imported from
// an agent's logs, not an SDK's or an unknown client's.
func TestAgentCLI(t *testing.T) {
	for _, c := range []struct {
		s    Session
		want bool
	}{
		{Session{Agent: "claude-code"}, true},
		{Session{Agent: "codex"}, true},
		{Session{Agent: "gemini-cli"}, true},
		{Session{Agent: "cline"}, true},
		{Session{Agent: "openai-sdk"}, false},
		{Session{Agent: "curl"}, false},
		{Session{}, false},
		{Session{Import: &ImportInfo{Source: "claude"}}, true},
		{Session{Import: &ImportInfo{Source: "codex"}}, true},
		{Session{Import: &ImportInfo{Source: "atif"}}, false},
	} {
		if got := agentCLI(&c.s); got != c.want {
			t.Errorf("agentCLI(agent %q, import %+v) = %t, want %t", c.s.Agent, c.s.Import, got, c.want)
		}
	}
}
