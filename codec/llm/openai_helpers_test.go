package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// oaiSharedDir returns the shared provider-streams folder (see its
// MANIFEST.md), or "" when this checkout has none.
func oaiSharedDir() string {
	dir := filepath.Join("..", "..", "..", "shared", "provider-streams")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return ""
	}
	return dir
}

// oaiShared returns the shared fixture folder, skipping the test when it
// is missing.
func oaiShared(t testing.TB) string {
	t.Helper()
	dir := oaiSharedDir()
	if dir == "" {
		t.Skip("shared provider-streams fixtures not found")
	}
	return dir
}

// oaiReadFixture reads one fixture file under the shared folder.
func oaiReadFixture(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(oaiShared(t), filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// oaiSnapshots extracts the bodies of a Jest snapshot file, keyed by test
// name (without the trailing " 1"), as MANIFEST.md describes: take the
// template literal, undo its escapes (\\ \" \`), drop the newline after
// the opening and before the closing backtick, then the outer quotes.
func oaiSnapshots(src []byte) (map[string][]byte, error) {
	const open, mid = "exports[`", "`] = `"
	out := map[string][]byte{}
	s := string(src)
	for {
		i := strings.Index(s, open)
		if i < 0 {
			return out, nil
		}
		s = s[i+len(open):]
		j := strings.Index(s, mid)
		if j < 0 {
			return nil, errors.New("snapshot name not closed")
		}
		name := strings.TrimSuffix(s[:j], " 1")
		s = s[j+len(mid):]
		var b strings.Builder
		k := 0
		for ; k < len(s) && s[k] != '`'; k++ {
			if s[k] == '\\' && k+1 < len(s) && strings.IndexByte("\\\"`", s[k+1]) >= 0 {
				k++
			}
			b.WriteByte(s[k])
		}
		if k == len(s) {
			return nil, errors.New("snapshot " + name + " not closed")
		}
		s = s[k+1:]
		body, ok := strings.CutPrefix(b.String(), "\n")
		body, ok2 := strings.CutSuffix(body, "\n")
		body, ok3 := strings.CutPrefix(body, `"`)
		body, ok4 := strings.CutSuffix(body, `"`)
		if !ok || !ok2 || !ok3 || !ok4 {
			return nil, errors.New("snapshot " + name + " is not a quoted string on its own lines")
		}
		out[name] = []byte(body)
	}
}

// oaiSnapshot returns one body of a snapshot file under openai/openai-node.
func oaiSnapshot(t testing.TB, file, name string) []byte {
	t.Helper()
	snaps, err := oaiSnapshots(oaiReadFixture(t, "openai/openai-node/"+file))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	b, ok := snaps[name]
	if !ok {
		t.Fatalf("%s: no snapshot %q", file, name)
	}
	return b
}

// oaiChatFixtures returns every Chat Completions stream of the shared
// folder by name: the .bin files by the first 8 hex digits of their name,
// the snapshots by test name. It returns nil when the folder is missing.
func oaiChatFixtures(tb testing.TB) map[string][]byte {
	dir := oaiSharedDir()
	if dir == "" {
		return nil
	}
	out := map[string][]byte{}
	bins, _ := filepath.Glob(filepath.Join(dir, "openai", "openai-python", "*.bin"))
	for _, p := range bins {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		out[filepath.Base(p)[:8]] = b
	}
	snaps, err := oaiSnapshots(oaiReadFixture(tb, "openai/openai-node/ChatCompletionStream.test.ts.snap"))
	if err != nil {
		tb.Fatal(err)
	}
	for name, b := range snaps {
		out[name] = b
	}
	return out
}

// oaiResponsesFixtures returns the Responses streams of the shared folder
// by snapshot name, or nil when the folder is missing.
func oaiResponsesFixtures(tb testing.TB) map[string][]byte {
	if oaiSharedDir() == "" {
		return nil
	}
	snaps, err := oaiSnapshots(oaiReadFixture(tb, "openai/openai-node/ResponseStream.test.ts.snap"))
	if err != nil {
		tb.Fatal(err)
	}
	return snaps
}

// oaiSSE builds an SSE body from data payloads, one event each, with an
// event: line first when withType is set (taken from the payload's type).
func oaiSSE(withType bool, payloads ...string) []byte {
	var b bytes.Buffer
	for _, p := range payloads {
		if withType {
			var e struct{ Type string }
			if json.Unmarshal([]byte(p), &e) == nil && e.Type != "" {
				b.WriteString("event: " + e.Type + "\n")
			}
		}
		b.WriteString("data: " + p + "\n\n")
	}
	return b.Bytes()
}

// oaiCheckEqual reports a difference between got and want as JSON, which
// shows RawMessage fields as text.
func oaiCheckEqual(t *testing.T, what string, got, want any) {
	t.Helper()
	if reflect.DeepEqual(got, want) {
		return
	}
	g, _ := json.MarshalIndent(got, "", "  ")
	w, _ := json.MarshalIndent(want, "", "  ")
	t.Errorf("%s:\ngot  %s\nwant %s", what, g, w)
}

// oaiRaw is shorthand for a RawMessage literal in expectations.
func oaiRaw(s string) json.RawMessage { return json.RawMessage(s) }

// oaiCheckValid fails when a decoded value does not marshal as JSON: every
// Raw, Input, StopDetails and Param value must be valid JSON (or empty).
func oaiCheckValid(t *testing.T, v any) {
	t.Helper()
	if _, err := json.Marshal(v); err != nil {
		t.Errorf("decoded value does not marshal: %v", err)
	}
}

func TestOpenAISnapshotExtraction(t *testing.T) {
	snaps, err := oaiSnapshots(oaiReadFixture(t, "openai/openai-node/ChatCompletionStream.test.ts.snap"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := oaiSnapshots(oaiReadFixture(t, "openai/openai-node/ResponseStream.test.ts.snap"))
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 4 || len(resp) != 2 {
		t.Fatalf("got %d chat and %d responses snapshots, want 4 and 2", len(snaps), len(resp))
	}
	for name, b := range snaps {
		if !bytes.HasPrefix(b, []byte(`data: {"id":"chatcmpl-`)) || !bytes.HasSuffix(b, []byte("data: [DONE]\n\n")) {
			t.Errorf("chat snapshot %q: bad bounds %q … %q", name, b[:min(len(b), 30)], b[max(0, len(b)-20):])
		}
		if bytes.Contains(b, []byte(`\\"`)) {
			t.Errorf("chat snapshot %q: template escapes left", name)
		}
	}
	for name, b := range resp {
		if !bytes.HasPrefix(b, []byte(`data: {"response":{"id":"resp_`)) || !bytes.HasSuffix(b, []byte("data: [DONE]\n\n")) {
			t.Errorf("responses snapshot %q: bad bounds %q … %q", name, b[:min(len(b), 30)], b[max(0, len(b)-20):])
		}
	}
	// A hand-made snapshot with each escape.
	got, err := oaiSnapshots([]byte("exports[`x 1`] = `\n\"a\\\\b \\\"c\\\" \\`d\\`\"\n`;\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\\b \"c\" `d`"; string(got["x"]) != want {
		t.Errorf("escapes: got %q, want %q", got["x"], want)
	}
}
