package hookjson

import (
	"bytes"
	"encoding/json"

	"github.com/bbengine/bbengine/agents"
)

// MaxChars is Claude Code's cap on one hook's additionalContext.
const MaxChars = 10000

// Input is the part of a hook event the hook reads. Claude Code and
// Codex send the same fields.
type Input struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	Event          string `json:"hook_event_name"`
	// Source is why a session starts: startup, resume, clear or compact.
	Source string `json:"source"`
	// Prompt is what the user submitted (UserPromptSubmit).
	Prompt string `json:"prompt"`
}

// Output is the answer both agents take from a SessionStart or
// UserPromptSubmit hook.
type Output struct {
	Specific Specific `json:"hookSpecificOutput"`
}

// Specific is the event's part of Output.
type Specific struct {
	Event   string `json:"hookEventName"`
	Context string `json:"additionalContext"`
}

// Parse decodes a hook event; the error is encoding/json's.
func Parse(b []byte) (agents.HookEvent, error) {
	var in Input
	if err := json.Unmarshal(b, &in); err != nil {
		return agents.HookEvent{}, err
	}
	return agents.HookEvent{SessionID: in.SessionID, TranscriptPath: in.TranscriptPath, Cwd: in.Cwd, Event: in.Event, Source: in.Source, Prompt: in.Prompt}, nil
}

// Answer encodes the answer that adds text to the conversation at ev,
// with a final newline and without escaping <, > and & (the pack is
// Markdown with an XML-like tag).
func Answer(ev agents.HookEvent, text string) ([]byte, error) {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(Output{Specific{Event: ev.Event, Context: text}}); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
