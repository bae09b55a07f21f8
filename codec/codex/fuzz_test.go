package codex

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzCodexLine checks that ParseLine never panics, that a line it
// accepts re-encodes (AppendLine) to a line that parses to the same
// Line, and that Count never panics on what it accepts.
func FuzzCodexLine(f *testing.F) {
	for _, s := range []string{
		`{"timestamp":"2026-02-23T19:34:26.098Z","type":"session_meta","payload":{"id":"a","source":{"subagent":"review"}}}`,
		`{"type":"response_item","payload":{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"x"}]}}`,
		`{"type":"response_item","payload":{"type":"custom_tool_call","input":{"k":1}}}`,
		`{"type":"event_msg","payload":{"type":"token_count","info":null}}`,
		`{"type":"compacted","payload":{"message":"m","replacement_history":[]}}`,
		`{"record_type":"state"}`,
		`{"id":"x","instructions":"y"}`,
		`{"type":"future","payload":1}`,
		`{synthetic malformed json`,
	} {
		f.Add([]byte(s))
	}
	dir := filepath.Join("..", "..", "..", "shared", "agentlogs-golden", "codex", "madshn-localpush")
	if b, err := os.ReadFile(filepath.Join(dir, "rollout-2026-02-23T13-19-38-019c8a70-dda7-7f33-98ea-f30553347322.jsonl")); err == nil {
		for _, l := range splitLines(b) {
			f.Add(l)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := ParseLine(b)
		// A line CheckLine passes is a JSON object with a type, record
		// type or id.
		if CheckLine(b) == nil && (l.Type == "" && l.Meta == nil && err == nil) {
			t.Fatalf("CheckLine passes %q, which ParseLine reads as no record", b)
		}
		if err != nil {
			return
		}
		enc := AppendLine(nil, &l)
		again, err := ParseLine(enc)
		if err != nil {
			t.Fatalf("re-encoded line does not parse: %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(again, l) {
			t.Fatalf("re-encoded line differs:\n%#v\n%#v", again, l)
		}
		Count([][]byte{b, b})
	})
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := 0
		for i < len(b) && b[i] != '\n' {
			i++
		}
		out = append(out, b[:i])
		if i == len(b) {
			break
		}
		b = b[i+1:]
	}
	return out
}
