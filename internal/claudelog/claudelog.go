// Package claudelog writes Claude Code JSONL transcripts line by line,
// the way Claude Code 2.1 writes them (typed prompts as string content,
// assistant messages with text and tool_use blocks, tool results as user
// lines), for the tests of the packages that read such logs.
//
// It imports only the standard library.
package claudelog

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Log is a transcript being written. Session is its session id; T the
// time of the last line (each line is 3 seconds after the one before);
// Parent the uuid the next line points back to (clear it to start a
// branch); Cwd the working directory on every line, "/repo" when empty.
type Log struct {
	Session string
	T       time.Time
	N       int
	Lines   []string
	Parent  string
	Cwd     string
}

// New starts the transcript of session at 2026-11-01 09:00 UTC.
func New(session string) *Log {
	return &Log{Session: session, T: time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)}
}

// Add appends a line, with its uuid, session, time, working directory,
// version and parent filled in.
func (l *Log) Add(m map[string]any) {
	l.N++
	l.T = l.T.Add(3 * time.Second)
	uuid := fmt.Sprintf("00000000-0000-4000-8000-%012d", l.N)
	cwd := l.Cwd
	if cwd == "" {
		cwd = "/repo"
	}
	m["uuid"], m["sessionId"], m["timestamp"], m["cwd"], m["version"] = uuid, l.Session, l.T.Format(time.RFC3339Nano), cwd, "2.1.39"
	if l.Parent != "" {
		m["parentUuid"] = l.Parent
	}
	l.Parent = uuid
	b, _ := json.Marshal(m)
	l.Lines = append(l.Lines, string(b))
}

// User appends a prompt the person typed.
func (l *Log) User(text string) {
	l.Add(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": text}})
}

// Reply appends an assistant message of the content blocks given (Text,
// Use); it stops for a tool when one of them is a tool use.
func (l *Log) Reply(content ...map[string]any) {
	stop := "end_turn"
	for _, c := range content {
		if c["type"] == "tool_use" {
			stop = "tool_use"
		}
	}
	l.Add(map[string]any{"type": "assistant", "requestId": fmt.Sprintf("req_%d", l.N), "message": map[string]any{
		"id": fmt.Sprintf("msg_%d", l.N), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
		"content": content, "stop_reason": stop, "usage": map[string]any{"input_tokens": 1000, "output_tokens": 100}}})
}

// Result appends the result of tool use id.
func (l *Log) Result(id, out string, isErr bool) {
	l.Add(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "tool_result", "tool_use_id": id, "content": out, "is_error": isErr}}}})
}

// Data is the transcript as a file holds it.
func (l *Log) Data() []byte { return []byte(strings.Join(l.Lines, "\n") + "\n") }

// Text is a text content block.
func Text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

// Use is a tool_use content block.
func Use(id, name string, input map[string]any) map[string]any {
	return map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}
}
